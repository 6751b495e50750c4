"""Cross-replica collectives usable from inside a replica function.

These stand in for JAX's `psum`/`pmean`/`pmax`/`all_gather`. Outside a
multi-replica context (one device, or no strategy) they are the identity
(`all_gather` adds nothing either), so the same numeric code runs on one CPU
and on many replicas. `axis_name` is accepted for Trax compatibility and
ignored: a tf.distribute strategy has exactly one replica axis.

Every reduction runs on device through `ReplicaContext.all_reduce` /
`ReplicaContext.all_gather`; nothing is copied to the host.

Example:
  >>> import tensorflow as tf
  >>> float(psum(tf.constant(2.0)))  # one replica: identity
  2.0
"""

import tensorflow as tf

__all__ = ['psum', 'pmean', 'pmax', 'all_gather', 'num_replicas',
           'multi_replica_context']


def multi_replica_context():
  """The current replica context if it spans more than one replica, else None.

  Returns None in cross-replica context (inside `strategy.scope()` but not in
  `strategy.run`) and in the default one-replica context.
  """
  ctx = tf.distribute.get_replica_context()
  if ctx is None or ctx.num_replicas_in_sync == 1:
    return None
  return ctx


def num_replicas():
  """Replicas in sync in the current replica context (1 outside one)."""
  ctx = tf.distribute.get_replica_context()
  return 1 if ctx is None else ctx.num_replicas_in_sync


def _placed(x):
  # tf.identity creates the value under the replica's device scope. Without
  # it, a tf.function argument passed straight through has no device, and
  # MultiWorkerMirroredStrategy's all-reduce rejects it ("destinations can
  # not be empty"). IndexedSlices (sparse gradients) already carry a device
  # and are kept sparse.
  def place(t):
    if isinstance(t, tf.IndexedSlices):
      return t
    return tf.identity(tf.convert_to_tensor(t))

  return tf.nest.map_structure(place, x)


def psum(x, axis_name=None):
  """Sums `x` (a tensor or nest) over all replicas, on device."""
  del axis_name
  ctx = multi_replica_context()
  if ctx is None:
    return x
  return ctx.all_reduce(tf.distribute.ReduceOp.SUM, _placed(x))


def pmean(x, axis_name=None):
  """Averages `x` (a tensor or nest) over all replicas, on device."""
  del axis_name
  ctx = multi_replica_context()
  if ctx is None:
    return x
  return ctx.all_reduce(tf.distribute.ReduceOp.MEAN, _placed(x))


def pmax(x, axis_name=None):
  """Element-wise maximum of `x` (a tensor or nest) over all replicas.

  tf.distribute offers only SUM and MEAN reductions, so this gathers one
  slice per replica on device and takes the maximum there.
  """
  del axis_name
  ctx = multi_replica_context()
  if ctx is None:
    return x
  stacked = ctx.all_gather(
      tf.nest.map_structure(lambda t: t[tf.newaxis], _placed(x)), axis=0)
  return tf.nest.map_structure(lambda t: tf.reduce_max(t, axis=0), stacked)


def all_gather(x, axis_name=None, axis=0):
  """Concatenates every replica's `x` (tensor or nest) along `axis`.

  Replicas are concatenated in replica-id order. Note the difference from
  JAX, which stacks along a new axis: here a replica value of shape [b, ...]
  gathers to [n_replicas * b, ...] (use `x[None]` to get a new axis).
  """
  del axis_name
  ctx = multi_replica_context()
  if ctx is None:
    return x
  return ctx.all_gather(_placed(x), axis=axis)
