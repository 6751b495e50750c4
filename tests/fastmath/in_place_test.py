"""fastmath.in_place: the fused variable kernels against NumPy float64."""

import numpy as np
import tensorflow as tf

from tfnp_trax import fastmath


def _arrays():
  r = np.random.default_rng(7)
  return (r.normal(size=(3, 2)).astype(np.float32),
          r.normal(size=(3, 2)).astype(np.float32))


def test_apply_gradient_descent():
  w, g = _arrays()
  var = tf.Variable(w)
  fastmath.in_place.apply_gradient_descent(var, tf.constant(0.5), g)
  np.testing.assert_allclose(var.numpy(), w.astype(np.float64) - 0.5 * g,
                             rtol=1e-6)


def test_apply_adam_without_bias_correction_and_with_decay():
  w, g = _arrays()
  m0 = np.full_like(w, 0.1)
  v0 = np.full_like(w, 0.2)
  lr, b1, b2, eps, keep = 0.01, 0.9, 0.99, 1e-3, 0.9
  for decay in (None, keep):
    var, m, v = tf.Variable(w), tf.Variable(m0), tf.Variable(v0)

    @tf.function(autograph=False)
    def step(var=var, m=m, v=v, decay=decay):
      op = fastmath.in_place.apply_adam(
          var, m, v, tf.constant(lr), tf.constant(b1), tf.constant(b2),
          tf.constant(eps), tf.constant(g),
          keep=None if decay is None else tf.constant(decay))
      with tf.control_dependencies([op]):
        return tf.identity(var.read_value())
    step()
    m_ref = b1 * m0.astype(np.float64) + (1 - b1) * g
    v_ref = b2 * v0.astype(np.float64) + (1 - b2) * g.astype(np.float64)**2
    w_ref = w.astype(np.float64) * (1.0 if decay is None else decay)
    w_ref = w_ref - lr * m_ref / (np.sqrt(v_ref) + eps)
    np.testing.assert_allclose(m.numpy(), m_ref, rtol=1e-6)
    np.testing.assert_allclose(v.numpy(), v_ref, rtol=1e-5)
    np.testing.assert_allclose(var.numpy(), w_ref, rtol=1e-5, atol=1e-7)


def test_add_n():
  total = fastmath.in_place.add_n([tf.constant(1.5), tf.constant(2.0)])
  assert float(total) == 3.5
  empty = fastmath.in_place.add_n([])
  assert empty.dtype == tf.float32 and float(empty) == 0.0
