"""A Trax-shaped program runs unchanged on tfnp_trax, with correct numbers.

Only the imports differ from the Trax original (`trax` -> `tfnp_trax`). The
MLP's outputs and gradients are checked against a NumPy float64 forward and
hand-written backward pass.
"""

import numpy as np
import pytest

from tests import _layer_testing as lt
from tfnp_trax import fastmath
from tfnp_trax import shapes
from tfnp_trax.fastmath import numpy as jnp
import tfnp_trax.layers as tl

BATCH, D_IN, D_HIDDEN, N_CLASSES = 8, 5, 16, 4


def _problem():
  rng = np.random.default_rng(0)
  x = rng.normal(size=(BATCH, D_IN)).astype(np.float32)
  labels = rng.integers(0, N_CLASSES, size=BATCH)
  targets = np.eye(N_CLASSES, dtype=np.float32)[labels]
  w1 = rng.normal(size=(D_IN, D_HIDDEN)).astype(np.float32) * 0.5
  b1 = rng.normal(size=(D_HIDDEN,)).astype(np.float32) * 0.1
  w2 = rng.normal(size=(D_HIDDEN, N_CLASSES)).astype(np.float32) * 0.5
  b2 = rng.normal(size=(N_CLASSES,)).astype(np.float32) * 0.1
  return x, targets, (w1, b1, w2, b2)


def numpy_forward_backward(x, targets, params):
  """Log-probabilities, loss and hand-derived gradients, in float64."""
  x, t = x.astype(np.float64), targets.astype(np.float64)
  w1, b1, w2, b2 = (p.astype(np.float64) for p in params)
  h = x @ w1 + b1
  r = np.maximum(h, 0.)
  z = r @ w2 + b2
  m = z.max(-1, keepdims=True)
  log_probs = z - (m + np.log(np.exp(z - m).sum(-1, keepdims=True)))
  loss = -np.mean(np.sum(t * log_probs, axis=-1))
  # Backward: d loss / d log_probs, then through log-softmax, Dense, Relu.
  d_logp = -t / x.shape[0]
  dz = d_logp - np.exp(log_probs) * d_logp.sum(-1, keepdims=True)
  dw2, db2 = r.T @ dz, dz.sum(0)
  dh = (dz @ w2.T) * (h > 0)
  dw1, db1 = x.T @ dh, dh.sum(0)
  return log_probs, loss, (dw1, db1, dw2, db2)


def test_trax_program_runs_unchanged():
  x, targets, (w1, b1, w2, b2) = _problem()

  # --- The Trax program, as written for Trax. ---
  model = tl.Serial(tl.Dense(16), tl.Relu(), tl.Dense(4), tl.LogSoftmax())
  model.init(shapes.signature(x))
  # Relu() is Serial(shape check, Relu, shape check) in Trax 1.4.1, so its
  # weights are ((), (), ()); Trax rejects a bare () there.
  model.weights = ((w1, b1), ((), (), ()), (w2, b2), ())
  log_probs = model(x)

  def loss_fn(weights, x, targets):
    y, _ = model.pure_fn(x, weights, model.state, model.rng)
    return -jnp.mean(jnp.sum(targets * y, axis=-1))

  loss, grads = fastmath.value_and_grad(loss_fn)(model.weights, x, targets)
  # --- End of the Trax program. ---

  want_lp, want_loss, (dw1, db1, dw2, db2) = numpy_forward_backward(
      x, targets, (w1, b1, w2, b2))
  np.testing.assert_allclose(log_probs, want_lp, rtol=1e-5, atol=1e-5)
  np.testing.assert_allclose(loss, want_loss, rtol=1e-5)
  assert grads[1] == ((), (), ()) and grads[3] == ()
  for got, want in zip((grads[0][0], grads[0][1], grads[2][0], grads[2][1]),
                       (dw1, db1, dw2, db2)):
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize('mode', ['jit', 'xla'])
def test_trax_program_compiled(mode):
  x, targets, params = _problem()
  model = tl.Serial(tl.Dense(16), tl.Relu(), tl.Dense(4), tl.LogSoftmax())
  model.init(shapes.signature(x))
  model.weights = ((params[0], params[1]), ((), (), ()),
                   (params[2], params[3]), ())

  def loss_fn(weights, state, rng):
    y, _ = model.pure_fn(x, weights, state, rng)
    return -jnp.mean(jnp.sum(targets * y, axis=-1)), y

  grad_fn = lt.compile_fn(fastmath.grad(loss_fn, has_aux=True), mode)
  grads, log_probs = grad_fn(model.weights, model.state, model.rng)
  want_lp, _, want_grads = numpy_forward_backward(x, targets, params)
  np.testing.assert_allclose(log_probs, want_lp, rtol=1e-5, atol=1e-5)
  got = (grads[0][0], grads[0][1], grads[2][0], grads[2][1])
  for g, w in zip(got, want_grads):
    np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-6)
