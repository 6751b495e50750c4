"""FixedBasePositionalEncoding: positions written as digits in fixed bases."""

from tfnp_trax import fastmath
from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.layers import _attention_core as core_attn
from tfnp_trax.layers import base
from tfnp_trax.layers import initializers as init

__all__ = ['FixedBasePositionalEncoding']


class FixedBasePositionalEncoding(base.Layer):
  """Adds learned digit embeddings of the position: (batch, L, d) -> same.

  The position p is written with `n_digits` digits in each base b of
  `bases` (least significant first). Digit i of base b scales a learned
  vector s[b][i] of d / n_digits features; the n_digits scaled vectors are
  concatenated to d features and the results of all bases summed. A learned
  vector `start_vec` is added at the first position of each call, so the
  model can tell where a sequence starts. `d` must be a multiple of
  `n_digits`. Weights: `([[s[b][i] (1, d / n_digits)] per digit] per base,
  start_vec (1, 1, d))`; at init, as in Trax, every base gets the same digit
  vectors.

  In 'train' mode, per example, positions start at a random offset in
  [0, min(bases)**n_digits - L) except one time in
  `start_from_zero_one_in`, when they start at 0 as in evaluation; and one
  time in `base_dropout_one_in` the whole digit encoding of an example is
  dropped (all bases at once, as in Trax). The random bits are TensorFlow's,
  so only these distributions equal Trax's. In 'predict' mode the state
  counts the positions seen and `start_vec` is added only at position 0.

  Example:
    >>> layer = FixedBasePositionalEncoding(bases=[2], n_digits=2,
    ...                                     mode='eval')
    >>> _ = layer.init(shapes.ShapeDtype((1, 3, 2)))
    >>> [[tuple(s.shape) for s in base] for base in layer.weights[0]]
    [[(1, 1), (1, 1)]]

  Args:
    bases: the bases the position is written in.
    n_digits: digits per base; positions must stay below
      min(bases)**n_digits.
    start_from_zero_one_in: in training, start at 0 one time in this many.
    base_dropout_one_in: in training, drop the encoding one time in this
      many.
    mode: 'train', 'eval' or 'predict'.
    initializer: initializer of the digit vectors and of `start_vec`.
  """

  def __init__(self, bases=(11, 13, 14, 15), n_digits=8,
               start_from_zero_one_in=2, base_dropout_one_in=100,
               mode='train', initializer=init.RandomUniformInitializer(1e-4)):
    super().__init__()
    core_attn.check_mode(self.name, mode)
    self._bases = list(bases)
    self._n_digits = n_digits
    self._mode = mode
    self._initializer = initializer
    self._start_from_zero_one_in = start_from_zero_one_in
    self._base_dropout_one_in = base_dropout_one_in

  def forward(self, x):
    base_weights, start_vec = self.weights
    batch, length = x.shape[0], x.shape[1]
    max_pos = min(self._bases)**self._n_digits
    if length >= max_pos:
      raise ValueError(
          f'{self.name}: input length {length} must be below '
          f'min(bases)**n_digits = {max_pos} (bases {self._bases}, n_digits '
          f'{self._n_digits}); use more digits or larger bases.')
    positions = jnp.arange(length, dtype=jnp.int32)[None, :]
    if self._mode == 'train':
      rngs = fastmath.random.split(self.rng, 3)
      nonzero = fastmath.random.randint(rngs[0], (batch,), 0,
                                        self._start_from_zero_one_in)
      start = fastmath.random.randint(rngs[1], (batch,), 0,
                                      max_pos - length)
      positions = positions + (start * jnp.minimum(1, nonzero))[:, None]
      keep = fastmath.random.randint(rngs[2], (batch,), 0,
                                     self._base_dropout_one_in)
      keep = jnp.minimum(1, keep).astype(jnp.float32)[:, None, None]
    elif self._mode == 'predict':
      positions = positions + self.state
    total = 0.0
    for digit_vectors, b in zip(base_weights, self._bases):
      digits, rest = [], positions
      for vector in digit_vectors:
        digits.append(jnp.mod(rest, b).astype(jnp.float32)[:, :, None] *
                      vector)
        rest = rest // b
      encoding = jnp.concatenate(digits, axis=-1)
      if self._mode == 'train':
        encoding = encoding * keep
      total = total + encoding
    first = total[:, :1, :]
    marked = first + start_vec
    if self._mode == 'predict':
      marked = jnp.where(jnp.equal(self.state, 0), marked, first)
      self.state = self.state + length
    total = jnp.concatenate([marked, total[:, 1:, :]], axis=1)
    return x + total

  def init_weights_and_state(self, input_signature):
    d_feature = input_signature.shape[-1]
    if d_feature % self._n_digits:
      raise ValueError(
          f'{self.name}: input width {d_feature} must be a multiple of '
          f'n_digits {self._n_digits} (input shape '
          f'{tuple(input_signature.shape)}).')
    d_digit = d_feature // self._n_digits
    rngs = fastmath.random.split(self.rng, 2)
    digit_rngs = fastmath.random.split(rngs[0], self._n_digits)
    # One list of keys reused for every base, so all bases start equal.
    base_weights = [[self._initializer((1, d_digit), digit_rngs[i])
                     for i in range(self._n_digits)]
                    for _ in self._bases]
    start_vec = self._initializer((1, 1, d_feature), rngs[1])
    self.weights = (base_weights, start_vec)
    if self._mode == 'predict':
      self.state = jnp.zeros((), dtype=jnp.int32)
