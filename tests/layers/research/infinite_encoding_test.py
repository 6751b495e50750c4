"""InfinitePositionalEncoding and Threefry-2x32 against references.

Threefry is checked against a plain-Python implementation of the cipher
(Salmon et al., SC 2011) and against the bits Trax 1.4.1 (JAX) produced;
the encoding against a float64 NumPy reference built on that Python cipher,
and against Trax's recorded outputs (in position_encodings_test.py).
"""

import math

import numpy as np
import pytest

from tests import _fixtures
from tests import _layer_testing as lt
from tfnp_trax import fastmath
from tfnp_trax import layers as tl
from tfnp_trax import shapes
from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.layers.research.position_encodings import InfinitePositionalEncoding
from tfnp_trax.layers.research.position_encodings import threefry_2x32_prange
from tfnp_trax.layers.research.position_encodings import threefry_2x32_prf

ARRAYS = _fixtures.arrays('position_encodings', 'fixtures.npz')
MASK = 0xFFFFFFFF


def _threefry_reference(key, counter):
  """Threefry-2x32, 20 rounds, on Python ints (one 64-bit counter)."""
  rotations = [13, 15, 26, 6, 17, 29, 16, 24]
  ks = [key[0], key[1], key[0] ^ key[1] ^ 0x1BD11BDA]
  x = [(counter[0] + ks[0]) & MASK, (counter[1] + ks[1]) & MASK]
  for round_ in range(20):
    r = rotations[round_ % 8]
    x[0] = (x[0] + x[1]) & MASK
    x[1] = ((x[1] << r) | (x[1] >> (32 - r))) & MASK
    x[1] ^= x[0]
    if round_ % 4 == 3:
      s = round_ // 4 + 1
      x[0] = (x[0] + ks[s % 3]) & MASK
      x[1] = (x[1] + ks[(s + 1) % 3] + s) & MASK
  return x


def test_prf_matches_python_reference_and_trax_in_every_mode():
  key, x = ARRAYS['threefry/key'], ARRAYS['threefry/x']
  want = np.array([_threefry_reference([int(k) for k in key],
                                       [int(a), int(b)])
                   for a, b in x.reshape(-1, 2)], np.uint32).reshape(x.shape)
  np.testing.assert_array_equal(want, ARRAYS['threefry/prf'])
  for mode in lt.MODES:
    got = lt.compile_fn(threefry_2x32_prf, mode)(jnp.asarray(key),
                                                 jnp.asarray(x))
    assert got.dtype == jnp.uint32
    np.testing.assert_array_equal(got, want, err_msg=mode)


def test_prange_matches_trax():
  key = ARRAYS['threefry/key']
  np.testing.assert_array_equal(threefry_2x32_prange(key, 3, 11),
                                ARRAYS['threefry/prange_3_11'])
  noise_key = ARRAYS['threefry/noise_key']
  np.testing.assert_array_equal(threefry_2x32_prange(noise_key, 0, 8),
                                ARRAYS['threefry/prange_noise_0_8'])
  # Trax's noise key is split(PRNGKey(234234535))[0]: counters (0, 2), (1, 3).
  key = [0, 234234535]
  assert [_threefry_reference(key, [0, 2])[0],
          _threefry_reference(key, [1, 3])[0]] == noise_key.tolist()


def test_int32_keys_are_read_as_their_bits():
  key = fastmath.random.get_prng(5)
  bits = np.asarray(key).astype(np.uint32)
  np.testing.assert_array_equal(threefry_2x32_prange(key, 0, 3),
                                threefry_2x32_prange(bits, 0, 3))


@pytest.mark.parametrize('call, error, pattern', [
    (lambda: threefry_2x32_prf(np.zeros(2, np.float32),
                               np.zeros((1, 2), np.uint32)), TypeError,
     r'threefry_2x32_prf: key must be uint32\[2\] .*got dtype float32'),
    (lambda: threefry_2x32_prf(np.zeros(2, np.uint32),
                               np.zeros((1, 3), np.uint32)), TypeError,
     r'x must be uint32\[\.\.\., 2\], got dtype uint32 and shape \(1, 3\)'),
    (lambda: threefry_2x32_prange(np.zeros(3, np.uint32)), ValueError,
     r'threefry_2x32_prange: key must be uint32\[2\]'),
    (lambda: threefry_2x32_prange(np.zeros(2, np.uint32), 0, 2**32),
     NotImplementedError, r'only 32-bit counters are supported'),
])
def test_threefry_errors(call, error, pattern):
  with pytest.raises(error, match=pattern):
    call()


# -- InfinitePositionalEncoding ------------------------------------------------
def _noise_reference(length, depth):
  """float64 running sums of Trax 1.4.1's noise steps (see the layer)."""
  key = [int(k) for k in ARRAYS['threefry/noise_key']]
  words = np.array([_threefry_reference(key, [i, 0])[0]
                    for i in range(length * depth)], np.float64)
  steps = words.reshape(length, depth) / (2**31 - 1) * math.sqrt(3)
  return np.cumsum(steps, 0)


