"""Laying arrays out per device: replicate, or split the batch axis.

The layout follows Trax's multi-device convention: axis 0 indexes devices.
`for_n_devices` replicates (weights, optimizer slots); `shard_batch` /
`reshape_by_device` split a batch into one equal slice per device. Both map
over nests (tuples, lists, dicts) of arrays.
"""

import numpy as np
import tensorflow as tf

__all__ = ['for_n_devices', 'reshape_by_device', 'shard_batch']


def _shape(x):
  return tuple(np.shape(x)) if not hasattr(x, 'shape') else tuple(x.shape)


def _split_shape(fn_name, x, n_devices):
  """[batch, ...] -> [n_devices, batch // n_devices, ...] or a clear error."""
  shape = _shape(x)
  if not shape:
    raise ValueError(f'{fn_name}: cannot split a scalar (shape ()) over '
                     f'{n_devices} devices; every leaf needs a batch axis.')
  batch = shape[0]
  if batch is None:
    raise ValueError(f'{fn_name}: the batch axis of shape {shape} is unknown; '
                     f'{fn_name} needs a static batch size.')
  if batch % n_devices:
    smaller = (batch // n_devices) * n_devices
    larger = smaller + n_devices
    hint = f'{smaller} or {larger}' if smaller else f'{larger}'
    raise ValueError(
        f'{fn_name}: batch size {batch} is not divisible by the {n_devices} '
        f'devices (leaf shape {shape}). Use a batch size that is a multiple '
        f'of {n_devices}, e.g. {hint}.')
  return (n_devices, batch // n_devices) + shape[1:]


def _check_n(fn_name, n_devices):
  if not isinstance(n_devices, (int, np.integer)) or n_devices < 1:
    raise ValueError(f'{fn_name}: n_devices must be a positive int, got '
                     f'{n_devices!r}.')


def shard_batch(x, n_devices):
  """Splits the leading (batch) axis of every leaf into devices.

  Args:
    x: an array or nest of arrays, each of shape [batch, ...].
    n_devices: number of devices; must divide `batch`.

  Returns:
    The same nest with leaves of shape [n_devices, batch // n_devices, ...]
    (tf.Tensor). Slice i holds rows [i*b, (i+1)*b) of the batch.

  Raises:
    ValueError: a leaf's batch size is not divisible by `n_devices`, or a leaf
      is a scalar.

  Example:
    >>> tuple(shard_batch(np.zeros((8, 3)), 4).shape)
    (4, 2, 3)
  """
  _check_n('shard_batch', n_devices)
  return tf.nest.map_structure(
      lambda t: tf.reshape(t, _split_shape('shard_batch', t, n_devices)), x)


def reshape_by_device(x, n_devices, pure_np=False):
  """Trax's name for `shard_batch`; with `pure_np=True` returns NumPy arrays.

  Args:
    x: an array or nest of arrays, each of shape [batch, ...].
    n_devices: number of devices; must divide `batch`.
    pure_np: reshape with NumPy on the host instead of TensorFlow.

  Returns:
    The nest with leaves of shape [n_devices, batch // n_devices, ...].

  Raises:
    ValueError: as `shard_batch`.
  """
  _check_n('reshape_by_device', n_devices)
  if pure_np:
    return tf.nest.map_structure(
        lambda t: np.reshape(
            t, _split_shape('reshape_by_device', t, n_devices)), x)
  return tf.nest.map_structure(
      lambda t: tf.reshape(
          t, _split_shape('reshape_by_device', t, n_devices)), x)


def for_n_devices(x, n_devices):
  """Replicates every leaf `n_devices` times along a new leading axis.

  With `n_devices == 1` the nest is returned unchanged, as in Trax.

  Args:
    x: an array or nest of arrays (any shapes, scalars included).
    n_devices: number of devices.

  Returns:
    The nest with leaves of shape [n_devices, *leaf.shape] (tf.Tensor), or `x`
    itself when `n_devices == 1`.

  Example:
    >>> tuple(for_n_devices(np.ones((2,)), 3).shape)
    (3, 2)
  """
  _check_n('for_n_devices', n_devices)
  if n_devices == 1:
    return x

  def replicate(t):
    t = tf.convert_to_tensor(t)
    return tf.broadcast_to(t[tf.newaxis], (n_devices,) + tuple(t.shape))

  return tf.nest.map_structure(replicate, x)
