"""Running observation statistics, and the layer that normalizes by them.

An RL policy sees observations whose scale is unknown in advance. `Normalize`
keeps a running mean and variance of them in its layer state and returns
`(x - mean) / (sqrt(var) + epsilon)`.

The statistics are pure `init`/`update`/`get` functions over NamedTuple
state, so they work the same on host NumPy values, eagerly, and inside
`tf.function` or XLA. After n values the running mean is

  mean_{n+1} = n / (n + 1) * mean_n + x / (n + 1),

and the variance is the running mean of Welford's terms,

  var_{n+1} = n / (n + 1) * var_n + (x - mean_{n+1}) * (x - mean_n) / (n + 1),

which is the biased (population) variance of the values seen: `np.var` of
them. The variance starts at 1 but has weight zero in the first update, so
an unused layer divides by 1 and a used one by the data's spread.

`Normalize` updates its statistics only in mode 'collect', the mode the
agents build their data-collecting models in: there it adds the last time
step of each batch element (inputs are `(batch, time, ...)`), one at a time,
while fewer than `sample_limit` have been seen, then normalizes with the new
statistics. In every other mode ('train', 'eval', 'predict') it normalizes
with the statistics it holds and leaves them unchanged.

`LayerNormSquash` is the learned alternative: Dense, LayerNorm, Tanh.
"""

from typing import Any, NamedTuple

import gin
import numpy as onp
import tensorflow as tf

from tfnp_trax import fastmath
from tfnp_trax import layers as tl
from tfnp_trax.fastmath import backend
from tfnp_trax.fastmath import numpy as jnp

__all__ = ['RunningMeanState', 'RunningMeanAndVarianceState',
           'running_mean_init', 'running_mean_update',
           'running_mean_get_mean', 'running_mean_get_count',
           'running_mean_and_variance_init',
           'running_mean_and_variance_update',
           'running_mean_and_variance_get_mean',
           'running_mean_and_variance_get_count',
           'running_mean_and_variance_get_variance', 'Normalize',
           'LayerNormSquash']

# Trax's gin module for these names: configs write
# `@trax.rl.normalization.Normalize`.
_GIN_MODULE = 'trax.rl.normalization'


class RunningMeanState(NamedTuple):
  """A running mean and how many values it averages."""
  mean: Any
  count: Any


class RunningMeanAndVarianceState(NamedTuple):
  """Running means of the values and of their Welford variance terms."""
  mean_state: RunningMeanState
  var_state: RunningMeanState


# -- Running mean ------------------------------------------------------------
def running_mean_init(shape, fill_value=0):
  """The state of a running mean of arrays shaped `shape`, before any value.

  Args:
    shape: the shape of the averaged values.
    fill_value: the mean reported before the first update (it has weight
      zero in that update).

  Returns:
    `RunningMeanState(mean, count)`: NumPy arrays, the mean filled with
    `fill_value` (int64 for the default 0) and an int64 count of 0.
  """
  return RunningMeanState(onp.full(shape, fill_value), onp.array(0))


def running_mean_update(x, state):
  """Adds `x` to the running mean `state`.

  mean <- n / (n + 1) * mean + x / (n + 1);  n <- n + 1.

  The result is floating: float64 for NumPy's int64 counts (as NumPy
  divides them), float32 for the int32 counts that layers hold, or wider
  if the mean or `x` are.

  Args:
    x: the new value, shaped like the mean (or broadcasting to it).
    state: a `RunningMeanState` (or a `(mean, count)` pair).

  Returns:
    The new `RunningMeanState`.
  """
  mean, count = state
  count = jnp.asarray(count)
  new_count = count + 1
  keep = count / new_count
  dtype = jnp.result_type(keep, mean, x)
  new_mean = (keep.astype(dtype) * jnp.asarray(mean, dtype) +
              jnp.asarray(x, dtype) / new_count.astype(dtype))
  return RunningMeanState(new_mean, new_count)


