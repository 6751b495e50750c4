"""Tests for FromKeras: Keras 3 layers inside tfnp_trax combinators."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from tests import _layer_testing as lt
from tfnp_trax import export
from tfnp_trax import fastmath
from tfnp_trax import layers as tl
from tfnp_trax import shapes


def _x(shape=(2, 5), seed=0):
  return np.random.RandomState(seed).normal(size=shape).astype(np.float32)


@pytest.mark.parametrize('mode', lt.MODES)
def test_dense_in_serial_matches_numpy(mode):
  model = tl.Serial(export.FromKeras(keras.layers.Dense(3)), tl.Relu())
  x = _x()
  model.init(shapes.signature(x))
  kernel, bias = (np.asarray(w) for w in model.weights[0])
  assert kernel.shape == (5, 3) and bias.shape == (3,)
  y, _ = lt.run_layer(model, x, mode)
  np.testing.assert_allclose(np.asarray(y), np.maximum(
      x.astype(np.float64) @ kernel + bias, 0), rtol=1e-5, atol=1e-6)


def test_gradients_reach_the_keras_weights():
  layer = export.FromKeras(keras.layers.Dense(3))
  x = _x()
  weights, state = layer.init(shapes.signature(x))

  def loss(w):
    y, _ = layer.pure_fn(x, w, state, fastmath.random.get_prng(0))
    return tf.reduce_sum(y * y)
  grads = fastmath.grad(loss)(weights)
  kernel, bias = (np.asarray(w, np.float64) for w in weights)
  # d/dW sum((xW + b)^2) = 2 x^T (xW + b); d/db = 2 sum_rows (xW + b).
  y = x.astype(np.float64) @ kernel + bias
  np.testing.assert_allclose(np.asarray(grads[0]), 2 * x.T @ y, rtol=1e-4,
                             atol=1e-5)
  np.testing.assert_allclose(np.asarray(grads[1]), 2 * y.sum(0), rtol=1e-4,
                             atol=1e-5)


def test_batch_normalization_state_updates_in_train_mode():
  x = _x((6, 3))
  train = export.FromKeras(keras.layers.BatchNormalization(momentum=0.5))
  weights, state = train.init(shapes.signature(x))
  y, new_state = train.pure_fn(x, weights, state, None)
  mean, var = x.mean(0), x.var(0)
  np.testing.assert_allclose(np.asarray(y), (x - mean) / np.sqrt(var + 1e-3),
                             rtol=1e-4, atol=1e-4)
  # Keras: moving = momentum * moving + (1 - momentum) * batch statistic.
  np.testing.assert_allclose(np.asarray(new_state[0]), 0.5 * mean,
                             rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(np.asarray(new_state[1]), 0.5 + 0.5 * var,
                             rtol=1e-5)
  evaluate = export.FromKeras(train.keras_layer, mode='eval')
  y_eval, same_state = evaluate.pure_fn(x, weights, new_state, None)
  np.testing.assert_allclose(
      np.asarray(y_eval), (x - 0.5 * mean) / np.sqrt(0.5 + 0.5 * var + 1e-3),
      rtol=1e-4, atol=1e-4)
  for a, b in zip(same_state, new_state):
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_several_inputs():
  layer = export.FromKeras(keras.layers.Add(), n_in=2)
  a, b = _x(seed=1), _x(seed=2)
  layer.init(shapes.signature((a, b)))
  np.testing.assert_allclose(np.asarray(layer((a, b))), a + b, rtol=1e-6)


def test_rejects_objects_without_stateless_call():
  with pytest.raises(TypeError, match=r'FromKeras: expects a Keras 3 layer '
                     r'\(with stateless_call\), got Dense'):
    export.FromKeras(tl.Dense(3))
