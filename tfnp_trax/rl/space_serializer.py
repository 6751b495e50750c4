"""Serializers that turn elements of gym spaces into sequences of symbols.

A serializer maps a batch of space elements to an int32 array of shape
(batch_size, representation_length), each entry one of `vocab_size` symbols,
and back. `create(space, vocab_size)` picks the serializer for a Box,
Discrete or MultiDiscrete space from `gym.spaces` or `gymnasium.spaces`
(recognised by attributes, see `_spaces`, since the two packages' classes
are unrelated to `isinstance`).

Box elements are rescaled to [0, 1] and written as `precision` base-
`vocab_size` digits, most significant first; `significance_map` gives each
symbol's digit position. The math goes through `fastmath.numpy`, so the
serializers work both on host arrays and inside compiled layers
(`serialization_utils.Serialize`); values are float32, as in Trax.
"""

import copy

from absl import logging
import gin
import numpy as onp

from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.rl import _spaces

__all__ = ['SpaceSerializer', 'BoxSpaceSerializer', 'DiscreteSpaceSerializer',
           'MultiDiscreteSpaceSerializer', 'create', 'SpaceSerializerError',
           'UnsupportedSpaceError']


class SpaceSerializerError(ValueError, AssertionError):
  """A space or vocabulary a serializer cannot handle.

  Also an AssertionError: Trax asserts these conditions.
  """


class UnsupportedSpaceError(TypeError, KeyError):
  """`create` got a space it has no serializer for.

  Also a KeyError: Trax looks the space's class up in a dict.
  """

  def __str__(self):
    return str(self.args[0]) if self.args else ''


class SpaceSerializer:
  """Base class of the space serializers.

  Subclasses set `space_kind` (a `_spaces` kind), keep the constructor's
  `(space, vocab_size)` signature, and define `serialize`, `deserialize`,
  `representation_length` and `significance_map`.

  Attributes:
    space_kind: the kind of space ('Box', 'Discrete', 'MultiDiscrete').
    representation_length: symbols per space element.
    significance_map: int array of length `representation_length`: 0 for
      the most significant symbol of a value, 1 for the next, and so on.
  """

  space_kind = None
  representation_length = None
  significance_map = None

  def __init__(self, space, vocab_size):
    found = _spaces.kind(space)
    if found != self.space_kind:
      raise SpaceSerializerError(
          f'{type(self).__name__}: expected a {self.space_kind} space (from '
          f'gym.spaces or gymnasium.spaces), got {space!r} of type '
          f'{_spaces.type_name(space)}. Use space_serializer.create(space, '
          f'vocab_size) to pick the serializer for a space.')
    self._space = space
    self._vocab_size = vocab_size

  @property
  def vocab_size(self):
    return self._vocab_size

  def serialize(self, data):
    """A batch of space elements -> int32 (batch_size, representation_length)."""
    raise NotImplementedError(
        f'{type(self).__name__}.serialize: subclasses must define it.')

  def deserialize(self, representation):
    """int32 (batch_size, representation_length) -> a batch of elements."""
    raise NotImplementedError(
        f'{type(self).__name__}.deserialize: subclasses must define it.')


def create(space, vocab_size):
  """The serializer for a Box, Discrete or MultiDiscrete space.

  Example:
    >>> import gymnasium
    >>> srl = create(gymnasium.spaces.Discrete(3), vocab_size=4)
    >>> srl.serialize(onp.array([2, 0])).tolist()
    [[2], [0]]

  Args:
    space: a gym or gymnasium space.
    vocab_size: the number of symbols.

  Returns:
    A SpaceSerializer. A Box one takes its `precision` and `max_range` from
    gin (`BoxSpaceSerializer.precision = 3`).

  Raises:
    UnsupportedSpaceError: for any other space.
  """
  serializers = {
      _spaces.BOX: BoxSpaceSerializer,
      _spaces.DISCRETE: DiscreteSpaceSerializer,
      _spaces.MULTI_DISCRETE: MultiDiscreteSpaceSerializer,
  }
  found = _spaces.kind(space)
  if found not in serializers:
    raise UnsupportedSpaceError(
        f'space_serializer.create: no serializer for {space!r} of type '
        f'{_spaces.type_name(space)}; supported are {_spaces.SUPPORTED}.')
  return serializers[found](space, vocab_size)


def _as_float32(x):
  return jnp.asarray(x).astype(jnp.float32)


def _batch_and_rest(x, rest):
  """(batch_size, -1), or (-1, rest) where the batch size is not static."""
  batch_size = tuple(x.shape)[0] if x.ndim else None
  return (-1, rest) if batch_size is None else (batch_size, -1)


@gin.configurable(module='trax.rl.space_serializer',
                  denylist=['space', 'vocab_size'])
