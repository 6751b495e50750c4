"""Small networks for Atari-style RL: frame stacking, CNN bodies, an MLP.

Inputs are sequences of frames, (batch, time, ...). The last `n_frames`
frames are stacked on the channel axis: the frame at time t is concatenated
with those at t-1, ..., t-n_frames+1 (zeros before the start), so each
time step sees a short history.
"""

from tfnp_trax import fastmath
from tfnp_trax import layers as tl
from tfnp_trax.fastmath import numpy as jnp

__all__ = ['AtariCnn', 'AtariCnnBody', 'FrameStackMLP']

# Layer constructors are CamelCase functions, as in Trax.
# pylint: disable=invalid-name


def _shift_right(n):
  # The same weightless ShiftRight n times: a shift by n time steps.
  return [tl.ShiftRight()] * n


def _FrameStack(n_frames):
  """(B, T, ..., C) -> (B, T, ..., C * n_frames): stacks past frames."""
  if n_frames < 1:
    raise ValueError(f'FrameStack: n_frames must be at least 1, got '
                     f'{n_frames}.')
  if n_frames == 1:
    return []  # Nothing to stack.
  return [
      tl.Branch(*[_shift_right(n) for n in range(n_frames)]),
      tl.Concatenate(n_items=n_frames, axis=-1),
  ]


def _BytesToFloats():
  """Scales pixel bytes to [0, 1]: x / 255.

  Integer inputs give float32, as in Trax (JAX); float inputs keep their
  dtype (TensorFlow's NumPy would give float64 for int32 / 255.0).
  """
  def f(x):
    if fastmath.is_float(x):
      return x / jnp.asarray(255.0, dtype=x.dtype)
    return x.astype(jnp.float32) / jnp.asarray(255.0, dtype=jnp.float32)
  return tl.Fn('BytesToFloats', f)


def _check_sizes(model, name, sizes, n):
  if len(tuple(sizes)) != n:
    raise ValueError(f'{model}: {name} must have {n} entries, got '
                     f'{tuple(sizes)!r}.')


def AtariCnn(n_frames=4, hidden_sizes=(32, 32), output_size=128,
             mode='train'):
  """Two 5x5 stride-2 'SAME' convolutions and a Dense, all with Relu.

  Maps (B, T, H, W, C) to (B, T, output_size).

  Example:
    >>> from tfnp_trax import shapes
    >>> model = AtariCnn(n_frames=2, hidden_sizes=(2, 2), output_size=3)
    >>> _ = model.init(shapes.ShapeDtype((1, 3, 8, 8, 1), jnp.uint8))
    >>> tuple(model(jnp.zeros((1, 3, 8, 8, 1), dtype=jnp.uint8)).shape)
    (1, 3, 3)

  Args:
    n_frames: how many consecutive frames each step sees.
    hidden_sizes: the two convolutions' filters.
    output_size: width of the final Dense + Relu.
    mode: unused (the model is the same in every mode), as in Trax.

  Returns:
    A layer with n_in=1, n_out=1.
  """
  del mode
  _check_sizes('AtariCnn', 'hidden_sizes', hidden_sizes, 2)
  return tl.Serial(
      _BytesToFloats(),
      _FrameStack(n_frames=n_frames),  # (B, T, H, W, C * n_frames)
      tl.Conv(hidden_sizes[0], (5, 5), (2, 2), 'SAME'),
      tl.Relu(),
      tl.Conv(hidden_sizes[1], (5, 5), (2, 2), 'SAME'),
      tl.Relu(),
      tl.Flatten(n_axes_to_keep=2),  # Keeps B and T.
      tl.Dense(output_size),
      tl.Relu(),
  )


def AtariCnnBody(n_frames=4, hidden_sizes=(32, 64, 64), output_size=512,
                 mode='train', kernel_initializer=None, padding='VALID'):
  """The DQN body (Mnih et al., 2015): 8x8/4, 4x4/2, 3x3/1 convs, Dense.

  Maps (B, T, H, W, C) to (B, T, output_size). With 'VALID' padding the
  frames must be at least 36x36.

  Example:
    >>> from tfnp_trax import shapes
    >>> model = AtariCnnBody(n_frames=2, hidden_sizes=(2, 2, 2),
    ...                      output_size=3)
    >>> _ = model.init(shapes.ShapeDtype((1, 2, 36, 36, 1), jnp.uint8))
    >>> tuple(model(jnp.zeros((1, 2, 36, 36, 1), dtype=jnp.uint8)).shape)
    (1, 2, 3)

  Args:
    n_frames: how many consecutive frames each step sees.
    hidden_sizes: the three convolutions' filters.
    output_size: width of the final Dense + Relu.
    mode: unused (the model is the same in every mode), as in Trax.
    kernel_initializer: the convolutions' kernel initializer (None: Conv's
      default).
    padding: the convolutions' padding.

  Returns:
    A layer with n_in=1, n_out=1.
  """
  del mode
  _check_sizes('AtariCnnBody', 'hidden_sizes', hidden_sizes, 3)
  convs = []
  for filters, window, stride in zip(hidden_sizes, (8, 4, 3), (4, 2, 1)):
    convs += [tl.Conv(filters, (window, window), (stride, stride),
                      padding=padding, kernel_initializer=kernel_initializer),
              tl.Relu()]
  return tl.Serial(
      _BytesToFloats(),
      _FrameStack(n_frames=n_frames),  # (B, T, H, W, C * n_frames)
      convs,
      tl.Flatten(n_axes_to_keep=2),  # Keeps B and T.
      tl.Dense(output_size),
      tl.Relu(),
  )


def FrameStackMLP(n_frames=4, hidden_sizes=(64,), output_size=64,
                  mode='train'):
  """Stacked frames through Dense + Relu layers and a final Dense.

  Maps (B, T, D) to (B, T, output_size); the output has no activation.

  Example:
    >>> from tfnp_trax import shapes
    >>> model = FrameStackMLP(n_frames=2, hidden_sizes=(4,), output_size=3)
    >>> _ = model.init(shapes.ShapeDtype((1, 5, 2)))
    >>> tuple(model(jnp.zeros((1, 5, 2), dtype=jnp.float32)).shape)
    (1, 5, 3)

  Args:
    n_frames: how many consecutive frames each step sees.
    hidden_sizes: widths of the hidden Dense + Relu layers.
    output_size: width of the final Dense.
    mode: unused (the model is the same in every mode), as in Trax.

  Returns:
    A layer with n_in=1, n_out=1.
  """
  del mode
  return tl.Serial(
      _FrameStack(n_frames=n_frames),
      [[tl.Dense(d_hidden), tl.Relu()] for d_hidden in hidden_sizes],
      tl.Dense(output_size),
  )
