"""SinCosPositionalEncoding: fixed sinusoids, randomly offset in training."""

import math

from tfnp_trax import fastmath
from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.layers import _attention_core as core_attn
from tfnp_trax.layers import base

__all__ = ['SinCosPositionalEncoding']


class SinCosPositionalEncoding(base.Layer):
  """Adds fixed sines and cosines of the position: (batch, L, d) -> same.

  For position p the encoding is [sin(p * w_0), .., sin(p * w_{d/2-1}),
  cos(p * w_0), .., cos(p * w_{d/2-1})] with w_j = 10000^(-2j / d): all
  sines first, then all cosines (unlike `tl.PositionalEncoding`, which
  interleaves them and learns the table). It has no weights.

  In 'train' mode the positions of the whole batch start at one random
  offset, uniform in [0, add_offset), except that with probability
  1 / start_from_zero_one_in (about; see below) they start at 0 as in
  evaluation; this teaches the model relative rather than absolute
  positions. As in Trax the start is drawn as randint(0, add_offset) times
  min(1, randint(0, start_from_zero_one_in)); the random bits are
  TensorFlow's, so only the distribution equals Trax's. With `dropout > 0`
  the encoding is dropped at a position (not added), one decision shared
  over each axis in `dropout_broadcast_dims`. In 'predict' mode the state
  counts the positions seen, so the layer can be fed a few at a time.

  Example:
    >>> layer = SinCosPositionalEncoding(mode='eval')
    >>> _ = layer.init(shapes.ShapeDtype((1, 3, 4)))
    >>> y = layer(jnp.zeros((1, 3, 4), jnp.float32))
    >>> [round(float(v), 4) for v in y[0, 1]]  # sin 1, sin .01, cos 1, cos .01
    [0.8415, 0.01, 0.5403, 0.9999]

  Args:
    add_offset: the random start offsets in training are below this.
    dropout: probability of not adding the encoding ('train' mode only).
    dropout_broadcast_dims: axes of the (1, L, d) encoding sharing one
      dropout decision.
    start_from_zero_one_in: in training, start at 0 one time in this many.
    mode: 'train', 'eval' or 'predict'.
  """

  def __init__(self, add_offset=2048, dropout=0.0, dropout_broadcast_dims=(-2,),
               start_from_zero_one_in=2, mode='train'):
    super().__init__()
    core_attn.check_mode(self.name, mode)
    if dropout >= 1.0:
      raise ValueError(f'{self.name}: dropout must be < 1, got {dropout}.')
    self._add_offset = add_offset
    self._dropout = dropout if mode == 'train' else 0.0
    self._dropout_broadcast_dims = tuple(dropout_broadcast_dims)
    self._start_from_zero_one_in = start_from_zero_one_in
    self._mode = mode

  def _sincos(self, start, length, d_feature):
    """The (1, length, d_feature) encoding of positions start..start+L-1."""
    # float32, as Trax computes it, so TPUs need no float64.
    position = (jnp.arange(length, dtype=jnp.int32) + start)[:, None]
    rates = jnp.exp(jnp.arange(0, d_feature, 2, dtype=jnp.float32) *
                    jnp.float32(-math.log(10000.0) / d_feature))
    angles = position.astype(jnp.float32) * rates
    return jnp.concatenate([jnp.sin(angles), jnp.cos(angles)], 1)[None]

  def forward(self, x):
    if x.ndim != 3 or x.shape[-1] % 2:
      raise ValueError(
          f'{self.name}: expects activations (batch, length, d_feature) with '
          f'an even d_feature (half sines, half cosines), got shape '
          f'{tuple(x.shape)}.')
    _, length, d_feature = x.shape
    if self._mode == 'predict':
      encoding = self._sincos(self.state, length, d_feature)
      self.state = self.state + length
      return x + _like(encoding, x)
    start = 0
    if self._mode == 'train':
      rngs = fastmath.random.split(self.rng, 2)
      start = fastmath.random.randint(rngs[0], (), 0, self._add_offset)
      nonzero = fastmath.random.randint(rngs[1], (), 0,
                                        self._start_from_zero_one_in)
      start = start * jnp.minimum(1, nonzero)
    encoding = self._sincos(start, length, d_feature)
    if self._dropout == 0.0:
      return x + _like(encoding, x)
    noise_shape = list(encoding.shape)
    for dim in self._dropout_broadcast_dims:
      noise_shape[dim] = 1
    keep_prob = 1.0 - self._dropout
    keep = fastmath.random.bernoulli(self.rng, keep_prob, tuple(noise_shape))
    return x + _like(encoding * (keep.astype(encoding.dtype) / keep_prob), x)

  def init_weights_and_state(self, input_signature):
    if self._mode == 'predict':
      self.state = jnp.zeros((), dtype=jnp.int32)


def _like(encoding, x):
  """The float32 encoding in `x`'s float dtype; integer `x` promotes.

  As in Trax: bfloat16 activations stay bfloat16, integer inputs give
  float32 (recorded from Trax 1.4.1).
  """
  return encoding.astype(x.dtype) if fastmath.is_float(x) else encoding
