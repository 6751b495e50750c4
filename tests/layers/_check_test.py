"""The shared layer checks fail when a layer's forward or gradient is wrong."""

import numpy as np
import pytest

from tfnp_trax import fastmath
from tfnp_trax import layers as tl
from tests.layers import _check

_X = np.linspace(-1, 1, 6).reshape(2, 3)


def _double_without_gradient():
  # Forward is 2x, but the gradient is zero.
  return tl.Fn('Bad', lambda x: 2 * fastmath.stop_gradient(x))


@pytest.mark.parametrize('mode', _check.MODES)
def test_check_layer_catches_wrong_outputs_and_gradients(mode):
  _check.check_layer(tl.Fn('Double', lambda x: 2 * x), _X,
                     lambda x, w: 2 * x, modes=(mode,))
  with pytest.raises(AssertionError, match='forward'):
    _check.check_layer(tl.Fn('Double', lambda x: 2 * x), _X,
                       lambda x, w: 3 * x, modes=(mode,))
  with pytest.raises(AssertionError, match='gradient of leaf 0'):
    _check.check_layer(_double_without_gradient(), _X, lambda x, w: 2 * x,
                       modes=(mode,))


def test_check_parallel_catches_a_wrong_gradient_among_many():
  good = (tl.Fn('Double', lambda x: 2 * x), _X, lambda x, w: 2 * x)
  with pytest.raises(AssertionError, match='gradient of leaf 1'):
    _check.check_parallel([good, (_double_without_gradient(), _X,
                                  lambda x, w: 2 * x)], modes=('jit',))


def test_check_bfloat16_catches_promotion():
  with pytest.raises(AssertionError):
    _check.check_bfloat16(tl.Fn('Up', lambda x: x.astype('float32')), _X,
                          modes=('eager',))
