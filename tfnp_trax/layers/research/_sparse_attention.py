"""Causal self-attentions whose Q/K/V/output projections are sparse layers.

Each is `ConfigurableAttention` with `DotProductCausalAttention`, as
`CausalAttention` is, but with the four `Dense` projections replaced by one
of the sparse Dense variants; 'predict' mode decodes with the usual
key/value cache. `MultiplicativeConvCausalAttention`, which shares work
between the projections, is in `_conv_attention.py`.
"""

from tfnp_trax.layers import causal_attention
from tfnp_trax.layers.assert_shape import assert_shape
from tfnp_trax.layers.research._local_conv import LocallyConvDense
from tfnp_trax.layers.research._sparse_dense import FactoredDense
from tfnp_trax.layers.research._sparse_dense import LocallyConnectedDense
from tfnp_trax.layers.research._sparse_dense import LowRankDense
from tfnp_trax.layers.research._sparse_dense import MultiplicativeModularSparseDense
from tfnp_trax.layers.research._sparse_dense import check_divisible

__all__ = ['ModularCausalAttention', 'ConvCausalAttention',
           'LowRankCausalAttention', 'MultiplicativeCausalAttention',
           'MultiplicativeModularCausalAttention', 'check_heads',
           'causal_attention_from']

# Layer constructors are CamelCase functions, as in Trax.
# pylint: disable=invalid-name


def check_heads(name, d_feature, n_heads, sparsity):
  """Validates the sizes; returns the number of modules (sparsity or heads)."""
  check_divisible(name, 'd_feature', d_feature, 'n_heads', n_heads)
  n_modules = n_heads if sparsity is None else sparsity
  check_divisible(name, 'd_feature', d_feature, 'the number of modules '
                  '(sparsity, default n_heads)', n_modules)
  return n_modules


def causal_attention_from(make_projection, n_heads, dropout,
                          max_inference_length, mode):
  """`ConfigurableAttention` with four `make_projection()` layers."""
  return causal_attention.ConfigurableAttention(
      make_projection(), make_projection(), make_projection(),
      make_projection(), n_heads=n_heads,
      qkv_attention_layer=causal_attention.DotProductCausalAttention(
          dropout=dropout, max_inference_length=max_inference_length,
          mode=mode))


@assert_shape('bld->bld')
def ModularCausalAttention(d_feature, n_heads=1, sparsity=None, dropout=0.0,
                           max_inference_length=2048, kernel_size=1,
                           mode='train'):
  """Causal attention with `LocallyConnectedDense` projections.

  Example:
    >>> layer = ModularCausalAttention(8, n_heads=2)
    >>> _ = layer.init(shapes.ShapeDtype((1, 3, 8)))
    >>> tuple(layer(jnp.ones((1, 3, 8), dtype=jnp.float32)).shape)
    (1, 3, 8)

  Args:
    d_feature: last dimension of the activations in and out.
    n_heads: number of attention heads; must divide `d_feature`.
    sparsity: number of modules of the projections (default `n_heads`);
      must divide `d_feature`.
    dropout: dropout rate on the attention strengths ('train' mode).
    max_inference_length: key/value cache size in 'predict' mode.
    kernel_size: kernel size of the `LocallyConnectedDense` projections.
    mode: 'train', 'eval' or 'predict'.

  Returns:
    A layer mapping (batch, length, d_feature) to the same shape.
  """
  n_modules = check_heads('ModularCausalAttention', d_feature, n_heads,
                          sparsity)

  @assert_shape('...a->...b')
  def Projection():
    return LocallyConnectedDense(n_modules, d_feature // n_modules,
                                 kernel_size=kernel_size)
  return causal_attention_from(Projection, n_heads, dropout,
                               max_inference_length, mode)


@assert_shape('bld->bld')
def ConvCausalAttention(d_feature, n_heads=1, sparsity=None, dropout=0.0,
                        max_inference_length=2048, kernel_size=1,
                        mode='train'):
  """Causal attention with `LocallyConvDense` projections.

  The projections convolve over modules only (length kernel 1), so they
  keep no state in 'predict' mode.

  Example:
    >>> layer = ConvCausalAttention(8, n_heads=2, kernel_size=3)
    >>> _ = layer.init(shapes.ShapeDtype((1, 3, 8)))
    >>> tuple(layer(jnp.ones((1, 3, 8), dtype=jnp.float32)).shape)
    (1, 3, 8)

  Args:
    d_feature: last dimension of the activations in and out.
    n_heads: number of attention heads; must divide `d_feature`.
    sparsity: number of modules of the projections (default `n_heads`);
      must divide `d_feature`.
    dropout: dropout rate on the attention strengths ('train' mode).
    max_inference_length: key/value cache size in 'predict' mode.
    kernel_size: module kernel size of the projections; odd.
    mode: 'train', 'eval' or 'predict'.

  Returns:
    A layer mapping (batch, length, d_feature) to the same shape.
  """
  n_modules = check_heads('ConvCausalAttention', d_feature, n_heads, sparsity)

  @assert_shape('...a->...b')
  def Projection():
    return LocallyConvDense(n_modules, d_feature // n_modules, mode=mode,
                            kernel_size=kernel_size)
  return causal_attention_from(Projection, n_heads, dropout,
                               max_inference_length, mode)


