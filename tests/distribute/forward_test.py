"""Tests for distribute.forward.jit_forward."""

import json

import numpy as np
import pytest
import tensorflow as tf

from distribute import forward
from tests import _subprocess


def _forward(x, weights, state, rng):
  # A linear model whose output also carries a number drawn from `rng`, so
  # tests can see which key each device used.
  noise = tf.random.stateless_uniform([], seed=rng, dtype=tf.float32)
  y = tf.linalg.matvec(x, weights) + 0.0 * noise
  return (y, noise), state + 1.0


def test_one_device_is_compiled_forward():
  x = np.arange(12, dtype=np.float32).reshape(4, 3)
  w = np.array([1.0, 0.0, -1.0], np.float32)
  rng = tf.constant([0, 7], tf.int32)
  predict = forward.jit_forward(_forward, 1)
  assert isinstance(predict, tf.types.experimental.PolymorphicFunction)
  (y, noise), state = predict(x, w, np.float32(2.0), rng)
  np.testing.assert_allclose(y, x.astype(np.float64) @ w, rtol=1e-6)
  np.testing.assert_allclose(
      noise, tf.random.stateless_uniform([], seed=rng, dtype=tf.float32))
  assert float(state) == 3.0


def test_replica_count_mismatch_error():
  predict = forward.jit_forward(_forward, 2,
                                strategy=tf.distribute.get_strategy())
  with pytest.raises(ValueError,
                     match=r'jit_forward: n_devices=2 but the strategy '
                     r'_DefaultDistributionStrategy runs 1 replicas\. Pass '
                     r'n_devices=1 or a strategy with 2 replicas\.'):
    predict(np.zeros((4, 3)), None, None, tf.constant([0, 1], tf.int32))


_FOUR_CPUS = """
    import json
    import numpy as np
    import distribute
    distribute.split_cpu(4)
    import tensorflow as tf

    def fwd(x, weights, state, rng):
      noise = tf.random.stateless_uniform([], seed=rng, dtype=tf.float32)
      y = tf.linalg.matvec(x, weights) + 0.0 * noise
      return (y, noise), state + 1.0

    x = np.arange(24, dtype=np.float32).reshape(8, 3)
    w = np.array([0.5, -1.0, 2.0], np.float32)
    state = distribute.for_n_devices(np.float32(2.0), 4)
    rng = tf.constant([3, 4], tf.int32)
    keys = tf.random.experimental.stateless_split(rng, num=4)
    out = {'noise_ref': [float(tf.random.stateless_uniform(
        [], seed=k, dtype=tf.float32)) for k in keys]}
    for do_mean in (False, True):
      predict = distribute.jit_forward(fwd, 4, do_mean=do_mean)
      (y, noise), new_state = predict(x, distribute.for_n_devices(w, 4),
                                      state, rng)
      out[str(do_mean)] = [np.asarray(t).tolist() for t in (y, noise,
                                                           new_state)]
    print(json.dumps(out))
    """


@pytest.fixture(scope='module')
def four_cpu_results():
  return json.loads(_subprocess.run_python(_FOUR_CPUS, timeout=180))


def test_four_devices_joined_outputs(four_cpu_results):
  x = np.arange(24, dtype=np.float64).reshape(8, 3)
  y_ref = x @ np.array([0.5, -1.0, 2.0])
  y, noise, state = four_cpu_results['False']
  np.testing.assert_allclose(y, y_ref, rtol=1e-6)
  # One key per device, split from the caller's key: scalars join to [4].
  np.testing.assert_allclose(noise, four_cpu_results['noise_ref'], rtol=1e-6)
  assert len(set(noise)) == 4
  np.testing.assert_allclose(state, [3.0] * 4)


def test_four_devices_mean(four_cpu_results):
  x = np.arange(24, dtype=np.float64).reshape(8, 3)
  y_ref = x @ np.array([0.5, -1.0, 2.0])
  y, noise, state = four_cpu_results['True']
  np.testing.assert_allclose(y, y_ref.mean(), rtol=1e-6)
  np.testing.assert_allclose(noise, np.mean(four_cpu_results['noise_ref']),
                             rtol=1e-6)
  np.testing.assert_allclose(state, [3.0] * 4)
