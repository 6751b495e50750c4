"""Core layers: Dense, Embedding, Dropout and weightless reshaping layers."""

from tfnp_trax import fastmath
from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.layers import base
from tfnp_trax.layers import initializers as init

__all__ = ['Dense', 'Embedding', 'Dropout', 'Flatten', 'LogSoftmax',
           'Softmax', 'LogSumExp', 'Mean', 'Sum', 'Min', 'Max', 'ArgMax',
           'Negate', 'StopGradient', 'check_float']


def check_float(layer_name, x):
  if not fastmath.is_float(x):
    raise TypeError(f'{layer_name}: expects a floating-point input, got '
                    f'dtype {x.dtype.name} with shape {tuple(x.shape)}. Cast '
                    f'integer ids with tl.ToFloat() or embed them first.')


class Dense(base.Layer):
  """Affine map on the last axis: `y = x @ W + b`.

  Example:
    >>> layer = Dense(4)
    >>> _ = layer.init(shapes.ShapeDtype((2, 3)))
    >>> tuple(layer(jnp.ones((2, 3), dtype=jnp.float32)).shape)
    (2, 4)
  """

  def __init__(self, n_units,
               kernel_initializer=init.GlorotUniformInitializer(),
               bias_initializer=init.RandomNormalInitializer(1e-6),
               use_bias=True, use_bfloat16=False):
    super().__init__(name=f'Dense_{n_units}')
    if not isinstance(n_units, int) or n_units < 1:
      raise ValueError(f'Dense: n_units must be a positive int, got '
                       f'{n_units!r}.')
    self._n_units = n_units
    self._kernel_initializer = kernel_initializer
    self._bias_initializer = bias_initializer
    self._use_bias = use_bias
    self._use_bfloat16 = use_bfloat16

  def forward(self, x):
    check_float(self.name, x)
    w = self.weights[0] if self._use_bias else self.weights
    if w is base.EMPTY_WEIGHTS or not hasattr(w, 'shape'):
      raise ValueError(f'{self.name}: has no weights; call '
                       f'layer.init(shapes.signature(x)) first.')
    if x.shape[-1] != w.shape[0]:
      raise ValueError(
          f'{self.name}: input last dim {x.shape[-1]} does not match weights '
          f'in_dim {w.shape[0]} (input shape {tuple(x.shape)}, weights shape '
          f'{tuple(w.shape)}). Re-run init with the new input signature.')
    y = jnp.matmul(x, w.astype(x.dtype))
    if self._use_bias:
      y = y + self.weights[1].astype(x.dtype)
    return y

  def init_weights_and_state(self, input_signature):
    shape_w = (input_signature.shape[-1], self._n_units)
    rng_w, rng_b = fastmath.random.split(self.rng, 2)
    dtype = jnp.bfloat16 if self._use_bfloat16 else jnp.float32
    w = self._kernel_initializer(shape_w, rng_w).astype(dtype)
    if self._use_bias:
      b = self._bias_initializer((self._n_units,), rng_b).astype(dtype)
      self.weights = (w, b)
    else:
      self.weights = w


class Embedding(base.Layer):
  """Maps integer ids in [0, vocab_size) to learned vectors of d_feature.

  Ids outside the vocabulary are clipped into range, as in Trax (and as
  XLA's gather does), so eager, compiled and accelerator runs agree.
  """

  def __init__(self, vocab_size, d_feature, use_bfloat16=False,
               kernel_initializer=init.ScaledInitializer(
                   out_dim=-1, in_dim=-2, scale=1., mode='fan_out',
                   distribution='uniform')):
    super().__init__(name=f'Embedding_{vocab_size}_{d_feature}')
    self._vocab_size = vocab_size
    self._d_feature = d_feature
    self._use_bfloat16 = use_bfloat16
    self._kernel_initializer = kernel_initializer

  def forward(self, x):
    if fastmath.is_float(x):
      raise TypeError(f'{self.name}: expects integer ids, got dtype '
                      f'{x.dtype.name} with shape {tuple(x.shape)}. Cast '
                      f'with x.astype(jnp.int32).')
    ids = jnp.clip(x.astype(jnp.int32), 0, self._vocab_size - 1)
    return jnp.take(self.weights, ids, axis=0)

  def init_weights_and_state(self, input_signature):
    del input_signature
    dtype = jnp.bfloat16 if self._use_bfloat16 else jnp.float32
    self.weights = self._kernel_initializer(
        (self._vocab_size, self._d_feature), self.rng).astype(dtype)


