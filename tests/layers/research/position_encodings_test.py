"""Research positional encodings against NumPy references and real Trax.

AxialPositionalEncoding, SinCosPositionalEncoding, FixedBasePositionalEncoding
and TimeBinPositionalEncoding here; InfinitePositionalEncoding and the
Threefry functions in infinite_encoding_test.py. Deterministic outputs of
Trax 1.4.1 are in tests/testdata/position_encodings/.
"""

import numpy as np
import pytest

from tests import _fixtures
from tests import _layer_testing as lt
from tfnp_trax import fastmath
from tfnp_trax import layers as tl
from tfnp_trax import shapes
from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.layers.research import position_encodings
from tfnp_trax.layers.research.position_encodings import AxialPositionalEncoding
from tfnp_trax.layers.research.position_encodings import FixedBasePositionalEncoding
from tfnp_trax.layers.research.position_encodings import SinCosPositionalEncoding
from tfnp_trax.layers.research.position_encodings import TimeBinPositionalEncoding

CASES = _fixtures.json_file('position_encodings', 'cases.json')['cases']
ARRAYS = _fixtures.arrays('position_encodings', 'fixtures.npz')


def _axial_reference(x, tables, grid):
  """x + the concatenation, over axes, of each table's row at that axis."""
  batch, length, _ = x.shape
  coords = np.stack(np.unravel_index(np.arange(length), grid), axis=1)
  parts = []
  for axis, table in enumerate(tables):
    rows = table.reshape(grid[axis], -1)  # (n_axis, d_axis)
    parts.append(rows[coords[:, axis]])  # (length, d_axis)
  return x + np.concatenate(parts, -1)[None].repeat(batch, 0)


def test_forward_and_gradients_match_numpy(rng):
  x = rng.normal(size=(2, 6, 5)).astype(np.float32)
  layer = AxialPositionalEncoding(shape=(2, 3), d_embs=(2, 3), mode='eval')
  lt.check_layer(layer, x,
                 lambda x, w: _axial_reference(x, w, (2, 3)))


def test_three_axes_and_weight_shapes(rng):
  x = rng.normal(size=(1, 12, 6)).astype(np.float32)
  layer = AxialPositionalEncoding(shape=(2, 3, 2), d_embs=(1, 2, 3))
  weights = lt.check_layer(
      layer, x, lambda x, w: _axial_reference(x, w, (2, 3, 2)),
      check_grad=False, modes=('eager',))
  assert [tuple(w.shape) for w in weights] == [(1, 2, 1, 1, 1),
                                              (1, 1, 3, 1, 2),
                                              (1, 1, 1, 2, 3)]


def test_predict_mode_adds_the_rows_of_the_positions_fed(rng):
  full = AxialPositionalEncoding(shape=(2, 4), d_embs=(3, 1), mode='eval')
  x = rng.normal(size=(2, 8, 4)).astype(np.float32)
  full.init(shapes.signature(x), rng=fastmath.random.get_prng(0))
  want = np.asarray(full(jnp.asarray(x)))
  step = AxialPositionalEncoding(shape=(2, 4), d_embs=(3, 1), mode='predict')
  step.init(shapes.ShapeDtype((2, 1, 4)))
  step.weights = full.weights
  got = []
  for start, stop in ((0, 1), (1, 3), (3, 8)):  # 1, 2 and 5 positions.
    got.append(np.asarray(step(jnp.asarray(x[:, start:stop]))))
  np.testing.assert_allclose(np.concatenate(got, 1), want, rtol=1e-6)
  assert int(step.state) == 8


def test_dropout_shares_one_decision_over_the_broadcast_axes():
  layer = AxialPositionalEncoding(shape=(4, 8), d_embs=(16, 16), dropout=0.5,
                                  dropout_broadcast_dims=(1, 2), mode='train')
  x = jnp.zeros((3, 32, 32), jnp.float32)
  layer.init(shapes.signature(x), rng=fastmath.random.get_prng(0))
  eval_layer = AxialPositionalEncoding(shape=(4, 8), d_embs=(16, 16))
  eval_layer.init(shapes.signature(x))
  emb = np.asarray(eval_layer(x, weights=layer.weights))
  out = np.asarray(layer(x, rng=fastmath.random.get_prng(1)))
  kept = np.isclose(out, 2.0 * emb, rtol=1e-6)
  dropped = out == 0.0
  assert np.all(kept | dropped)
  # One keep/drop decision per (example, feature), the same at every
  # position; roughly half of the 96 decisions keep.
  per_feature = kept.all(axis=1)
  assert np.array_equal(per_feature, kept.any(axis=1))
  assert 20 < per_feature.sum() < 76


