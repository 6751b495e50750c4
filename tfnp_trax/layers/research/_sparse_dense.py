"""Dense-layer replacements with fewer weights (Trax's sparsity experiments).

Each maps `[..., d_in]` to `[..., d_out]` like `Dense`, from fewer weights:
a low-rank product (`LowRankDense`), per-module local connections
(`LocallyConnectedDense`), per-module gating plus one shared projection
(`FactoredDense`, `MultiplicativeModularSparseDense`), or plain einsum
(`EinsumDense`). `SparseDenseWithOptions` picks one by name, and
`RandomLayer` mixes two at random during training.

The layers are built from the same combinators as in Trax, so their weight
trees, and hence Trax weight files, have Trax's layout.
"""

import functools

from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.layers import base
from tfnp_trax.layers import combinators as cb
from tfnp_trax.layers import core
from tfnp_trax.layers import core_extras
from tfnp_trax.layers import flow
from tfnp_trax.layers import initializers as init
from tfnp_trax.layers.assert_shape import assert_shape
from tfnp_trax.layers.research._permute_layers import MergeLastTwoAxes
from tfnp_trax.layers.research._permute_layers import SplitLastAxis

__all__ = ['LocallyConnectedDense', 'LowRankDense', 'EinsumDense',
           'RandomLayer', 'SparseDenseWithOptions', 'FactoredDense',
           'MultiplicativeModularSparseDense']

# Layer constructors are CamelCase functions, as in Trax.
# pylint: disable=invalid-name

_SPARSITY_TYPES = (None, 'None', 'mult', 'lowrank', 'einsum', 'local',
                   'local3')


def check_divisible(name, what, value, by_what, by):
  """Raises a ValueError naming `name` unless `by` divides `value`."""
  if by < 1 or value % by:
    raise ValueError(f'{name}: {what} ({value}) must be a multiple of '
                     f'{by_what} ({by}); pick sizes where {by_what} divides '
                     f'{what}.')


def _check_last_dim(name, x, expected, what):
  if x.shape[-1] != expected:
    raise ValueError(f'{name}: input last dim {x.shape[-1]} does not match '
                     f'{what} {expected} (input shape {tuple(x.shape)}). '
                     f'Create the layer with {what}={x.shape[-1]}.')


@assert_shape('...a->...b')
def LocallyConnectedDense(n_modules, n_units, kernel_size=1,
                          kernel_initializer=init.GlorotUniformInitializer(),
                          bias_initializer=init.RandomNormalInitializer(1e-6),
                          use_bias=True):
  """A Dense approximation that connects each module to its neighbours only.

  The last axis is split into `n_modules` equal modules; output module `i`
  is an affine map of input modules `i - h .. i + h` (h = (kernel_size - 1)
  / 2, wrapping around), with its own weights: `LocallyConnected1d` over the
  module axis with 'WRAP' padding. The outputs, `n_units` per module, are
  concatenated, so the layer maps `[..., d]` to `[..., n_modules * n_units]`
  with about `kernel_size / n_modules` of a Dense layer's weights. With one
  module it is `Dense(n_units)`.

  Example:
    >>> layer = LocallyConnectedDense(2, 3)
    >>> _ = layer.init(shapes.ShapeDtype((1, 8)))
    >>> tuple(layer(jnp.ones((1, 8), dtype=jnp.float32)).shape)
    (1, 6)

  Args:
    n_modules: number of modules the input and output are split into.
    n_units: outputs per module.
    kernel_size: number of neighbouring input modules each output module
      sees; odd.
    kernel_initializer: initializer for the kernels.
    bias_initializer: initializer for the biases.
    use_bias: whether to add a bias.

  Returns:
    The layer.
  """
  if n_modules == 1:
    return core.Dense(n_units, kernel_initializer=kernel_initializer,
                      bias_initializer=bias_initializer, use_bias=use_bias)
  return cb.Serial(
      SplitLastAxis(n_modules),
      core_extras.LocallyConnected1d(
          n_units, kernel_size, kernel_initializer=kernel_initializer,
          bias_initializer=bias_initializer, use_bias=use_bias,
          padding='WRAP'),
      MergeLastTwoAxes())


