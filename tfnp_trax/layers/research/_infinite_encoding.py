"""InfinitePositionalEncoding: sinusoids whose phases drift as a random walk."""

import functools
import math

import numpy as np

from tfnp_trax import fastmath
from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.layers import _attention_core as core_attn
from tfnp_trax.layers import base
from tfnp_trax.layers import initializers as init
from tfnp_trax.layers.research import _threefry
from tfnp_trax.layers.research import _time_bin_encoding

__all__ = ['InfinitePositionalEncoding']

# Trax's fixed noise key: jax.random.split(jax.random.PRNGKey(234234535))[0].
_NOISE_KEY = _threefry.jax_split_first_key(234234535)
_TRANSFORMS = ('any', 'diag', 'none')


@functools.lru_cache(maxsize=16)
def _noise(length, depth):
  """float32 [length, depth]: the running sums of Trax's fixed noise.

  Row t, column j sums the steps u(i, j), i <= t, where u(i, j) is the first
  Threefry word of counter i * depth + j under `_NOISE_KEY`, scaled as Trax
  1.4.1 scales it: word / (2**31 - 1) * sqrt(3), in [0, 2 sqrt(3)]. (Its
  docstring speaks of steps in [-sqrt(3), sqrt(3)], but 1.4.1 divides
  without subtracting 1, so the walk also drifts upwards; kept, as trained
  Trax models depend on it.) A constant, so computed once in NumPy, bit for
  bit as Trax's table; `length` is a power of 2 so few sizes are cached.
  """
  counters = np.arange(length * depth, dtype=np.uint32)
  with np.errstate(over='ignore'):
    words, _ = _threefry.threefry_words(_NOISE_KEY[0], _NOISE_KEY[1],
                                        counters, np.zeros_like(counters))
  steps = words.reshape(length, depth).astype(np.float32)
  steps = steps / np.float32(2**31 - 1) * np.float32(3**.5)
  table = np.cumsum(steps, axis=0, dtype=np.float32)
  table.setflags(write=False)
  return table


