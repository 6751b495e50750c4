"""Position information for sequence models: PositionalEncoding, ShiftRight.

Both carry Trax's '...d->...d' shape check: `ShiftRight()` comes wrapped as
`Serial[ShiftRight(1)]`; on PositionalEncoding it runs inside `forward`.
"""

import math

from tfnp_trax import fastmath
from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.layers import _attention_core as core_attn
from tfnp_trax.layers import base
from tfnp_trax.layers import initializers as init
from tfnp_trax.layers.assert_shape import assert_shape

__all__ = ['PositionalEncoding', 'ShiftRight', 'sinusoidal_table']


def sinusoidal_table(max_len, d_feature):
  """The [max_len, d_feature] float32 table of sines and cosines.

  Columns 2j and 2j + 1 hold sin and cos of p / 10000^(2j / d_feature) for
  position p. Computed in float64, then rounded once.
  """
  position = jnp.arange(max_len, dtype=jnp.float64)[:, None]
  inv_freq = jnp.exp(jnp.arange(0, d_feature, 2, dtype=jnp.float64) *
                     (-math.log(10000.0) / d_feature))
  angles = position * inv_freq[None, :]
  table = jnp.stack([jnp.sin(angles), jnp.cos(angles)], axis=-1)
  return table.reshape((max_len, -1))[:, :d_feature].astype(jnp.float32)


