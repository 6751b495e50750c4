"""Residual Shuffle-Exchange networks (Draguns et al., 2020, arXiv:2004.04662).

A sequence of length L = 2^k is processed by Benes blocks: k switch steps
each followed by a perfect shuffle (a left rotation of the position's k
bits), then k switch steps each followed by the inverse shuffle. A switch
step (Residual Switch Unit) mixes each pair of neighbouring positions. The
k steps of each half share one unit's weights (they run in a `tl.Scan`).
As in Trax, the layers are wrapped in shape assertions (`tl.assert_shape`).
"""

import numpy as np

from tfnp_trax import fastmath
from tfnp_trax import layers as tl
from tfnp_trax.fastmath import numpy as jnp

__all__ = ['ResidualShuffleExchange', 'ResidualSwitchUnit', 'BenesBlock',
           'ShuffleLayer', 'ReverseShuffleLayer']

# Layer constructors are CamelCase functions, as in Trax.
# pylint: disable=invalid-name


def _inverse_sigmoid(x):
  return np.log(x / (1 - x))


@tl.assert_shape('...->...')
class _ClippedScaling(tl.Layer):
  """`x * sigmoid(s)` with a learned vector s over the last axis.

  s starts at logit(residual_weight), so the layer starts as a scaling by
  `residual_weight`.
  """

  def __init__(self, residual_weight):
    super().__init__(n_in=1, n_out=1)
    self._residual_weight = residual_weight

  def forward(self, x):
    return x * fastmath.expit(self.weights).astype(x.dtype)

  def init_weights_and_state(self, input_signature):
    value = _inverse_sigmoid(self._residual_weight)
    self.weights = jnp.asarray(
        np.full((input_signature.shape[-1],), value, np.float32))


