"""Weight initializers: functions `init(shape, rng) -> float32 array`.

Every constructor returns an initializer called as `init(shape, rng)`, with
an int32 [2] key; the same key always gives the same values. Initializers
also take `dtype=` (default float32), and the variance-scaling ones take
`nonreceptive_dims=` (axes left out of the fan computation, as
`LocallyConnected1d` uses).

Fans follow the layout `[..., in_dim, out_dim]`: every axis other than
`in_dim`, `out_dim` and the non-receptive ones counts as the receptive field,
so a conv kernel `[3, 3, 16, 32]` has fan_in 144 and fan_out 288. This is the
usual convention (Glorot & Bengio, He et al., Keras); Trax's own `_GetFans`
drops the receptive field for kernels of rank >= 2, so its conv kernels start
larger by a factor sqrt(window size).
"""

import math

import numpy as onp

from tfnp_trax import fastmath
from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.fastmath import random

__all__ = ['RandomNormalInitializer', 'RandomUniformInitializer',
           'ScaledInitializer', 'GlorotNormalInitializer',
           'GlorotUniformInitializer', 'LeCunNormalInitializer',
           'LeCunUniformInitializer', 'KaimingNormalInitializer',
           'KaimingUniformInitializer', 'OrthogonalInitializer',
           'AtariConvInit', 'InitializerFromFile', 'get_fans']

# Standard deviation of a unit normal truncated to [-2, 2]
# (scipy.stats.truncnorm.std(-2, 2)).
_TRUNCATED_STD = 0.87962566103423978


def _pure_shape(shape):
  # Shapes may arrive as tensors or numpy ints; samplers want Python ints.
  return tuple(int(d) for d in shape)


def RandomNormalInitializer(stddev=1e-2):  # pylint: disable=invalid-name
  """Samples from Normal(0, stddev^2)."""
  def init(shape, rng, dtype=jnp.float32):
    x = random.normal(rng, _pure_shape(shape), jnp.float32) * stddev
    return x.astype(dtype)
  return init


def RandomUniformInitializer(lim=1.0):  # pylint: disable=invalid-name
  """Samples from Uniform[-lim, lim)."""
  def init(shape, rng, dtype=jnp.float32):
    return random.uniform(rng, _pure_shape(shape), jnp.float32, -lim,
                          lim).astype(dtype)
  return init


def get_fans(shape, out_dim=-1, in_dim=-2, nonreceptive_dims=None):
  """Returns `(fan_in, fan_out)` of a weight of `shape`.

  Args:
    shape: the weight's shape.
    out_dim: the axis of output units.
    in_dim: the axis of input units.
    nonreceptive_dims: an axis or list of axes that count in neither fan.

  Returns:
    `shape[in_dim] * r` and `shape[out_dim] * r`, r the product of the other
    (receptive) axes. A vector of size n has fans (n, n); a scalar (1, 1).

  Example:
    >>> get_fans((3, 3, 16, 32))
    (144, 288)
  """
  shape = _pure_shape(shape)
  if len(shape) < 2:
    n = shape[0] if shape else 1
    return n, n
  if nonreceptive_dims is None:
    nonreceptive_dims = ()
  elif not isinstance(nonreceptive_dims, (list, tuple)):
    nonreceptive_dims = (nonreceptive_dims,)
  rank = len(shape)
  skip = {out_dim % rank, in_dim % rank} | {d % rank for d in
                                            nonreceptive_dims}
  receptive = int(onp.prod([s for i, s in enumerate(shape) if i not in skip]))
  return shape[in_dim] * receptive, shape[out_dim] * receptive


def ScaledInitializer(out_dim, in_dim, scale, mode, distribution):  # pylint: disable=invalid-name
  """Variance scaling: samples with variance `scale / n`.

  Args:
    out_dim: axis of output units.
    in_dim: axis of input units.
    scale: the variance scale (> 0).
    mode: n is fan_in ('fan_in'), fan_out ('fan_out') or their mean
      ('fan_avg').
    distribution: 'truncated_normal' (a normal truncated at two standard
      deviations, rescaled to the target variance), 'normal' or 'uniform'
      (on [-sqrt(3 var), sqrt(3 var)]).

  Returns:
    An initializer `init(shape, rng, nonreceptive_dims=None, dtype=float32)`.

  Raises:
    ValueError: on a non-positive scale or an unknown mode or distribution.
  """
  if scale <= 0.:
    raise ValueError(f'ScaledInitializer: scale must be positive, got {scale}.')
  if mode not in ('fan_in', 'fan_out', 'fan_avg'):
    raise ValueError(f"ScaledInitializer: mode must be 'fan_in', 'fan_out' or "
                     f"'fan_avg', got {mode!r}.")
  if distribution not in ('truncated_normal', 'normal', 'uniform'):
    raise ValueError(f"ScaledInitializer: distribution must be "
                     f"'truncated_normal', 'normal' or 'uniform', got "
                     f'{distribution!r}.')

  def init(shape, rng, nonreceptive_dims=None, dtype=jnp.float32):
    shape = _pure_shape(shape)
    fan_in, fan_out = get_fans(shape, out_dim, in_dim, nonreceptive_dims)
    n = {'fan_in': fan_in, 'fan_out': fan_out,
         'fan_avg': (fan_in + fan_out) / 2.}[mode]
    variance = scale / max(1., n)
    if distribution == 'truncated_normal':
      std = math.sqrt(variance) / _TRUNCATED_STD
      x = random.truncated_normal(rng, -2., 2., shape) * std
    elif distribution == 'normal':
      x = random.normal(rng, shape) * math.sqrt(variance)
    else:
      lim = math.sqrt(3. * variance)
      x = random.uniform(rng, shape, jnp.float32, -lim, lim)
    return x.astype(dtype)
  return init


