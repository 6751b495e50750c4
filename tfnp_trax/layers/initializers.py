"""Weight initializers: functions `(shape, rng) -> array`, driven by keys.

Each constructor returns an initializer `init(shape, rng, dtype=float32)`.
Fan-in and fan-out follow the convention `[..., in_dim, out_dim]`, with all
other axes counted as the receptive field.
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
           'AtariConvInit', 'get_fans']

# Standard deviation of a unit normal truncated to [-2, 2].
_TRUNCATED_STD = 0.87962566103423978


def RandomNormalInitializer(stddev=1e-2):  # pylint: disable=invalid-name
  """Normal(0, stddev²) samples."""
  def init(shape, rng, dtype=jnp.float32):
    return (random.normal(rng, shape, jnp.float32) * stddev).astype(dtype)
  return init


def RandomUniformInitializer(lim=1.0):  # pylint: disable=invalid-name
  """Uniform samples in [-lim, lim)."""
  def init(shape, rng, dtype=jnp.float32):
    return random.uniform(rng, shape, jnp.float32, -lim, lim).astype(dtype)
  return init


def get_fans(shape, out_dim=-1, in_dim=-2, nonreceptive_dims=None):
  """Returns (fan_in, fan_out) of a weight of `shape`."""
  shape = tuple(shape)
  if len(shape) < 2:
    n = shape[0] if shape else 1
    return n, n
  dims = {out_dim % len(shape), in_dim % len(shape)}
  if nonreceptive_dims is not None:
    dims |= {d % len(shape) for d in nonreceptive_dims}
  receptive = int(onp.prod([s for i, s in enumerate(shape) if i not in dims]))
  return shape[in_dim] * receptive, shape[out_dim] * receptive


def ScaledInitializer(out_dim, in_dim, scale, mode, distribution):  # pylint: disable=invalid-name
  """Variance scaling: Var = scale / n, n chosen by `mode`.

  Args:
    out_dim: axis holding output units.
    in_dim: axis holding input units.
    scale: the variance scale (> 0).
    mode: 'fan_in', 'fan_out' or 'fan_avg'.
    distribution: 'truncated_normal', 'normal' or 'uniform'.
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

  def init(shape, rng, dtype=jnp.float32):
    fan_in, fan_out = get_fans(shape, out_dim, in_dim)
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
  return ScaledInitializer(out_dim, in_dim, scale, 'fan_avg', 'normal')


def GlorotUniformInitializer(out_dim=-1, in_dim=-2, scale=1.):  # pylint: disable=invalid-name
  return ScaledInitializer(out_dim, in_dim, scale, 'fan_avg', 'uniform')


def LeCunNormalInitializer(out_dim=-1, in_dim=-2, scale=1.):  # pylint: disable=invalid-name
  return ScaledInitializer(out_dim, in_dim, scale, 'fan_in', 'normal')


def LeCunUniformInitializer(out_dim=-1, in_dim=-2, scale=1.):  # pylint: disable=invalid-name
  return ScaledInitializer(out_dim, in_dim, scale, 'fan_in', 'uniform')


def KaimingNormalInitializer(out_dim=-1, in_dim=-2, param=0.):  # pylint: disable=invalid-name
  """He initialization for (leaky) ReLUs with negative slope `param`."""
  return ScaledInitializer(out_dim, in_dim, 2.0 / (1 + param**2), 'fan_in',
                           'normal')


def KaimingUniformInitializer(out_dim=-1, in_dim=-2, param=0.):  # pylint: disable=invalid-name
  return ScaledInitializer(out_dim, in_dim, 2.0 / (1 + param**2), 'fan_in',
                           'uniform')


def OrthogonalInitializer(stddev=1.0):  # pylint: disable=invalid-name
  """Orthogonal matrices (rows or columns orthonormal), times `stddev`."""
  def init(shape, rng, dtype=jnp.float32):
    if len(shape) < 2:
      raise ValueError(f'OrthogonalInitializer: needs a shape of rank >= 2, '
                       f'got {tuple(shape)}.')
    rows = int(onp.prod(shape[:-1]))
    cols = shape[-1]
    a = random.normal(rng, (max(rows, cols), min(rows, cols)))
    q, r = fastmath.qr(a)
    # Sign correction makes the distribution uniform over orthogonal matrices.
    q = q * jnp.sign(jnp.diagonal(r))
    if rows < cols:
      q = q.T
    return (stddev * q.reshape(shape)).astype(dtype)
  return init


def AtariConvInit(kernel_shape, rng, dtype=jnp.float32):  # pylint: disable=invalid-name
  """Uniform in ±1/sqrt(fan_in), fan_in over all but the output axis."""
  fan_in = int(onp.prod(kernel_shape[:-1]))
  std = 1. / math.sqrt(fan_in)
  return random.uniform(rng, kernel_shape, jnp.float32, -std, std).astype(dtype)
