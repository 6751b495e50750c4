"""Normalization layers: LayerNorm, BatchNorm and FilterResponseNorm.

Statistics are computed in float32 (float64 inputs stay float64) so that
bfloat16 activations do not lose precision in the sums; every layer returns
a floating input's dtype. Integer and boolean inputs follow Trax: LayerNorm
and FilterResponseNorm promote them with their float32 weights (float32
out), while BatchNorm rejects them, as Trax's check that its output keeps
the input's dtype does.
"""

from tfnp_trax import fastmath
from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.layers import base
from tfnp_trax.layers import core

__all__ = ['LayerNorm', 'BatchNorm', 'FilterResponseNorm']

# 'collect' is the mode RL agents build their data-collecting models in;
# it acts as 'eval' (no dropout, no statistics updates), as in Trax.
_MODES = ('train', 'eval', 'predict', 'collect')


def _stats_dtype(x):
  """The dtype normalization statistics of `x` are computed in."""
  return jnp.float64 if x.dtype == jnp.float64 else jnp.float32


def _out_dtype(layer_name, x, *weights):
  """A floating input's own dtype; float32 or wider for other inputs.

  Trax's float statistics (jnp.mean of an int32 input is float32) meet the
  weights, which are int32 themselves when Trax initialized them from an
  int32 signature, so the output is float32 either way.
  """
  dtype = core.compute_dtype(layer_name, x, *weights)
  return dtype if fastmath.is_float(x) else fastmath.result_type(
      jnp.float32, dtype)


def _check_channels(layer_name, x, n_channels, what):
  if x.ndim < 1 or x.shape[-1] != n_channels:
    raise ValueError(
        f'{layer_name}: input has {x.shape[-1] if x.ndim else "no"} channels '
        f'(last axis, input shape {tuple(x.shape)}) but the layer was '
        f'initialized for {n_channels} ({what}). Re-run init with the new '
        f'input signature.')


class LayerNorm(base.Layer):
  """Normalizes each vector on the last axis to zero mean and unit variance.

  y = (x - mean) / sqrt(var + epsilon) * scale + bias, with the mean and the
  biased variance over the last axis. With `center=False` neither the mean
  is subtracted nor the bias added (the bias weight is still created, as in
  Trax, so weight trees keep one structure).

  Example:
    >>> from tfnp_trax import shapes
    >>> layer = LayerNorm()
    >>> _ = layer.init(shapes.ShapeDtype((1, 3)))
    >>> y = layer(jnp.asarray([[1., 2., 3.]], dtype=jnp.float32))
    >>> [round(float(v), 3) for v in y[0]]
    [-1.225, 0.0, 1.225]
  """

  def __init__(self, center=True, epsilon=1e-6):
    super().__init__(name='LayerNorm')
    self._center = center
    self._epsilon = epsilon

  @property
  def uses_rng(self):
    return False  # Its forward draws no random numbers.

  def forward(self, x):
    x = jnp.asarray(x)
    scale, bias = self.weights
    out_dtype = _out_dtype(self.name, x, scale, bias)
    _check_channels(self.name, x, scale.shape[-1], 'scale size')
    dtype = _stats_dtype(x)
    # Trax's formula, with its closed-form gradient (fastmath.layer_norm).
    y = fastmath.layer_norm(x.astype(dtype), scale.astype(dtype),
                            bias.astype(dtype), self._epsilon, self._center)
    return y.astype(out_dtype)

  def init_weights_and_state(self, input_signature):
    features = input_signature.shape[-1]
    self.weights = (jnp.ones((features,), dtype=jnp.float32),
                    jnp.zeros((features,), dtype=jnp.float32))


