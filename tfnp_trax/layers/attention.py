"""Multi-head attention over masks: Attention, AttentionQKV and their parts.

`Attention` maps `(activations, mask)` to `(new_activations, mask)`;
`AttentionQKV` takes queries, keys and values from separate sources, as in
encoder-decoder attention. Masks broadcast to (batch, heads, queries, keys)
and mark with True (or 1) the keys that may be attended to.

Modes: 'train' applies attention dropout; 'eval' and 'predict' do not;
'viz' behaves like 'eval' and keeps the attention strengths in the state.

Names and structure follow Trax: the compound layers are unnamed Serials, and
the constructors carry Trax's `assert_shape` checks. A checked constructor
returns `Serial(AssertShape, layer, AssertShape)`, so `Attention` prints
with unnamed `_in2_out2` check layers and its weight tree has Trax's nesting;
on the PureAttention class the check runs inside `forward`. The checks work
on static shapes while tracing and add no ops.

Trax defines the causal layers (CausalAttention, ConfigurableAttention,
DotProductCausalAttention) and SplitIntoHeads / MergeHeads here too; ours
live in causal_attention.py and _attention_core.py and are imported here.
"""

from tfnp_trax.layers import _attention_core as core_attn
from tfnp_trax.layers import base
from tfnp_trax.layers import combinators as cb
from tfnp_trax.layers import core
from tfnp_trax.layers import flow
from tfnp_trax.layers.assert_shape import assert_shape

from tfnp_trax.layers._attention_core import MergeHeads
from tfnp_trax.layers._attention_core import SplitIntoHeads
from tfnp_trax.layers.attention_masks import EncoderDecoderMask
from tfnp_trax.layers.attention_masks import PaddingMask
from tfnp_trax.layers.causal_attention import CausalAttention
from tfnp_trax.layers.causal_attention import ConfigurableAttention
from tfnp_trax.layers.causal_attention import DotProductCausalAttention
from tfnp_trax.layers.positional import PositionalEncoding
from tfnp_trax.layers.positional import ShiftRight

__all__ = ['Attention', 'AttentionQKV', 'PureAttention', 'DotProductAttention',
           'SplitIntoHeads', 'MergeHeads', 'EncoderDecoderMask', 'PaddingMask',
           'PositionalEncoding', 'ShiftRight', 'CausalAttention',
           'ConfigurableAttention', 'DotProductCausalAttention']

# Layer constructors are CamelCase functions, as in Trax.
# pylint: disable=invalid-name


@assert_shape('bld,b11l->bld,b11l')
def Attention(d_feature, n_heads=1, dropout=0.0, mode='train'):
  """Multi-head self-attention: `(x, mask) -> (y, mask)`.

  Queries, keys and values are three Dense projections of `x`; each head
  attends with scaled dot products over the keys that `mask` allows, and a
  final Dense fuses the heads.

  Example:
    >>> layer = Attention(8, n_heads=2)
    >>> x = jnp.ones((1, 3, 8), dtype=jnp.float32)
    >>> mask = jnp.ones((1, 1, 1, 3), dtype=bool)
    >>> _ = layer.init(shapes.signature((x, mask)))
    >>> tuple(layer((x, mask))[0].shape)
    (1, 3, 8)

  Args:
    d_feature: last dimension of the activations in and out.
    n_heads: number of heads; must divide `d_feature`.
    dropout: rate of dropout on the attention strengths ('train' mode only).
    mode: 'train', 'eval', 'predict' or 'viz'.

  Returns:
    A layer with n_in=2, n_out=2.
  """
  # Unnamed, as in Trax.
  return cb.Serial(
      cb.Select([0, 0, 0]),
      AttentionQKV(d_feature, n_heads=n_heads, dropout=dropout, mode=mode))


