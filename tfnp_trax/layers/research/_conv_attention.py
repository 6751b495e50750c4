"""MultiplicativeConvCausalAttention: Q/K/V from one shared FactoredDense.

One `FactoredDense` runs once on the input; `LocallyConvDense` layers then
derive Q, K and V from its output (V optionally also from the raw input),
each convolving over modules and, causally, over the last
`length_kernel_size` positions. In 'predict' mode those convolutions keep
their past positions in state (see `_local_conv._RememberPad`) beside the
attention's key/value cache.
"""

from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.layers import attention
from tfnp_trax.layers import base
from tfnp_trax.layers import causal_attention
from tfnp_trax.layers import combinators as cb
from tfnp_trax.layers.assert_shape import assert_shape
from tfnp_trax.layers.research._local_conv import LocallyConvDense
from tfnp_trax.layers.research._sparse_attention import check_heads
from tfnp_trax.layers.research._sparse_dense import FactoredDense

__all__ = ['MultiplicativeConvCausalAttention']

# Layer constructors are CamelCase functions, as in Trax.
# pylint: disable=invalid-name

_OUTPUT_LAYER_TYPES = ('none', 'mult', 'conv', 'multconv')
_V_CONCAT_TYPES = ('original', 'fixed', 'none')
_NAME = 'MultiplicativeConvCausalAttention'


def _check_choice(arg, value, choices):
  if value not in choices:
    raise ValueError(f'{_NAME}: {arg} must be one of {choices}, got '
                     f'{value!r}.')


def _v_concat_layers(v_concat_type, sparsity, d_module, d_feature):
  """Layers `(shared, x) -> v_input` for the chosen `v_concat_type`."""
  if v_concat_type == 'original':
    # The two inputs side by side; module i of the result is not the pair
    # of modules i, which 'fixed' corrects. Kept to load old experiments.
    return [cb.Concatenate()]
  if v_concat_type == 'fixed':
    # Interleave per module: module i of V's input is module i of the
    # shared output followed by module i of the raw input.
    def to_modules(x):
      return jnp.reshape(x, (x.shape[0], x.shape[1], sparsity, d_module))
    return [
        cb.Parallel(base.Fn('Reshape1', to_modules),
                    base.Fn('Reshape2', to_modules)),
        cb.Concatenate(),
        base.Fn('Reshape3', lambda x: jnp.reshape(
            x, (x.shape[0], x.shape[1], 2 * d_feature))),
    ]
  return [cb.Select([0], n_in=2)]  # 'none': V from the shared output only.


@assert_shape('bld->bld')
def MultiplicativeConvCausalAttention(
    d_feature, n_heads=1, sparsity=None, length_kernel_size=3, dropout=0.0,
    force_no_dropout=False, max_inference_length=2048, share_qk=False,
    output_layer_type='none', v_concat_type='none', mode='train'):
  """Causal attention with Q/K/V convolved from one shared FactoredDense.

  `FactoredDense(sparsity, d_feature, d_feature)` maps the input x to s.
  Q and K are `LocallyConvDense` of s (module kernel 3), one shared layer
  for both with `share_qk`; V is a `LocallyConvDense` (module kernel 1) of
  s, of s and x side by side ('original'), or of s and x interleaved per
  module ('fixed'). All three convolve over `length_kernel_size` positions,
  causally. After attention and merging the heads, the output is passed
  through `FactoredDense` ('mult'), `LocallyConvDense` ('conv'), both
  ('multconv') or nothing ('none').

  Example:
    >>> layer = MultiplicativeConvCausalAttention(8, n_heads=2)
    >>> _ = layer.init(shapes.ShapeDtype((1, 3, 8)))
    >>> tuple(layer(jnp.ones((1, 3, 8), dtype=jnp.float32)).shape)
    (1, 3, 8)

  Args:
    d_feature: last dimension of the activations in and out.
    n_heads: number of attention heads; must divide `d_feature`.
    sparsity: number of modules (default `n_heads`); must divide
      `d_feature`.
    length_kernel_size: positions each convolution sees (the current one
      and those before it).
    dropout: dropout rate on the attention strengths ('train' mode).
    force_no_dropout: if True, use no dropout whatever `dropout` says.
    max_inference_length: key/value cache size in 'predict' mode.
    share_qk: one convolution for both Q and K.
    output_layer_type: 'none', 'mult', 'conv' or 'multconv'.
    v_concat_type: 'none', 'fixed' or 'original'.
    mode: 'train', 'eval' or 'predict'.

  Returns:
    A layer mapping (batch, length, d_feature) to the same shape.

  Raises:
    ValueError: on sizes that do not divide or an unknown option. (Trax
    raises AssertionError for an unknown option.)
  """
  _check_choice('output_layer_type', output_layer_type, _OUTPUT_LAYER_TYPES)
  _check_choice('v_concat_type', v_concat_type, _V_CONCAT_TYPES)
  sparsity = check_heads(_NAME, d_feature, n_heads, sparsity)
  dropout = 0.0 if force_no_dropout else dropout
  d_module = d_feature // sparsity

  def QKConv():
    return LocallyConvDense(sparsity, d_module, mode=mode, kernel_size=3,
                            length_kernel_size=length_kernel_size)

  def VConv():
    return LocallyConvDense(sparsity, d_module, mode=mode, kernel_size=1,
                            length_kernel_size=length_kernel_size)

  output_layers = []
  if 'mult' in output_layer_type:
    output_layers.append(FactoredDense(sparsity, d_feature, d_feature))
  if 'conv' in output_layer_type:
    output_layers.append(QKConv())
  v_branch = [_v_concat_layers(v_concat_type, sparsity, d_module, d_feature),
              VConv(), attention.SplitIntoHeads(n_heads)]
  attend = [
      causal_attention.DotProductCausalAttention(
          dropout=dropout, max_inference_length=max_inference_length,
          mode=mode),
      attention.MergeHeads(n_heads),
      output_layers,
  ]

  if share_qk:
    return cb.Serial(
        cb.Select([0, 0]),  # x, x
        FactoredDense(sparsity, d_feature, d_feature),  # s, x
        cb.Select([0, 0]),  # s, s, x
        QKConv(),
        attention.SplitIntoHeads(n_heads),  # qk, s, x
        cb.Select([0, 0]),  # q, k, s, x
        cb.Parallel([], [], v_branch),  # q, k, v
        attend,
    )
  return cb.Serial(
      cb.Select([0, 0]),  # x, x
      FactoredDense(sparsity, d_feature, d_feature),  # s, x
      cb.Select([0, 0, 0]),  # s, s, s, x
      cb.Parallel(
          [QKConv(), attention.SplitIntoHeads(n_heads)],
          [QKConv(), attention.SplitIntoHeads(n_heads)],
          v_branch,
      ),  # q, k, v
      attend,
  )
