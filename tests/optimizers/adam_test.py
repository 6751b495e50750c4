"""Adam against a NumPy reference."""

import numpy as np
import pytest

from tests.optimizers import _harness
from tfnp_trax import optimizers
from tfnp_trax.fastmath import numpy as jnp


def _reference(lr, wd, b1, b2, eps):
  def ref_update(step, g, w, state):
    m, v = state
    t = step + 1
    m = b1 * m + (1 - b1) * g
    v = b2 * v + (1 - b2) * g ** 2
    m_hat, v_hat = m / (1 - b1 ** t), v / (1 - b2 ** t)
    return (1 - wd) * w - lr * m_hat / (np.sqrt(v_hat) + eps), (m, v)
  return lambda w: (np.zeros_like(w), np.zeros_like(w)), ref_update


@pytest.mark.parametrize('mode', ['eager', 'jit'])
@pytest.mark.parametrize('kwargs', [
    {},  # Trax defaults, only a larger step so that changes show.
    {'weight_decay_rate': 0.05, 'b1': 0.5, 'b2': 0.9, 'eps': 1e-3},
])
def test_adam_matches_numpy(kwargs, mode):
  full = dict(weight_decay_rate=1e-5, b1=0.9, b2=0.999, eps=1e-5)
  full.update(kwargs)
  opt = optimizers.Adam(learning_rate=0.01, **kwargs)
  ref_init, ref_update = _reference(0.01, full['weight_decay_rate'],
                                    full['b1'], full['b2'], full['eps'])
  _harness.check_against_reference(opt, ref_init, ref_update, mode=mode)


def test_adam_defaults_follow_trax():
  _harness.assert_opt_params(optimizers.Adam(), {
      'learning_rate': 0.0001, 'weight_decay_rate': 1e-5, 'b1': 0.9,
      'b2': 0.999, 'eps': 1e-5})


def test_adam_update_accepts_python_and_float_steps():
  opt = optimizers.Adam(learning_rate=0.1, weight_decay_rate=0.0)
  w = jnp.zeros((2,), jnp.float32)
  g = jnp.asarray([1.0, -2.0], jnp.float32)
  outs = [opt.update(s, g, w, opt.init(w), opt.opt_params)[0].numpy()
          for s in (3, jnp.asarray(3, jnp.int32), jnp.asarray(3.0))]
  # Step 3 (t = 4): m_hat = g * (1 - b1) / (1 - b1^4); likewise v_hat.
  m_hat = np.array([1.0, -2.0]) * 0.1 / (1 - 0.9 ** 4)
  v_hat = np.array([1.0, 4.0]) * 0.001 / (1 - 0.999 ** 4)
  want = -0.1 * m_hat / (np.sqrt(v_hat) + 1e-5)
  for out in outs:
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, want, rtol=1e-5)
