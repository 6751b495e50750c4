"""LSHSelfAttention: multi-head LSH self-attention with its own projections."""

from tfnp_trax import fastmath
from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.layers.research import _attention_functions as fns
from tfnp_trax.layers.research import _chunked_attention as chunked
from tfnp_trax.layers.research import _efficient_attention_base as eab
from tfnp_trax.layers.research import _lsh
from tfnp_trax.layers.research import _per_head_weights as phw

__all__ = ['LSHSelfAttention', 'LSHConfig']


class LSHConfig:
  """The LSH settings and checks `LSHSelfAttention` and `PureLSH...` share."""

  def _setup_lsh(self, mode, causal, masked, chunk_len, n_chunks_before,
                 n_chunks_after, n_hashes, n_buckets, predict_mem_len,
                 predict_drop_len, attention_dropout, output_dropout,
                 max_length_for_buckets):
    chunked.check_mode(self._name, mode)
    if n_buckets is not None:
      fns.n_buckets_total(n_buckets)  # Raises on odd or bad factors.
    if not isinstance(n_hashes, int) or n_hashes < 1:
      raise ValueError(f'{self._name}: n_hashes must be a positive int, got '
                       f'{n_hashes!r}.')
    if mode == 'predict':
      if n_chunks_after:
        raise ValueError(f'{self._name}: mode="predict" needs '
                         f'n_chunks_after=0, got {n_chunks_after}.')
      self._setup_predict(*chunked.predict_defaults(
          self._name, causal, chunk_len, n_chunks_before, predict_mem_len,
          predict_drop_len))
    self._causal, self._masked = causal, masked
    self._chunk_len = chunk_len
    self._n_chunks_before = n_chunks_before
    self._n_chunks_after = n_chunks_after
    self._n_hashes, self._n_buckets = n_hashes, n_buckets
    self._max_length_for_buckets = max_length_for_buckets
    self._mode = mode
    train = mode == 'train'
    self._attention_dropout = attention_dropout if train else 0.0
    self._output_dropout = output_dropout if train else 0.0

  def _check_lsh_length(self, shape):
    length = shape[-2]
    if self._incremental and length == 1:
      return
    if self._incremental:
      length += (-length) % self._chunk_len  # The prefix is padded.
    if (self._n_hashes * length) % self._chunk_len:
      raise ValueError(
          f'{self._name}: n_hashes * length = {self._n_hashes} * {length} is '
          f'not a multiple of chunk_len {self._chunk_len} (input shape '
          f'{tuple(shape)}). Pad the sequence to a multiple of '
          f'{self._chunk_len} or change chunk_len.')
    # No check of n_buckets against the length, nor of the length against
    # max_length_for_buckets: Trax makes neither (more buckets than
    # positions only leaves buckets empty; a longer sequence stores all its
    # buckets), and its configs rely on that.

  def create_state_unbatched(self, input_signature, rng):
    length = input_signature[0].shape[0]
    if not self._incremental:
      length = self._max_length_for_buckets or length
      return (jnp.zeros((self._n_hashes * length,), jnp.int32), rng)
    return (jnp.zeros((self._n_hashes * self._predict_mem_len,), jnp.int32),
            jnp.zeros((), jnp.int32), rng)

  def _lsh_attend(self, q, v, mask, state, rng, update_state):
    """Hashes (or reuses buckets) and attends; `(o, new_state)`."""
    buckets, state = _lsh.bucket_state(
        state, q, mask, update_state, n_buckets=self._n_buckets,
        n_hashes=self._n_hashes, chunk_len=self._chunk_len,
        max_length_for_buckets=self._max_length_for_buckets)
    o = self._attend_buckets(q, v, buckets, mask, rng)
    return o, state

  def _attend_buckets(self, q, v, buckets, mask, rng):
    return _lsh.lsh_attention(
        q, v, buckets, n_hashes=self._n_hashes, chunk_len=self._chunk_len,
        n_chunks_before=self._n_chunks_before,
        n_chunks_after=self._n_chunks_after, causal=self._causal, mask=mask,
        dropout=self._attention_dropout, rng=rng)

  def _lsh_incremental(self, qk, v, q_start, q_len, state, rng):
    """Fast decoding over the cache: a prefix, or one token."""
    if q_len > 1:
      return _lsh.lsh_prefill(
          qk, v, state, q_start, q_len,
          attend_fn=lambda q, vv, b: self._attend_buckets(q, vv, b, None,
                                                          rng),
          n_buckets=self._n_buckets, n_hashes=self._n_hashes,
          chunk_len=self._chunk_len, predict_mem_len=self._predict_mem_len)
    return _lsh.lsh_decode_step(
        qk, v, state, q_start, n_buckets=self._n_buckets,
        n_hashes=self._n_hashes, chunk_len=self._chunk_len,
        n_chunks_before=self._n_chunks_before,
        predict_drop_len=self._predict_drop_len, normalize_keys=True,
        dropout=self._attention_dropout, rng=rng)