def GlorotNormalInitializer(out_dim=-1, in_dim=-2, scale=1.):  # pylint: disable=invalid-name
  """Glorot (Xavier) normal: variance scale / fan_avg."""
  return ScaledInitializer(out_dim, in_dim, scale, 'fan_avg', 'normal')


def GlorotUniformInitializer(out_dim=-1, in_dim=-2, scale=1.):  # pylint: disable=invalid-name
  """Glorot (Xavier) uniform: variance scale / fan_avg.

  Example:
    >>> w = GlorotUniformInitializer()((4, 8), random.get_prng(0))
    >>> tuple(w.shape), w.dtype.name
    ((4, 8), 'float32')
  """
  return ScaledInitializer(out_dim, in_dim, scale, 'fan_avg', 'uniform')


def LeCunNormalInitializer(out_dim=-1, in_dim=-2, scale=1.):  # pylint: disable=invalid-name
  """LeCun normal: variance scale / fan_in."""
  return ScaledInitializer(out_dim, in_dim, scale, 'fan_in', 'normal')


def LeCunUniformInitializer(out_dim=-1, in_dim=-2, scale=1.):  # pylint: disable=invalid-name
  """LeCun uniform: variance scale / fan_in."""
  return ScaledInitializer(out_dim, in_dim, scale, 'fan_in', 'uniform')


def KaimingNormalInitializer(out_dim=-1, in_dim=-2, param=0.):  # pylint: disable=invalid-name
  """He normal for (leaky) ReLUs of negative slope `param`.

  Variance 2 / ((1 + param^2) fan_in), He et al. 2015. (Trax scales by
  2 / sqrt(1 + param^2); the two agree for the default param=0.)
  """
  return ScaledInitializer(out_dim, in_dim, 2.0 / (1 + param**2), 'fan_in',
                           'normal')


def KaimingUniformInitializer(out_dim=-1, in_dim=-2, param=0.):  # pylint: disable=invalid-name
  """He uniform: variance 2 / ((1 + param^2) fan_in)."""
  return ScaledInitializer(out_dim, in_dim, 2.0 / (1 + param**2), 'fan_in',
                           'uniform')


def OrthogonalInitializer(stddev=1.0):  # pylint: disable=invalid-name
  """`stddev` times a random orthogonal matrix, reshaped to `shape`.

  The shape is flattened to (rows, cols) = (prod(shape[:-1]), shape[-1]); the
  result has orthonormal columns if rows >= cols, else orthonormal rows.
  Shapes of rank < 2 are treated as (1, n): a random unit vector.
  """
  def init(shape, rng, dtype=jnp.float32):
    shape = _pure_shape(shape)
    full = (1,) * max(0, 2 - len(shape)) + shape
    rows, cols = int(onp.prod(full[:-1])), full[-1]
    a = random.normal(rng, (max(rows, cols), min(rows, cols)), jnp.float32)
    q, r = fastmath.qr(a)
    # Sign correction makes the distribution uniform over orthogonal matrices.
    q = q * jnp.sign(jnp.diagonal(r))
    if rows < cols:
      q = q.T
    return (stddev * q.reshape(shape)).astype(dtype)
  return init


def AtariConvInit(kernel_shape, rng, dtype=jnp.float32):  # pylint: disable=invalid-name
  """Uniform on +-1/sqrt(fan_in) for a kernel `[h, w, in, out]` (the DQN init).

  fan_in is the product of all axes but the last, h * w * in for 2-D kernels.
  """
  fan_in = int(onp.prod(_pure_shape(kernel_shape)[:-1]))
  lim = 1. / math.sqrt(fan_in)
  return random.uniform(rng, _pure_shape(kernel_shape), jnp.float32, -lim,
                        lim).astype(dtype)


def InitializerFromFile(path):  # pylint: disable=invalid-name
  """Loads weights from a `.npy` file; the rng is ignored.

  Raises:
    ValueError: at init time, if the stored array's shape differs.
  """
  def init(shape, rng, dtype=jnp.float32):
    del rng
    with open(path, 'rb') as f:
      values = onp.load(f)
    if tuple(values.shape) != _pure_shape(shape):
      raise ValueError(f'InitializerFromFile: {path} holds shape '
                       f'{tuple(values.shape)}, but the weight needs '
                       f'{_pure_shape(shape)}.')
    return jnp.asarray(values).astype(dtype)
  return init
