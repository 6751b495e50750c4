"""Device counts as Trax reports them."""

import tensorflow as tf

__all__ = ['device_count', 'local_device_count']


def _accelerators():
  for kind in ('TPU', 'GPU'):
    devices = tf.config.list_logical_devices(kind)
    if devices:
      return devices
  return tf.config.list_logical_devices('CPU')


def local_device_count():
  """Number of logical devices on this host of the best available kind."""
  return len(_accelerators())


def device_count():
  """Number of devices across all workers of the current strategy."""
  strategy = tf.distribute.get_strategy()
  if tf.distribute.has_strategy():
    return strategy.num_replicas_in_sync
  return local_device_count()
