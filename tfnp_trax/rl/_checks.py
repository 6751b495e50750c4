"""Shape checks shared by the RL objectives: fail early, name both shapes."""

from tfnp_trax.fastmath import numpy as jnp

__all__ = ['same_shape', 'expect_shape', 'squeeze_last']


def same_shape(fn_name, name_a, a, name_b, b, hint=''):
  """Raises a ValueError naming `fn_name` unless `a` and `b` share a shape."""
  shape_a, shape_b = tuple(a.shape), tuple(b.shape)
  if shape_a != shape_b:
    raise ValueError(
        f'{fn_name}: {name_a}.shape {shape_a} does not match {name_b}.shape '
        f'{shape_b}; they must be equal.' + (f' {hint}' if hint else ''))


def expect_shape(component, name, shape, expected, hint=''):
  """Raises a ValueError naming `component` unless `shape == expected`."""
  shape, expected = tuple(shape), tuple(expected)
  if shape != expected:
    raise ValueError(f'{component}: {name} has shape {shape}, expected '
                     f'{expected}.' + (f' {hint}' if hint else ''))


def squeeze_last(fn_name, name, x):
  """Drops a trailing axis of size 1 from a [batch, time, 1] array."""
  shape = tuple(x.shape)
  if len(shape) != 3 or shape[-1] != 1:
    raise ValueError(
        f'{fn_name}: {name} must have shape [batch, time, 1], got {shape}. '
        f'Add the trailing axis with {name}[..., None].')
  return jnp.squeeze(x, axis=2)
