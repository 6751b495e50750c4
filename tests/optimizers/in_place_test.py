"""`Optimizer.apply_in_place` (Adam, SGD) against NumPy float64 references."""

import numpy as np
import pytest
import tensorflow as tf

from tfnp_trax import optimizers


def _problem():
  r = np.random.default_rng(3)
  weights = [r.normal(size=(3, 2)).astype(np.float32),
             r.normal(size=(2,)).astype(np.float32)]
  grads = [r.normal(size=w.shape).astype(np.float32) for w in weights]
  return weights, grads


def _adam_numpy(weights, grads, steps, lr, wd, clip, b1=0.9, b2=0.999,
                eps=1e-5):
  ws = [w.astype(np.float64) for w in weights]
  ms = [np.zeros_like(w) for w in ws]
  vs = [np.zeros_like(w) for w in ws]
  for step in range(steps):
    gs = [g.astype(np.float64) for g in grads]
    norm = np.sqrt(sum((g * g).sum() for g in gs))
    if clip is not None:
      gs = [g * clip / max(norm, clip) for g in gs]
    t = step + 1
    for i, g in enumerate(gs):
      ms[i] = b1 * ms[i] + (1 - b1) * g
      vs[i] = b2 * vs[i] + (1 - b2) * g * g
      m_hat, v_hat = ms[i] / (1 - b1**t), vs[i] / (1 - b2**t)
      ws[i] = (1 - wd) * ws[i] - lr * m_hat / (np.sqrt(v_hat) + eps)
  return ws, ms, vs


def _run(opt, weights, grads, steps, slot_count):
  weight_vars = [tf.Variable(w) for w in weights]
  slot_vars = [tf.Variable(np.zeros_like(w)) for w in weights
               for _ in range(slot_count)]
  params = {k: tf.constant(float(v), tf.float32)
            for k, v in opt.opt_params.items()}
  assert opt.supports_in_place(weight_vars, slot_vars)

  @tf.function(autograph=False)
  def step_fn(step):
    reads = [v.read_value() for v in weight_vars]
    stats, ops = opt.apply_in_place(step, [tf.constant(g) for g in grads],
                                    reads, weight_vars, slot_vars, params)
    with tf.control_dependencies(ops):
      return {k: tf.identity(v) for k, v in stats.items()}
  stats = [step_fn(tf.constant(s, tf.int32)) for s in range(steps)]
  return weight_vars, slot_vars, stats


@pytest.mark.parametrize('wd,clip', [(0.0, None), (0.1, 0.5)])
def test_adam_in_place_matches_numpy(wd, clip):
  weights, grads = _problem()
  opt = optimizers.Adam(0.05, weight_decay_rate=wd, clip_grad_norm=clip)
  weight_vars, slot_vars, stats = _run(opt, weights, grads, 3, 2)
  ws, ms, vs = _adam_numpy(weights, grads, 3, 0.05, wd, clip)
  for i, (w, m, v) in enumerate(zip(ws, ms, vs)):
    np.testing.assert_allclose(weight_vars[i].numpy(), w, rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(slot_vars[2 * i].numpy(), m, rtol=1e-5,
                               atol=1e-7)
    # The kernel forms v as v + (g^2 - v) (1 - b2): other float32 rounding.
    np.testing.assert_allclose(slot_vars[2 * i + 1].numpy(), v, rtol=5e-5,
                               atol=1e-8)
  # The last step's stats: the pre-clip gradient norm and the norm of the
  # weights before that step.
  before, _, _ = _adam_numpy(weights, grads, 2, 0.05, wd, clip)
  np.testing.assert_allclose(
      float(stats[-1]['gradients_l2']),
      np.sqrt(sum((g.astype(np.float64)**2).sum() for g in grads)), rtol=1e-6)
  np.testing.assert_allclose(float(stats[-1]['weights_l2']),
                             np.sqrt(sum((w**2).sum() for w in before)),
                             rtol=1e-6)


def test_sgd_in_place_matches_numpy():
  weights, grads = _problem()
  opt = optimizers.SGD(0.25, clip_grad_norm=1.0)
  weight_vars, _, _ = _run(opt, weights, grads, 2, 0)
  norm = np.sqrt(sum((g.astype(np.float64)**2).sum() for g in grads))
  for var, w, g in zip(weight_vars, weights, grads):
    expected = w - 2 * 0.25 * g * (1.0 / max(norm, 1.0))
    np.testing.assert_allclose(var.numpy(), expected, rtol=1e-6, atol=1e-7)


def test_only_the_exact_classes_and_float32_variables_support_it():
  weights, _ = _problem()
  f32 = [tf.Variable(w) for w in weights]
  f64 = [tf.Variable(w.astype(np.float64)) for w in weights]
  pairs = [tf.Variable(np.zeros_like(w)) for w in weights for _ in range(2)]

  class MySGD(optimizers.SGD):
    pass

  assert optimizers.SGD().supports_in_place(f32, [])
  assert not optimizers.SGD().supports_in_place(f64, [])
  assert not MySGD().supports_in_place(f32, [])
  assert optimizers.Adam().supports_in_place(f32, pairs)
  assert not optimizers.Adam().supports_in_place(f32, pairs[:2])
  assert not optimizers.Momentum().supports_in_place(f32, pairs[::2])
  with pytest.raises(NotImplementedError, match='Momentum has no in-place'):
    optimizers.Momentum().apply_in_place(
        tf.constant(0), [], [], [], [], optimizers.Momentum().opt_params)