class BatchNorm(base.Layer):
  """Normalizes over `axis` with batch statistics, kept as running averages.

  In 'train' mode the layer normalizes with the statistics of the current
  batch and updates its state
  `running = momentum * running + (1 - momentum) * batch_statistic`
  for the mean and the biased variance, counting batches. In 'eval' and
  'predict' modes it normalizes with the running statistics and leaves the
  state unchanged. When the batch axis 0 is normalized under a multi-replica
  strategy, the batch statistics are averaged across replicas (synchronized
  batch norm), so replicas match one device on the whole batch. Then
  y = gamma * (x - mean) / sqrt(var + epsilon) + beta,
  with gamma only if `scale` and beta only if `center`.

  Weights are `(beta, gamma)`, shaped like the input without `axis` (an
  empty tuple for a disabled one); state is `(running_mean, running_var,
  n_batches)`, the statistics shaped like the input with size 1 on `axis`.

  Example:
    >>> from tfnp_trax import shapes
    >>> layer = BatchNorm(axis=(0,))
    >>> _ = layer.init(shapes.ShapeDtype((4, 3)))
    >>> _ = layer(jnp.ones((4, 3), dtype=jnp.float32))
    >>> int(layer.state[2])  # Batches seen in train mode.
    1
  """

  def __init__(self, axis=(0, 1, 2), epsilon=1e-5, center=True, scale=True,
               momentum=0.999, mode='train'):
    super().__init__(name='BatchNorm')
    if mode not in _MODES:
      raise ValueError(f'BatchNorm: mode must be one of {_MODES}, got '
                       f'{mode!r}.')
    self._axis = (axis,) if isinstance(axis, int) else tuple(axis)
    self._epsilon = epsilon
    self._center = center
    self._scale = scale
    self._momentum = momentum
    self._mode = mode

  def _stats_shape(self, shape):
    return tuple(1 if i in self._axis else d for i, d in enumerate(shape))

  def _check_input(self, x):
    running_mean = self.state[0]
    if (x.ndim != running_mean.ndim or
        self._stats_shape(x.shape) != tuple(running_mean.shape)):
      kept = [d for i, d in enumerate(running_mean.shape)
              if i not in self._axis]
      raise ValueError(
          f'{self.name}: input shape {tuple(x.shape)} does not match the '
          f'shape the layer was initialized for: rank {running_mean.ndim} '
          f'with sizes {kept} on the axes outside axis={self._axis} '
          f'(statistics shape {tuple(running_mean.shape)}). Re-run init with '
          f'the new input signature, or set `axis` to the axes to average.')
    empty = [i for i in self._axis if x.shape[i] == 0]
    if self._mode == 'train' and empty:
      # The mean of no values is NaN, and it would poison the running
      # statistics for good.
      raise ValueError(
          f'{self.name}: input shape {tuple(x.shape)} is empty on axis '
          f'{empty[0]}, so there are no values to take batch statistics '
          f'over (mode=\'train\'); expected at least one example. Skip '
          f'empty batches before the model.')

  def forward(self, x):
    x = jnp.asarray(x)
    core.check_float(self.name, x, "Trax rejects it too: batch norm must "
                     "return its input's dtype, and its output is float.")
    self._check_input(x)
    running_mean, running_var, n_batches = self.state
    dtype = _stats_dtype(x)
    xs = x.astype(dtype)
    if self._mode == 'train':
      # Under several replicas the batch is sharded: average the statistics
      # over replicas (synchronized batch norm) so every replica normalizes
      # with the whole batch's statistics, as one device would.
      sync = fastmath.pmean if 0 in self._axis else (lambda v: v)
      mean = sync(jnp.mean(xs, axis=self._axis, keepdims=True))
      # Two-pass variance: E[x^2] - E[x]^2 cancels badly in float32.
      var = sync(jnp.mean(jnp.square(xs - mean), axis=self._axis,
                          keepdims=True))
      m = self._momentum
      self.state = (
          (m * running_mean + (1 - m) * mean).astype(running_mean.dtype),
          (m * running_var + (1 - m) * var).astype(running_var.dtype),
          n_batches + 1)
    else:
      mean, var = running_mean.astype(dtype), running_var.astype(dtype)
    y = (xs - mean) / jnp.sqrt(var + self._epsilon)
    beta, gamma = self.weights
    # Weights lack the normalized axes; put them back as size-1 axes.
    expand = self._stats_shape(x.shape)
    if self._scale:
      y = y * gamma.astype(dtype).reshape(expand)
    if self._center:
      y = y + beta.astype(dtype).reshape(expand)
    return y.astype(x.dtype)

  def init_weights_and_state(self, input_signature):
    shape = tuple(input_signature.shape)
    rank = len(shape)
    outside = [a for a in self._axis if not -rank <= a < rank]
    if outside:
      raise ValueError(
          f'{self.name}: axis {tuple(self._axis)} has {outside} outside an '
          f'input of rank {rank} (shape {shape}). The default (0, 1, 2) '
          f'normalizes images [batch, height, width, channels]; for '
          f'[batch, features] pass axis=(0,), for [batch, length, features] '
          f'axis=(0, 1).')
    axis = tuple(a % rank for a in self._axis)
    if len(set(axis)) != len(axis):
      raise ValueError(f'{self.name}: axis {tuple(self._axis)} repeats an '
                       f'axis of an input of rank {rank} (it is {axis} '
                       f'counted from the front).')
    self._axis = axis
    kept = tuple(d for i, d in enumerate(shape) if i not in self._axis)
    beta = jnp.zeros(kept, dtype=jnp.float32) if self._center else ()
    gamma = jnp.ones(kept, dtype=jnp.float32) if self._scale else ()
    stats = self._stats_shape(shape)
    self.weights = (beta, gamma)
    self.state = (jnp.zeros(stats, dtype=jnp.float32),
                  jnp.ones(stats, dtype=jnp.float32),
                  jnp.zeros((), dtype=jnp.int64))


