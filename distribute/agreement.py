"""Decisions every worker of a multi-worker run takes together.

A signal (e.g. a preemption's SIGTERM) may reach one worker only, or reach
the workers at different steps. If each acted on its own they would save
different steps, or one would stop while the others wait forever in the
next all-reduce. Here each worker contributes its local flag to an
all-reduce at the same point of every step, so all of them see the same
answer at the same step.
"""

import tensorflow as tf

from distribute import chief

__all__ = ['any_worker', 'barrier']


def _all_reduce_sum(value, strategy):
  per_replica = strategy.experimental_distribute_values_from_function(
      lambda _: tf.constant(value, tf.int32))
  return int(strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica,
                             axis=None))


def any_worker(flag, strategy):
  """True on every worker if `flag` is True on at least one of them.

  Single-process strategies return `flag` without any communication; under
  several workers this is a collective, so every worker must call it at the
  same point of its program.

  Args:
    flag: this worker's bool.
    strategy: the tf.distribute strategy the run trains under.

  Returns:
    The agreed bool.

  Example:
    >>> import tensorflow as tf
    >>> any_worker(True, tf.distribute.get_strategy())
    True
  """
  if chief.worker_count(strategy) < 2:
    return bool(flag)
  return _all_reduce_sum(1 if flag else 0, strategy) > 0


def barrier(strategy):
  """Returns on each worker once every worker has reached it (a collective).

  Used after the chief has written a checkpoint, so no worker exits (and no
  launcher stops the group) before that checkpoint is complete.
  """
  if chief.worker_count(strategy) >= 2:
    _all_reduce_sum(0, strategy)
