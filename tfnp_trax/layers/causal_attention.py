"""Causal self-attention, with a key/value cache for fast decoding.

In 'train' and 'eval' mode each position attends to itself and the positions
before it. In 'predict' mode the layer is fed a few positions at a time
(usually one token per call); the keys and values seen so far live in
fixed-size buffers in the layer state, so each new token costs one query
against the cache instead of recomputing the whole prefix.
"""

from tfnp_trax import fastmath
from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.layers import _attention_core as core_attn
from tfnp_trax.layers import base
from tfnp_trax.layers import combinators as cb
from tfnp_trax.layers import core
from tfnp_trax.layers.assert_shape import assert_shape

__all__ = ['ConfigurableAttention', 'CausalAttention',
           'DotProductCausalAttention']

# Layer constructors are CamelCase functions, as in Trax.
# pylint: disable=invalid-name


@assert_shape('bld->bld')
def ConfigurableAttention(q_layer, k_layer, v_layer, final_layer,
                          qkv_attention_layer, n_heads=1):
  """Self-attention assembled from given projection and attention layers.

  Copies `x` three times, projects with `q_layer`, `k_layer`, `v_layer`,
  splits each into heads, runs `qkv_attention_layer` (n_in=3) on them, merges
  the heads and applies `final_layer`.
  """
  return cb.Serial(
      cb.Branch(
          [q_layer, core_attn.SplitIntoHeads(n_heads)],
          [k_layer, core_attn.SplitIntoHeads(n_heads)],
          [v_layer, core_attn.SplitIntoHeads(n_heads)],
      ),
      qkv_attention_layer,
      core_attn.MergeHeads(n_heads),
      final_layer)  # Unnamed, as in Trax.


@assert_shape('bld->bld')
def CausalAttention(d_feature, n_heads=1, dropout=0.0,
                    max_inference_length=2048, use_dconv=False,
                    mode='train'):
  """Multi-head self-attention where position i sees only positions <= i.

  Example:
    >>> layer = CausalAttention(8, n_heads=2)
    >>> _ = layer.init(shapes.ShapeDtype((1, 3, 8)))
    >>> tuple(layer(jnp.ones((1, 3, 8), dtype=jnp.float32)).shape)
    (1, 3, 8)

  Args:
    d_feature: last dimension of the activations in and out.
    n_heads: number of heads; must divide `d_feature`.
    dropout: rate of dropout on the attention strengths ('train' mode only).
    max_inference_length: size of the key/value cache in 'predict' mode, the
      longest sequence that can be decoded.
    use_dconv: depthwise convolutions on the projections; not supported.
    mode: 'train', 'eval', 'predict' or 'viz'.

  Returns:
    A layer mapping (batch, length, d_feature) to the same shape.
  """
  if d_feature % n_heads:
    raise ValueError(f'CausalAttention: d_feature {d_feature} is not a '
                     f'multiple of n_heads {n_heads}.')
  if use_dconv:
    raise NotImplementedError('CausalAttention: use_dconv=True is not '
                              'supported; use use_dconv=False.')
  return ConfigurableAttention(
      core.Dense(d_feature), core.Dense(d_feature), core.Dense(d_feature),
      core.Dense(d_feature), n_heads=n_heads,
      qkv_attention_layer=DotProductCausalAttention(
          dropout=dropout, max_inference_length=max_inference_length,
          mode=mode))