def running_mean_get_mean(state):
  """The running mean held by `state`."""
  mean, _ = state
  return mean


def running_mean_get_count(state):
  """How many values `state` has averaged."""
  _, count = state
  return count


# -- Running mean and variance -----------------------------------------------
def running_mean_and_variance_init(shape):
  """The state of a running mean and variance of arrays shaped `shape`.

  Returns:
    `RunningMeanAndVarianceState`: a float64 mean of zeros and a float64
    variance of ones (NumPy arrays), each with an int64 count of 0.
  """
  return RunningMeanAndVarianceState(
      running_mean_init(shape, fill_value=0.0),
      running_mean_init(shape, fill_value=1.0))


def running_mean_and_variance_update(x, state):
  """Adds `x` to the running mean and variance `state` (Welford's update).

  Args:
    x: the new value.
    state: a `RunningMeanAndVarianceState` (or a pair of mean states).

  Returns:
    The new `RunningMeanAndVarianceState`.
  """
  mean_state, var_state = state
  old_mean = running_mean_get_mean(mean_state)
  mean_state = running_mean_update(x, mean_state)
  new_mean = running_mean_get_mean(mean_state)
  # Averaging these terms gives M2_n / n, which is np.var of the values.
  var_state = running_mean_update((x - new_mean) * (x - old_mean), var_state)
  return RunningMeanAndVarianceState(mean_state, var_state)


def running_mean_and_variance_get_mean(state):
  """The running mean held by `state`."""
  mean_state, _ = state
  return running_mean_get_mean(mean_state)


def running_mean_and_variance_get_count(state):
  """How many values `state` has seen."""
  mean_state, _ = state
  return running_mean_get_count(mean_state)


def running_mean_and_variance_get_variance(state):
  """The running biased (population) variance held by `state`."""
  _, var_state = state
  return running_mean_get_mean(var_state)


# -- Layers ------------------------------------------------------------------
def _as_layer_state(state):
  """`state` with its NumPy leaves in the dtypes the layer computes in.

  Those are the canonical ones, float32 and int32 (the dtypes JAX holds
  Trax's float64 and int64 initial state in), unless `use_backend` keeps
  64-bit inputs. A compiled step takes the state as an argument and would
  otherwise carry float64 through it where an eager call gives float32.
  The leaves stay NumPy arrays, as Trax's initial state is.
  """
  if backend.keeps_64bit_inputs():
    return state
  return fastmath.nested_map(fastmath.canonicalize_array, state)


