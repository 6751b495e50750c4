"""Logical devices: splitting the CPU, and the devices replicas run on."""

import tensorflow as tf

__all__ = ['split_cpu', 'replica_devices']


def split_cpu(n):
  """Splits the host CPU into `n` logical CPU devices.

  Lets multi-replica code (MirroredStrategy with `n` replicas) run on a
  machine without accelerators. TensorFlow fixes its devices when it first
  runs an op, so call this at program start, before any TensorFlow op.
  Calling it again with the same `n` is a no-op.

  Args:
    n: number of logical CPU devices, a positive int.

  Raises:
    ValueError: `n` is not a positive int.
    RuntimeError: TensorFlow has already initialised with a different number
      of logical CPUs.

  Example (at the top of a script):
    split_cpu(4)
    strategy = get_strategy('mirrored')   # 4 replicas
  """
  if not isinstance(n, int) or isinstance(n, bool) or n < 1:
    raise ValueError(f'split_cpu: n must be a positive int, got {n!r}.')
  cpu = tf.config.list_physical_devices('CPU')[0]
  configured = tf.config.get_logical_device_configuration(cpu)
  if configured is not None and len(configured) == n:
    return
  try:
    tf.config.set_logical_device_configuration(
        cpu, [tf.config.LogicalDeviceConfiguration() for _ in range(n)])
  except RuntimeError as e:
    # TensorFlow is initialised; listing logical devices is now harmless.
    have = len(tf.config.list_logical_devices('CPU'))
    if have == n:
      return
    raise RuntimeError(
        f'split_cpu({n}): logical devices must be configured before any '
        f'TensorFlow op runs, but TensorFlow is already initialised and this '
        f'process has {have} logical CPU device(s). Call split_cpu({n}) at '
        f'the very start of the program (or in a fresh subprocess).') from e


def replica_devices():
  """Names of the local devices a MirroredStrategy should use by default.

  Returns:
    All logical GPUs if there are any, otherwise all logical CPUs (so after
    `split_cpu(4)` this lists 4 CPU devices). Initialises TensorFlow.
  """
  gpus = tf.config.list_logical_devices('GPU')
  devices = gpus or tf.config.list_logical_devices('CPU')
  return [d.name for d in devices]
