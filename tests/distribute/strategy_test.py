"""Tests for distribute.strategy.get_strategy."""

import socket

import pytest
import tensorflow as tf

from distribute import strategy as strategy_lib
from tests import _subprocess

_ENV = ('TF_CONFIG', 'TPU_NAME', 'COLAB_TPU_ADDR')


@pytest.fixture
def plain_env(monkeypatch):
  for var in _ENV:
    monkeypatch.delenv(var, raising=False)
  return monkeypatch


def test_auto_on_cpu_machine_is_default_strategy(plain_env):
  del plain_env
  strategy = strategy_lib.get_strategy('auto')
  assert strategy is tf.distribute.get_strategy()
  assert strategy.num_replicas_in_sync == 1


def test_auto_with_one_task_tf_config_is_default_strategy(plain_env):
  plain_env.setenv('TF_CONFIG', '{"cluster": {"worker": ["127.0.0.1:1"]}, '
                   '"task": {"type": "worker", "index": 0}}')
  assert strategy_lib.get_strategy('auto') is tf.distribute.get_strategy()


def test_tpu_error_lists_what_was_tried(plain_env):
  del plain_env
  with pytest.raises(
      RuntimeError,
      match=r"(?s)get_strategy\('tpu'\): no TPU found\. Tried: TPU_NAME "
      r'\(unset\); COLAB_TPU_ADDR \(unset\); local TPU devices .*'
      r'TPUClusterResolver\(\) \(.*\)\. .*'
      r"use get_strategy\(kind='auto'\)"):
    strategy_lib.get_strategy('tpu')


def test_unreachable_colab_tpu_is_reported_and_auto_falls_back(plain_env):
  with socket.socket() as sock:  # A port where nothing listens.
    sock.bind(('127.0.0.1', 0))
    port = sock.getsockname()[1]
  plain_env.setenv('COLAB_TPU_ADDR', f'127.0.0.1:{port}')
  with pytest.raises(RuntimeError,
                     match=rf'COLAB_TPU_ADDR=127\.0\.0\.1:{port} '
                     r'\(ConnectionRefusedError'):
    strategy_lib.get_strategy('tpu')
  assert strategy_lib.get_strategy('auto') is tf.distribute.get_strategy()


def test_unknown_kind_error():
  with pytest.raises(ValueError,
                     match=r"get_strategy: unknown kind 'gpu'; supported "
                     r"kinds are 'auto', 'tpu', 'mirrored', 'multiworker', "
                     r"'one_device', 'default'\."):
    strategy_lib.get_strategy('gpu')


def test_devices_for_wrong_kind_error():
  with pytest.raises(ValueError,
                     match=r"get_strategy: devices=\['/cpu:0'\] applies only "
                     r"to kind 'mirrored' or 'one_device', not 'auto'\."):
    strategy_lib.get_strategy('auto', devices=['/cpu:0'])


def test_one_device_and_default():
  one = strategy_lib.get_strategy('one_device')
  assert isinstance(one, tf.distribute.OneDeviceStrategy)
  assert one.extended.worker_devices[0].endswith('CPU:0')
  assert strategy_lib.get_strategy('default') is tf.distribute.get_strategy()


def test_mirrored_over_four_logical_cpus_then_multiworker_too_late():
  out = _subprocess.run_python("""
      import os
      import distribute
      distribute.split_cpu(4)
      s = distribute.get_strategy('mirrored')
      two = distribute.get_strategy('mirrored', devices=['/cpu:0', '/cpu:1'])
      print(type(s).__name__, s.num_replicas_in_sync, two.num_replicas_in_sync)
      print(distribute.get_strategy('auto').num_replicas_in_sync)
      # TensorFlow is initialised now, too late for a multi-worker runtime.
      os.environ['TF_CONFIG'] = ('{"cluster": {"worker": ["127.0.0.1:1", '
                                 '"127.0.0.1:2"]}, "task": {"type": '
                                 '"worker", "index": 0}}')
      try:
        distribute.get_strategy('multiworker')
      except RuntimeError as e:
        print('ERR', e)
      """, timeout=120)
  lines = out.strip().splitlines()
  assert lines[0].split() == ['MirroredStrategy', '4', '2']
  assert lines[1] == '1'
  assert lines[2].startswith(
      "ERR get_strategy('multiworker') must be called before any TensorFlow "
      'op runs: MultiWorkerMirroredStrategy configures the runtime at startup')