@assert_shape('...d->...d')
class PositionalEncoding(base.Layer):
  """Adds a learned position embedding, initialized to sinusoids.

  The weights, [max_len, d_feature], are trained like any other. In 'train'
  mode with `dropout > 0`, each position's encoding is dropped (not added)
  with that probability. In 'predict' mode the state counts the positions
  seen, so the layer can be fed one position per call.

  Example:
    >>> layer = PositionalEncoding(max_len=16)
    >>> _ = layer.init(shapes.ShapeDtype((1, 4, 8)))
    >>> tuple(layer(jnp.zeros((1, 4, 8), dtype=jnp.float32)).shape)
    (1, 4, 8)

  Args:
    max_len: the longest sequence (or decoding position) supported.
    dropout: probability of not adding the encoding at a position ('train').
    dropout_broadcast_dims: axes sharing one dropout decision.
    use_bfloat16: keep the weights in bfloat16.
    start_from_zero_prob: in 'train' mode, the probability of starting at
      position 0; otherwise a random start in [0, max_offset_to_add).
    max_offset_to_add: the largest random start offset in training.
    d_feature: if set, the table has this width and a learned Dense-like
      matrix projects it to the input width.
    mode: 'train', 'eval' or 'predict'.
  """

  def __init__(self, max_len=2048, dropout=0.0, dropout_broadcast_dims=(-2,),
               use_bfloat16=False, start_from_zero_prob=1.0,
               max_offset_to_add=0, d_feature=None, mode='train'):
    super().__init__(name='PositionalEncoding')
    core_attn.check_mode(self.name, mode)
    core_attn.check_dropout(self.name, dropout)
    self._max_len = max_len
    self._dropout = dropout if mode == 'train' else 0.0
    self._dropout_broadcast_dims = tuple(dropout_broadcast_dims)
    self._use_bfloat16 = use_bfloat16
    self._start_from_zero_prob = start_from_zero_prob
    self._max_offset_to_add = max_offset_to_add
    self._d_feature = d_feature
    self._mode = mode

  @property
  def mode(self):
    return self._mode

  @property
  def max_len(self):
    return self._max_len

  def accepts_weight_file_shape(self, model_shape, file_shape):
    # Trax's forward: "old checkpoints have 1 in first dim already".
    return tuple(file_shape) == (1,) + tuple(model_shape) and len(
        model_shape) == 2

  @property
  def uses_rng(self):
    # Dropout, and the random start offset of training (`_train_start`).
    offsets = (self._mode == 'train' and self._start_from_zero_prob < 1.0 and
               self._max_offset_to_add > 0)
    return self._dropout != 0.0 or offsets

  def forward(self, x):
    if x.ndim != 3:
      raise ValueError(f'{self.name}: expects activations of shape (batch, '
                       f'length, d_feature), got shape {tuple(x.shape)}.')
    length = x.shape[1]
    if length > self._max_len:
      raise ValueError(
          f'{self.name}: input length {length} exceeds max_len '
          f'{self._max_len} (input shape {tuple(x.shape)}). Create the layer '
          f'(or the model) with max_len >= {length}.')
    if self._mode == 'predict':
      start = self.state
      position = core_attn.static_int(start)
      if position is not None and position + length > self._max_len:
        raise ValueError(
            f'{self.name}: decoding length {position + length} (at position '
            f'{position}, adding {length}) exceeds max_len {self._max_len}. '
            f'Create the model with a larger max_len.')
      self.state = start + length
    else:
      start = self._train_start(length)
    # Integer inputs meet the float32 encoding in float32, as in Trax.
    if not fastmath.is_float(x):
      x = x.astype(jnp.float32)
    px = self._rows(start, length).astype(x.dtype)
    if x.shape[-1] != px.shape[-1]:
      raise ValueError(f'{self.name}: input last dim {x.shape[-1]} does not '
                       f'match the encoding width {px.shape[-1]} (input shape '
                       f'{tuple(x.shape)}). Re-run init with the new input '
                       f'signature.')
    if self._dropout == 0.0:
      return x + px
    noise_shape = list(px.shape)
    for dim in self._dropout_broadcast_dims:
      noise_shape[dim] = 1
    keep_prob = 1.0 - self._dropout
    keep = fastmath.random.bernoulli(
        fastmath.random.fold_in(self.rng, 2), keep_prob, tuple(noise_shape))
    multiplier = keep.astype(x.dtype) * jnp.asarray(1.0 / keep_prob, x.dtype)
    return x + px * multiplier

  def _train_start(self, length):
    """Position 0, or in training a random offset (see the class doc)."""
    if (self._mode != 'train' or self._start_from_zero_prob >= 1.0 or
        self._max_offset_to_add <= 0):
      return 0
    if length + self._max_offset_to_add > self._max_len:
      raise ValueError(
          f'{self.name}: input length {length} plus max_offset_to_add '
          f'{self._max_offset_to_add} exceeds max_len {self._max_len}.')
    keys = fastmath.random.split(self.rng, 2)
    rng_offset, rng_zero = keys[0], keys[1]
    offset = fastmath.random.randint(rng_offset, (), 0,
                                     self._max_offset_to_add)
    from_zero = fastmath.random.uniform(rng_zero, ()) < (
        self._start_from_zero_prob)
    return jnp.where(from_zero, jnp.zeros((), dtype=jnp.int32), offset)

  def _rows(self, start, length):
    """Encoding rows [start, start + length) as a [1, length, d] array."""
    weights = self.weights
    table, projection = (weights if self._d_feature is not None else
                         (weights, None))
    if table.ndim == 3:  # A [1, max_len, d] table, as older Trax stores it.
      table = table[0]
    if isinstance(start, int):
      rows = table[start:start + length]
    else:
      rows = fastmath.dynamic_slice_in_dim(table, start, length, axis=0)
    if projection is not None:
      rows = jnp.matmul(rows, projection.astype(rows.dtype))
    return rows[None]

  def init_weights_and_state(self, input_signature):
    d_in = input_signature.shape[-1]
    d_table = self._d_feature if self._d_feature is not None else d_in
    dtype = 'bfloat16' if self._use_bfloat16 else jnp.float32
    table = sinusoidal_table(self._max_len, d_table).astype(dtype)
    if self._d_feature is not None:
      projection = init.GlorotUniformInitializer()((d_table, d_in), self.rng)
      self.weights = (table, projection.astype(dtype))
    else:
      self.weights = table
    if self._mode == 'predict':
      self.state = jnp.zeros((), dtype=jnp.int32)


@assert_shape('...d->...d')
def ShiftRight(n_positions=1, mode='train'):  # pylint: disable=invalid-name
  """Shifts sequences right along axis 1, filling the front with zeros.

  Used before a causal model so that position i predicts token i from the
  tokens before it. In 'predict' mode the layer is the identity: the decoder
  is fed the previous token itself.

  Args:
    n_positions: how many positions to shift by.
    mode: 'train', 'eval' or 'predict'.
  """
  core_attn.check_mode('ShiftRight', mode)

  def f(x):
    if mode == 'predict':
      return x
    if x.ndim < 2:
      raise ValueError(f'ShiftRight: expects a (batch, length, ...) input, '
                       f'got shape {tuple(x.shape)}.')
    widths = [(0, 0)] * x.ndim
    widths[1] = (n_positions, 0)
    padded = jnp.pad(x, widths, mode='constant')
    return padded[:, :x.shape[1]]
  return base.Fn(f'ShiftRight({n_positions})', f)