class Dropout(base.Layer):
  """Zeroes a `rate` fraction of entries in train mode and rescales the rest.

  Args:
    rate: probability of dropping each entry.
    shared_axes: axes along which one mask value is shared.
    mode: 'train' drops; 'eval' and 'predict' are the identity.
  """

  def __init__(self, rate=0.0, shared_axes=None, mode='train'):
    super().__init__(name='Dropout')
    if not 0.0 <= rate < 1.0:
      raise ValueError(f'Dropout: rate must be in [0, 1), got {rate}.')
    self._rate = rate
    self._shared_axes = tuple(shared_axes or ())
    self._mode = mode

  def forward(self, x):
    if self._mode != 'train' or self._rate == 0.0:
      return x
    shape = list(x.shape)
    for a in self._shared_axes:
      shape[a] = 1
    keep = fastmath.random.bernoulli(self.rng, 1.0 - self._rate, tuple(shape))
    return jnp.where(keep, x / (1.0 - self._rate), jnp.zeros_like(x))


def Flatten(n_axes_to_keep=1):  # pylint: disable=invalid-name
  """Flattens all but the first `n_axes_to_keep` axes into one."""
  if n_axes_to_keep < 0:
    raise ValueError(f'Flatten: n_axes_to_keep must be >= 0, got '
                     f'{n_axes_to_keep}.')

  def flatten(x):
    if n_axes_to_keep >= x.ndim:
      raise ValueError(f'Flatten: n_axes_to_keep ({n_axes_to_keep}) must be '
                       f'less than the input rank {x.ndim} (shape '
                       f'{tuple(x.shape)}).')
    return jnp.reshape(x, tuple(x.shape[:n_axes_to_keep]) + (-1,))
  return base.Fn('Flatten', flatten)


def LogSoftmax(axis=-1):  # pylint: disable=invalid-name
  """log(softmax(x)) along `axis`, computed stably."""
  return base.Fn('LogSoftmax',
                 lambda x: x - fastmath.logsumexp(x, axis=axis, keepdims=True))


def Softmax(axis=-1):  # pylint: disable=invalid-name
  """softmax(x) along `axis`."""
  return base.Fn('Softmax', lambda x: jnp.exp(
      x - fastmath.logsumexp(x, axis=axis, keepdims=True)))


def LogSumExp(axis=-1):  # pylint: disable=invalid-name
  """log(sum(exp(x))) along `axis`."""
  return base.Fn('LogSumExp', lambda x: fastmath.logsumexp(x, axis=axis))


def Mean(axis=-1, keepdims=False):  # pylint: disable=invalid-name
  """Mean along `axis`; keepdims keeps a size-1 axis."""
  return base.Fn('Mean', lambda x: jnp.mean(x, axis=axis, keepdims=keepdims))


def Sum(axis=None, keepdims=False):  # pylint: disable=invalid-name
  """Sum along `axis` (all axes if None)."""
  return base.Fn('Sum', lambda x: jnp.sum(x, axis=axis, keepdims=keepdims))


def Min(axis=-1, keepdims=False):  # pylint: disable=invalid-name
  """Minimum along `axis`."""
  return base.Fn('Min', lambda x: jnp.min(x, axis=axis, keepdims=keepdims))


def Max(axis=-1, keepdims=False):  # pylint: disable=invalid-name
  """Maximum along `axis`."""
  return base.Fn('Max', lambda x: jnp.max(x, axis=axis, keepdims=keepdims))


def ArgMax(axis=-1):  # pylint: disable=invalid-name
  """Index of the maximum along `axis` (int32)."""
  return base.Fn('ArgMax',
                 lambda x: jnp.argmax(x, axis=axis).astype(jnp.int32))


def Negate():  # pylint: disable=invalid-name
  """Element-wise negation."""
  return base.Fn('Negate', lambda x: -x)


def StopGradient():  # pylint: disable=invalid-name
  """Identity whose gradient is zero."""
  return base.Fn('StopGradient', fastmath.stop_gradient)