def _cycles(lo, hi, depth, drift):
  """float32 [hi - lo, depth]: the phases, in cycles, of positions lo..hi-1.

  Channel pairs (2k, 2k + 1) are a cosine and a sine (a quarter cycle
  apart) of frequency f_k, geometric from 1/2 down to drift**2 / 2 (drift
  corrected for odd depth), plus the k-th noise walk, scaled by
  sqrt(drift) / 4 so it wanders about a quarter cycle after 1 / drift
  positions. All in float32, in Trax's order of operations.
  """
  n_pairs = (depth + 1) // 2
  length = 1 << max(hi - 1, 0).bit_length()
  noise = _noise(length, n_pairs)[lo:hi] * np.float32(drift**.5)
  t = np.arange(lo, hi)[:, None]
  pair, parity = np.divmod(np.arange(depth), 2)
  if depth > 2:
    drift = drift**(((depth + 1) // 2) / (depth // 2))
  freq = np.geomspace(.5, .5 * drift**2, num=n_pairs).astype(np.float32)
  cycles = (parity / 4).astype(np.float32) + freq[pair] * t.astype(np.float32)
  return cycles + noise[:, pair] / np.float32(4)


class InfinitePositionalEncoding(base.Layer):
  """Adds sinusoids of randomly drifting phase: (batch, L, d) -> same.

  Channel c of position t is cos(2 pi (cycles(t, c) + phase_c)) with the
  cycles of `_cycles`: a cosine/sine pair per frequency, whose phase also
  follows a fixed pseudorandom walk (Trax's own noise table, reproduced bit
  for bit), so far-apart positions look unrelated and no largest position
  exists. With `affine`, a random phase_c, uniform in [0, 1) per call, is
  added (TensorFlow's random bits: the distribution equals Trax's, the
  values do not). With `time_bin_length`, the last 3 channels are the
  features of `TimeBinPositionalEncoding`. The result is then transformed:
  'any' multiplies by a learned d x d matrix (orthogonal at init), 'diag'
  scales each channel by softplus of a learned vector (1e-4 at init),
  'none' adds it as is.

  In 'predict' mode the state is (positions int32 [batch], rng): each call
  feeds one position per example and reuses the rng's phases. Predict mode
  needs the positions' values while building the encoding, so it runs
  eagerly (as in Trax, where it cannot be jitted either).

  Example:
    >>> layer = InfinitePositionalEncoding(affine=False, transform='none')
    >>> _ = layer.init(shapes.ShapeDtype((1, 4, 6)))
    >>> tuple(layer(jnp.zeros((1, 4, 6), jnp.float32)).shape)
    (1, 4, 6)

  Args:
    drift: variance of the phase walk per position.
    affine: add a random phase per channel at every call.
    transform: 'any', 'diag' or 'none' (see above).
    time_bin_length: if set, the last 3 channels are time-bin features.
    mode: 'train', 'eval' or 'predict'.
  """

  def __init__(self, drift=.03, affine=True, transform='any',
               time_bin_length=None, mode='train'):
    super().__init__()
    core_attn.check_mode(self.name, mode)
    if transform not in _TRANSFORMS:
      raise ValueError(f'{self.name}: transform must be one of {_TRANSFORMS}, '
                       f'got {transform!r}.')
    self._drift = drift
    self._affine = affine
    self._transform = transform
    self._time_bin_length = time_bin_length
    self._mode = mode

  def _embeddings(self, lo, hi, depth, rng):
    """float32 [hi - lo, depth] encodings of positions lo..hi-1."""
    cycles = jnp.asarray(_cycles(lo, hi, depth, self._drift))
    if self._affine:
      cycles = cycles + fastmath.random.uniform(rng, (1, depth))
    embeddings = jnp.cos(jnp.float32(2 * math.pi) * cycles)
    if self._time_bin_length is not None:
      if depth < 3:
        raise ValueError(
            f'{self.name}: time_bin_length needs at least 3 features to '
            f'overwrite, got an input width of {depth}.')
      t = np.arange(lo, hi)
      features = _time_bin_encoding.time_bin_features(t, self._time_bin_length)
      embeddings = jnp.concatenate([embeddings[:, :-3], features], -1)
    return embeddings

  def forward(self, x):
    depth, length = x.shape[-1], x.shape[-2]
    if self._mode == 'predict':
      positions, predict_rng = self.state
      try:
        values = np.asarray(positions)
      except (TypeError, NotImplementedError, ValueError):
        values = None
      if values is None or values.dtype == object:
        raise NotImplementedError(
            f"{self.name}: mode='predict' builds the encoding from the "
            f'positions in its state and so runs eagerly only, not inside '
            f'tf.function or XLA.')
      lo, hi = int(values.min()), int(values.max()) + 1
      emb = self._embeddings(lo, hi, depth, predict_rng)
      emb = jnp.take(emb, jnp.asarray(values - lo), axis=0)[:, None, :]
      self.state = (positions + 1, predict_rng)
    else:
      emb = self._embeddings(0, length, depth, self.rng)[None]
    if self._transform == 'diag':
      emb = emb * jnp.logaddexp(self.weights, jnp.zeros_like(self.weights))
    elif self._transform == 'any':
      emb = jnp.matmul(emb, self.weights)
    return x + emb

  def init_weights_and_state(self, input_signature):
    d_feature = input_signature.shape[-1]
    if self._transform == 'diag':
      self.weights = jnp.full((d_feature,), 1e-4, dtype=jnp.float32)
    elif self._transform == 'any':
      self.weights = init.OrthogonalInitializer()((d_feature, d_feature),
                                                  self.rng)
    else:
      self.weights = base.EMPTY_WEIGHTS
    if self._mode == 'predict':
      self.state = (jnp.zeros((input_signature.shape[0],), dtype=jnp.int32),
                    self.rng)
