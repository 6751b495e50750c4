"""The improved Neural GPU (Freivalds & Liepins, arXiv:1702.08727).

Token ids on a 2-D grid (batch, height, width) are embedded, and one
convolutional GRU cell with diagonal gating is applied `steps` times, with
the same weights each time, before a Dense layer maps every cell to
`vocab_size` logits.
"""

from tfnp_trax import layers as tl
from tfnp_trax.fastmath import numpy as jnp

__all__ = ['NeuralGPU', 'ConvDiagonalGRU', 'DiagonalGate', 'SaturationCost']

# Layer constructors are CamelCase functions, as in Trax.
# pylint: disable=invalid-name


def SaturationCost(x, limit=0.9):
  """`min(0, |x| - limit)`: how far x stays inside the saturation limit.

  Example:
    >>> x = jnp.array([0.25, 1.5])
    >>> [float(v) for v in SaturationCost(x, limit=0.5)]
    [-0.25, 0.0]
  """
  return jnp.minimum(jnp.zeros_like(x), jnp.abs(x) - limit)


def DiagonalGate():
  """Shifts the first and last thirds of the channels along axis 2.

  With channels split in thirds [a, b, c] of input (batch, h, w, 3k), the
  output at column j holds a from column j - 1, b from column j and c from
  column j + 1 (zeros past the edges).

  Example:
    >>> x = jnp.arange(1, 7, dtype=jnp.float32).reshape((1, 1, 2, 3))
    >>> DiagonalGate()(x).numpy()[0, 0].tolist()
    [[0.0, 2.0, 6.0], [1.0, 5.0, 0.0]]
  """
  def f(x):
    if x.ndim != 4 or x.shape[-1] % 3:
      raise ValueError(
          f'DiagonalGate: expects (batch, height, width, channels) with '
          f'channels divisible by 3 (for NeuralGPU: d_feature), got shape '
          f'{tuple(x.shape)}.')
    depth = x.shape[-1] // 3
    x = jnp.pad(x, [(0, 0), (0, 0), (1, 1), (0, 0)], mode='constant')
    return jnp.concatenate([x[:, :, :-2, :depth],
                            x[:, :, 1:-1, depth:2 * depth],
                            x[:, :, 2:, 2 * depth:]], axis=3)
  return tl.Fn('DiagonalGate', f)


def ConvDiagonalGRU(units, kernel_size=(3, 3), mode='train'):
  """The Neural GPU's cell: a conv GRU with hard gates and a DiagonalGate.

  Args:
    units: channels of the state; must be divisible by 3.
    kernel_size: the convolutions' window.
    mode: the candidate dropout's mode (not in Trax; see GeneralGRUCell).

  Returns:
    A layer with n_in=1, n_out=1.
  """
  def conv():
    return tl.Conv(filters=units, kernel_size=kernel_size, padding='SAME')
  return tl.GeneralGRUCell(
      candidate_transform=conv,
      memory_transform_fn=DiagonalGate,
      gate_nonlinearity=tl.HardSigmoid,
      candidate_nonlinearity=tl.HardTanh,
      mode=mode)


def NeuralGPU(d_feature=96, steps=16, vocab_size=2, mode='train'):
  """Neural GPU: ids (batch, height, width) -> logits (..., vocab_size).

  The cell's weights are shared by all `steps` applications (the model has
  one cell's weights, not `steps`). The outputs are raw logits, as in Trax.

  Example:
    >>> from tfnp_trax import shapes
    >>> model = NeuralGPU(d_feature=6, steps=2, vocab_size=4, mode='eval')
    >>> _ = model.init(shapes.ShapeDtype((1, 3, 5), jnp.int32))
    >>> tuple(model(jnp.zeros((1, 3, 5), dtype=jnp.int32)).shape)
    (1, 3, 5, 4)

  Args:
    d_feature: channels of the embedding and of the cell's state; must be
      divisible by 3 (the DiagonalGate splits it in thirds), else running
      the model raises.
    steps: how many times the cell is applied.
    vocab_size: number of token ids, and of output logits.
    mode: 'train', 'eval' or 'predict'. Trax ignores it and always applies
      the cell's candidate dropout; here 'eval' and 'predict' turn it off.

  Returns:
    A layer with n_in=1, n_out=1.
  """
  # As in Trax, a d_feature not divisible by 3 builds, and fails when run.
  core = ConvDiagonalGRU(units=d_feature, mode=mode)
  return tl.Serial(
      tl.Embedding(vocab_size=vocab_size, d_feature=d_feature),
      [core] * steps,  # One layer repeated: its weights are shared.
      tl.Dense(vocab_size),
  )
