"""The shared layer-testing helpers fail when a layer is wrong."""

import numpy as np
import pytest

from tests import _layer_testing as lt
from tfnp_trax import fastmath
from tfnp_trax import layers as tl

_X = np.linspace(-1, 1, 6).reshape(2, 3)


def _double_without_gradient():
  # Forward is 2x, but the gradient is zero.
  return tl.Fn('Bad', lambda x: 2 * fastmath.stop_gradient(x))


@pytest.mark.parametrize('mode', lt.MODES)
def test_check_layer_catches_wrong_outputs_and_gradients(mode):
  lt.check_layer(tl.Fn('Double', lambda x: 2 * x), _X, lambda x, w: 2 * x,
                 modes=(mode,))
  with pytest.raises(AssertionError, match='forward'):
    lt.check_layer(tl.Fn('Double', lambda x: 2 * x), _X, lambda x, w: 3 * x,
                   modes=(mode,))
  with pytest.raises(AssertionError, match='gradient of leaf 0'):
    lt.check_layer(_double_without_gradient(), _X, lambda x, w: 2 * x,
                   modes=(mode,))


def test_check_parallel_catches_a_wrong_gradient_among_many():
  good = (tl.Fn('Double', lambda x: 2 * x), _X, lambda x, w: 2 * x)
  with pytest.raises(AssertionError, match='gradient of leaf 1'):
    lt.check_parallel([good, (_double_without_gradient(), _X,
                              lambda x, w: 2 * x)], modes=('jit',))


def test_check_bfloat16_catches_promotion():
  with pytest.raises(AssertionError):
    lt.check_bfloat16(tl.Fn('Up', lambda x: x.astype('float32')), _X,
                      modes=('eager',))


def test_numeric_grads_match_the_analytic_gradient():
  # d/dx sum(x * y * ct) = y * ct and d/dy = x * ct, by hand.
  x, y = np.array([1., -2., 3.]), np.array([0.5, 4., -1.])
  ct = np.array([2., 1., -3.])
  gx, gy = lt.numeric_grads(lambda a, b: a * b, [x, y], ct)
  np.testing.assert_allclose(gx, y * ct, rtol=1e-6)
  np.testing.assert_allclose(gy, x * ct, rtol=1e-6)


@pytest.mark.parametrize('mode', lt.MODES)
def test_forward_and_grads_differentiates_inputs_and_weights(mode):
  # y = x @ w + b, so for loss sum(y * ct): dx = ct @ w.T, dw = x.T @ ct,
  # db = sum(ct over the batch).
  rng = np.random.default_rng(0)
  x, ct = lt.random(rng, 2, 3), lt.random(rng, 2, 4)
  layer = lt.initialized(tl.Dense(4), x)
  w, b = lt.leaves(layer.weights)
  y, _, gx, (gw, gb) = lt.forward_and_grads(layer, x, layer.weights,
                                            layer.state, ct, mode)
  lt.assert_close([y, gx, gw, gb], [x @ w + b, ct @ w.T, x.T @ ct,
                                    ct.sum(0)])
  with pytest.raises(AssertionError):
    lt.assert_close(gx, -ct @ w.T)


@pytest.mark.parametrize('mode', lt.MODES)
def test_run_layer_returns_state_and_layer_outputs_only_outputs(mode):
  layer = tl.Dropout(0.5, mode='train')
  x = np.ones((4, 6), np.float32)
  lt.init_layer(layer, x)
  y, state = lt.run_layer(layer, x, mode, rng=fastmath.random.get_prng(3))
  np.testing.assert_array_equal(lt.layer_outputs(layer, x, mode, seed=3), y)
  # Dropout(0.5) keeps about half the ones, scaled by 2; its state (the
  # rate) comes back unchanged.
  assert set(np.unique(np.asarray(y)).tolist()) == {0., 2.}
  np.testing.assert_array_equal(state, 0.5)
