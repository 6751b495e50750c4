"""distribute.chief, replica_shapes and agreement on single-process setups.

The multi-worker behaviour (all-reduce of the stop flag, barrier, chief-only
writes) runs end to end in tests/supervised/training_preemption_test.py and
tests/rl/training_test.py.
"""

import pytest
import tensorflow as tf

import distribute


class _Resolver:

  def __init__(self, task_type, task_id, cluster):
    self.task_type, self.task_id, self._cluster = task_type, task_id, cluster

  def cluster_spec(self):
    return tf.train.ClusterSpec(self._cluster)


class _Strategy:

  def __init__(self, resolver):
    self.cluster_resolver = resolver


_WORKERS = {'worker': ['a:1', 'b:2']}
_WITH_CHIEF = {'chief': ['c:0'], 'worker': ['a:1', 'b:2']}


@pytest.mark.parametrize('task_type,task_id,cluster,chief,count', [
    ('worker', 0, _WORKERS, True, 2),
    ('worker', 1, _WORKERS, False, 2),
    ('worker', 0, _WITH_CHIEF, False, 3),
    ('chief', 0, _WITH_CHIEF, True, 3),
])
def test_chief_rule(task_type, task_id, cluster, chief, count):
  strategy = _Strategy(_Resolver(task_type, task_id, cluster))
  assert distribute.is_chief(strategy) is chief
  assert distribute.worker_count(strategy) == count


def test_local_strategies_are_chief_and_need_no_agreement():
  strategy = tf.distribute.get_strategy()
  assert distribute.is_chief(strategy)
  assert distribute.worker_count(strategy) == 1
  assert distribute.any_worker(True, strategy) is True
  assert distribute.any_worker(False, strategy) is False
  distribute.barrier(strategy)  # A no-op, not a hang.


def test_per_replica_shape():
  assert distribute.per_replica_shape((8, 6), 4) == (2, 6)
  assert distribute.per_replica_shape((None, 3), 2) == (None, 3)
  with pytest.raises(ValueError, match=r'per_replica_shape: the batch size 6 '
                     r'\(shape \(6, 2\)\) does not divide by the 4 replicas'):
    distribute.per_replica_shape((6, 2), 4)
