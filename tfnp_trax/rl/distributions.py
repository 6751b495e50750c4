"""Action distributions parametrized by a network's outputs.

A distribution reads its parameters ("dist inputs") from the last axis of an
array; leading axes (batch, time) broadcast. Sampling takes an int32 [2] key
and is done by TensorFlow Probability's stateless samplers; log-probabilities
and entropies are written in `jnp`, so they differentiate like any layer.
"""

# Layer constructors are CamelCase, as in Trax.
# pylint: disable=invalid-name

import gin
import numpy as onp
import tensorflow as tf

from tfnp_trax import fastmath
from tfnp_trax import layers as tl
from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.rl import _spaces

__all__ = ['Distribution', 'Categorical', 'Gaussian', 'create_distribution',
           'LogLoss']

_LOG_SQRT_2PI = 0.5 * onp.log(2.0 * onp.pi)


def _tfd():
  # Imported on first use: TFP is slow to import and only sampling needs it.
  import tensorflow_probability as tfp  # pylint: disable=g-import-not-at-top
  return tfp.distributions


def _check_key(name, key):
  return fastmath.random.check_key(key, f'{name}.sample')


def _host_values(name, *values):
  """`values` as NumPy arrays, for sampling from NumPy's global generator.

  Trax samples without a key from `np.random` (trax/rl/distributions.py
  Categorical.sample through tl.logsoftmax_sample, Gaussian.sample), which
  needs concrete values: inside a traced function a key is required.
  """
  if any(fastmath.checks.is_traced(v) for v in values):
    raise ValueError(
        f'{name}.sample: sampling with temperature > 0 inside a traced '
        f'function needs a key (without one, Trax draws from NumPy\'s '
        f'global generator, which only works eagerly); pass '
        f'key=fastmath.random.get_prng(seed) (an int32 [2] key).')
  return [onp.asarray(v) for v in values]


class Distribution:
  """A family of distributions parametrized by the last axis of `inputs`."""

  @property
  def n_inputs(self):
    """How many parameters (last-axis size of the inputs) it reads."""
    raise NotImplementedError

  def sample(self, inputs, temperature=1.0, key=None):
    """Samples a point; at temperature 0 returns the most likely point.

    Args:
      inputs: distribution parameters on the last axis.
      temperature: scales the noise; 0 picks the most likely point.
      key: an int32 [2] key. Without one, as in Trax, the noise comes from
        NumPy's global generator (`np.random.seed` makes it repeatable);
        that works only eagerly.
    """
    raise NotImplementedError

  def log_prob(self, inputs, point):
    """Log-probability (or log-density) of `point` under `inputs`."""
    raise NotImplementedError

  def entropy(self, inputs):
    """Entropy of the distribution given by `inputs`."""
    raise NotImplementedError

  def LogProb(self):
    """A layer mapping `(inputs, point)` to `log_prob(inputs, point)`."""
    return tl.Fn('LogProb', lambda inputs, point: self.log_prob(inputs, point))

  def _check_inputs(self, inputs):
    if inputs.shape[-1] != self.n_inputs:
      raise ValueError(
          f'{type(self).__name__}: expected {self.n_inputs} distribution '
          f'parameters on the last axis, got {inputs.shape[-1]} (inputs '
          f'shape {tuple(inputs.shape)}). Size the policy head with '
          f'Dense(distribution.n_inputs).')


# Registered with gin on import, as Trax's classes are (trax/rl/
# distributions.py), so `Gaussian.learn_std = "shared"` configures the
# distribution that create_distribution builds.
_GIN_MODULE = 'trax.rl.distributions'


