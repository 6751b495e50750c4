"""Which worker of a run writes files: the chief-only rule.

Under a multi-worker strategy every worker holds the same variables, so
one of them (the chief) writes checkpoints and summaries for all; the
others would only race it for the same files. The chief is the task of
type 'chief' where the cluster has one, otherwise worker 0 (TensorFlow's
convention).
"""

__all__ = ['is_chief', 'worker_count']


def _resolver(strategy):
  return getattr(strategy, 'cluster_resolver', None)


def is_chief(strategy):
  """Whether this process writes checkpoints and summaries.

  Args:
    strategy: a tf.distribute strategy (any kind).

  Returns:
    True for single-process strategies, and for the chief (or worker 0 in
    a cluster without a chief) of a multi-worker one.

  Example:
    >>> import tensorflow as tf
    >>> is_chief(tf.distribute.get_strategy())
    True
  """
  resolver = _resolver(strategy)
  task_type = getattr(resolver, 'task_type', None)
  if resolver is None or task_type is None:
    return True
  if task_type == 'chief':
    return True
  return (task_type == 'worker' and resolver.task_id == 0 and
          'chief' not in resolver.cluster_spec().as_dict())


def worker_count(strategy):
  """How many processes (chief and workers) train together; 1 if local."""
  resolver = _resolver(strategy)
  if resolver is None or getattr(resolver, 'task_type', None) is None:
    return 1
  jobs = resolver.cluster_spec().as_dict()
  count = 0
  for job in ('chief', 'worker'):
    tasks = jobs.get(job, [])
    count += len(tasks) if isinstance(tasks, (list, dict)) else 0
  return max(count, 1)
