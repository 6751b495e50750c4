"""Loop checkpoints with Trax's names: best-metric, permanent, explicit load."""

import collections
import os

import numpy as np
import pytest

from tfnp_trax import fastmath
from tfnp_trax import optimizers
import tfnp_trax.layers as tl
from tfnp_trax.supervised import checkpoints
from tfnp_trax.supervised import training


def _data():
  x = np.arange(8, dtype=np.float32).reshape((8, 1))
  while True:
    yield x, np.pi * np.ones((8, 1), np.float32), np.ones((8, 1), np.float32)


def _loop(output_dir=None, callbacks=None, **kwargs):
  task = training.TrainTask(_data(), tl.L2Loss(), optimizers.SGD(0.01),
                            n_steps_per_permanent_checkpoint=5)
  evals = training.EvalTask(_data(), [tl.L2Loss()], metric_names=['l2'])
  return training.Loop(tl.Serial(tl.Dense(1)), [task], eval_tasks=[evals],
                       output_dir=output_dir, random_seed=0,
                       eval_at=lambda step: step % 2 == 0,
                       checkpoint_at=lambda step: step % 2 == 0,
                       callbacks=callbacks, **kwargs)


@pytest.mark.parametrize('kwargs,expected', [
    ({'checkpoint_low_metric': 'l2'}, {'model': 5, 'lowest_l2': 5}),
    ({'checkpoint_high_metric': 'l2'}, {'model': 5, 'highest_l2': 1}),
])
def test_best_metric_checkpoints_are_saved_when_trax_saves_them(
    tmp_path, kwargs, expected):
  loop = _loop(str(tmp_path), **kwargs)
  counter = collections.Counter()
  loop.save_checkpoint = lambda name: counter.update([name])
  loop.run(10)  # The eval loss falls at every eval.
  expected.update({'model_1': 1, 'model_5': 1, 'model_10': 1})
  assert counter == expected


def test_best_metric_checkpoint_keeps_the_best_step(tmp_path):
  seen = {}

  class Record:

    def __init__(self, loop):
      self._loop = loop

    def call_at(self, step):
      return True

    def on_step_begin(self, step):
      pass

    def on_step_end(self, step):
      seen[step] = [np.asarray(w) for w in
                    fastmath.tree_leaves(self._loop.model.weights)]

  loop = _loop(str(tmp_path), callbacks=[Record],
               checkpoint_low_metric='l2', checkpoint_high_metric='l2')
  loop.run(10)
  names = sorted(os.listdir(tmp_path / 'checkpoints'))
  assert 'highest_l2' in names and 'lowest_l2' in names
  fresh = _loop(None)
  for name, step in (('highest_l2', 2), ('lowest_l2', 10), ('model_5', 5),
                     ('model', 10)):
    assert fresh.load_checkpoint(str(tmp_path), name) == step
    assert fresh.step == step
    for a, b in zip(seen[step], fastmath.tree_leaves(fresh.model.weights)):
      np.testing.assert_array_equal(a, np.asarray(b))
  # The named checkpoint holds the history up to its step, its eval too.
  fresh.load_checkpoint(str(tmp_path), 'highest_l2')
  assert [s for s, _ in fresh.history.get('eval', 'metrics/l2')] == [2]


def test_load_checkpoint_without_anything_to_load_returns_none(tmp_path):
  loop = _loop(None)
  assert loop.load_checkpoint() is None
  assert loop.load_checkpoint(str(tmp_path)) is None
  assert loop.save_checkpoint('model') is None


def test_unknown_best_metric_is_a_clear_error():
  with pytest.raises(ValueError, match=r"checkpoint_low_metric='acc' is not "
                     r"a metric of the eval_tasks.*\['l2'\]"):
    _loop(None, checkpoint_low_metric='acc')


def test_list_returns_named_checkpoint_infos(tmp_path):
  loop = _loop(str(tmp_path))
  loop.run(2)
  manager = checkpoints.CheckpointManager(
      os.path.join(str(tmp_path), 'checkpoints'), {}, {})
  infos = manager.list()
  assert infos and all(isinstance(c, checkpoints.CheckpointInfo)
                       for c in infos)
  newest = infos[-1]
  assert newest.step == 2 and not newest.permanent
  assert newest.path == os.path.join(str(tmp_path), 'checkpoints', 'ckpt-2')
