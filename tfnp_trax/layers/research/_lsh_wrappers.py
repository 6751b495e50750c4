"""Layers around PureLSHSelfAttention: its projections, and a short-length mix.

`PureLSHSelfAttentionWrapper` projects activations to shared queries/keys
and values, splits heads, attends with a pure LSH layer, merges heads and
projects back. `MixedLSHSelfAttention` uses ordinary dot-product attention
for sequences up to `std_length` and LSH attention beyond.
"""

from tfnp_trax import fastmath
from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.layers import attention
from tfnp_trax.layers import base
from tfnp_trax.layers import causal_attention
from tfnp_trax.layers import combinators as cb
from tfnp_trax.layers import core
from tfnp_trax.layers.research import _pure_lsh
from tfnp_trax.layers.research import rotary_positional_embedding as rotary_pe

__all__ = ['MixedLSHSelfAttention', 'PureLSHSelfAttentionWrapper']


def _project_and_split_heads(d_model, n_heads, use_bias, num_weights,
                             weights_format, rotary_position_emb, name):
  """Activations -> `(qk, v)`, each `[batch * n_heads, length, d_head]`.

  Only Trax's 'model' weight format (Dense projections of width d_model) is
  available here; with three weights, Q and K are averaged into QK. With
  `rotary_position_emb`, rotary embeddings rotate Q and K before the
  average (three weights) or the shared QK (two weights), as in Trax's
  `_ProjectAndSplitHeads`.
  """
  if weights_format != 'model':
    raise NotImplementedError(
        f'{name}: weights_format={weights_format!r} is not available in '
        "tfnp_trax (it needs Trax's sparsity layers FactoredDense and "
        "LocallyConvDense); use weights_format='model'.")
  if num_weights == 3:
    return cb.Serial(
        cb.Branch(core.Dense(d_model, use_bias=use_bias),
                  core.Dense(d_model, use_bias=use_bias),
                  core.Dense(d_model, use_bias=use_bias)),
        (cb.Parallel(rotary_pe.Rotate(), rotary_pe.Rotate(), None)
         if rotary_position_emb else []),
        base.Fn('QKAvg', lambda x, y: (x + y) / 2.0, n_out=1),
        cb.Parallel(attention.SplitIntoHeads(n_heads),
                    attention.SplitIntoHeads(n_heads)))
  if num_weights == 2:
    return cb.Branch(
        [core.Dense(d_model, use_bias=use_bias),
         rotary_pe.Rotate() if rotary_position_emb else [],
         attention.SplitIntoHeads(n_heads)],
        [core.Dense(d_model, use_bias=use_bias),
         attention.SplitIntoHeads(n_heads)])
  raise ValueError(f'{name}: num_weights must be 2 (qk, v) or 3 (q, k, v), '
                   f'got {num_weights}.')


class PureLSHSelfAttentionWrapper(cb.Serial):
  """Projections + `PureLSHSelfAttention` + merge: `x[, mask] -> y`.

  Args:
    n_heads: number of heads; `d_model = d_qk * n_heads`.
    d_qk: per-head depth of queries/keys.
    d_v: per-head depth of values.
    causal: causal masking.
    masked: take a padding mask `[batch, length]` as second input.
    output_dropout: passed to the attention layer.
    attention_dropout: passed to the attention layer.
    pure_lsh_implementation: the attention class (default
      `PureLSHSelfAttention`; Trax requires it to be passed).
    bias: biases in the projections.
    mode: 'train', 'eval' or 'predict'.
    num_weights: 3 (q, k, v, with q and k averaged) or 2 (qk, v).
    sparsity: Trax's sparse-format parameter (unused with 'model').
    weights_format: only 'model' is available here.
    rotary_position_emb: rotate queries/keys with rotary position
      embeddings (`Rotate`) before attention.
    **pure_lsh_implementation_kwargs: more arguments for the attention.

  Example:
    >>> layer = PureLSHSelfAttentionWrapper(n_heads=2, d_qk=2, d_v=2,
    ...                                     chunk_len=4, n_buckets=2)
    >>> x = jnp.ones((1, 8, 4), jnp.float32)
    >>> _ = layer.init(shapes.signature(x))
    >>> tuple(layer(x).shape)
    (1, 8, 4)
  """

  def __init__(self, n_heads=1, d_qk=64, d_v=64, causal=False, masked=False,
               output_dropout=0.0, attention_dropout=0.0,
               pure_lsh_implementation=None, bias=True, mode='train',
               num_weights=3, sparsity=16, weights_format='model',
               rotary_position_emb=False, **pure_lsh_implementation_kwargs):
    del sparsity
    d_model = d_qk * n_heads
    name = type(self).__name__
    self._qkv = _project_and_split_heads(d_model, n_heads, bias, num_weights,
                                         weights_format, rotary_position_emb,
                                         name)
    implementation = (pure_lsh_implementation or
                      _pure_lsh.PureLSHSelfAttention)
    self._attn = implementation(
        n_heads=n_heads, d_qk=d_qk, d_v=d_v, causal=causal, masked=masked,
        mode=mode, output_dropout=output_dropout,
        attention_dropout=attention_dropout, **pure_lsh_implementation_kwargs)
    self._merge = attention.MergeHeads(n_heads)
    self._dense = core.Dense(d_model, use_bias=bias)
    super().__init__(self._qkv, self._attn, self._merge, self._dense)


