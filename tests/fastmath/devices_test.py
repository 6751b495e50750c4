"""Tests for fastmath.device_count, local_device_count and device_put."""

import numpy as np
import pytest
import tensorflow as tf

from tests import _multi_device
from tfnp_trax import fastmath


def _expected_local():
  for kind in ('TPU', 'GPU', 'CPU'):
    devices = tf.config.list_logical_devices(kind)
    if devices:
      return len(devices)
  return 0


def test_counts_outside_a_strategy():
  assert fastmath.local_device_count() == _expected_local() >= 1
  assert fastmath.device_count() == fastmath.local_device_count()


def test_counts_logical_cpus_and_strategy_replicas():
  # Logical devices must be set before TensorFlow starts: use a new process.
  out = _multi_device.run('''
      from tfnp_trax import fastmath
      n_local = fastmath.local_device_count()
      strategy = tf.distribute.MirroredStrategy(['/cpu:0', '/cpu:1'])
      with strategy.scope():
        n_replicas = fastmath.device_count()
      import numpy as np
      placed = fastmath.device_put(np.arange(3.0), '/device:CPU:2')
      with tf.device('/cpu:1'):
        scoped = fastmath.device_put(np.array([1, 2], np.int32))
      report({'counts': [n_local, n_replicas],
              'placed': [placed.device.split('/')[-1],
                         placed.numpy().tolist(),
                         scoped.device.split('/')[-1],
                         scoped.numpy().tolist()]})
      ''', n_devices=3, timeout=120, env={'CUDA_VISIBLE_DEVICES': ''})
  assert out['counts'] == [3, 2]
  # An explicit device, then the enclosing tf.device scope's.
  assert out['placed'] == ['device:CPU:2', [0.0, 1.0, 2.0],
                           'device:CPU:1', [1, 2]]


@pytest.mark.parametrize('value', [
    np.arange(6, dtype=np.float32).reshape(2, 3),
    np.array([3, -1], np.int64),
    np.array([True, False]),
    2.5, 7, np.float16(1.5),
])
def test_device_put_matches_tf_constant(value):
  placed = fastmath.device_put(value)
  expected = tf.constant(value)
  assert isinstance(placed, tf.Tensor)
  assert placed.dtype == expected.dtype
  assert placed.shape == expected.shape
  np.testing.assert_array_equal(placed.numpy(), np.asarray(value))
  assert placed.device.endswith('CPU:0')


def test_device_put_maps_trees_and_passes_tensors_through():
  t = tf.constant([1.0])
  x = np.ones((2, 2), np.float32)
  out = fastmath.device_put({'a': (x, t), 'b': [3]})
  assert out['a'][1] is t
  assert isinstance(out['a'], tuple) and isinstance(out['b'], list)
  np.testing.assert_array_equal(out['a'][0].numpy(), x)
  assert out['b'][0].dtype == tf.int32


@pytest.mark.parametrize('offset', range(0, 64, 4))
def test_device_put_copies_instead_of_sharing_numpy_memory(offset):
  # Views at every 4-byte offset of one buffer: TensorFlow may wrap an
  # array whose memory is suitably aligned, whatever the offset is.
  buffer = np.zeros(4096 + 16, np.float32)
  x = buffer.view(np.uint8)[offset:offset + 4096 * 4].view(np.float32)
  x[:] = np.arange(4096)
  placed = fastmath.device_put(x)
  x[0] = 99.0
  assert placed.numpy()[0] == 0.0


def test_device_put_in_a_graph_converts_symbolically():
  eager_type = type(tf.constant(0.0))

  @tf.function
  def f():
    y = fastmath.device_put(np.array([1.0, 2.0], np.float32))
    assert not isinstance(y, eager_type) and y.dtype == tf.float32
    return y * 2.0
  np.testing.assert_array_equal(f().numpy(), [2.0, 4.0])


def test_device_put_rejects_what_tf_constant_rejects():
  bad = np.array([1.0, 'a'], dtype=object)
  with pytest.raises(Exception) as expected:
    tf.constant(bad)
  with pytest.raises(expected.type):
    fastmath.device_put(bad)