@gin.configurable(module=_GIN_MODULE, denylist=['mode'])
class Normalize(tl.Layer):
  """Normalizes inputs by running statistics of the observations collected.

  y = (x - mean) / (sqrt(var) + epsilon), with the statistics (one per
  position of `x.shape[2:]`) held in the state as a
  `RunningMeanAndVarianceState`. In mode 'collect' the last time step of
  each batch element, `x[:, -1]`, is first added to them while their count
  is below `sample_limit`; other modes leave the state as it is.

  Example:
    >>> from tfnp_trax import shapes
    >>> layer = Normalize(mode='collect', epsilon=0.0)
    >>> _ = layer.init(shapes.ShapeDtype((2, 1, 1)))
    >>> y = layer(jnp.asarray([[[1.0]], [[3.0]]]))
    >>> [float(v) for v in y.reshape(-1)]  # Mean 2, variance 1.
    [-1.0, 1.0]
    >>> int(running_mean_and_variance_get_count(layer.state))
    2
  """

  def __init__(self, sample_limit=float('+inf'), epsilon=1e-5, mode='train'):
    super().__init__()
    self._sample_limit = sample_limit
    self._epsilon = epsilon
    self._mode = mode

  @property
  def uses_rng(self):
    return False  # Its forward draws no random numbers.

  def init_weights_and_state(self, input_signature):
    shape = tuple(input_signature.shape)[2:]
    self.state = _as_layer_state(running_mean_and_variance_init(shape))

  def forward(self, x):
    x = jnp.asarray(x)
    state = self.state
    stats_shape = tuple(running_mean_and_variance_get_mean(state).shape)
    if self._mode == 'collect':
      self._check_collect_input(x, stats_shape)
      state = self._collect(x[:, -1], state)
      self.state = state
    else:
      self._check_broadcasts(x, stats_shape)
    mean = running_mean_and_variance_get_mean(state)
    var = running_mean_and_variance_get_variance(state)
    return (x - mean) / (jnp.sqrt(var) + self._epsilon)

  def _collect(self, observations, state):
    """`state` with each observation added in turn, up to `sample_limit`."""

    def add(observation, state):
      new = running_mean_and_variance_update(observation, state)
      # Both branches of the cond (and the loop) must keep the state's
      # dtypes, whatever the observations' dtype.
      return fastmath.nested_map_multiarg(
          lambda n, o: jnp.asarray(n).astype(o.dtype), new, state)

    def body(i, state):
      count = running_mean_and_variance_get_count(state)
      return fastmath.cond(count < self._sample_limit,
                           lambda s: add(observations[i], s),
                           lambda s: s, state)

    n_observations = observations.shape[0]
    if n_observations is None:  # A batch size known only when run.
      n_observations = tf.shape(observations)[0]
    return fastmath.fori_loop(0, n_observations, body, state)

  def _check_collect_input(self, x, stats_shape):
    if x.ndim < 2 or x.shape[1] == 0:
      raise ValueError(
          f"{self.name}: mode='collect' takes observations shaped "
          f'(batch, time, ...) and adds the last time step to its '
          f'statistics, so it needs at least 2 axes and a non-empty time '
          f'axis; got an input of shape {tuple(x.shape)}.')
    obs_shape = tuple(x.shape)[2:]
    if not _fits(obs_shape, stats_shape):
      raise ValueError(
          f"{self.name}: mode='collect' got observations of shape "
          f'{obs_shape} (input shape {tuple(x.shape)} without its batch '
          f'and time axes), which do not fit statistics of shape '
          f'{stats_shape} (the input_signature.shape[2:] it was initialized '
          f'with). Re-run init with the new input signature.')

  def _check_broadcasts(self, x, stats_shape):
    if not _broadcasts(tuple(x.shape), stats_shape):
      raise ValueError(
          f'{self.name}: input shape {tuple(x.shape)} does not broadcast '
          f'with statistics of shape {stats_shape} (the '
          f'input_signature.shape[2:] it was initialized with). Re-run init '
          f'with the new input signature.')


def _aligned(shape, stats_shape):
  """Pairs of sizes of `shape` and `stats_shape`, aligned from the right."""
  n = max(len(shape), len(stats_shape))
  pad = lambda s: (1,) * (n - len(s)) + tuple(s)
  return list(zip(pad(shape), pad(stats_shape)))


def _broadcasts(shape, stats_shape):
  """Whether NumPy broadcasts the shapes (a size None may be anything)."""
  return all(a is None or b is None or a == b or 1 in (a, b)
             for a, b in _aligned(shape, stats_shape))


def _fits(shape, stats_shape):
  """Whether `shape` broadcasts to `stats_shape` without changing it."""
  return len(shape) <= len(stats_shape) and all(
      a is None or a in (1, b) for a, b in _aligned(shape, stats_shape))


@gin.configurable(module=_GIN_MODULE, denylist=['mode'])
def LayerNormSquash(mode, width=128):  # pylint: disable=invalid-name
  """A learned normalizer: Dense(width), LayerNorm, then Tanh into (-1, 1).

  Args:
    mode: ignored; the layer is the same in every mode.
    width: the Dense layer's output size.

  Returns:
    The `Serial` layer.
  """
  del mode
  return tl.Serial([tl.Dense(width), tl.LayerNorm(), tl.Tanh()])