def _infinite_reference(length, depth, drift, phase=None, time_bin=None):
  """float64 (length, depth) encoding before the learned transform."""
  n_pairs = (depth + 1) // 2
  noise = _noise_reference(length, n_pairs) * math.sqrt(drift)
  if depth > 2:
    drift = drift**(n_pairs / (depth // 2))
  freq = 0.5 * (drift**2)**(np.arange(n_pairs) / max(n_pairs - 1, 1))
  t = np.arange(length)[:, None]
  c = np.arange(depth)
  cycles = (c % 2) / 4 + freq[c // 2] * t + noise[:, c // 2] / 4
  if phase is not None:
    cycles = cycles + phase
  emb = np.cos(2 * np.pi * cycles)
  if time_bin is not None:
    k, r = np.divmod(np.arange(length), time_bin)
    emb[:, -3:] = np.stack([1 / (1 + k), r / time_bin, k % 2], -1)
  return emb


@pytest.mark.parametrize('transform, depth', [('none', 6), ('diag', 5),
                                              ('any', 4)])
def test_matches_numpy_in_every_mode_with_gradients(transform, depth, rng):
  x = rng.normal(size=(2, 9, depth)).astype(np.float32)
  emb = _infinite_reference(9, depth, 0.03)
  transforms = {
      'none': lambda w: emb,
      'diag': lambda w: emb * np.log1p(np.exp(w)),
      'any': lambda w: emb @ w,
  }
  weights = {'none': None, 'diag': rng.normal(size=(depth,)),
             'any': rng.normal(size=(depth, depth))}[transform]
  layer = InfinitePositionalEncoding(affine=False, transform=transform,
                                     mode='eval')
  lt.check_layer(layer, x, lambda x, w: x + transforms[transform](w)[None],
                     weights=weights, rtol=1e-4, atol=2e-5)


def test_init_weights_as_trax():
  diag = InfinitePositionalEncoding(transform='diag')
  diag.init(shapes.ShapeDtype((1, 4, 6)))
  np.testing.assert_array_equal(diag.weights, np.full(6, 1e-4, np.float32))
  ortho = InfinitePositionalEncoding()
  ortho.init(shapes.ShapeDtype((1, 4, 6)))
  w = np.asarray(ortho.weights, np.float64)
  np.testing.assert_allclose(w @ w.T, np.eye(6), atol=1e-5)
  none = InfinitePositionalEncoding(transform='none')
  none.init(shapes.ShapeDtype((1, 4, 6)))
  assert none.weights == ()


def test_time_bin_features_replace_the_last_channels(rng):
  x = rng.normal(size=(1, 7, 6)).astype(np.float32)
  layer = InfinitePositionalEncoding(affine=False, transform='none',
                                     time_bin_length=3, drift=0.1)
  layer.init(shapes.signature(x))
  want = x + _infinite_reference(7, 6, 0.1, time_bin=3)[None]
  np.testing.assert_allclose(layer(jnp.asarray(x)), want, rtol=1e-5,
                             atol=1e-5)


def test_affine_adds_one_uniform_phase_per_channel_per_call():
  layer = InfinitePositionalEncoding(transform='none')
  x = jnp.zeros((2, 8, 6), jnp.float32)
  layer.init(shapes.signature(x))
  phases = []
  for seed in range(3):
    y = np.asarray(layer(x, rng=fastmath.random.get_prng(seed)), np.float64)
    # The phase is fastmath.random.uniform(rng, (1, depth)) in [0, 1).
    phase = np.asarray(fastmath.random.uniform(
        fastmath.random.get_prng(seed), (1, 6)), np.float64)
    want = _infinite_reference(8, 6, 0.03, phase=phase)
    np.testing.assert_allclose(y, np.broadcast_to(want, y.shape), atol=2e-5)
    phases.append(phase)
  assert not np.allclose(phases[0], phases[1])


def test_predict_feeds_one_position_per_call_eagerly(rng):
  x = rng.normal(size=(2, 5, 4)).astype(np.float32)
  full = InfinitePositionalEncoding(affine=False, mode='eval')
  full.init(shapes.signature(x))
  step = InfinitePositionalEncoding(affine=False, mode='predict')
  step.init(shapes.ShapeDtype((2, 1, 4)))
  step.weights = full.weights
  got = [np.asarray(step(jnp.asarray(x[:, i:i + 1]))) for i in range(5)]
  np.testing.assert_allclose(np.concatenate(got, 1),
                             np.asarray(full(jnp.asarray(x))), atol=1e-6)
  np.testing.assert_array_equal(step.state[0], [5, 5])
  with pytest.raises(tl.LayerError, match=r"InfinitePositionalEncoding: "
                     r"mode='predict' .* runs eagerly only"):
    lt.run_layer(step, jnp.asarray(x[:, :1]), 'jit')


@pytest.mark.parametrize('make, shape, error, pattern', [
    (lambda: InfinitePositionalEncoding(transform='full'), None, ValueError,
     r"InfinitePositionalEncoding: transform must be one of \('any', "
     r"'diag', 'none'\), got 'full'"),
    (lambda: InfinitePositionalEncoding(time_bin_length=2), (1, 3, 2),
     tl.LayerError, r'time_bin_length needs at least 3 features'),
])
def test_errors(make, shape, error, pattern):
  with pytest.raises(error, match=pattern):
    layer = make()
    layer.init(shapes.ShapeDtype(shape))
    layer(jnp.zeros(shape, jnp.float32))