@gin.configurable(module=_GIN_MODULE, denylist=['n_categories', 'shape'])
class Categorical(Distribution):
  """Categorical over `n_categories` per element of `shape`, from logits.

  Example:
    >>> dist = Categorical(3)
    >>> logits = jnp.array([[0.0, 0.0, 10.0]], dtype=jnp.float32)
    >>> int(dist.sample(logits, temperature=0.0)[0])
    2
  """

  def __init__(self, n_categories, shape=()):
    self._n_categories = int(n_categories)
    self._shape = tuple(shape)

  @property
  def n_inputs(self):
    return int(onp.prod(self._shape, dtype=onp.int64)) * self._n_categories

  def _logits(self, inputs):
    self._check_inputs(inputs)
    return _reshape_inner(inputs, inputs, self._shape + (self._n_categories,))

  def sample(self, inputs, temperature=1.0, key=None):
    if key is None and isinstance(inputs, onp.ndarray):
      # Host inputs (a trajectory agent's policy, one step at a time): the
      # whole draw stays in NumPy, one conversion at the end.
      self._check_inputs(inputs)
      logits = inputs.reshape(inputs.shape[:-1] + self._shape +
                              (self._n_categories,))
      if temperature != 0.0:
        u = onp.random.uniform(low=1e-6, high=1.0 - 1e-6, size=logits.shape)
        logits = logits + -onp.log(-onp.log(u)) * temperature
      return jnp.asarray(onp.argmax(logits, axis=-1), dtype=jnp.int32)
    logits = self._logits(inputs)
    if temperature == 0.0:
      return jnp.argmax(logits, axis=-1).astype(jnp.int32)
    if key is None:
      # Trax's tl.logsoftmax_sample: Gumbel noise from np.random, argmax.
      (values,) = _host_values('Categorical', logits)
      u = onp.random.uniform(low=1e-6, high=1.0 - 1e-6, size=values.shape)
      gumbel = -onp.log(-onp.log(u))
      return jnp.asarray(onp.argmax(values + gumbel * temperature, axis=-1),
                         dtype=jnp.int32)
    key = _check_key('Categorical', key)
    dist = _tfd().Categorical(logits=logits / temperature, dtype='int32')
    return dist.sample(seed=key)

  def _log_softmax(self, inputs):
    return tl.log_softmax(self._logits(inputs), axis=-1)

  def log_prob(self, inputs, point):
    log_probs = self._log_softmax(inputs)
    picked = jnp.sum(log_probs * fastmath.one_hot(point, self._n_categories,
                                                  dtype=log_probs.dtype),
                     axis=-1)
    # Independent elements of a multi-dimensional sample multiply.
    return jnp.sum(picked, axis=tuple(range(-len(self._shape), 0))) \
        if self._shape else picked

  def entropy(self, inputs):
    log_probs = self._log_softmax(inputs)
    per_element = -jnp.sum(jnp.exp(log_probs) * log_probs, axis=-1)
    return jnp.sum(per_element, axis=tuple(range(-len(self._shape), 0))) \
        if self._shape else per_element


_LEARN_STD = {None: 'constant', 'shared': 'shared', 'separate': 'separate',
              'per-dimension': 'separate'}


