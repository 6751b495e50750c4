"""Tests of rotary position embeddings (rotary_positional_embedding.py)."""

import numpy as np
import pytest

from tests import _layer_testing as lt
from tests.layers.research import _rel_fixtures as fx
from tfnp_trax import layers as tl
from tfnp_trax.layers.research import rotary_positional_embedding as rope


def _np_rotate(x):
  """Rotates feature pairs (i, i + d/2) at position p by p * 10000^(-2i/d)."""
  _, length, d = x.shape
  half = d // 2
  theta = 10000.0 ** (-2.0 * np.arange(half) / d)
  out = np.empty_like(x)
  for p in range(length):
    c, s = np.cos(p * theta), np.sin(p * theta)
    a, b = x[:, p, :half], x[:, p, half:]
    out[:, p, :half] = a * c - b * s
    out[:, p, half:] = a * s + b * c
  return out


def test_matches_numpy_with_gradients():
  x = lt.random(np.random.default_rng(0), 2, 5, 6)
  lt.check_layer(rope.Rotate(), x, lambda xx, _: _np_rotate(xx))


def test_matches_trax():
  fx.assert_structure_matches('rotate', rope.Rotate())
  fx.assert_outputs_match('rotate', rope.Rotate(), modes=lt.MODES)
  np.testing.assert_allclose(rope.rotate(fx.inputs('rotate')),
                             fx.outputs('rotate')[0], atol=1e-6)


def test_preserves_norms():
  x = lt.random(np.random.default_rng(1), 3, 7, 8)
  y = np.asarray(rope.rotate(x))
  np.testing.assert_allclose(np.linalg.norm(y, axis=-1),
                             np.linalg.norm(x, axis=-1), rtol=1e-5)


def test_scores_depend_only_on_relative_position():
  rng = np.random.default_rng(2)
  length, d = 6, 8
  q_vec, k_vec = rng.normal(size=d), rng.normal(size=d)
  # The same query (and key) vector at every position.
  q = np.asarray(rope.rotate(np.tile(q_vec, (1, length, 1)).astype(
      np.float32)))[0]
  k = np.asarray(rope.rotate(np.tile(k_vec, (1, length, 1)).astype(
      np.float32)))[0]
  scores = q @ k.T  # scores[m, n] = <rot_m q, rot_n k>
  for offset in range(-length + 1, length):
    diagonal = np.diagonal(scores, offset)
    np.testing.assert_allclose(diagonal, diagonal[0], rtol=1e-4, atol=1e-5)
  # ...and they do depend on it (the test could fail).
  assert not np.allclose(scores[0, 0], scores[0, 3], atol=1e-3)


def test_bad_shapes_are_named():
  with pytest.raises(ValueError, match=r'rotate: expects \(batch, length, '
                     r'd\) activations with an even d, got shape \(2, 3, 5\)'):
    rope.rotate(np.zeros((2, 3, 5), np.float32))
  layer = tl.Rotate()
  x = np.zeros((3, 4), np.float32)
  with pytest.raises(tl.LayerError, match=r'got shape \(3, 4\)'):
    lt.init_layer(layer, x)
    layer(x)
