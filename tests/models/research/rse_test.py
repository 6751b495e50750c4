"""Residual Shuffle-Exchange network against NumPy float64 references."""


import numpy as np
import pytest

from tests import _layer_testing as lt
from tests.models import _np_ref as ref
from tfnp_trax import fastmath
from tfnp_trax import layers as tl
from tfnp_trax import models
from tfnp_trax import shapes
from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.models.research import rse

# Perfect shuffle of 8 positions (3-bit left rotation) and its inverse,
# written out: rol(1) = 0b010 = 2, rol(4) = 0b001 = 1, ...
SHUFFLE_8 = [0, 2, 4, 6, 1, 3, 5, 7]
UNSHUFFLE_8 = [0, 4, 1, 5, 2, 6, 3, 7]


def _rsu(x, w, residual_weight=0.9):
  """One Residual Switch Unit on (batch, length, d); w yields its leaves."""
  s, z, ln_scale, ln_bias, w2, b2 = (next(w) for _ in range(6))
  b, length, d = x.shape
  i = x.reshape(b, length // 2, 2 * d)
  c = ref.gelu(ref.layer_norm(i @ z, ln_scale, ln_bias)) @ w2 + b2
  o = ref.sigmoid(s) * i + np.sqrt(1 - residual_weight**2) * 0.25 * c
  return o.reshape(b, length, d)


def _rse_reference(ids, weights, n_blocks):
  w = ref.leaves(weights)
  x = next(w)[ids]
  assert ids.shape[1] == 8  # 3 bits; the permutations written above.
  for _ in range(n_blocks):
    forward = [next(w) for _ in range(6)]
    backward = [next(w) for _ in range(6)]
    for _ in range(3):  # One unit's weights for every step.
      x = _rsu(x, iter(forward))[:, SHUFFLE_8]
    for _ in range(3):
      x = _rsu(x, iter(backward))[:, UNSHUFFLE_8]
  x = _rsu(x, w)
  return ref.log_softmax(x @ next(w) + next(w))


def test_shuffles_by_hand():
  x = jnp.arange(8).reshape((1, 8, 1))
  shuffled = np.asarray(rse.ShuffleLayer()(x))[0, :, 0]
  np.testing.assert_array_equal(shuffled, SHUFFLE_8)
  np.testing.assert_array_equal(
      np.asarray(rse.ReverseShuffleLayer()(x))[0, :, 0], UNSHUFFLE_8)
  # The two are inverse permutations.
  np.testing.assert_array_equal(np.asarray(rse.ReverseShuffleLayer()(
      rse.ShuffleLayer()(x)))[0, :, 0], np.arange(8))


def test_residual_switch_unit_matches_numpy_with_gradients(rng):
  x = rng.normal(size=(2, 4, 3))

  def numpy_fn(inputs, weights):
    return _rsu(inputs, ref.leaves(weights))
  lt.check_layer(rse.ResidualSwitchUnit(3, mode='eval'), x, numpy_fn,
                 rtol=1e-4, atol=1e-5, grad_rtol=1e-3, grad_atol=1e-4,
                 modes=('eager', 'xla'))


def test_residual_switch_unit_starts_as_a_scaled_residual():
  layer = rse.ResidualSwitchUnit(2, mode='eval')
  weights, _ = layer.init(shapes.ShapeDtype((1, 2, 2)))
  s = fastmath.tree_leaves(weights)[0]
  # sigmoid(s) = residual_weight = 0.9 at init, on all 2 * d_model entries.
  np.testing.assert_allclose(ref.sigmoid(np.asarray(s, np.float64)),
                             [0.9] * 4, rtol=1e-6)


@pytest.mark.parametrize('mode', lt.MODES)
def test_model_matches_numpy(mode, rng):
  ids = rng.integers(0, 5, size=(2, 8)).astype(np.int32)
  model = models.ResidualShuffleExchange(5, 2, 0.0, 0.0, mode='eval',
                                         n_blocks=1)
  model.init(shapes.signature(ids), rng=fastmath.random.get_prng(0))
  r = np.random.default_rng(1)
  model.weights = fastmath.nested_map(
      lambda w: jnp.asarray(r.normal(size=w.shape) * 0.5, jnp.float32),
      model.weights)
  got, _ = lt.run_layer(model, jnp.asarray(ids), mode)
  np.testing.assert_allclose(np.asarray(got),
                             _rse_reference(ids, model.weights, 1),
                             rtol=1e-4, atol=1e-5)


def test_shapes_weight_count_and_normalization(rng):
  ids = jnp.asarray(rng.integers(0, 5, size=(2, 8)), jnp.int32)
  model = models.ResidualShuffleExchange(5, 4, 0.1, 0.1)  # 'train'.
  weights, _ = model.init(shapes.signature(ids))
  # Per unit: S 8, Z 8x16, LayerNorm 32, W 16x8 + B 8 = 16 d^2 + 12 d.
  unit = 8 + 128 + 32 + 136
  assert unit == 304
  # Embedding 5x4, 2 Benes blocks of 2 units, 1 more unit, Dense 4x5 + 5.
  assert ref.n_params(weights) == 20 + 5 * unit + 25 == 1565
  y = np.asarray(model(ids, rng=fastmath.random.get_prng(3)))
  assert y.shape == (2, 8, 5)
  np.testing.assert_allclose(np.exp(y).sum(-1), 1.0, rtol=1e-5)
  assert not np.allclose(y, np.asarray(model(ids, rng=fastmath.random
                                             .get_prng(4))))


def test_rejects_odd_lengths():
  model = models.ResidualShuffleExchange(5, 4, 0.0, 0.0, mode='eval')
  with pytest.raises(tl.LayerError, match=r'ResidualSwitchUnit: expects '
                     r'\(batch, length, depth\) with an even length, got '
                     r'shape \(2, 5, 4\)'):
    model.init(shapes.ShapeDtype((2, 5), jnp.int32))


def test_rejects_residual_weight_outside_0_1():
  with pytest.raises(ValueError, match=r'ResidualSwitchUnit: residual_weight '
                     r'must be in \(0, 1\), got 1.0'):
    rse.ResidualSwitchUnit(4, residual_weight=1.0)
