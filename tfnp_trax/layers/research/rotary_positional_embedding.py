"""Rotary positional embeddings (RoFormer, Su et al., 2021).

https://arxiv.org/abs/2104.09864. Feature pairs (i, i + d/2) of the vector
at position p are rotated by the angle p * theta_i, with
theta_i = 10000^(-2i/d). A rotation keeps each vector's norm, and the dot
product of two rotated vectors depends on their positions only through the
difference of the two, which is what makes attention scores relative.
"""

import math

from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.layers import base

__all__ = ['rotate', 'Rotate']


def _rotate_half(x):
  """(x1, x2) -> (-x2, x1) on the two halves of the last axis."""
  half = x.shape[-1] // 2
  return jnp.concatenate([-x[..., half:], x[..., :half]], axis=-1)


def rotate(x):
  """Applies rotary position embeddings to x of shape (batch, length, d).

  Args:
    x: activations; `d` must be even.

  Returns:
    x * cos(p * theta) + rotate_half(x) * sin(p * theta), where p is the
    position along axis 1 and theta repeats the d/2 frequencies twice.

  Raises:
    ValueError: for inputs that are not rank 3 or have an odd last axis.
  """
  if x.ndim != 3 or x.shape[-1] % 2:
    raise ValueError(f'rotate: expects (batch, length, d) activations with '
                     f'an even d, got shape {tuple(x.shape)}.')
  length, d = x.shape[1], x.shape[2]
  inv_freq = jnp.exp(jnp.arange(0, d, 2, dtype=jnp.float32) *
                     (-math.log(10000.0) / d))
  angles = jnp.einsum('i,j->ij', jnp.arange(length, dtype=jnp.float32),
                      inv_freq)
  angles = jnp.concatenate([angles, angles], axis=-1)
  return (jnp.einsum('bld,ld->bld', x, jnp.cos(angles)) +
          jnp.einsum('bld,ld->bld', _rotate_half(x), jnp.sin(angles)))


def Rotate():  # pylint: disable=invalid-name
  """The layer form of `rotate`.

  Example:
    >>> x = jnp.ones((1, 3, 4), dtype=jnp.float32)
    >>> layer = Rotate()
    >>> _ = layer.init(shapes.signature(x))
    >>> tuple(layer(x).shape)
    (1, 3, 4)
  """
  return base.Fn('Rotate', rotate)