@assert_shape('...a->...b')
def LowRankDense(n_units, d_lowrank):
  """`Dense(d_lowrank)` then `Dense(n_units)`: a rank-`d_lowrank` kernel.

  Example:
    >>> layer = LowRankDense(6, 2)
    >>> _ = layer.init(shapes.ShapeDtype((1, 8)))
    >>> tuple(layer(jnp.ones((1, 8), dtype=jnp.float32)).shape)
    (1, 6)
  """
  return cb.Serial(core.Dense(d_lowrank), core.Dense(n_units))


def _einsum_dense(kernel, x):
  _check_last_dim('EinsumDense', x, kernel.shape[1], 'd_input')
  return jnp.einsum('xd,...d->...x', kernel, x)


@assert_shape('...a->...b')
def EinsumDense(d_input, d_output, use_bias):
  """A Dense layer written as an einsum, with the kernel stored transposed.

  Computes `y = x @ W^T (+ b)` with `W` of shape `[d_output, d_input]` (a
  `Weights` layer) and `b` of shape `[d_output]`. Trax keeps it because it
  decoded faster than `Dense` in some of its experiments.

  Example:
    >>> layer = EinsumDense(8, 3, use_bias=True)
    >>> _ = layer.init(shapes.ShapeDtype((1, 8)))
    >>> tuple(layer(jnp.ones((1, 8), dtype=jnp.float32)).shape)
    (1, 3)

  Args:
    d_input: last dimension of the input.
    d_output: last dimension of the output.
    use_bias: whether to add a bias.

  Returns:
    The layer.
  """
  layers = [
      core_extras.Weights(init.GlorotUniformInitializer(),
                          [d_output, d_input]),
      base.Fn('EinsumDense', _einsum_dense),
  ]
  if use_bias:
    layers += [core_extras.Weights(init.RandomNormalInitializer(1e-6),
                                   [d_output]),
               cb.Add()]
  return cb.Serial(layers)


def RandomLayer(layer_a, layer_b, prob_a):
  """Runs `layer_a` with probability `prob_a`, else `layer_b`.

  Each call draws u ~ Uniform[0, 1) from the layer's rng and runs `layer_a`
  if u < prob_a, in every mode (as in Trax, which has no mode here; callers
  pass prob_a=1.0 to always pick `layer_a`). The draw uses TensorFlow's
  random bits, so which branch a given key picks differs from Trax; the
  probabilities are the same.

  Example:
    >>> layer = RandomLayer(tl.Dense(3), tl.Dense(3), prob_a=1.0)
    >>> _ = layer.init(shapes.ShapeDtype((1, 4)))
    >>> tuple(layer(jnp.ones((1, 4), dtype=jnp.float32)).shape)
    (1, 3)

  Args:
    layer_a: the layer run with probability `prob_a`.
    layer_b: the layer run otherwise; same n_in and n_out as `layer_a`.
    prob_a: probability of running `layer_a`.

  Returns:
    A `Cond` layer whose weights are `((), weights_a, weights_b)`.
  """
  condition = cb.Serial(
      core_extras.RandomUniform(),
      base.Fn('SmallerThan', lambda u: u < prob_a))
  return flow.Cond(condition, layer_a, layer_b)