class BoxSpaceSerializer(SpaceSerializer):
  """Serializer for Box spaces: fixed-precision digits of rescaled values.

  Each value is rescaled from [low, high] to [0, 1] (and clipped there),
  then written as `precision` base-`vocab_size` digits, most significant
  first. Bounds outside `max_range` are clipped to it first (with a
  warning), since environments such as CartPole declare bounds of 3e38.

  Example:
    >>> import gymnasium
    >>> space = gymnasium.spaces.Box(low=0.0, high=1.0, shape=(1,))
    >>> srl = BoxSpaceSerializer(space, vocab_size=10, precision=2)
    >>> srl.serialize(onp.array([[0.25]])).tolist()
    [[2, 5]]

  Args:
    space: a Box space.
    vocab_size: the base of the digits.
    precision: digits per value.
    max_range: (min_low, max_high) the bounds are clipped to.
  """

  space_kind = _spaces.BOX

  def __init__(self, space, vocab_size, precision=2, max_range=(-100.0, 100.0)):
    if _spaces.kind(space) != _spaces.BOX:
      super().__init__(space, vocab_size)  # Raises the wrong-space error.
    self._precision = precision
    (min_low, max_high) = max_range
    low = onp.maximum(onp.asarray(space.low, onp.float32), min_low)
    high = onp.minimum(onp.asarray(space.high, onp.float32), max_high)
    if (not onp.allclose(low, space.low) or
        not onp.allclose(high, space.high)):
      logging.warning(
          'BoxSpaceSerializer: space limits %s, %s out of bounds %s. '
          'Clipping to %s, %s.', space.low, space.high, max_range, low, high)
    # A shallow copy, so the caller's space keeps its own bounds.
    bounded_space = copy.copy(space)
    bounded_space.low = low.astype(onp.float32)
    bounded_space.high = high.astype(onp.float32)
    super().__init__(bounded_space, vocab_size)
    self._low = bounded_space.low
    self._high = bounded_space.high

  def serialize(self, data):
    x = (_as_float32(data) - self._low) / (self._high - self._low)
    x = jnp.clip(x, 0.0, 1.0)
    digits = []
    for position in range(1, self._precision + 1):
      unit = float(self._vocab_size) ** -position
      digit = (x / unit).astype(jnp.int32)
      # x == high gives vocab_size at the first position; keep it a symbol.
      digit = jnp.where(digit == self._vocab_size, digit - 1, digit)
      digits.append(digit)
      x = x - digit.astype(jnp.float32) * unit
    # Trax keeps the batch axis and flattens the rest, whatever its size.
    return jnp.reshape(jnp.stack(digits, axis=-1),
                       _batch_and_rest(x, self.representation_length))

  def deserialize(self, representation):
    digits = jnp.asarray(representation).astype(jnp.float32)
    batch_size = tuple(digits.shape)[0]
    if batch_size is None:  # A graph with an unknown batch size.
      (batch_size, n_values) = (-1, self._low.size)
    else:
      n_values = -1  # As in Trax, whatever the row holds.
    digits = jnp.reshape(digits, (batch_size, n_values, self._precision))
    x = sum(float(self._vocab_size) ** -(index + 1) * digits[..., index]
            for index in range(self._precision))
    x = jnp.reshape(x, (batch_size,) + tuple(self._space.shape))
    return x * (self._high - self._low) + self._low

  @property
  def representation_length(self):
    return self._precision * self._low.size

  @property
  def significance_map(self):
    positions = onp.arange(self._precision, dtype=onp.int32)
    shape = tuple(self._space.shape) + (self._precision,)
    return onp.reshape(onp.broadcast_to(positions, shape), -1)


class DiscreteSpaceSerializer(SpaceSerializer):
  """Serializer for Discrete spaces: one symbol, the value itself.

  The value is written as is (a gymnasium `start` is not subtracted, as in
  Trax), so the space must have at most `vocab_size` elements.
  """

  space_kind = _spaces.DISCRETE
  representation_length = 1

  def __init__(self, space, vocab_size):
    super().__init__(space, vocab_size)
    if int(space.n) > vocab_size:
      raise SpaceSerializerError(
          f'DiscreteSpaceSerializer: the space has n={int(space.n)} values '
          f'but vocab_size is {vocab_size}; each value is one symbol, so use '
          f'vocab_size >= {int(space.n)}.')

  def serialize(self, data):
    return jnp.reshape(jnp.asarray(data), (-1, 1)).astype(jnp.int32)

  def deserialize(self, representation):
    return jnp.reshape(jnp.asarray(representation), (-1,))

  @property
  def significance_map(self):
    return onp.zeros(1, dtype=onp.int32)


class MultiDiscreteSpaceSerializer(SpaceSerializer):
  """Serializer for MultiDiscrete spaces: one symbol per component."""

  space_kind = _spaces.MULTI_DISCRETE

  def __init__(self, space, vocab_size):
    super().__init__(space, vocab_size)
    largest = int(onp.max(space.nvec))
    if largest > vocab_size:
      raise SpaceSerializerError(
          f'MultiDiscreteSpaceSerializer: a component has {largest} '
          f'categories (nvec={onp.asarray(space.nvec).tolist()}) but '
          f'vocab_size is {vocab_size}; each value is one symbol, so use '
          f'vocab_size >= {largest}.')

  def serialize(self, data):
    return jnp.asarray(data).astype(jnp.int32)

  def deserialize(self, representation):
    return representation

  @property
  def representation_length(self):
    return len(self._space.nvec)

  @property
  def significance_map(self):
    return onp.zeros(self.representation_length, dtype=onp.int32)
