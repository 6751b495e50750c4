"""PositionalEncoding and ShiftRight vs NumPy."""

import numpy as np
import pytest

from tests import _layer_testing as lt
from tfnp_trax import fastmath
from tfnp_trax import layers as tl
from tfnp_trax import shapes
from tfnp_trax.fastmath import numpy as jnp


def _sinusoids(max_len, d):
  """Written out entry by entry from the formula, in float64."""
  table = np.zeros((max_len, d))
  for p in range(max_len):
    for i in range(d):
      angle = p / 10000.0 ** ((i - i % 2) / d)
      table[p, i] = np.sin(angle) if i % 2 == 0 else np.cos(angle)
  return table


@pytest.mark.parametrize('d', [6, 5])
def test_initial_table_is_sinusoidal(d):
  layer = tl.PositionalEncoding(max_len=7)
  layer.init(shapes.ShapeDtype((1, 3, d)))
  assert tuple(layer.weights.shape) == (7, d)
  np.testing.assert_allclose(np.asarray(layer.weights), _sinusoids(7, d),
                             rtol=1e-6, atol=1e-6)


def test_adds_the_first_rows_with_gradients(rng):
  x = rng.normal(size=(2, 3, 4))
  table = rng.normal(size=(5, 4))  # Trained weights need not be sinusoids.
  lt.check_layer(tl.PositionalEncoding(max_len=5), x,
                 lambda xx, w: xx + w[None, :3], weights=table)


@pytest.mark.parametrize('mode', lt.MODES)
def test_predict_mode_counts_positions(mode, rng):
  layer = tl.PositionalEncoding(max_len=6, mode='predict')
  layer.init(shapes.ShapeDtype((2, 1, 4)))
  x = rng.normal(size=(2, 5, 4)).astype(np.float32)
  step = lt.compile_fn(
      lambda xx, state: layer.pure_fn(xx, layer.weights, state, layer.rng),
      mode)
  state, outputs = layer.state, []
  for start, stop in [(0, 2), (2, 3), (3, 4), (4, 5)]:
    y, state = step(jnp.asarray(x[:, start:stop]), state)
    outputs.append(np.asarray(y))
  assert int(state) == 5
  np.testing.assert_allclose(np.concatenate(outputs, axis=1),
                             x + _sinusoids(6, 4)[None, :5], rtol=1e-5,
                             atol=1e-6)


def test_too_long_sequences_name_layer_length_and_limit():
  layer = tl.PositionalEncoding(max_len=4)
  layer.init(shapes.ShapeDtype((1, 4, 2)))
  with pytest.raises(tl.LayerError,
                     match=r'PositionalEncoding: input length 5 exceeds '
                     r'max_len 4 \(input shape \(1, 5, 2\)\)'):
    layer(jnp.zeros((1, 5, 2), jnp.float32))
  predict = tl.PositionalEncoding(max_len=4, mode='predict')
  predict.init(shapes.ShapeDtype((1, 1, 2)))
  predict(jnp.zeros((1, 3, 2), jnp.float32))
  with pytest.raises(tl.LayerError,
                     match=r'PositionalEncoding: decoding length 5 \(at '
                     r'position 3, adding 2\) exceeds max_len 4'):
    predict(jnp.zeros((1, 2, 2), jnp.float32))


def test_dropout_drops_whole_features_shared_over_positions():
  layer = tl.PositionalEncoding(max_len=8, dropout=0.5, mode='train')
  x = jnp.zeros((1, 8, 64), jnp.float32)
  layer.init(shapes.signature(x))
  added = np.asarray(layer(x, rng=fastmath.random.get_prng(5)))[0]
  table = _sinusoids(8, 64)
  kept = np.isclose(added, 2.0 * table, atol=1e-5).all(axis=0)
  dropped = (added == 0.0).all(axis=0)
  assert (kept | dropped).all()  # One decision per feature, all positions.
  assert 10 < kept.sum() < 54
  evaluated = tl.PositionalEncoding(max_len=8, dropout=0.5, mode='eval')
  evaluated.init(shapes.signature(x))
  np.testing.assert_allclose(np.asarray(evaluated(x))[0], table, atol=1e-6)