class FilterResponseNorm(base.Layer):
  """Filter Response Normalization (https://arxiv.org/abs/1911.09737).

  For input (batch, ..., channels), nu2 is the mean of x^2 over every axis
  but the first and the last, and y = gamma * x / sqrt(nu2 + epsilon) +
  beta. epsilon is `init_epsilon`, plus |learnt epsilon| if `learn_epsilon`
  (the absolute value keeps it positive whatever sign training gives it).
  Pair it with `ThresholdedLinearUnit` as the non-linearity.

  Weights are `(gamma, beta, epsilon_l)`: per-channel gamma and beta, and
  `epsilon_l` either `()` or a 1-tuple holding the learnt scalar.

  Example:
    >>> from tfnp_trax import shapes
    >>> layer = FilterResponseNorm()
    >>> _ = layer.init(shapes.ShapeDtype((2, 4, 4, 3)))
    >>> tuple(layer(jnp.ones((2, 4, 4, 3), dtype=jnp.float32)).shape)
    (2, 4, 4, 3)
  """

  def __init__(self, mode=None, learn_epsilon=False, init_epsilon=1e-6,
               init_learnt_epsilon=1e-4):
    super().__init__(name='FilterResponseNorm')
    del mode  # The same computation in every mode.
    if init_epsilon <= 0 or init_learnt_epsilon <= 0:
      raise ValueError(
          f'FilterResponseNorm: init_epsilon and init_learnt_epsilon must be '
          f'positive, got {init_epsilon} and {init_learnt_epsilon}.')
    self._learn_epsilon = learn_epsilon
    self._init_epsilon = init_epsilon
    self._init_learnt_epsilon = init_learnt_epsilon

  def forward(self, x):
    x = jnp.asarray(x)
    gamma, beta, epsilon_l = self.weights
    out_dtype = _out_dtype(self.name, x, gamma, beta)
    _check_channels(self.name, x, gamma.shape[-1], 'gamma size')
    dtype = _stats_dtype(x)
    xs = x.astype(dtype)
    epsilon = jnp.asarray(self._init_epsilon, dtype=dtype)
    if epsilon_l is not base.EMPTY_WEIGHTS and len(epsilon_l):
      epsilon = epsilon + jnp.abs(epsilon_l[0].astype(dtype))
    axes = tuple(range(1, x.ndim - 1))
    nu2 = jnp.mean(xs * xs, axis=axes, keepdims=True)
    y = gamma.astype(dtype) * xs / jnp.sqrt(nu2 + epsilon) + beta.astype(
        dtype)
    return y.astype(out_dtype)

  def init_weights_and_state(self, input_signature):
    n_channels = input_signature.shape[-1]
    epsilon_l = base.EMPTY_WEIGHTS
    if self._learn_epsilon:
      epsilon_l = (jnp.asarray(self._init_learnt_epsilon, dtype=jnp.float32),)
    self.weights = (jnp.ones((n_channels,), dtype=jnp.float32),
                    jnp.zeros((n_channels,), dtype=jnp.float32), epsilon_l)
