"""`tfnp_trax.tf_numpy.extensions`: Trax's `trax.tf_numpy.extensions`.

Follows trax/tf_numpy/extensions/extensions.py (grad, dynamic_slice,
index_update, sort_key_val, tpu_devices, ...); values are worked by hand.
"""

import numpy as np

from tfnp_trax.tf_numpy import extensions as npe


def test_transforms_and_ops():
  assert float(npe.grad(lambda x: x ** 3)(2.0)) == 12.0
  x = np.arange(10, dtype=np.float32).reshape(2, 5)
  assert npe.dynamic_slice(x, (1, 2), (1, 2)).numpy().tolist() == [[7., 8.]]
  updated = npe.index_update(np.zeros(4, np.float32), 2, 5.0)
  assert updated.numpy().tolist() == [0., 0., 5., 0.]
  keys, vals = npe.sort_key_val(np.array([3, 1, 2]), np.array([30, 10, 20]))
  assert keys.numpy().tolist() == [1, 2, 3]
  assert vals.numpy().tolist() == [10, 20, 30]


def test_device_queries_filter_by_type():
  names = ['/job:localhost/replica:0/task:0/device:CPU:0',
           '/job:localhost/replica:0/task:0/device:TPU:0',
           '/job:localhost/replica:0/task:0/device:GPU:1']
  assert npe.tpu_devices(names) == [names[1]]
  assert npe.gpu_devices(names) == [names[2]]
  assert npe.accelerators(names) == [names[1]]
  assert npe.accelerators(names[:1]) == []
  assert npe.find_devices('CPU', names) == [names[0]]
  # All logical devices of this machine include its CPU.
  assert npe.find_devices('CPU')
