"""Choosing a tf.distribute strategy: TPU, then several workers, then GPUs."""

import tensorflow as tf

from distribute import _multiworker
from distribute import tf_config
from distribute import _tpu
from distribute import devices as devices_lib

__all__ = ['get_strategy', 'KINDS']

KINDS = ('auto', 'tpu', 'mirrored', 'multiworker', 'one_device', 'default')
_TAKES_DEVICES = ('mirrored', 'one_device')

# TPU systems and multi-worker runtimes can be set up once per process.
_process_strategies = {}


def _tpu_strategy(required):
  if 'tpu' not in _process_strategies:
    strategy, tried = _tpu.find_tpu_strategy()
    if strategy is None:
      if not required:
        return None
      raise RuntimeError(
          "get_strategy('tpu'): no TPU found. Tried: " + '; '.join(tried) +
          ". Set TPU_NAME (or COLAB_TPU_ADDR) or run on a TPU VM, or use "
          "get_strategy(kind='auto') to fall back to GPUs or the CPU.")
    _process_strategies['tpu'] = strategy
  return _process_strategies['tpu']


def _multiworker_strategy(collective_timeout):
  if 'multiworker' not in _process_strategies:
    _process_strategies['multiworker'] = _multiworker.make_strategy(
        collective_timeout)
  return _process_strategies['multiworker']


def _auto(collective_timeout):
  strategy = _tpu_strategy(required=False)
  if strategy is not None:
    return strategy
  if tf_config.task_count(tf_config.read()) > 1:
    return _multiworker_strategy(collective_timeout)
  gpus = tf.config.list_logical_devices('GPU')
  if len(gpus) > 1:
    return tf.distribute.MirroredStrategy([d.name for d in gpus])
  return tf.distribute.get_strategy()


def get_strategy(kind='auto', devices=None, collective_timeout=None):
  """Returns a tf.distribute strategy of the requested kind.

  Kinds:
    * 'auto': the first that applies of: a TPUStrategy if a TPU is reachable
      (TPU_NAME, COLAB_TPU_ADDR, local TPU devices, TPUClusterResolver(); each
      probe is time-limited); a MultiWorkerMirroredStrategy if TF_CONFIG names
      more than one chief/worker task; a MirroredStrategy over all GPUs when
      there are several; otherwise the default strategy
      `tf.distribute.get_strategy()` (one replica on the default device; this
      is what a CPU-only machine gets, even after `split_cpu`).
    * 'tpu': a TPUStrategy, or a RuntimeError listing what was tried.
    * 'mirrored': MirroredStrategy over `devices`, by default all logical
      GPUs, or all logical CPUs if there are no GPUs.
    * 'multiworker': MultiWorkerMirroredStrategy from TF_CONFIG (a single
      local worker without it). Must be created before any TensorFlow op.
    * 'one_device': OneDeviceStrategy on `devices[0]`, default '/cpu:0'.
    * 'default': `tf.distribute.get_strategy()` (the strategy in scope).

  TPU and multi-worker strategies are created once per process and cached.

  Args:
    kind: one of `KINDS`.
    devices: device names, only for 'mirrored' and 'one_device'.
    collective_timeout: seconds after which multi-worker collectives (and the
      forming of the cluster) fail instead of waiting; None reads the
      environment variable TFNP_COLLECTIVE_TIMEOUT (unset: no limit).

  Returns:
    A tf.distribute.Strategy.

  Raises:
    ValueError: unknown `kind`, or `devices` given for a kind that ignores it.
    RuntimeError: kind='tpu' and no TPU was found.
    TimeoutError: the multi-worker cluster did not form in time.

  Example:
    >>> get_strategy('one_device').num_replicas_in_sync
    1
  """
  if kind not in KINDS:
    raise ValueError(f'get_strategy: unknown kind {kind!r}; supported kinds '
                     f'are {", ".join(repr(k) for k in KINDS)}.')
  if devices is not None and kind not in _TAKES_DEVICES:
    raise ValueError(f'get_strategy: devices={devices!r} applies only to kind '
                     f"'mirrored' or 'one_device', not {kind!r}.")
  if kind == 'auto':
    return _auto(collective_timeout)
  if kind == 'tpu':
    return _tpu_strategy(required=True)
  if kind == 'multiworker':
    return _multiworker_strategy(collective_timeout)
  if kind == 'mirrored':
    return tf.distribute.MirroredStrategy(
        list(devices) if devices else devices_lib.replica_devices())
  if kind == 'one_device':
    return tf.distribute.OneDeviceStrategy(devices[0] if devices else '/cpu:0')
  return tf.distribute.get_strategy()
