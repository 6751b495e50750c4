"""More core layers and functions, kept apart to keep `core.py` small.

Weights, RandomUniform, ToFloat, LocallyConnected1d, `one_hot` and the
Gaussian log-densities `log_gaussian_pdf` / `log_gaussian_diag_pdf`.
"""

import inspect
import math

from tfnp_trax import fastmath
from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.layers import _dtypes
from tfnp_trax.layers import base
from tfnp_trax.layers import initializers as init

__all__ = ['Weights', 'RandomUniform', 'ToFloat', 'LocallyConnected1d',
           'one_hot', 'log_gaussian_pdf', 'log_gaussian_diag_pdf']

_LOCAL_PADDINGS = ('VALID', 'SAME', 'WRAP')


class Weights(base.Layer):
  """A layer with no inputs whose one output is its learned weight tensor.

  Example:
    >>> layer = Weights(init.RandomNormalInitializer(), shape=(3,))
    >>> _ = layer.init(())
    >>> tuple(layer(()).shape)
    (3,)
  """

  def __init__(self, initializer, shape=tuple(), use_bfloat16=False):
    super().__init__(name=f'Weights_{shape}', n_in=0, n_out=1)
    self._shape = tuple(shape)
    self._initializer = initializer
    self._use_bfloat16 = use_bfloat16

  def forward(self, x):
    del x  # This layer takes no inputs.
    return self.weights

  def init_weights_and_state(self, input_signature):
    del input_signature
    w = self._initializer(self._shape, self.rng)
    self.weights = w.astype(_dtypes.BFLOAT16) if self._use_bfloat16 else w


class RandomUniform(base.Layer):
  """A layer with no inputs returning fresh Uniform[min_val, max_val) samples.

  Each call draws from the layer's rng, so outputs change with the rng the
  caller passes. With `sync=True` every replica of a data-parallel run draws
  the same values (the keys are summed across replicas first).

  Example:
    >>> layer = RandomUniform(shape=(3,))
    >>> _ = layer.init(())
    >>> tuple(layer(()).shape)
    (3,)
  """

  def __init__(self, min_val=0.0, max_val=1.0, shape=(), dtype=jnp.float32,
               sync=False):
    super().__init__(name='RandomUniform', n_in=0, n_out=1)
    self._min_val = min_val
    self._max_val = max_val
    self._shape = tuple(shape)
    self._dtype = dtype
    self._sync = sync

  def forward(self, xs):
    del xs  # This layer takes no inputs.
    rng = self.rng
    if self._sync and fastmath.device_count() > 1:
      rng = fastmath.psum(rng, 'batch')
    return fastmath.random.uniform(rng, self._shape, self._dtype,
                                   self._min_val, self._max_val)


def ToFloat():  # pylint: disable=invalid-name
  """Casts its input to float32 (for example integer ids or pixels).

  Example:
    >>> ToFloat()(jnp.array([1, 2])).dtype.name
    'float32'
  """
  return base.Fn('ToFloat', lambda x: x.astype(jnp.float32))