@assert_shape('bld,bld,bld->bld')
class DotProductCausalAttention(base.Layer):
  """`(q, k, v) -> y` with causal masking, on arrays split into heads.

  Inputs have shape (batch * heads, length, d_head). In 'predict' mode the
  state is `(keys, values, index)`: buffers of `max_inference_length`
  positions and the number of positions filled so far.
  """

  def __init__(self, dropout=0.0, max_inference_length=2048, mode='train'):
    super().__init__(n_in=3, n_out=1, name='DotProductCausalAttention')
    core_attn.check_mode(self.name, mode)
    core_attn.check_dropout(self.name, dropout)
    self._dropout = dropout
    self._max_len = max_inference_length
    self._mode = mode
    self._portal_mask = self.monkey_patched_mask()  # pylint: disable=assignment-from-none

  def monkey_patched_mask(self):
    """None; the Terraformer's decoder patches in its source-mask portal.

    With a portal (an object whose `get_value()` is the source padding mask
    of the joined source+target sequence), predict mode also remembers which
    cached positions are real tokens, as Trax does, so decoding skips the
    source's padding. As in Trax, this assumes batch size 1.
    """
    return None

  @property
  def mode(self):
    return self._mode

  @property
  def max_inference_length(self):
    return self._max_len

  @property
  def uses_rng(self):
    return bool(self._dropout) and self._mode == 'train'  # Dropout only.

  def forward(self, inputs):
    q, k, v = inputs
    if self._mode == 'predict':
      k, v, mask = self._update_cache(k, v, q.shape[-2])
    else:
      mask = core_attn.causal_mask(q.shape[-2], k.shape[-2])
    out, strengths = core_attn.per_head_attention(
        q, k, v, mask, self._dropout, self._mode, self.rng)
    if self._mode == 'viz':
      self.state = strengths
    return out

  def _update_cache(self, new_k, new_v, n_new):
    """Writes the new keys/values at the index; returns cache and mask."""
    portal = self._portal_mask
    n_state = 3 if portal is None else 4
    if not isinstance(self.state, tuple) or len(self.state) != n_state:
      raise ValueError(f'{self.name}: predict mode needs the key/value cache '
                       f'in the state; call layer.init(...) first.')
    if portal is None:
      keys, values, index = self.state
    else:
      known, keys, values, index = self.state
    self._check_length(n_new, index)
    keys = fastmath.dynamic_update_slice_in_dim(
        keys, new_k.astype(keys.dtype), index, axis=1)
    values = fastmath.dynamic_update_slice_in_dim(
        values, new_v.astype(values.dtype), index, axis=1)
    mask = core_attn.causal_mask(n_new, self._max_len, index)
    if portal is None:
      self.state = (keys, values, index + n_new)
      return keys, values, mask
    # Which cached positions hold real tokens: the source's non-padding
    # positions (from the portal), the position just after the source, and
    # every decoded position.
    source = jnp.reshape(portal.get_value(), (-1,)) != 0
    known = fastmath.dynamic_update_slice_in_dim(known, source, 0, axis=0)
    true = jnp.ones((1,), dtype=jnp.bool_)
    known = fastmath.dynamic_update_slice_in_dim(
        known, true, jnp.sum(portal.get_value(), dtype=jnp.int32), axis=0)
    known = fastmath.dynamic_update_slice_in_dim(known, true, index, axis=0)
    self.state = (known, keys, values, index + n_new)
    return keys, values, jnp.logical_and(mask, known[None, None, :])

  def _check_length(self, n_new, index):
    if n_new > self._max_len:
      raise ValueError(
          f'{self.name}: input length {n_new} exceeds max_inference_length '
          f'{self._max_len} (the key/value cache size). Create the layer '
          f'with a larger max_inference_length.')
    start = core_attn.static_int(index)
    if start is not None and start + n_new > self._max_len:
      raise ValueError(
          f'{self.name}: decoding length {start + n_new} (cache holds '
          f'{start} positions, adding {n_new}) exceeds max_inference_length '
          f'{self._max_len}. Create the model with a larger limit or start a '
          f'new sequence by re-running init.')

  def init_weights_and_state(self, input_signature):
    if self._mode != 'predict':
      return
    q_sig, k_sig, v_sig = input_signature
    batch = q_sig.shape[0]
    self.state = (
        jnp.zeros((batch, self._max_len, k_sig.shape[-1]), dtype=k_sig.dtype),
        jnp.zeros((batch, self._max_len, v_sig.shape[-1]), dtype=v_sig.dtype),
        jnp.zeros((), dtype=jnp.int32))
    if self._portal_mask is not None:
      self.state = (jnp.zeros((self._max_len,), dtype=jnp.bool_),) + self.state
