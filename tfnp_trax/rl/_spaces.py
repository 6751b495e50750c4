"""Recognising gym and gymnasium spaces by their attributes, not classes.

Trax code hands the RL library `gym.spaces` objects; environments made here
give `gymnasium.spaces` ones. The two packages define look-alike classes
that are unrelated to `isinstance`, so a space is classified by what it
carries: `nvec` (MultiDiscrete), `n` with shape () (Discrete), or `shape`,
`low`, `high` and `dtype` (Box).
"""

import numpy as onp

__all__ = ['DISCRETE', 'MULTI_DISCRETE', 'BOX', 'SUPPORTED', 'kind', 'start',
           'type_name', 'unsupported']

DISCRETE, MULTI_DISCRETE, BOX = 'Discrete', 'MultiDiscrete', 'Box'

SUPPORTED = ('Discrete (attribute `n`, shape ()), MultiDiscrete (attribute '
             '`nvec`) and Box (attributes `shape`, `low`, `high`, `dtype`), '
             'from gym or gymnasium')


def _shape(space):
  shape = getattr(space, 'shape', None)
  return () if shape is None else tuple(shape)


def kind(space):
  """DISCRETE, MULTI_DISCRETE, BOX, or None for any other object.

  Example:
    >>> import gymnasium
    >>> kind(gymnasium.spaces.Discrete(3))
    'Discrete'
  """
  # MultiDiscrete first: it also has a shape; MultiBinary has `n` but a
  # non-scalar shape and falls through to None.
  if hasattr(space, 'nvec'):
    return MULTI_DISCRETE
  if hasattr(space, 'n') and _shape(space) == ():
    return DISCRETE
  if all(hasattr(space, name) for name in ('shape', 'low', 'high', 'dtype')):
    return BOX
  return None


def start(space):
  """The first action of a (Multi)Discrete space; gymnasium allows != 0."""
  return onp.asarray(getattr(space, 'start', 0))


def type_name(space):
  cls = type(space)
  return f'{cls.__module__}.{cls.__qualname__}'


def unsupported(fn_name, space, detail=''):
  """The TypeError for a space `fn_name` cannot handle."""
  detail = f' ({detail})' if detail else ''
  return TypeError(
      f'{fn_name}: the space {space!r} of type {type_name(space)} is not '
      f'supported{detail}; supported are {SUPPORTED}.')