@pytest.mark.parametrize('kwargs, shape, error, pattern', [
    (dict(shape=(2, 3), d_embs=(4,)), None, ValueError,
     r'shape \(2, 3\) and d_embs \(4,\) must have one entry per axis'),
    (dict(shape=(2, 3), d_embs=(2, 2)), (1, 6, 5), tl.LayerError,
     r'sum\(d_embs\) = 4 \(d_embs \(2, 2\)\) must equal the input width 5'),
    (dict(shape=(2, 3), d_embs=(2, 3)), (1, 5, 5), tl.LayerError,
     r'input length 5 must equal the product of shape \(2, 3\) = 6'),
])
def test_errors(kwargs, shape, error, pattern):
  with pytest.raises(error, match=pattern):
    layer = AxialPositionalEncoding(**kwargs)
    layer.init(shapes.ShapeDtype(shape))
    layer(jnp.zeros(shape, jnp.float32))


def test_exported_at_tl_level_as_in_trax():
  for name in position_encodings.__all__:
    assert getattr(tl, name) is getattr(position_encodings, name)


# -- Real Trax ---------------------------------------------------------------
def _recorded_layer(name):
  case = CASES[name]
  layer = getattr(position_encodings, case['cls'])(**case['kwargs'])
  x = ARRAYS[f'{name}/x']
  steps = case['steps']
  first = x if steps is None else x[:, :steps[0]]
  layer.init(shapes.signature(first))
  leaves = [jnp.asarray(ARRAYS[f'{name}/w{i}'])
            for i in range(case['n_weights'])]
  if leaves:
    layer.weights, _ = fastmath.tree_unflatten(leaves, layer.weights)
  return layer, x, steps


@pytest.mark.parametrize('name', sorted(CASES))
def test_outputs_match_trax_given_its_weights(name):
  layer, x, steps = _recorded_layer(name)
  assert str(layer) == CASES[name]['repr']
  want = ARRAYS[f'{name}/y']
  if steps is None:
    modes = lt.MODES if name.endswith('eval') else ('eager',)
    for mode in modes:
      y, _ = lt.run_layer(layer, jnp.asarray(x), mode)
      np.testing.assert_allclose(y, want, rtol=1e-5, atol=2e-6,
                                 err_msg=mode)
    return
  got, start = [], 0
  for n in steps:  # 'predict' mode, a few positions per call.
    got.append(np.asarray(layer(jnp.asarray(x[:, start:start + n]))))
    start += n
  np.testing.assert_allclose(np.concatenate(got, 1), want, rtol=1e-5,
                             atol=2e-6)
  np.testing.assert_array_equal(
      fastmath.tree_flatten(layer.state)[0], ARRAYS[f'{name}/final_state'])


# -- SinCosPositionalEncoding --------------------------------------------------
def _sincos_reference(start, length, depth):
  """float64 (length, depth): sines of p * w_j, then their cosines."""
  p = np.arange(start, start + length, dtype=np.float64)[:, None]
  w = 10000.0 ** (-np.arange(0, depth, 2) / depth)
  return np.concatenate([np.sin(p * w), np.cos(p * w)], 1)


def test_sincos_eval_matches_numpy_in_every_mode(rng):
  x = rng.normal(size=(2, 7, 6)).astype(np.float32)
  lt.check_layer(SinCosPositionalEncoding(mode='eval'), x,
                     lambda x, w: x + _sincos_reference(0, 7, 6)[None],
                     rtol=1e-5, atol=1e-6)


def _start_of(y, x, length, depth, limit):
  """The start position whose encoding is y - x (or None)."""
  emb = np.asarray(y, np.float64) - np.asarray(x, np.float64)
  for start in range(limit):
    if np.allclose(emb, _sincos_reference(start, length, depth)[None],
                   atol=2e-4):
      return start
  return None


def test_sincos_train_starts_at_random_offsets_half_the_time_at_zero():
  layer = SinCosPositionalEncoding(add_offset=16, mode='train')
  x = jnp.zeros((2, 5, 4), jnp.float32)
  layer.init(shapes.signature(x))
  starts = [_start_of(layer(x, rng=fastmath.random.get_prng(seed)), x, 5, 4,
                      16) for seed in range(48)]
  assert None not in starts
  # P(start 0) = 1/2 + 1/2 * 1/16; 48 draws: mean 25.5, sd 3.5.
  assert 14 <= starts.count(0) <= 37, starts
  assert len(set(starts)) >= 6
  # A traced call draws its start per call too.
  y, _ = lt.run_layer(layer, x, 'jit', rng=fastmath.random.get_prng(3))
  assert _start_of(y, x, 5, 4, 16) is not None


