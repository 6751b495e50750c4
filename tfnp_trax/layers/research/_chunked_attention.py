"""SelfAttention: memory-efficient multi-head self-attention, optionally chunked.

With `chunk_len`, the sequence is cut into chunks and each chunk attends to
itself and to `n_chunks_before` / `n_chunks_after` neighbouring chunks (the
chunk axis wraps around; causal masking removes the wrapped future chunks).
"""

import functools

from tfnp_trax import fastmath
from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.layers.research import _attention_functions as fns
from tfnp_trax.layers.research import _efficient_attention_base as eab
from tfnp_trax.layers.research import _per_head_weights as phw

__all__ = ['SelfAttention', 'check_mode', 'predict_defaults']

# 'collect' is the mode RL agents build their data-collecting models in;
# it acts as 'eval' (no dropout, no statistics updates), as in Trax.
_MODES = ('train', 'eval', 'predict', 'viz', 'collect')


def _split2(rng):
  # Index the keys: unpacking a symbolic tensor fails inside tf.function.
  keys = fastmath.random.split(rng)
  return keys[0], keys[1]


def check_mode(name, mode):
  if mode not in _MODES:
    raise ValueError(f'{name}: mode must be one of {_MODES}, got {mode!r}.')


def predict_defaults(name, causal, chunk_len, n_chunks_before,
                     predict_mem_len, predict_drop_len):
  """Trax's predict-cache sizes: by default the chunks a query can see."""
  if not causal:
    raise ValueError(f'{name}: mode="predict" (fast decoding) needs '
                     'causal=True; only causal attention can decode one '
                     'token at a time.')
  if chunk_len is None and not (predict_mem_len and predict_drop_len):
    raise ValueError(f'{name}: mode="predict" without chunk_len needs '
                     'predict_mem_len and predict_drop_len, got '
                     f'{predict_mem_len} and {predict_drop_len}.')
  mem_len = predict_mem_len or chunk_len * (1 + n_chunks_before)
  drop_len = predict_drop_len or chunk_len
  return mem_len, drop_len