def test_random_start_offsets_in_training():
  layer = tl.PositionalEncoding(max_len=8, start_from_zero_prob=0.0,
                                max_offset_to_add=3)
  x = jnp.zeros((1, 4, 2), jnp.float32)
  layer.init(shapes.signature(x))
  table, starts = _sinusoids(8, 2), set()
  for seed in range(12):
    added = np.asarray(layer(x, rng=fastmath.random.get_prng(seed)))[0]
    matches = [o for o in range(3)
               if np.allclose(added, table[o:o + 4], atol=1e-6)]
    assert len(matches) == 1
    starts.add(matches[0])
  assert len(starts) > 1


def test_projected_table_with_d_feature(rng):
  x = rng.normal(size=(1, 3, 4))
  lt.check_layer(
      tl.PositionalEncoding(max_len=5, d_feature=2), x,
      lambda xx, w: xx + (w[0][:3] @ w[1])[None], check_grad=False)


def test_bfloat16_inputs_stay_bfloat16(rng):
  lt.check_bfloat16(tl.PositionalEncoding(max_len=4),
                    rng.normal(size=(1, 3, 4)), rtol=0.02, atol=0.02)


@pytest.mark.parametrize('n_positions', [1, 2])
def test_shift_right_matches_numpy(n_positions):
  tokens = np.arange(1, 9).reshape((2, 4)).astype(np.int32)
  want = np.zeros_like(tokens)
  want[:, n_positions:] = tokens[:, :-n_positions]
  lt.check_layer(tl.ShiftRight(n_positions), tokens,
                 lambda t, _: want, check_grad=False)
  vectors = np.ones((1, 3, 2))
  lt.check_layer(tl.ShiftRight(n_positions), vectors,
                 lambda t, _: np.concatenate(
                         [np.zeros((1, n_positions, 2)),
                          t[:, :3 - n_positions]], axis=1),
                 modes=('eager',))
  predict = tl.ShiftRight(n_positions, mode='predict')
  np.testing.assert_array_equal(np.asarray(predict(jnp.asarray(tokens))),
                                tokens)


def test_weight_file_with_trax_old_table_shape_loads(tmp_path):
  # trax/layers/attention.py, PositionalEncoding.forward: "old checkpoints
  # have 1 in first dim already": a [1, max_len, d] table is read as well
  # (Trax's own decoding test files hold one).
  from tfnp_trax.layers import weight_files  # pylint: disable=g-import-not-at-top
  sig = shapes.ShapeDtype((2, 3, 4))
  table = np.random.default_rng(0).normal(size=(1, 6, 4)).astype(np.float32)
  path = str(tmp_path / 'pe.pkl.gz')
  weight_files.pickle_to_file(
      {'flat_weights': [table], 'flat_state': [], 'input_signature': sig},
      path, gzip=True)
  for mode in ('eval', 'predict'):
    layer = tl.PositionalEncoding(max_len=6, mode=mode)
    layer.init_from_file(path, weights_only=True)
    x = np.zeros((2, 3, 4), np.float32)
    np.testing.assert_allclose(np.asarray(layer(x)),
                               np.broadcast_to(table[:, :3], (2, 3, 4)))
  # Any other extra axis is still a different model.
  weight_files.pickle_to_file(
      {'flat_weights': [np.concatenate([table, table])], 'flat_state': [],
       'input_signature': sig}, path, gzip=True)
  with pytest.raises(weight_files.WeightFileError,
                     match=r'has shape \(2, 6, 4\) in the file but the model '
                     r'expects \(6, 4\)'):
    tl.PositionalEncoding(max_len=6).init_from_file(path, weights_only=True)