@assert_shape('...a->...b')
def SparseDenseWithOptions(n_units, d_input=None, sparsity_type=None,
                           sparsity=0, d_lowrank=None, prob_sparse=None,
                           mode=None, use_bias=True, use_bfloat16=False):
  """A Dense layer or one of its sparse variants, chosen by `sparsity_type`.

  * None, 'None' or sparsity=0: `Dense(n_units)`;
  * 'mult': `FactoredDense(sparsity, d_input, n_units)`;
  * 'lowrank': `LowRankDense(n_units, d_lowrank)`;
  * 'einsum': `EinsumDense(d_input, n_units)`;
  * 'local' / 'local3': `LocallyConnectedDense(sparsity, n_units /
    sparsity)` with kernel size 1 / 3.

  With `prob_sparse` set, the layer is `RandomLayer(sparse, Dense,
  prob_sparse)`, holding both sets of weights; outside training (`mode` set
  and not 'train') the sparse variant always runs.

  Example:
    >>> layer = SparseDenseWithOptions(8, d_input=8, sparsity_type='mult',
    ...                                sparsity=2)
    >>> _ = layer.init(shapes.ShapeDtype((1, 8)))
    >>> tuple(layer(jnp.ones((1, 8), dtype=jnp.float32)).shape)
    (1, 8)

  Args:
    n_units: last dimension of the output.
    d_input: last dimension of the input ('mult' and 'einsum').
    sparsity_type: the variant, one of the above.
    sparsity: number of modules ('mult', 'local', 'local3'); 0 means Dense.
    d_lowrank: rank for 'lowrank'.
    prob_sparse: if set, probability of the sparse variant in training.
    mode: 'train', 'eval' or 'predict' (only used with `prob_sparse`).
    use_bias: whether to add a bias; only 'mult', 'einsum' and Dense can
      leave it out.
    use_bfloat16: bfloat16 weights; only for 'mult' and Dense.

  Returns:
    The layer.

  Raises:
    ValueError: on an unknown `sparsity_type` or an unsupported option.
    (Trax raises AssertionError for the unsupported options.)
  """
  name = 'SparseDenseWithOptions'
  if prob_sparse is not None:
    if mode is not None and mode != 'train':
      prob_sparse = 1.0
    return RandomLayer(
        SparseDenseWithOptions(n_units, d_input, sparsity_type, sparsity,
                               d_lowrank, use_bias=use_bias,
                               use_bfloat16=use_bfloat16),
        core.Dense(n_units, use_bias=use_bias, use_bfloat16=use_bfloat16),
        prob_sparse)

  # As in Trax, sparsity=0 means Dense whatever the type.
  if sparsity_type in (None, 'None') or sparsity == 0:
    return core.Dense(n_units, use_bias=use_bias, use_bfloat16=use_bfloat16)
  if sparsity_type == 'mult':
    return FactoredDense(sparsity, d_input, n_units, use_bias=use_bias,
                         use_bfloat16=use_bfloat16)
  if sparsity_type not in _SPARSITY_TYPES:
    raise ValueError(f'{name}: unknown sparsity_type {sparsity_type!r}; use '
                     f'one of {_SPARSITY_TYPES}.')
  if use_bfloat16:
    raise ValueError(f'{name}: use_bfloat16=True is only supported for '
                     f"sparsity_type 'mult' or None, got {sparsity_type!r}.")
  if not use_bias and sparsity_type != 'einsum':
    raise ValueError(f'{name}: use_bias=False is not supported for '
                     f'sparsity_type {sparsity_type!r}; use it with '
                     f"'mult', 'einsum' or None.")
  if sparsity_type == 'lowrank':
    return LowRankDense(n_units, d_lowrank)
  if sparsity_type == 'einsum':
    return EinsumDense(d_input, n_units, use_bias=use_bias)
  check_divisible(name, 'n_units', n_units, 'sparsity', sparsity)
  # Trax passes the true quotient (a float), which shows in the sublayer's
  # name (LocallyConnected1d_4.0_1); keep it for identical reprs.
  kernel_size = 3 if sparsity_type == 'local3' else 1
  return LocallyConnectedDense(sparsity, n_units / sparsity,
                               kernel_size=kernel_size)


def _gate_and_project(projection, gating, x):
  """`[..., d_in]` -> `[..., n_modules, d_module]`, in one einsum.

  Arguments come in reverse stack order: the projection `[d_in, d_module]`
  was pushed last. One einsum avoids materializing the `n_modules` gated
  copies of `x`.
  """
  _check_last_dim('FactoredDense', x, gating.shape[1], 'd_in')
  return jnp.einsum('...d,nd,dm->...nm', x, gating, projection)


def _GateAndProject():
  return base.Fn('_GateAndProject', _gate_and_project)