@assert_shape('bSq,blk,blv,b1xl->bSd,b1xl')
def AttentionQKV(d_feature, n_heads=1, dropout=0.0, mode='train',
                 cache_KV_in_predict=False, q_sparsity=None,
                 result_sparsity=None):
  """Multi-head attention from separate sources: `(q, k, v, mask) -> (y, mask)`.

  Args:
    d_feature: last dimension of the activations in and out.
    n_heads: number of heads; must divide `d_feature`.
    dropout: rate of dropout on the attention strengths ('train' mode only).
    mode: 'train', 'eval', 'predict' or 'viz'.
    cache_KV_in_predict: in 'predict' mode, compute the key and value
      projections once (on the first call) and reuse them; used when keys and
      values come from a fixed encoder output.
    q_sparsity: None for a Dense query projection, 'noop' for none, or an
      int n for Trax's factored sparse projection (FactoredDense with n
      modules, then LocallyConvDense).
    result_sparsity: as `q_sparsity`, for the output projection.

  Returns:
    A layer with n_in=4, n_out=2.
  """
  core_attn.check_mode('AttentionQKV', mode)

  def projection(sparsity, what):
    if sparsity is None:
      return core.Dense(d_feature)
    if sparsity == 'noop':
      return cb.Serial()  # The identity, as in Trax.
    if not isinstance(sparsity, int) or isinstance(sparsity, bool) or (
        sparsity < 1):
      raise ValueError(
          f'AttentionQKV: {what}={sparsity!r}; expected None (a Dense '
          f'projection), \'noop\' (no projection) or a positive int (a '
          f'factored sparse projection).')
    # Imported here: the research layers are built on this module.
    from tfnp_trax.layers.research import _local_conv, _sparse_dense  # pylint: disable=g-import-not-at-top
    return cb.Serial(
        _sparse_dense.FactoredDense(sparsity, d_feature, d_feature),
        _local_conv.LocallyConvDense(sparsity, d_feature // sparsity,
                                     mode=mode, kernel_size=3,
                                     length_kernel_size=3))

  def kv_projection():
    if cache_KV_in_predict and mode == 'predict':
      return flow.Cache(core.Dense(d_feature))
    return core.Dense(d_feature)

  return cb.Serial(
      cb.Parallel(projection(q_sparsity, 'q_sparsity'), kv_projection(),
                  kv_projection()),
      PureAttention(n_heads=n_heads, dropout=dropout, mode=mode),
      projection(result_sparsity, 'result_sparsity'))


@assert_shape('blq,bkq,bkd,b1xk->bld,b1xk')
class PureAttention(base.Layer):
  """`(q, k, v, mask) -> (y, mask)`: split into heads, attend, merge heads.

  Has no weights; q, k and v are already projected to `d_feature`.
  """

  def __init__(self, n_heads=1, dropout=0.0, mode='train'):
    super().__init__(n_in=4, n_out=2, name='PureAttention')
    core_attn.check_mode(self.name, mode)
    core_attn.check_dropout(self.name, dropout)
    self._n_heads = n_heads
    self._dropout = dropout
    self._mode = mode

  def forward(self, inputs):
    q, k, v, mask = inputs
    split = core_attn.split_into_heads_fn(self._n_heads, False, self.name)
    qh, kh, vh = split(q), split(k), split(v)
    core_attn.check_mask(self.name, mask,
                         qh.shape[:-1] + (kh.shape[-2],))
    out, strengths = core_attn.per_head_attention(
        qh, kh, vh, mask, self._dropout, self._mode, self.rng)
    if self._mode == 'viz':
      self.state = strengths
    return core_attn.merge_heads_fn(self._n_heads, False, self.name)(out), mask


class DotProductAttention(base.Layer):
  """`(q, k, v, mask) -> y` on arrays already split into heads."""

  def __init__(self, dropout=0.0, mode='train'):
    super().__init__(n_in=4, n_out=1, name='DotProductAttention')
    core_attn.check_mode(self.name, mode)
    core_attn.check_dropout(self.name, dropout)
    self._dropout = dropout
    self._mode = mode

  def forward(self, inputs):
    q, k, v, mask = inputs
    if mask is not None and mask.ndim == q.ndim:
      core_attn.check_mask(self.name, mask, q.shape[:-1] + (k.shape[-2],))
    out, strengths = core_attn.per_head_attention(
        q, k, v, mask, self._dropout, self._mode, self.rng)
    if self._mode == 'viz':
      self.state = strengths
    return out
