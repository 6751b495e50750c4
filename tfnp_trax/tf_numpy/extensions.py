"""Trax's `trax.tf_numpy.extensions`: JAX-like transforms for TF NumPy.

Trax's module held its own implementations; here each name is the
`tfnp_trax.fastmath` function of the same meaning (one implementation per
concept), plus the device queries Trax's tests call (`tpu_devices`, ...),
which read TensorFlow's logical devices.

Example:
  >>> from tfnp_trax.tf_numpy import extensions as npe
  >>> float(npe.grad(lambda x: x * x)(3.0))
  6.0
  >>> npe.tpu_devices(['/job:localhost/replica:0/task:0/device:CPU:0'])
  []
"""

import tensorflow as tf

from tfnp_trax import fastmath

__all__ = [
    'accelerators', 'avg_pool', 'conv', 'custom_grad', 'dataset_as_numpy',
    'dynamic_slice', 'dynamic_slice_in_dim', 'dynamic_update_slice',
    'dynamic_update_slice_in_dim', 'erf', 'expit', 'find_devices',
    'gpu_devices', 'grad', 'index_add', 'index_max', 'index_min',
    'index_update', 'jit', 'logsumexp', 'max_pool', 'pmap', 'pmean', 'psum',
    'remat', 'scan', 'sort_key_val', 'stop_gradient', 'tpu_devices', 'vjp',
    'vmap',
]

avg_pool = fastmath.avg_pool
conv = fastmath.conv
custom_grad = fastmath.custom_grad
dataset_as_numpy = fastmath.dataset_as_numpy
dynamic_slice = fastmath.dynamic_slice
dynamic_slice_in_dim = fastmath.dynamic_slice_in_dim
dynamic_update_slice = fastmath.dynamic_update_slice
dynamic_update_slice_in_dim = fastmath.dynamic_update_slice_in_dim
erf = fastmath.erf
expit = fastmath.expit
grad = fastmath.grad
index_add = fastmath.index_add
index_max = fastmath.index_max
index_min = fastmath.index_min
index_update = fastmath.index_update
jit = fastmath.jit
logsumexp = fastmath.logsumexp
max_pool = fastmath.max_pool
pmap = fastmath.pmap
pmean = fastmath.pmean
psum = fastmath.psum
remat = fastmath.remat
scan = fastmath.scan
sort_key_val = fastmath.sort_key_val
stop_gradient = fastmath.stop_gradient
vjp = fastmath.vjp
vmap = fastmath.vmap


def find_devices(device_type, devices=None):
  """Names of the devices of `device_type` ('CPU', 'GPU', 'TPU').

  Args:
    device_type: the device type to keep.
    devices: device names to filter; default all logical devices.

  Returns:
    The names in `devices` whose type is `device_type`.
  """
  if not devices:
    devices = [d.name for d in tf.config.list_logical_devices()]
  return [name for name in devices
          if tf.DeviceSpec.from_string(name).device_type == device_type]


def tpu_devices(devices=None):
  """The TPU device names among `devices` (default: all logical devices)."""
  return find_devices('TPU', devices)


def gpu_devices(devices=None):
  """The GPU device names among `devices` (default: all logical devices)."""
  return find_devices('GPU', devices)


def accelerators(devices=None):
  """The TPUs among `devices`, or else the GPUs."""
  return tpu_devices(devices) or gpu_devices(devices)
