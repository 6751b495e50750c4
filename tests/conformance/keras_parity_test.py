"""Three steps of Keras `model.fit` on AsKeras equal three tfnp_trax steps.

Both sides start from the same MLP weights, see the same full batch each
step and minimize the mean squared error (Keras 'mse'; `tl.L2Loss` with unit
weights), so their gradients agree and any difference comes from the
optimizers. SGD is `w - lr * g` on both sides.

Adam differs in two places, handled explicitly:
- tfnp_trax's Adam (like Trax's) has decoupled weight decay, default 1e-5;
  Keras's has none. It is set to 0.
- The epsilon enters differently. With t the 1-based step and
  c = sqrt(1 - b2^t) / (1 - b1^t), Keras computes
  `w - lr * c * m / (sqrt(v) + eps_k)`, while tfnp_trax computes
  `w - lr * m_hat / (sqrt(v_hat) + eps_t) = w - lr * c * m / (sqrt(v) +
  eps_t * sqrt(1 - b2^t))`. No constant eps_t matches a constant eps_k at
  every step, so the test writes both update rules in NumPy (float64),
  checks each library against its own rule, and checks that with a tiny
  epsilon (1e-10 on both sides) the two libraries agree. At Keras's default
  1e-7 they would differ by up to 1.5e-4 here: after one step sqrt(v) is
  only sqrt(1 - b2) * |g| ~ 3e-5 for a weight whose gradient is 1e-3.
The step passed to the tfnp_trax optimizer is 0-based (t = step + 1), as in
Trax; Keras counts iterations from 1 in the same way.
"""

import keras
import numpy as np
import pytest

from tfnp_trax import export
from tfnp_trax import fastmath
from tfnp_trax import layers as tl
from tfnp_trax import models
from tfnp_trax import optimizers
from tfnp_trax import shapes
from tfnp_trax.supervised import trainer as trainer_lib

_LR, _EPS, _STEPS = 0.05, 1e-10, 3
_B1, _B2 = 0.9, 0.999


def _mlp():
  model = models.MLP(layer_widths=(6, 3), flatten=False)
  model.init(shapes.ShapeDtype((8, 4)), rng=fastmath.random.get_prng(0))
  return model


def _data():
  rng = np.random.RandomState(0)
  return (rng.normal(size=(8, 4)).astype(np.float32),
          rng.normal(size=(8, 3)).astype(np.float32))


def _flat(model):
  return [np.asarray(w) for w in fastmath.tree_flatten(model.weights)]


def _keras_weights(name):
  layer = export.AsKeras(_mlp())
  model = keras.Sequential([keras.Input((4,)), layer])
  opt = (keras.optimizers.SGD(_LR) if name == 'sgd' else
         keras.optimizers.Adam(_LR, beta_1=_B1, beta_2=_B2, epsilon=_EPS))
  model.compile(optimizer=opt, loss='mse')
  x, y = _data()
  model.fit(x, y, epochs=_STEPS, batch_size=8, shuffle=False, verbose=0)
  return [v.numpy() for v in layer.trainable_weights]


def _trax_weights(name):
  opt = (optimizers.SGD(_LR) if name == 'sgd' else
         optimizers.Adam(_LR, weight_decay_rate=0.0, b1=_B1, b2=_B2,
                         eps=_EPS))
  model_with_loss = tl.Serial(_mlp(), tl.L2Loss())
  x, y = _data()
  batch = (x, y, np.ones_like(y))
  model_with_loss.init(shapes.signature(batch))
  model_with_loss.weights = (_mlp().weights, ())
  trainer = trainer_lib.Trainer(model_with_loss, opt)
  for step in range(_STEPS):
    trainer.one_step(batch, fastmath.random.get_prng(step), step)
  return [np.asarray(w) for w in fastmath.tree_flatten(
      trainer.model_weights[0])]


def _numpy_grads(ws, x, y):
  """float64 gradients of mean((relu(x W1 + b1) W2 + b2 - y)^2)."""
  w1, b1, w2, b2 = ws
  pre = x @ w1 + b1
  h = np.maximum(pre, 0)
  d_out = 2 * (h @ w2 + b2 - y) / y.size
  d_pre = (d_out @ w2.T) * (pre > 0)
  return [x.T @ d_pre, d_pre.sum(0), h.T @ d_out, d_out.sum(0)]


def _numpy_weights(name, rule):
  ws = [w.astype(np.float64) for w in _flat(_mlp())]
  x, y = (a.astype(np.float64) for a in _data())
  m = [np.zeros_like(w) for w in ws]
  v = [np.zeros_like(w) for w in ws]
  for t in range(1, _STEPS + 1):
    grads = _numpy_grads(ws, x, y)
    for i, g in enumerate(grads):
      if name == 'sgd':
        ws[i] = ws[i] - _LR * g
        continue
      m[i] = _B1 * m[i] + (1 - _B1) * g
      v[i] = _B2 * v[i] + (1 - _B2) * g * g
      c = np.sqrt(1 - _B2 ** t) / (1 - _B1 ** t)
      eps = _EPS if rule == 'keras' else _EPS * np.sqrt(1 - _B2 ** t)
      ws[i] = ws[i] - _LR * c * m[i] / (np.sqrt(v[i]) + eps)
  return ws


@pytest.mark.parametrize('name', ['sgd', 'adam'])
def test_three_fit_steps_match_three_trainer_steps(name):
  keras_ws, trax_ws = _keras_weights(name), _trax_weights(name)
  for got, want in zip(keras_ws, _numpy_weights(name, 'keras')):
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=3e-6)
  for got, want in zip(trax_ws, _numpy_weights(name, 'trax')):
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=3e-6)
  for a, b in zip(keras_ws, trax_ws):
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=3e-6)
  # The steps really moved the weights.
  assert not np.allclose(keras_ws[0], _flat(_mlp())[0])
