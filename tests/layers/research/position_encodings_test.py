"""AxialPositionalEncoding against a NumPy reference, in every mode."""

import numpy as np
import pytest

from tests.layers import _check
from tfnp_trax import fastmath
from tfnp_trax import layers as tl
from tfnp_trax import shapes
from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.layers.research import position_encodings
from tfnp_trax.layers.research.position_encodings import AxialPositionalEncoding


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
  _check.check_layer(layer, x,
                     lambda x, w: _axial_reference(x, w, (2, 3)))


def test_three_axes_and_weight_shapes(rng):
  x = rng.normal(size=(1, 12, 6)).astype(np.float32)
  layer = AxialPositionalEncoding(shape=(2, 3, 2), d_embs=(1, 2, 3))
  weights = _check.check_layer(
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


def test_docstring_examples():
  _check.run_doctests(position_encodings)