def _pairs(x):
  if x.ndim != 3 or x.shape[1] % 2:
    raise ValueError(
        f'ResidualSwitchUnit: expects (batch, length, depth) with an even '
        f'length, got shape {tuple(x.shape)}.')
  return jnp.reshape(x, (x.shape[0], x.shape[1] // 2, -1))


@tl.assert_shape('bld->bld')
def ResidualSwitchUnit(d_model, dropout=0.1, mode='train',
                       residual_weight=0.9):
  """Mixes neighbouring positions: (batch, length, d) -> same shape.

  Positions 2j and 2j+1 are joined into one vector i of size 2d, and

    g = Gelu(LayerNorm(Z i)),  c = W g + B,
    o = sigmoid(S) * i + sqrt(1 - r^2) / 4 * c

  with Z (2d x 4d, no bias), W, B, S learned, r = `residual_weight`; o is
  split back into the two positions, then dropout applies.

  Example:
    >>> from tfnp_trax import shapes
    >>> layer = ResidualSwitchUnit(3, mode='eval')
    >>> _ = layer.init(shapes.ShapeDtype((2, 4, 3)))
    >>> tuple(layer(jnp.ones((2, 4, 3), dtype=jnp.float32)).shape)
    (2, 4, 3)

  Args:
    d_model: depth of the activations.
    dropout: dropout rate in 'train' mode.
    mode: 'train', 'eval' or 'predict'.
    residual_weight: r above, in (0, 1); also the initial residual scale.

  Returns:
    A layer with n_in=1, n_out=1.
  """
  if not 0.0 < residual_weight < 1.0:
    raise ValueError(f'ResidualSwitchUnit: residual_weight must be in (0, 1), '
                     f'got {residual_weight}.')
  scale = float(np.sqrt(1 - residual_weight**2) * 0.25)
  return tl.Serial(
      tl.Fn('Reshape2Pairs', _pairs),
      tl.Residual(
          tl.Dense(4 * d_model, use_bias=False),
          tl.LayerNorm(),
          tl.Gelu(),
          tl.Dense(2 * d_model),
          tl.Fn('Scaling', lambda x: x * jnp.asarray(scale, dtype=x.dtype)),
          shortcut=_ClippedScaling(residual_weight)),
      tl.Fn('UnPair', lambda x: jnp.reshape(
          x, (x.shape[0], x.shape[1] * 2, -1))),
      tl.Dropout(rate=dropout, mode=mode),
  )


def _n_bits(seq_length):
  # Trax's formula: ceil(log2(seq_length)) bits address every position.
  return int(np.int32(np.log(seq_length - 1) / np.log(2.0))) + 1


def _ror(x, n, p=1):
  """Rotates the n-bit values x right by p bits."""
  return np.right_shift(x, p) + np.left_shift(
      np.bitwise_and(x, np.left_shift(1, p) - 1), n - p)


def _rol(x, n, p=1):
  """Rotates the n-bit values x left by p bits."""
  high = np.bitwise_and(np.left_shift(x, p), np.left_shift(1, n) - 1)
  return np.bitwise_or(high, np.right_shift(x, n - p))


def _shuffle(x, rotate, name):
  """Output position j takes input position rotate(j), along axis 1."""
  if x.ndim < 2 or x.shape[1] < 2:
    raise ValueError(f'{name}: expects (batch, length, ...) with length >= '
                     f'2, got shape {tuple(x.shape)}.')
  seq_length = x.shape[1]
  indices = rotate(np.arange(seq_length, dtype=np.int32), _n_bits(seq_length))
  # Lengths that are not powers of 2 rotate past the end; clip as Trax does.
  indices = np.clip(indices, 0, seq_length - 1).astype(np.int32)
  return jnp.take(x, indices, axis=1)


@tl.assert_shape('bld->bld')
def ShuffleLayer():
  """The perfect shuffle: output j = input rol(j) (k-bit left rotation).

  Example:
    >>> x = jnp.arange(8).reshape((1, 8, 1))
    >>> ShuffleLayer()(x)[0, :, 0].numpy().tolist()
    [0, 2, 4, 6, 1, 3, 5, 7]
  """
  return tl.Fn('ShuffleLayer', lambda x: _shuffle(x, _rol, 'ShuffleLayer'))


@tl.assert_shape('bld->bld')
def ReverseShuffleLayer():
  """The inverse shuffle: output j = input ror(j) (k-bit right rotation).

  Example:
    >>> x = jnp.arange(8).reshape((1, 8, 1))
    >>> ReverseShuffleLayer()(x)[0, :, 0].numpy().tolist()
    [0, 4, 1, 5, 2, 6, 3, 7]
  """
  return tl.Fn('ReverseShuffleLayer',
               lambda x: _shuffle(x, _ror, 'ReverseShuffleLayer'))


@tl.assert_shape('...,bld->...,bld')
def _ForwardStep(d_model, dropout, mode):
  """`(step, state) -> (step, Shuffle(RSU(state)))`."""
  return tl.Parallel([], tl.Serial(
      ResidualSwitchUnit(d_model, dropout, mode), ShuffleLayer()))


@tl.assert_shape('...,bld->...,bld')
def _BackwardStep(d_model, dropout, mode):
  """`(step, state) -> (step, ReverseShuffle(RSU(state)))`."""
  return tl.Parallel([], tl.Serial(
      ResidualSwitchUnit(d_model, dropout, mode), ReverseShuffleLayer()))


@tl.assert_shape('bld->bld')
def BenesBlock(d_model, dropout, mode):
  """k shuffle steps then k inverse shuffle steps, k = ceil(log2(length)).

  Each half scans one Residual Switch Unit over the k steps, so the block
  has two units' weights. Maps (batch, length, d_model) to the same shape.

  Args:
    d_model: depth of the activations.
    dropout: dropout rate of the units in 'train' mode.
    mode: 'train', 'eval' or 'predict'.

  Returns:
    A layer with n_in=1, n_out=1.
  """
  def bit_sequence(x):
    if x.ndim != 3 or x.shape[1] < 2:
      raise ValueError(f'BenesBlock: expects (batch, length, depth) with '
                       f'length >= 2, got shape {tuple(x.shape)}.')
    return jnp.arange(_n_bits(x.shape[1]), dtype=jnp.int32)
  return tl.Serial(
      tl.Dup(),
      tl.Fn('BitSeq', bit_sequence),   # steps, x
      tl.Scan(_ForwardStep(d_model, dropout, mode)),
      tl.Scan(_BackwardStep(d_model, dropout, mode)),
      tl.Select([1]),                  # x
  )


@tl.assert_shape('bl->blv')
def ResidualShuffleExchange(vocab_size, d_model, input_dropout, dropout,
                            mode='train', n_blocks=2):
  """Residual Shuffle-Exchange network: ids (batch, length) -> log-probs.

  Embeds ids, applies `n_blocks` Benes blocks and one more Residual Switch
  Unit, then a Dense layer and LogSoftmax per position: (batch, length,
  vocab_size). The length must be even; powers of 2 give the paper's
  network.

  Example:
    >>> from tfnp_trax import shapes
    >>> model = ResidualShuffleExchange(5, 4, 0.0, 0.0, mode='eval',
    ...                                 n_blocks=1)
    >>> _ = model.init(shapes.ShapeDtype((2, 8), jnp.int32))
    >>> tuple(model(jnp.ones((2, 8), dtype=jnp.int32)).shape)
    (2, 8, 5)

  Args:
    vocab_size: number of token ids and of output classes.
    d_model: depth of the activations.
    input_dropout: dropout rate after the embedding ('train' mode).
    dropout: dropout rate in the switch units ('train' mode).
    mode: 'train', 'eval' or 'predict'.
    n_blocks: number of Benes blocks.

  Returns:
    A layer with n_in=1, n_out=1.
  """
  benes_blocks = [BenesBlock(d_model, dropout, mode) for _ in range(n_blocks)]
  return tl.Serial(
      tl.Embedding(vocab_size, d_model),
      tl.Dropout(rate=input_dropout, mode=mode),
      benes_blocks,
      ResidualSwitchUnit(d_model, dropout, mode),
      tl.Dense(vocab_size),
      tl.LogSoftmax(),
  )
