"""Core layers: Dense, Embedding, Dropout and weightless reshaping layers."""

from tfnp_trax import fastmath
from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.layers import _dtypes
from tfnp_trax.layers import base
from tfnp_trax.layers import initializers as init

__all__ = ['Dense', 'Embedding', 'Dropout', 'Flatten', 'LogSoftmax',
           'Softmax', 'LogSumExp', 'Mean', 'Sum', 'Min', 'Max', 'ArgMax',
           'Negate', 'StopGradient', 'check_float', 'log_softmax']


def check_float(layer_name, x):
  """Raises a TypeError naming `layer_name` unless `x` is floating-point."""
  if not fastmath.is_float(x):
    raise TypeError(f'{layer_name}: expects a floating-point input, got '
                    f'dtype {x.dtype.name} with shape {tuple(x.shape)}. Cast '
                    f'integer ids with tl.ToFloat() or embed them first.')


class Dense(base.Layer):
  """Affine map on the last axis: `y = x @ W + b` (or `x @ W` without bias).

  Weights are `(W, b)` with W `[in_dim, n_units]`, or just W if
  `use_bias=False`; with `use_bfloat16` they are stored in bfloat16. The
  weights are cast to the input's dtype, so bfloat16 inputs give bfloat16
  outputs.

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
    dtype = _dtypes.BFLOAT16 if self._use_bfloat16 else jnp.float32
    w = self._kernel_initializer(shape_w, rng_w).astype(dtype)
    if self._use_bias:
      b = self._bias_initializer((self._n_units,), rng_b).astype(dtype)
      self.weights = (w, b)
    else:
      self.weights = w


class Embedding(base.Layer):
  """Maps integer ids in [0, vocab_size) to learned vectors of d_feature.

  Ids outside the vocabulary are clipped into range, as in Trax (and as
  XLA's gather does), so eager, compiled and accelerator runs agree: a
  negative id reads row 0 and an id >= vocab_size reads the last row. With
  `use_bfloat16` the table is stored in bfloat16 and, as in Trax, the looked
  up vectors are returned in float32.

  Example:
    >>> layer = Embedding(10, 4)
    >>> _ = layer.init(shapes.ShapeDtype((2,), jnp.int32))
    >>> tuple(layer(jnp.array([1, 12])).shape)
    (2, 4)
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
    embedded = jnp.take(self.weights, ids, axis=0)
    if self._use_bfloat16:
      embedded = embedded.astype(jnp.float32)
    return embedded

  def init_weights_and_state(self, input_signature):
    del input_signature
    dtype = _dtypes.BFLOAT16 if self._use_bfloat16 else jnp.float32
    self.weights = self._kernel_initializer(
        (self._vocab_size, self._d_feature), self.rng).astype(dtype)


class Dropout(base.Layer):
  """Zeroes a `rate` fraction of entries in train mode and rescales the rest.

  In 'train' mode each entry is kept with probability 1 - rate and scaled by
  1 / (1 - rate), so the expected output equals the input; other modes are
  the identity. As in Trax, the state holds the rate (a float32 scalar); a
  state dict `{layer.name: rate}` overrides the rate at run time.

  Args:
    rate: probability of dropping each entry, in [0, 1).
    shared_axes: axes along which one mask value is shared (the mask has
      size 1 there and is broadcast).
    mode: 'train' drops; 'eval' and 'predict' pass inputs through.

  Example:
    >>> layer = Dropout(rate=0.5)
    >>> _ = layer.init(shapes.ShapeDtype((4,)))
    >>> y = layer(jnp.ones((4,), dtype=jnp.float32)).numpy()
    >>> sorted(set(y.tolist()) - {0.0})  # Kept entries are scaled by 2.
    [2.0]
  """

  def __init__(self, rate=0.0, shared_axes=None, mode='train'):
    super().__init__(name='Dropout')
    if not 0.0 <= rate < 1.0:
      raise ValueError(f'Dropout: rate must be in [0, 1), got {rate}.')
    self._initial_rate = rate
    self._shared_axes = [] if shared_axes is None else list(shared_axes)
    self._mode = mode

  def init_weights_and_state(self, input_signature):
    del input_signature
    self.state = jnp.asarray(self._initial_rate, dtype=jnp.float32)

  def forward(self, x):
    if self._mode != 'train':
      return x
    rate = self._initial_rate
    if isinstance(self.state, dict) and self.name in self.state:
      rate = self.state[self.name]
    elif rate == 0.0:
      return x
    shape = list(x.shape)
    for axis in self._shared_axes:
      if not -x.ndim <= axis < x.ndim:
        raise ValueError(f'{self.name}: shared axis {axis} is out of range '
                         f'for an input of shape {tuple(x.shape)}.')
      shape[axis] = 1
    keep_prob = 1.0 - rate
    keep = fastmath.random.bernoulli(self.rng, keep_prob, tuple(shape))
    # The mask is built in float32 so a Python-float scale does not promote
    # bfloat16 inputs.
    mask = (keep.astype(jnp.float32) / keep_prob).astype(x.dtype)
    return x * mask


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
    keep = tuple(x.shape[:n_axes_to_keep])
    rest = tuple(x.shape[n_axes_to_keep:])
    if keep.count(None) == 1 and None not in rest:
      # One unknown kept size (the batch, in a Keras or SavedModel graph):
      # reshape infers it, given the known size of the flattened part.
      size = 1
      for d in rest:
        size *= d
      return jnp.reshape(x, tuple(-1 if d is None else d for d in keep) +
                         (size,))
    return jnp.reshape(x, keep + (-1,))
  return base.Fn(f'Flatten_keep{n_axes_to_keep}', flatten)


def log_softmax(x, axis=-1):  # pylint: disable=invalid-name
  """x - logsumexp(x): log-probabilities along `axis`, computed stably."""
  return x - fastmath.logsumexp(x, axis=axis, keepdims=True)


def LogSoftmax(axis=-1):  # pylint: disable=invalid-name
  """log(softmax(x)) along `axis`, computed stably."""
  return base.Fn('LogSoftmax', lambda x: log_softmax(x, axis=axis))


def Softmax(axis=-1):  # pylint: disable=invalid-name
  """softmax(x) along `axis`."""
  return base.Fn('Softmax', _dtypes.dtype_preserving(
      lambda x: jnp.exp(log_softmax(x, axis=axis))))


def LogSumExp(axis=-1):  # pylint: disable=invalid-name
  """log(sum(exp(x))) along `axis`, kept as a size-1 axis (as in Trax)."""
  return base.Fn('LogSumExp',
                 lambda x: fastmath.logsumexp(x, axis=axis, keepdims=True))


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
