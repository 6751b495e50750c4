"""`mean_or_pmean`: the mean of a value that may be spread over devices."""

import tensorflow as tf

from distribute import collectives

__all__ = ['mean_or_pmean']


def _check_axis(n_devices, axis):
  if axis not in (None, 0):
    raise ValueError(
        f'mean_or_pmean: axis must be None or 0 when n_devices > 1 (axis 0 '
        f'is the device axis), got axis={axis!r} with n_devices={n_devices}. '
        f'Reduce other axes inside the per-device function first.')


def _full_mean(x, axis):
  return tf.nest.map_structure(
      lambda t: tf.experimental.numpy.mean(t, axis=axis), x)


def mean_or_pmean(n_devices, x, axis=None):
  """Mean of `x` over `axis`, where axis 0 may be the device axis.

  Three cases, all with the semantics of `jnp.mean(stacked_x, axis)` where
  `stacked_x` has one row per device along axis 0:

  * Inside `strategy.run` with `n_devices > 1` replicas, `x` is this
    replica's row. The device axis is reduced with an on-device collective
    (`pmean`); with `axis=None` the remaining axes are then averaged locally.
    Every replica gets the same result.
  * In cross-replica context with a `tf.distribute.DistributedValues` `x`
    (e.g. what `pmap(..., out='per_replica')` returns), the rows are reduced
    with `strategy.reduce` (again a device-side collective); call it inside
    `with strategy.scope():` so the strategy is known.
  * Otherwise `x` is an ordinary array and this is `jnp.mean(x, axis)`.

  Args:
    n_devices: number of devices (replicas) holding `x`.
    x: a tensor, nest of tensors, or distributed value.
    axis: None (mean over everything) or 0 (mean over devices only). Other
      axes are allowed only when `n_devices == 1`.

  Returns:
    A local (non-distributed) tensor, or nest of tensors.

  Raises:
    ValueError: `axis` not in (None, 0) with `n_devices > 1`, or `n_devices`
      differs from the replica count of the surrounding strategy, or a
      distributed `x` is given outside its strategy's scope.

  Example:
    >>> import numpy as np
    >>> float(mean_or_pmean(1, np.array([[1.0, 3.0]]), axis=None))
    2.0
  """
  if n_devices <= 1:
    return _full_mean(x, axis)
  _check_axis(n_devices, axis)
  ctx = collectives.multi_replica_context()
  if ctx is not None:
    if ctx.num_replicas_in_sync != n_devices:
      raise ValueError(
          f'mean_or_pmean: n_devices={n_devices} but the current strategy '
          f'runs {ctx.num_replicas_in_sync} replicas. Pass n_devices='
          f'{ctx.num_replicas_in_sync}.')
    x = collectives.pmean(x)
    return x if axis == 0 else _full_mean(x, None)
  flat = tf.nest.flatten(x)
  if flat and isinstance(flat[0], tf.distribute.DistributedValues):
    if not tf.distribute.has_strategy():
      raise ValueError(
          'mean_or_pmean: got a distributed value outside its strategy. '
          'Call it inside `with strategy.scope():` so the rows can be '
          'reduced on device with strategy.reduce.')
    strategy = tf.distribute.get_strategy()
    x = tf.nest.map_structure(
        lambda v: strategy.reduce(tf.distribute.ReduceOp.MEAN, v, axis=None),
        x)
    return x if axis == 0 else _full_mean(x, None)
  return _full_mean(x, axis)