class SelfAttention(eab._PerHeadAttention):  # pylint: disable=protected-access
  """Multi-head self-attention, chunked if `chunk_len` is set.

  Inputs are `x` `[batch, length, d_model]`, or `(x, mask)` with
  `masked=True` (mask `[batch, length]`, True for real tokens); the output
  has x's shape. Each head projects x to queries/keys (`d_qk`) and values
  (`d_v`) and back to `d_model`; the heads' outputs are summed.

  Args:
    n_heads: number of attention heads.
    d_qk: depth of queries and keys.
    d_v: depth of values.
    share_qk: True to use the (length-normalized) queries as keys; a
      position then attends to itself only when nothing else is visible.
    causal: True to mask out attention to later positions.
    masked: True to take a padding mask as a second input.
    chunk_len: if set, tokens per chunk (must divide the sequence length).
    n_chunks_before: previous chunks each chunk attends to.
    n_chunks_after: following chunks each chunk attends to (wraps around).
    bias: True to add bias vectors to queries, keys and values.
    mode: 'train', 'eval' or 'predict' (fast causal decoding).
    predict_mem_len: inputs kept for decoding; default chunk_len * (1 +
      n_chunks_before).
    predict_drop_len: inputs dropped when the cache is full; default
      chunk_len.
    attention_dropout: dropout on attention weights (train mode only).
    output_dropout: dropout on the output, shared over positions (train).
    n_parallel_heads: validated as in Trax (all heads run at once here).
    use_python_loop: accepted for compatibility with Trax.
    use_reference_code: True for the per-example, per-head Python loop.

  Example:
    >>> layer = SelfAttention(n_heads=2, d_qk=4, d_v=4, causal=True,
    ...                       chunk_len=2, n_chunks_before=1)
    >>> x = jnp.ones((1, 4, 6), jnp.float32)
    >>> _ = layer.init(shapes.signature(x))
    >>> tuple(layer(x).shape)
    (1, 4, 6)
  """

  _n_init_inputs = 1

  def __init__(self, n_heads=2, d_qk=64, d_v=64, share_qk=False,
               causal=False, masked=False, chunk_len=None, n_chunks_before=0,
               n_chunks_after=0, bias=False, mode='train',
               predict_mem_len=None, predict_drop_len=None,
               attention_dropout=0.0, output_dropout=0.0,
               n_parallel_heads=None, use_python_loop=False,
               use_reference_code=False):
    super().__init__(n_in=(2 if masked else 1), n_out=1)
    check_mode(self._name, mode)
    self._setup(n_heads, n_parallel_heads, use_python_loop,
                use_reference_code)
    if chunk_len is not None and chunk_len < 1:
      raise ValueError(f'{self._name}: chunk_len must be a positive int or '
                       f'None, got {chunk_len}.')
    if mode == 'predict':
      if masked:
        raise ValueError(f'{self._name}: mode="predict" does not take a '
                         'mask (masked=True); decode without padding.')
      self._setup_predict(*predict_defaults(
          self._name, causal, chunk_len, n_chunks_before, predict_mem_len,
          predict_drop_len))
    self._d_qk, self._d_v = d_qk, d_v
    self._share_qk, self._causal, self._masked = share_qk, causal, masked
    self._chunk_len = chunk_len
    self._n_chunks_before, self._n_chunks_after = (n_chunks_before,
                                                   n_chunks_after)
    self._bias, self._mode = bias, mode
    train = mode == 'train'
    self._attention_dropout = attention_dropout if train else 0.0
    self._output_dropout = output_dropout if train else 0.0

  def _check_inputs(self, inputs):
    length = inputs[0].shape[-2]
    chunk = self._chunk_len
    if self._incremental and (chunk is None or length <= chunk):
      return  # Decoding steps and short prefixes attend without chunks.
    if chunk is not None and length % chunk:
      raise ValueError(
          f'{self._name}: sequence length {length} is not a multiple of '
          f'chunk_len {chunk} (input shape {tuple(inputs[0].shape)}). Pad '
          f'the sequence to a multiple of {chunk} (masked=True can mask the '
          'padding) or pick a chunk_len that divides it.')

  def create_weights_unbatched(self, input_signature, rng):
    d_model = input_signature[0].shape[-1]
    return phw.create_head_weights(d_model, self._d_qk, self._d_v,
                                   self._n_heads, rng, self._share_qk,
                                   self._bias)

  def _mask_fn(self):
    return functools.partial(fns.mask_self_attention, causal=self._causal,
                             exclude_self=self._share_qk,
                             masked=self._masked)

  def forward_unbatched(self, x, mask=None, *, weights, state, rng,
                        update_state):
    """Attention of one example and one head (leading axes allowed)."""
    del update_state
    attend_rng, output_rng = _split2(rng)
    proj = phw.HeadProjection(weights, self._share_qk, self._bias)
    q, v = proj.q(x), proj.v(x)
    k = None if self._share_qk else proj.k(x)
    positions = jnp.arange(q.shape[-2], dtype=jnp.int32)
    kv_info = positions
    if self._masked:
      # Padding keys get negative infos (Trax's scheme; see attend).
      kv_info = positions * jnp.where(mask, 1, -1).astype(jnp.int32)
    o, _ = fns.attend(
        q, k, v, q_chunk_len=self._chunk_len, kv_chunk_len=self._chunk_len,
        n_chunks_before=self._n_chunks_before,
        n_chunks_after=self._n_chunks_after, mask_fn=self._mask_fn(),
        q_info=positions, kv_info=kv_info, dropout=self._attention_dropout,
        rng=attend_rng)
    out = fns.apply_broadcasted_dropout(proj.o(o), self._output_dropout,
                                        output_rng)
    return out, state

  def _incremental_forward_unbatched(self, x, mask=None, *, q_start, q_len,
                                     weights, state, rng, update_state):
    """Attention of the `q_len` queries at `q_start` over the cache `x`."""
    del mask, update_state
    attend_rng, output_rng = _split2(rng)
    proj = phw.HeadProjection(weights, self._share_qk, self._bias)
    q_range = q_start + jnp.arange(q_len, dtype=jnp.int32)
    q = proj.q(jnp.take(x, q_range, axis=-2))
    # With shared keys, the keys are normalized here, as attend would.
    k = (fns.length_normalized(proj.q(x)) if self._share_qk else proj.k(x))
    v = proj.v(x)
    kv_info = jnp.arange(k.shape[-2], dtype=jnp.int32)
    chunked = self._chunk_len is not None and q_len > self._chunk_len
    o, _ = fns.attend(
        q, k, v, q_chunk_len=self._chunk_len if chunked else None,
        kv_chunk_len=self._chunk_len if chunked else None,
        n_chunks_before=self._n_chunks_before if chunked else 0,
        n_chunks_after=self._n_chunks_after if chunked else 0,
        mask_fn=self._mask_fn(), q_info=q_range, kv_info=kv_info,
        dropout=self._attention_dropout, rng=attend_rng)
    out = fns.apply_broadcasted_dropout(proj.o(o), self._output_dropout,
                                        output_rng)
    return out, state