@assert_shape('...a->...b')
def FactoredDense(n_modules, d_in, d_out, use_bias=True, use_bfloat16=False):
  """A Dense-like layer with about `1 / n_modules` of Dense's weights.

  With gating vectors `G[n_modules, d_in]`, a projection `P[d_in, d_out /
  n_modules]` and a bias `b[d_out]`:

    z[..., i, m] = sum_d x[..., d] G[i, d] P[d, m]
    y = reshape(z, [..., d_out]) + b

  i.e. output module i is the input gated by G[i] and projected by the
  shared P. Weights are stored as `(G, P, (), ((), (), ()), b, ())`.

  Example:
    >>> layer = FactoredDense(2, 8, 6)
    >>> _ = layer.init(shapes.ShapeDtype((1, 8)))
    >>> tuple(layer(jnp.ones((1, 8), dtype=jnp.float32)).shape)
    (1, 6)

  Args:
    n_modules: number of output modules.
    d_in: last dimension of the input.
    d_out: last dimension of the output; a multiple of `n_modules`.
    use_bias: whether to add the bias.
    use_bfloat16: store the weights in bfloat16.

  Returns:
    The layer.

  Raises:
    ValueError: if `n_modules` does not divide `d_out`.
  """
  check_divisible('FactoredDense', 'd_out', d_out, 'n_modules', n_modules)
  d_module = d_out // n_modules
  layers = [
      core_extras.Weights(init.RandomNormalInitializer(stddev=0.5),
                          shape=[n_modules, d_in], use_bfloat16=use_bfloat16),
      core_extras.Weights(init.GlorotUniformInitializer(),
                          shape=[d_in, d_module], use_bfloat16=use_bfloat16),
      _GateAndProject(),
      MergeLastTwoAxes(),
  ]
  if use_bias:
    layers += [core_extras.Weights(init.RandomNormalInitializer(1e-6),
                                   shape=[d_out], use_bfloat16=use_bfloat16),
               cb.Add()]
  return cb.Serial(layers)


def _sparse_dense_einsum(kmod, kmult, multiplier, x):
  """Gating, shared projection and per-module kernels in one einsum."""
  _check_last_dim('MultiplicativeModularSparseDense', x, multiplier.shape[1],
                  'd_feature')
  return jnp.einsum('hxo,dx,hd,...d->...ho', kmod, kmult, multiplier, x)


@assert_shape('...a->...a')
def MultiplicativeModularSparseDense(sparsity, d_feature):
  """`FactoredDense` followed by a separate small kernel per module.

  With gating `G[s, d]`, shared projection `P[d, d / s]`, per-module
  kernels `K[s, d / s, d / s]` and bias `b[d]` (s = sparsity):

    z[..., h, o] = sum_{d, x} X[..., d] G[h, d] P[d, x] K[h, x, o]
    y = reshape(z, [..., d_feature]) + b

  Example:
    >>> layer = MultiplicativeModularSparseDense(2, 8)
    >>> _ = layer.init(shapes.ShapeDtype((1, 8)))
    >>> tuple(layer(jnp.ones((1, 8), dtype=jnp.float32)).shape)
    (1, 8)

  Args:
    sparsity: number of modules; must divide `d_feature`.
    d_feature: last dimension of the input and the output.

  Returns:
    The layer.

  Raises:
    ValueError: if `sparsity` does not divide `d_feature`.
  """
  check_divisible('MultiplicativeModularSparseDense', 'd_feature', d_feature,
                  'sparsity', sparsity)
  d_module = d_feature // sparsity
  # The per-module kernels leave the module axis out of their fans, so each
  # is scaled like a (d_module, d_module) Dense kernel.
  module_init = functools.partial(init.GlorotUniformInitializer(),
                                  nonreceptive_dims=[0])
  return cb.Serial(
      core_extras.Weights(init.RandomNormalInitializer(stddev=0.5),
                          shape=[sparsity, d_feature]),
      core_extras.Weights(init.GlorotUniformInitializer(),
                          [d_feature, d_module]),
      core_extras.Weights(module_init, [sparsity, d_module, d_module]),
      base.Fn('SparseDenseEinsum', _sparse_dense_einsum),
      MergeLastTwoAxes(),
      core_extras.Weights(init.RandomNormalInitializer(1e-6), [d_feature]),
      cb.Add(),
  )