@gin.configurable(module=_GIN_MODULE, denylist=['shape'])
class Gaussian(Distribution):
  """Independent Gaussian over a sample of `shape`, parametrized by its mean.

  Args:
    shape: shape of one sample.
    std: the standard deviation; with a learned std, the raw parameter `s`
      gives `softplus(s + std)`, as in Trax.
    learn_std: None (fixed `std`), 'shared' (one learned std for all
      dimensions) or 'per-dimension' (alias 'separate'; one per dimension).

  Example:
    >>> dist = Gaussian(shape=(2,), std=1.0)
    >>> dist.n_inputs
    2
  """

  def __init__(self, shape=(), std=1.0, learn_std=None):
    if learn_std not in _LEARN_STD:
      raise ValueError(
          f'Gaussian: learn_std must be None, "shared" or "per-dimension", '
          f'got {learn_std!r}.')
    self._shape = tuple(shape)
    self._std = float(std)
    self._learn_std = _LEARN_STD[learn_std]

  @property
  def _n_dims(self):
    return int(onp.prod(self._shape, dtype=onp.int64))

  @property
  def n_inputs(self):
    n = self._n_dims
    return {'constant': n, 'shared': n + 1, 'separate': 2 * n}[
        self._learn_std]

  def _params(self, inputs):
    self._check_inputs(inputs)
    n = self._n_dims
    mean = inputs[..., :n]
    if self._learn_std == 'constant':
      std = jnp.full_like(mean, self._std)
    else:
      raw = inputs[..., n:] + self._std
      std = jnp.broadcast_to(jnp.logaddexp(raw, jnp.zeros_like(raw)),
                             mean.shape)
    return mean, std

  def sample(self, inputs, temperature=1.0, key=None):
    mean, std = self._params(inputs)
    if temperature == 0.0:
      return _reshape_inner(mean, mean, self._shape)
    if key is None:
      mean, std = _host_values('Gaussian', mean, std)
      point = onp.random.normal(loc=mean, scale=std * temperature)
      return _reshape_inner(jnp.asarray(point, dtype=jnp.float32), mean,
                            self._shape)
    key = _check_key('Gaussian', key)
    point = _tfd().Normal(loc=mean, scale=std * temperature).sample(seed=key)
    return _reshape_inner(point, mean, self._shape)

  def log_prob(self, inputs, point):
    mean, std = self._params(inputs)
    point = _reshape_inner(point, inputs, (-1,))
    point = point.astype(mean.dtype)
    return -jnp.sum((point - mean) ** 2 / (2.0 * std ** 2) + jnp.log(std) +
                    _LOG_SQRT_2PI, axis=-1)

  def entropy(self, inputs):
    _, std = self._params(inputs)
    return jnp.sum(jnp.log(std) + 0.5 + _LOG_SQRT_2PI, axis=-1)


def _reshape_inner(x, like, inner):
  """`x` reshaped to `like`'s leading axes (all but its last) + `inner`.

  Leading sizes unknown while tracing (a served batch of any size) are read
  from `like` at run time.
  """
  lead = tuple(like.shape[:-1])
  if None not in lead:
    return jnp.reshape(x, lead + tuple(inner))
  shape = tf.concat([tf.shape(like)[:-1],
                     tf.constant(inner, dtype=tf.int32)], axis=0)
  return jnp.asarray(tf.reshape(x, shape))


def create_distribution(space):
  """The distribution for an action space from gym or gymnasium.

  Spaces are recognised by their attributes, not their classes (see
  `_spaces.kind`): Discrete -> Categorical, MultiDiscrete (all dimensions
  of one size) -> Categorical with the space's shape, Box -> Gaussian.

  Args:
    space: the action space.

  Returns:
    A Distribution whose samples are actions of `space`.

  Raises:
    TypeError: for any other space, naming it and what is supported.
  """
  kind = _spaces.kind(space)
  if kind in (_spaces.DISCRETE, _spaces.MULTI_DISCRETE) and onp.any(
      _spaces.start(space) != 0):
    # Categorical samples 0..n-1; an offset space would get wrong actions.
    raise _spaces.unsupported('create_distribution', space,
                              'its actions do not start at 0')
  if kind == _spaces.DISCRETE:
    return Categorical(int(space.n))
  if kind == _spaces.MULTI_DISCRETE:
    nvec = onp.asarray(space.nvec)
    if nvec.size and nvec.min() == nvec.max():
      return Categorical(int(nvec.flat[0]), shape=nvec.shape)
    raise _spaces.unsupported(
        'create_distribution', space,
        f'a MultiDiscrete needs equal sizes in every dimension, got nvec '
        f'{nvec.tolist()}')
  if kind == _spaces.BOX:
    return Gaussian(shape=tuple(space.shape))
  raise _spaces.unsupported('create_distribution', space)


def LogLoss(distribution):
  """Layer `(inputs, point, weights) -> -sum(weights * log_prob)`."""
  return tl.Serial(distribution.LogProb(), tl.Negate(), tl.WeightedSum())
