"""Cross-replica collectives usable from inside a replica function.

These stand in for JAX's `psum`/`pmean`/`pmax`/`all_gather`. Outside a
multi-replica context (one device, or no strategy) they are the identity
(`all_gather` adds nothing either), so the same numeric code runs on one CPU
and on many replicas. `axis_name` is accepted for Trax compatibility and
ignored: a tf.distribute strategy has exactly one replica axis.
"""

import tensorflow as tf

__all__ = ['psum', 'pmean', 'pmax', 'all_gather', 'num_replicas']


def _replica_ctx():
  ctx = tf.distribute.get_replica_context()
  if ctx is None or ctx.num_replicas_in_sync == 1:
    return None
  return ctx


def num_replicas():
  """Replicas in sync in the current replica context (1 outside one)."""
  ctx = tf.distribute.get_replica_context()
  return 1 if ctx is None else ctx.num_replicas_in_sync


def _map(fn, x):
  return tf.nest.map_structure(fn, x)


def psum(x, axis_name=None):
  """Sums `x` (a tensor or nest) over all replicas, on device."""
  del axis_name
  ctx = _replica_ctx()
  if ctx is None:
    return x
  return ctx.all_reduce(tf.distribute.ReduceOp.SUM, x)


def pmean(x, axis_name=None):
  """Averages `x` over all replicas, on device."""
  del axis_name
  ctx = _replica_ctx()
  if ctx is None:
    return x
  return ctx.all_reduce(tf.distribute.ReduceOp.MEAN, x)


def pmax(x, axis_name=None):
  """Element-wise maximum of `x` over all replicas."""
  del axis_name
  ctx = _replica_ctx()
  if ctx is None:
    return x
  return ctx.all_reduce(tf.distribute.ReduceOp.MAX, x)


def all_gather(x, axis_name=None, axis=0):
  """Concatenates every replica's `x` along `axis`."""
  del axis_name
  ctx = _replica_ctx()
  if ctx is None:
    return x
  return _map(lambda t: ctx.all_gather(t, axis=axis), x)