@assert_shape('bld->bld')
def LowRankCausalAttention(d_feature, n_heads=1, dropout=0.0,
                           max_inference_length=2048, lowrank=64,
                           mode='train'):
  """Causal attention with rank-`lowrank` (`LowRankDense`) projections.

  Example:
    >>> layer = LowRankCausalAttention(8, n_heads=2, lowrank=2)
    >>> _ = layer.init(shapes.ShapeDtype((1, 3, 8)))
    >>> tuple(layer(jnp.ones((1, 3, 8), dtype=jnp.float32)).shape)
    (1, 3, 8)

  Args:
    d_feature: last dimension of the activations in and out.
    n_heads: number of attention heads; must divide `d_feature`.
    dropout: dropout rate on the attention strengths ('train' mode).
    max_inference_length: key/value cache size in 'predict' mode.
    lowrank: rank of each projection.
    mode: 'train', 'eval' or 'predict'.

  Returns:
    A layer mapping (batch, length, d_feature) to the same shape.
  """
  check_divisible('LowRankCausalAttention', 'd_feature', d_feature,
                  'n_heads', n_heads)
  return causal_attention_from(lambda: LowRankDense(d_feature, lowrank),
                               n_heads, dropout, max_inference_length, mode)


@assert_shape('bld->bld')
def MultiplicativeCausalAttention(d_feature, n_heads=1, sparsity=None,
                                  dropout=0.0, max_inference_length=2048,
                                  mode='train'):
  """Causal attention with `FactoredDense` projections.

  Each projection gates the input per module (per head, by default) and
  applies one shared projection, so it can express, for example, any
  permutation with about `1 / sparsity` of a Dense layer's weights.

  Example:
    >>> layer = MultiplicativeCausalAttention(8, n_heads=2)
    >>> _ = layer.init(shapes.ShapeDtype((1, 3, 8)))
    >>> tuple(layer(jnp.ones((1, 3, 8), dtype=jnp.float32)).shape)
    (1, 3, 8)

  Args:
    d_feature: last dimension of the activations in and out.
    n_heads: number of attention heads; must divide `d_feature`.
    sparsity: number of modules (default `n_heads`); must divide
      `d_feature`.
    dropout: dropout rate on the attention strengths ('train' mode).
    max_inference_length: key/value cache size in 'predict' mode.
    mode: 'train', 'eval' or 'predict'.

  Returns:
    A layer mapping (batch, length, d_feature) to the same shape.
  """
  sparsity = check_heads('MultiplicativeCausalAttention', d_feature, n_heads,
                         sparsity)
  return causal_attention_from(
      lambda: FactoredDense(sparsity, d_feature, d_feature), n_heads, dropout,
      max_inference_length, mode)


@assert_shape('bld->bld')
def MultiplicativeModularCausalAttention(
    d_feature, n_heads=1, sparsity=None, dropout=0.0,
    max_inference_length=2048, mode='train'):
  """Causal attention with `MultiplicativeModularSparseDense` projections.

  Example:
    >>> layer = MultiplicativeModularCausalAttention(8, n_heads=2)
    >>> _ = layer.init(shapes.ShapeDtype((1, 3, 8)))
    >>> tuple(layer(jnp.ones((1, 3, 8), dtype=jnp.float32)).shape)
    (1, 3, 8)

  Args:
    d_feature: last dimension of the activations in and out.
    n_heads: number of attention heads; must divide `d_feature`.
    sparsity: number of modules (default `n_heads`); must divide
      `d_feature`.
    dropout: dropout rate on the attention strengths ('train' mode).
    max_inference_length: key/value cache size in 'predict' mode.
    mode: 'train', 'eval' or 'predict'.

  Returns:
    A layer mapping (batch, length, d_feature) to the same shape.
  """
  sparsity = check_heads('MultiplicativeModularCausalAttention', d_feature,
                         n_heads, sparsity)
  return causal_attention_from(
      lambda: MultiplicativeModularSparseDense(sparsity, d_feature), n_heads,
      dropout, max_inference_length, mode)