class LSHSelfAttention(LSHConfig, eab._PerHeadAttention):  # pylint: disable=protected-access
  """Multi-head self-attention within locality-sensitive-hash buckets.

  Queries double as keys (`share_qk` is always on). Each head hashes its
  queries with random rotations drawn from a per-example, per-head key kept
  in the state (advanced on every training/eval call), sorts positions by
  bucket, and attends within chunks of the sorted order (see `_lsh`).
  Inputs: `x` `[batch, length, d_model]`, or `(x, mask)` with `masked=True`.

  Args:
    n_heads: number of attention heads.
    d_qk: depth of the shared queries/keys.
    d_v: depth of values.
    share_qk: unused (always shared), kept for Trax's signature.
    causal: True to mask out attention to later positions.
    masked: True to take a padding mask (`[batch, length]`, True = token).
    chunk_len: sorted positions per attention chunk.
    n_chunks_before: earlier chunks each chunk attends to.
    n_chunks_after: later chunks each chunk attends to.
    n_hashes: hashing rounds, combined by their softmax normalizers.
    n_buckets: even int, factor list `[a, b]` (a * b buckets), or None for
      2 buckets per chunk of the sequence.
    mode: 'train', 'eval' or 'predict' (fast causal decoding).
    predict_mem_len: decoding cache length.
    predict_drop_len: positions dropped when the cache is full.
    attention_dropout: dropout on attention weights (train mode only).
    output_dropout: dropout on the output (train mode only).
    max_length_for_buckets: if set, the state stores buckets for this many
      positions, so sequences up to this length share one state shape.
    bias: True to add biases to queries and values.
    n_parallel_heads: validated as in Trax (all heads run at once here).
    use_python_loop: accepted for compatibility with Trax.
    use_reference_code: True for the per-example, per-head Python loop.

  Example:
    >>> layer = LSHSelfAttention(n_heads=2, d_qk=4, d_v=4, chunk_len=4,
    ...                          n_buckets=2, causal=True)
    >>> x = jnp.ones((1, 8, 6), jnp.float32)
    >>> _ = layer.init(shapes.signature(x))
    >>> tuple(layer(x).shape)
    (1, 8, 6)
  """

  _n_init_inputs = 1

  def __init__(self, n_heads=2, d_qk=64, d_v=64, share_qk='unused',
               causal=False, masked=False, chunk_len=128, n_chunks_before=1,
               n_chunks_after=0, n_hashes=1, n_buckets=None, mode='train',
               predict_mem_len=2048, predict_drop_len=256,
               attention_dropout=0.0, output_dropout=0.0,
               max_length_for_buckets=None, bias=False, n_parallel_heads=1,
               use_python_loop=False, use_reference_code=False):
    del share_qk
    super().__init__(n_in=(2 if masked else 1), n_out=1)
    self._setup(n_heads, n_parallel_heads, use_python_loop,
                use_reference_code)
    if mode == 'predict' and masked:
      raise ValueError(f'{self._name}: mode="predict" does not take a mask '
                       '(masked=True); decode without padding.')
    self._setup_lsh(mode, causal, masked, chunk_len, n_chunks_before,
                    n_chunks_after, n_hashes, n_buckets, predict_mem_len,
                    predict_drop_len, attention_dropout, output_dropout,
                    max_length_for_buckets)
    self._d_qk, self._d_v, self._bias = d_qk, d_v, bias
    self._share_qk = True

  def _check_inputs(self, inputs):
    self._check_lsh_length(inputs[0].shape)

  def create_weights_unbatched(self, input_signature, rng):
    return phw.create_head_weights(input_signature[0].shape[-1], self._d_qk,
                                   self._d_v, self._n_heads, rng, True,
                                   self._bias)

  def forward_unbatched(self, x, mask=None, *, weights, state, rng,
                        update_state):
    """LSH attention of one example and one head (leading axes allowed)."""
    keys = fastmath.random.split(rng)
    proj = phw.HeadProjection(weights, True, self._bias)
    q, v = proj.q(x), proj.v(x)
    o, state = self._lsh_attend(q, v, mask, state, keys[0], update_state)
    out = fns.apply_broadcasted_dropout(proj.o(o), self._output_dropout,
                                        keys[1])
    return out, state

  def _incremental_forward_unbatched(self, x, mask=None, *, q_start, q_len,
                                     weights, state, rng, update_state):
    del mask, update_state
    keys = fastmath.random.split(rng)
    proj = phw.HeadProjection(weights, True, self._bias)
    o, state = self._lsh_incremental(proj.q(x), proj.v(x), q_start, q_len,
                                     state, keys[0])
    out = fns.apply_broadcasted_dropout(proj.o(o), self._output_dropout,
                                        keys[1])
    return out, state