class LocallyConnected1d(base.Layer):
  """A 1-D convolution whose weights differ at every position.

  Input `[..., L, D]`; weights `w[L, kernel_size, D, filters]` (one kernel
  per input position) and bias `[L_out, filters]`. With h = (kernel_size -
  1) / 2 and r[l, i] = x[l] @ w[l, i], the output at position o is

    'VALID': sum_i r[o + 2h - i, i]              (L_out = L - 2h)
    'SAME':  sum_i r[o - h + i, i], zero outside  (L_out = L)
    'WRAP':  sum_i r[(o - h + i) mod L, i]        (L_out = L)

  which is Trax's convention (the tap order differs between VALID and the
  padded modes). L is fixed at init, since every position has its own
  weights.

  Args:
    filters: number of output channels.
    kernel_size: window length; must be odd.
    kernel_initializer: initializer for `w`; the position axis is left out
      of its fans.
    bias_initializer: initializer for the bias.
    use_bias: whether to add a bias.
    padding: 'VALID', 'SAME' or 'WRAP'.

  Example:
    >>> layer = LocallyConnected1d(4, 3, padding='SAME')
    >>> _ = layer.init(shapes.ShapeDtype((2, 6, 3)))
    >>> tuple(layer(jnp.ones((2, 6, 3), dtype=jnp.float32)).shape)
    (2, 6, 4)
  """

  def __init__(self, filters, kernel_size,
               kernel_initializer=init.GlorotUniformInitializer(),
               bias_initializer=init.RandomNormalInitializer(1e-6),
               use_bias=True, padding='VALID'):
    super().__init__(name=f'LocallyConnected1d_{filters}_{kernel_size}')
    if kernel_size < 1 or kernel_size % 2 != 1:
      raise ValueError(f'LocallyConnected1d: kernel_size must be a positive '
                       f'odd number, got {kernel_size}.')
    if padding not in _LOCAL_PADDINGS:
      raise ValueError(f'LocallyConnected1d: padding must be one of '
                       f'{_LOCAL_PADDINGS}, got {padding!r}.')
    self._filters = filters
    self._kernel_size = kernel_size
    self._kernel_initializer = kernel_initializer
    self._bias_initializer = bias_initializer
    self._use_bias = use_bias
    self._padding = padding

  def forward(self, x):
    x = x if hasattr(x, 'dtype') else jnp.asarray(x)
    w, b = self.weights if self._use_bias else (self.weights, None)
    # Integer inputs promote with the weights, as Trax's jnp.einsum does.
    dtype = _dtypes.compute_dtype(self.name, x, w)
    x, w = _dtypes.cast_to(x, dtype), _dtypes.cast_to(w, dtype)
    if x.ndim < 2 or tuple(x.shape[-2:]) != tuple(w.shape[0:3:2]):
      raise ValueError(
          f'{self.name}: input shape {tuple(x.shape)} must end in (length, '
          f'depth) = {tuple(w.shape[0:3:2])}, as the layer was initialized. '
          f'Re-run init with the new input signature.')
    r = jnp.einsum('...lp,lkpd->...lkd', x, w)
    k, h, length = self._kernel_size, (self._kernel_size - 1) // 2, x.shape[-2]
    pad = [(0, 0)] * (r.ndim - 2)
    outs = []
    for i in range(k):
      ri = r[..., i, :]
      if self._padding == 'VALID':
        outs.append(ri[..., 2 * h - i:length - i, :])
      elif self._padding == 'SAME':
        padded = jnp.pad(ri, pad[:-1] + [(h, h), (0, 0)], mode='constant')
        outs.append(padded[..., i:i + length, :])
      else:
        outs.append(jnp.roll(ri, h - i, axis=-2))
    y = sum(outs[1:], outs[0])
    return jnp.add(y, _dtypes.cast_to(b, dtype)) if self._use_bias else y

  def init_weights_and_state(self, input_signature):
    length, depth = input_signature.shape[-2:]
    if self._padding == 'VALID' and length < self._kernel_size:
      raise ValueError(f'{self.name}: input length {length} is shorter than '
                       f"kernel_size {self._kernel_size} with 'VALID' "
                       f'padding (input shape {input_signature.shape}).')
    shape_w = (length, self._kernel_size, depth, self._filters)
    out_len = length - self._kernel_size + 1 if (
        self._padding == 'VALID') else length
    rng_w, rng_b = fastmath.random.split(self.rng, 2)
    params = inspect.signature(self._kernel_initializer).parameters
    if 'nonreceptive_dims' in params:
      w = self._kernel_initializer(shape_w, rng_w, nonreceptive_dims=[0])
    else:
      w = self._kernel_initializer(shape_w, rng_w)
    if self._use_bias:
      self.weights = (w, self._bias_initializer((out_len, self._filters),
                                                rng_b))
    else:
      self.weights = w


def one_hot(x, n_categories, dtype=jnp.float32):  # pylint: disable=invalid-name
  """One-hot encodes `x` into a new last axis of size `n_categories`.

  Entries outside [0, n_categories) give all-zero vectors.

  Example:
    >>> one_hot(jnp.array([2, 5]), 3).numpy()
    array([[0., 0., 1.],
           [0., 0., 0.]], dtype=float32)
  """
  categories = jnp.arange(n_categories).astype(x.dtype)
  return (x[..., None] == categories).astype(dtype)


def log_gaussian_pdf(x, mu, sigma):  # pylint: disable=invalid-name
  """log N(x | mu, sigma) for a full covariance matrix.

  -(d log(2 pi) + log|sigma| + (x - mu)^T sigma^-1 (x - mu)) / 2.

  Args:
    x: points `[..., d]`.
    mu: means `[..., d]`, broadcasting against `x`.
    sigma: covariance matrices `[..., d, d]`, symmetric positive definite.

  Returns:
    The log-densities, shape `[...]`.
  """
  d = mu.shape[-1]
  diff = x - mu
  # Covariances are positive definite, so log|sigma| comes from the Cholesky
  # factor, which (unlike slogdet) also compiles with XLA.
  chol = fastmath.linalg.cholesky(sigma)
  logdet = 2 * jnp.sum(jnp.log(jnp.diagonal(chol, axis1=-2, axis2=-1)),
                       axis=-1)
  y = fastmath.linalg.solve(sigma, diff)
  quad = jnp.sum(diff * y, axis=-1)
  return -0.5 * (d * math.log(2 * math.pi) + logdet + quad)


def log_gaussian_diag_pdf(x, mu, diag_sigma):  # pylint: disable=invalid-name
  """log N(x | mu, diag(diag_sigma)): `diag_sigma` holds the variances.

  -(d log(2 pi) + sum log diag_sigma + sum (x - mu)^2 / diag_sigma) / 2.
  (Trax's version divides only `mu` by `diag_sigma`, an operator-precedence
  slip; this one is the density its docstring names.)

  Args:
    x: points `[..., d]`.
    mu: means `[..., d]`.
    diag_sigma: positive variances `[..., d]`.

  Returns:
    The log-densities, shape `[...]` (the broadcast of the three inputs
    without the last axis).
  """
  d = mu.shape[-1]
  diff = x - mu
  logdet = jnp.sum(jnp.log(diag_sigma), axis=-1)
  quad = jnp.sum(diff * diff / diag_sigma, axis=-1)
  return -0.5 * (d * math.log(2 * math.pi) + logdet + quad)
