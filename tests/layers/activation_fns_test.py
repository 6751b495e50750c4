"""Activation layers vs NumPy float64 formulas, eager / jit / XLA."""

import math

import numpy as np
import pytest

from tfnp_trax import layers as tl
from tfnp_trax.fastmath import numpy as jnp
from tests import _layer_testing as lt

_ERF = np.vectorize(math.erf)
_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_LAMBDA = 1.0507009873554804934193349852946


def _sigmoid(x):
  return 1 / (1 + np.exp(-x))


# (layer constructor, reference, input range); ranges keep inputs away from
# the kinks at -1, 0 and 1 so finite differences are exact.
_CASES = {
    'Relu': (tl.Relu, lambda x: np.where(x > 0, x, 0.)),
    'ParametricRelu': (lambda: tl.ParametricRelu(0.5),
                       lambda x: np.maximum(0.5 * x, 0.)),
    'LeakyRelu': (lambda: tl.LeakyRelu(0.2), lambda x: np.where(
        x >= 0, x, 0.2 * x)),
    'Elu': (lambda: tl.Elu(0.7), lambda x: np.where(
        x > 0, x, 0.7 * (np.exp(x) - 1))),
    'Selu': (tl.Selu, lambda x: _SELU_LAMBDA * np.where(
        x > 0, x, _SELU_ALPHA * (np.exp(x) - 1))),
    'Gelu': (tl.Gelu, lambda x: 0.5 * x * (1 + _ERF(x / np.sqrt(2)))),
    'FastGelu': (tl.FastGelu, lambda x: 0.5 * x * (1 + np.tanh(
        np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))),
    'Sigmoid': (tl.Sigmoid, _sigmoid),
    'Tanh': (tl.Tanh, np.tanh),
    'HardSigmoid': (tl.HardSigmoid, lambda x: np.clip(1 + x, 0, 1)),
    'HardTanh': (tl.HardTanh, lambda x: np.clip(x, -1, 1)),
    'Softplus': (tl.Softplus, lambda x: np.log1p(np.exp(x))),
    'Exp': (tl.Exp, np.exp),
    'Log': (tl.Log, np.log),
    'Swish': (tl.Swish, lambda x: x * _sigmoid(x)),
    'Glu': (tl.Glu, lambda x: x[..., :3] * _sigmoid(x[..., 3:])),
}


def _inputs(name):
  x = np.linspace(-3, 3, 24).reshape(4, 6)
  return np.linspace(0.2, 3, 24).reshape(4, 6) if name == 'Log' else x


@pytest.mark.parametrize('name', sorted(_CASES))
def test_activation_matches_numpy_eagerly(name):
  make, ref = _CASES[name]
  layer = make()
  # As in Trax, the constructor wraps the layer in shape checks.
  assert str(layer) == f'Serial[\n  {name}\n]'
  assert layer.sublayers[1].name == name
  assert layer.weights == ((), (), ())
  lt.check_layer(layer, _inputs(name), lambda x, w: ref(x),
                 modes=('eager',))


def test_activations_match_numpy_compiled():
  lt.check_parallel([
      (make(), _inputs(name), lambda x, w, ref=ref: ref(x))
      for name, (make, ref) in sorted(_CASES.items())] + [
          (tl.ThresholdedLinearUnit(), _inputs('Relu'),
           lambda x, tau: np.maximum(x, tau), np.float32(0.3))])


@pytest.mark.parametrize('name', sorted(_CASES))
def test_activation_keeps_bfloat16(name):
  lt.check_bfloat16(_CASES[name][0](), _inputs(name), modes=('eager',))


def test_activations_keep_bfloat16_under_xla():
  layer = tl.Serial(tl.Gelu(), tl.Tanh(), tl.Elu(), tl.Softplus())
  lt.check_bfloat16(layer, _inputs('Gelu'), modes=('jit', 'xla'))


def test_numpy_float64_enters_as_float32_and_tensors_keep_float64():
  # As in Trax with x64 disabled, NumPy float64 inputs enter as float32; a
  # float64 tensor, which JAX could not hold, is left as it is.
  layer = tl.Tanh()
  assert layer(np.linspace(-1, 1, 5)).dtype.name == 'float32'
  x64 = jnp.asarray(np.linspace(-1, 1, 5), dtype=jnp.float64)
  assert layer(x64).dtype.name == 'float64'


def test_glu_rejects_odd_last_axis():
  with pytest.raises(tl.LayerError, match=r'Glu: last axis must be even .* '
                     r'got shape \(2, 5\)'):
    tl.Glu()(np.ones((2, 5), np.float32))


def test_thresholded_linear_unit():
  layer = tl.ThresholdedLinearUnit()
  x = _inputs('Relu')
  weights, _ = lt.init_layer(layer, x)
  # As in Trax: one float32 scalar threshold, initialized to 0.
  assert weights.shape == () and weights.dtype.name == 'float32'
  assert float(weights) == 0.0
  lt.check_layer(tl.ThresholdedLinearUnit(), x,
                 lambda x, tau: np.maximum(x, tau),
                 weights=np.float32(0.3), modes=('eager',))
  lt.check_bfloat16(tl.ThresholdedLinearUnit(), x)