def test_sincos_dropout_drops_whole_features_shared_over_positions():
  layer = SinCosPositionalEncoding(dropout=0.5, start_from_zero_one_in=1,
                                   mode='train')
  x = jnp.zeros((3, 6, 32), jnp.float32)
  layer.init(shapes.signature(x))
  y = np.asarray(layer(x, rng=fastmath.random.get_prng(1)), np.float64)
  emb = _sincos_reference(0, 6, 32)[None]
  # y = emb * m with one m in {0, 2} per feature (1/keep_prob = 2), shared
  # by every position and example; read m where |emb| is largest.
  at = np.abs(emb[0]).argmax(0)
  m = y[:, at, np.arange(32)] / emb[0, at, np.arange(32)]
  assert np.all(np.isclose(m, 0, atol=1e-4) | np.isclose(m, 2, atol=1e-4))
  np.testing.assert_allclose(m, np.broadcast_to(m[:1], m.shape), atol=1e-4)
  np.testing.assert_allclose(
      y, np.broadcast_to(emb * np.round(m[:1])[:, None, :], y.shape),
      atol=1e-5)
  assert 4 <= np.sum(np.round(m[0]) == 0) <= 28


def test_sincos_predict_counts_positions_under_tf_function(rng):
  x = rng.normal(size=(1, 5, 4)).astype(np.float32)
  layer = SinCosPositionalEncoding(mode='predict')
  layer.init(shapes.ShapeDtype((1, 2, 4)))
  state, got = layer.state, []
  for start, stop in ((0, 2), (2, 3), (3, 5)):
    y, state = lt.run_layer(layer, jnp.asarray(x[:, start:stop]), 'jit',
                            state=state)
    got.append(np.asarray(y))
  np.testing.assert_allclose(np.concatenate(got, 1),
                             x + _sincos_reference(0, 5, 4)[None], atol=1e-6)
  assert int(state) == 5


# -- FixedBasePositionalEncoding -----------------------------------------------
def _digits_reference(positions, bases, weights):
  """float64 (batch, L, d): digit-scaled vectors summed over the bases."""
  base_weights, start_vec = weights
  total = 0.0
  for b, vectors in zip(bases, base_weights):
    rest, parts = positions, []
    for v in vectors:
      parts.append((rest % b)[..., None] * np.asarray(v, np.float64)[0])
      rest = rest // b
    total = total + np.concatenate(parts, -1)
  total = np.array(total)
  total[:, 0] += np.asarray(start_vec, np.float64)[0]
  return total


def test_fixed_base_eval_matches_numpy_with_gradients(rng):
  x = rng.normal(size=(2, 10, 6)).astype(np.float32)
  weights = ([[rng.normal(size=(1, 2)) for _ in range(3)]
              for _ in range(2)], rng.normal(size=(1, 1, 6)))
  positions = np.arange(10)[None]
  lt.check_layer(
      FixedBasePositionalEncoding(bases=[3, 4], n_digits=3, mode='eval'), x,
      lambda x, w: x + _digits_reference(positions, [3, 4], w),
      weights=weights)


def test_fixed_base_init_repeats_the_digit_vectors_over_bases():
  layer = FixedBasePositionalEncoding(mode='eval')
  layer.init(shapes.ShapeDtype((1, 4, 16)))
  base_weights, start_vec = layer.weights
  assert [len(b) for b in base_weights] == [8, 8, 8, 8]
  for vectors in base_weights[1:]:  # As in Trax: one key list per base.
    np.testing.assert_array_equal(np.stack(vectors),
                                  np.stack(base_weights[0]))
  assert tuple(start_vec.shape) == (1, 1, 16)
  values = np.concatenate([np.ravel(v) for v in base_weights[0]] +
                          [np.ravel(start_vec)])
  assert np.all(np.abs(values) <= 1e-4) and np.std(values) > 1e-5


