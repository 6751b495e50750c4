"""Tests for fastmath.device_count and local_device_count."""

import tensorflow as tf

from tests import _subprocess
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
  out = _subprocess.run_python('''
      import tensorflow as tf
      cpu = tf.config.list_physical_devices('CPU')[0]
      tf.config.set_logical_device_configuration(
          cpu, [tf.config.LogicalDeviceConfiguration()] * 3)
      from tfnp_trax import fastmath
      n_local = fastmath.local_device_count()
      strategy = tf.distribute.MirroredStrategy(['/cpu:0', '/cpu:1'])
      with strategy.scope():
        n_replicas = fastmath.device_count()
      print('COUNTS', n_local, n_replicas)
      ''', timeout=120, env={'CUDA_VISIBLE_DEVICES': ''})
  assert 'COUNTS 3 2' in out
