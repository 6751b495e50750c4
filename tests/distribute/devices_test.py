"""Tests for distribute.devices (logical CPU split, replica devices)."""

import pytest
import tensorflow as tf

from distribute import devices
from tests import _subprocess


def test_split_cpu_after_init_raises_and_keeps_devices():
  tf.constant(1.0)  # TensorFlow is initialised by now in this process.
  before = tf.config.list_logical_devices('CPU')
  with pytest.raises(RuntimeError,
                     match=r'split_cpu\(4\): logical devices must be '
                     r'configured before any TensorFlow op runs, but '
                     r'TensorFlow is already initialised and this process has '
                     rf'{len(before)} logical CPU device\(s\)'):
    devices.split_cpu(4)
  assert tf.config.list_logical_devices('CPU') == before


def test_split_cpu_matching_current_count_is_quiet():
  devices.split_cpu(len(tf.config.list_logical_devices('CPU')))


@pytest.mark.parametrize('n', [0, -2, 1.5, True])
def test_split_cpu_bad_n(n):
  with pytest.raises(ValueError, match=r'split_cpu: n must be a positive int'):
    devices.split_cpu(n)


def test_replica_devices_lists_cpus_here():
  names = devices.replica_devices()
  assert names and all('CPU' in name for name in names)


def test_split_cpu_before_init_in_fresh_process():
  out = _subprocess.run_python("""
      from distribute import devices
      devices.split_cpu(3)
      devices.split_cpu(3)  # same count again: quiet
      import tensorflow as tf
      tf.constant(1.0)
      devices.split_cpu(3)  # after init, same count: still quiet
      print(len(devices.replica_devices()))
      try:
        devices.split_cpu(2)
      except RuntimeError as e:
        print('ERR', e)
      """, timeout=120)
  lines = out.strip().splitlines()
  assert lines[0] == '3'
  assert 'this process has 3 logical CPU device(s)' in lines[1]