def test_fixed_base_train_offsets_each_example_and_drops_encodings(rng):
  x = rng.normal(size=(6, 4, 4)).astype(np.float32)
  layer = FixedBasePositionalEncoding(bases=[2], n_digits=4,
                                      start_from_zero_one_in=10**6,
                                      base_dropout_one_in=10**6)
  layer.init(shapes.signature(x))
  weights = lt.to_numpy64(layer.weights)
  y = np.asarray(layer(jnp.asarray(x), rng=fastmath.random.get_prng(2)))
  starts = []
  for b in range(6):  # Positions start..start+3 < 2**4.
    for start in range(13):
      want = x[b] + _digits_reference(np.arange(start, start + 4)[None], [2],
                                      weights)[0]
      if np.allclose(y[b], want, atol=1e-6):
        starts.append(start)
        break
  assert len(starts) == 6 and len(set(starts)) > 1, starts
  # base_dropout_one_in=1: every example's digit encoding is dropped and
  # only start_vec remains.
  always_dropped = FixedBasePositionalEncoding(bases=[2, 3], n_digits=4,
                                               base_dropout_one_in=1)
  always_dropped.init(shapes.signature(x))
  y = np.asarray(always_dropped(jnp.asarray(x)))
  start_vec = np.asarray(always_dropped.weights[1])
  np.testing.assert_allclose(y[:, 0], x[:, 0] + start_vec[0], atol=1e-7)
  np.testing.assert_array_equal(y[:, 1:], x[:, 1:])


def test_fixed_base_predict_marks_only_the_first_position(rng):
  x = rng.normal(size=(2, 5, 4)).astype(np.float32)
  full = FixedBasePositionalEncoding(bases=[3], n_digits=2, mode='eval')
  full.init(shapes.signature(x))
  step = FixedBasePositionalEncoding(bases=[3], n_digits=2, mode='predict')
  step.init(shapes.ShapeDtype((2, 1, 4)))
  state, got = step.state, []
  for i in range(5):
    y, state = lt.run_layer(step, jnp.asarray(x[:, i:i + 1]), 'jit',
                            weights=full.weights, state=state)
    got.append(np.asarray(y))
  np.testing.assert_allclose(np.concatenate(got, 1),
                             np.asarray(full(jnp.asarray(x))), atol=1e-7)


# -- TimeBinPositionalEncoding -------------------------------------------------
def _time_bin_reference(positions, length):
  k, r = np.divmod(positions, length)
  return np.stack([1 / (1 + k), r / length, k % 2], -1)


@pytest.mark.parametrize('mode', lt.MODES)
def test_time_bin_replaces_the_last_three_features(mode, rng):
  x = rng.normal(size=(2, 9, 5)).astype(np.float32)
  layer = TimeBinPositionalEncoding(time_bin_length=4, mode='eval')
  layer.init(shapes.signature(x))
  y, _ = lt.run_layer(layer, jnp.asarray(x), mode)
  want = np.concatenate([x[..., :2], np.broadcast_to(
      _time_bin_reference(np.arange(9), 4), (2, 9, 3))], -1)
  np.testing.assert_allclose(y, want, rtol=1e-6)


def test_time_bin_predict_counts_each_example(rng):
  layer = TimeBinPositionalEncoding(time_bin_length=2, mode='predict')
  layer.init(shapes.ShapeDtype((3, 1, 4)))
  state = jnp.asarray([0, 5, 1], jnp.int32)
  x = rng.normal(size=(3, 1, 4)).astype(np.float32)
  y, state = lt.run_layer(layer, jnp.asarray(x), 'xla', state=state)
  want = _time_bin_reference(np.array([0, 5, 1]), 2)[:, None]
  np.testing.assert_allclose(y, np.concatenate([x[..., :1], want], -1),
                             rtol=1e-6)
  np.testing.assert_array_equal(state, [1, 6, 2])


# -- Errors --------------------------------------------------------------------
@pytest.mark.parametrize('make, shape, error, pattern', [
    (lambda: FixedBasePositionalEncoding(n_digits=3), (1, 4, 8),
     tl.LayerError,
     r'FixedBasePositionalEncoding: input width 8 must be a multiple of '
     r'n_digits 3'),
    (lambda: FixedBasePositionalEncoding(bases=[2, 3], n_digits=2,
                                         mode='eval'), (1, 4, 4),
     tl.LayerError, r'input length 4 must be below min\(bases\)\*\*n_digits '
     r'= 4'),
    (lambda: SinCosPositionalEncoding(), (1, 4, 5), tl.LayerError,
     r'SinCosPositionalEncoding: expects .* an even d_feature'),
    (lambda: SinCosPositionalEncoding(dropout=1.0), None, ValueError,
     r'dropout must be < 1, got 1\.0'),
    (lambda: TimeBinPositionalEncoding(3, mode='test'), None, ValueError,
     r"mode must be one of .*got 'test'"),
])
def test_errors_name_the_layer(make, shape, error, pattern):
  with pytest.raises(error, match=pattern):
    layer = make()
    layer.init(shapes.ShapeDtype(shape))
    layer(jnp.zeros(shape, jnp.float32))
