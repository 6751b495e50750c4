"""MLP against a NumPy reference."""


import numpy as np
import pytest

from tests import _layer_testing as lt
from tfnp_trax import layers as tl
from tfnp_trax import models
from tfnp_trax import shapes


def _dense_params(model):
  return [(w, b) for w, b in zip(lt.leaves(model.weights)[::2],
                                 lt.leaves(model.weights)[1::2])]


@pytest.mark.parametrize('mode', lt.MODES)
@pytest.mark.parametrize('out_activation', [False, True])
def test_mlp_matches_numpy(out_activation, mode, rng):
  x = lt.random(rng, 3, 2, 4)
  model = models.MLP(layer_widths=(5, 6, 2), out_activation=out_activation)
  weights, state = model.init(shapes.signature(x))
  run = lt.compile_fn(lambda x, w, s: model.pure_fn(x, w, s, None)[0], mode)
  y = run(x, weights, state)
  h = x.reshape(3, -1).astype(np.float64)
  params = _dense_params(model)
  for i, (w, b) in enumerate(params):
    h = h @ w + b
    if out_activation or i < len(params) - 1:
      h = np.maximum(h, 0.0)
  assert tuple(y.shape) == (3, 2)
  lt.assert_close(y, h, atol=1e-5)


def test_mlp_without_flatten_keeps_leading_axes_and_uses_activation(rng):
  x = lt.random(rng, 2, 3, 4)
  model = models.MLP(layer_widths=(5, 2), activation_fn=tl.Tanh,
                     flatten=False)
  model.init(shapes.signature(x))
  (w1, b1), (w2, b2) = _dense_params(model)
  lt.assert_close(model(x), np.tanh(x @ w1 + b1) @ w2 + b2, atol=1e-5)


def test_mlp_defaults_follow_trax():
  model = models.MLP()
  model.init(shapes.ShapeDtype((1, 7)))
  assert [w.shape for w in lt.leaves(model.weights)] == [
      (7, 128), (128,), (128, 64), (64,)]


def test_mlp_rejects_empty_widths():
  with pytest.raises(ValueError, match=r'MLP: layer_widths must be a '
                     r'non-empty sequence of positive ints, got \(\)'):
    models.MLP(layer_widths=())