class MixedLSHSelfAttention(base.Layer):
  """Dot-product attention up to `std_length` positions, LSH beyond.

  Inputs are those of `PureLSHSelfAttention`: `(qk, v)` when causal, and
  `(qk, v, mask)` otherwise (the non-causal standard branch needs the
  mask; Trax builds it that way). No weights.

  Args:
    n_heads: number of heads in the `[batch * n_heads, ...]` rows.
    d_qk: per-head depth of queries/keys.
    d_v: per-head depth of values.
    causal: causal masking.
    masked: padding mask for the LSH branch.
    std_length: longest sequence for standard attention (None: always LSH).
    mode: 'train', 'eval' or 'predict'.
    output_dropout: LSH branch output dropout.
    attention_dropout: attention dropout of both branches.
    force_no_dropout: True to turn all dropout off.
    **pure_lsh_implementation_kwargs: more `PureLSHSelfAttention` arguments.

  Example:
    >>> layer = MixedLSHSelfAttention(n_heads=1, causal=True, std_length=8,
    ...                               chunk_len=4, n_buckets=2)
    >>> qk = v = jnp.ones((1, 8, 4), jnp.float32)
    >>> _ = layer.init(shapes.signature((qk, v)))
    >>> tuple(layer((qk, v)).shape)
    (1, 8, 4)
  """

  def __init__(self, n_heads=1, d_qk=64, d_v=64, causal=False, masked=False,
               std_length=None, mode='train', output_dropout=0.0,
               attention_dropout=0.0, force_no_dropout=False,
               **pure_lsh_implementation_kwargs):
    if force_no_dropout:
      attention_dropout = output_dropout = 0.0
    lsha = _pure_lsh.PureLSHSelfAttention(
        n_heads=n_heads, d_qk=d_qk, d_v=d_v, causal=causal, masked=masked,
        mode=mode, output_dropout=output_dropout,
        attention_dropout=attention_dropout, **pure_lsh_implementation_kwargs)
    if causal:
      pure_attn = causal_attention.DotProductCausalAttention
      preprocess = base.Fn('dup_shared_qk', lambda q, v: (q, q, v), n_out=3)
    else:
      pure_attn = attention.DotProductAttention

      def add_heads_to_mask(m):
        m = jnp.broadcast_to(jnp.reshape(m, (m.shape[0], 1, m.shape[1])),
                             (m.shape[0], n_heads, m.shape[1]))
        return jnp.reshape(m, (-1, 1, m.shape[-1]))
      preprocess = base.Fn('dup_shared_qk_and_make_mask',
                           lambda q, v, m: (q, q, v, add_heads_to_mask(m)),
                           n_out=4)
    stda = cb.Serial(preprocess, pure_attn(dropout=attention_dropout,
                                           mode=mode))
    if stda.n_in != lsha.n_in:
      raise ValueError(f'MixedLSHSelfAttention: n_in differs between the '
                       f'standard ({stda.n_in}) and LSH ({lsha.n_in}) '
                       'branches; with causal=False pass masked=True.')
    super().__init__(n_in=stda.n_in, n_out=1)
    # Kept out of `_sublayers`: as in Trax, this layer holds their states
    # itself, has no weights, and prints without sublayers.
    self._lsha, self._stda = lsha, stda
    self._std_length = std_length

  def _use_lsh(self, xs):
    length = (xs[0] if isinstance(xs, (tuple, list)) else xs).shape[1]
    return self._std_length is None or length > self._std_length

  def init_weights_and_state(self, input_signature):
    states = []
    for sublayer in (self._lsha, self._stda):
      _, state = sublayer.init(input_signature, rng=None)
      states.append(state)
    self.state = tuple(states)
    self.weights = ()

  def forward(self, xs):
    rngs = fastmath.random.split(self.rng, 2)
    if self._use_lsh(xs):
      out, s = self._lsha.pure_fn(xs, (), self.state[0], rngs[0])
      self.state = (s, self.state[1])
    else:
      out, s = self._stda.pure_fn(xs, ((), ()), self.state[1], rngs[1])
      self.state = (self.state[0], s)
    return out

  def forward_and_or_backward(self, inputs, state, rng, output_grad=None,
                              compute_output=True, update_state=True):
    """Trax's contract: `(output, None, inputs_grad)` without a new state."""
    del compute_output, update_state
    rngs = fastmath.random.split(rng, 2)
    if self._use_lsh(inputs):
      out, _, grads = self._lsha.forward_and_or_backward(
          inputs, state[0], rngs[0], output_grad=output_grad,
          compute_output=True, update_state=False)
      return out, None, grads
    out, vjp_fn, _ = fastmath.vjp(
        lambda x: self._stda.pure_fn(x, ((), ()), state[1], rngs[1]),
        inputs, has_aux=True)
    grads = None if output_grad is None else vjp_fn(output_grad)[0]
    return out, None, grads
