"""A Loop resumed after a kill at one chosen point of a checkpoint step.

In-process: the "kill" is an exception raised at that point, which leaves
the folder as SIGKILL would there (the kill-storm test does real kills).
Each resumed run is compared with an uninterrupted one.
"""

import os

import numpy as np
import pytest
import tensorflow as tf

from tfnp_trax import fastmath
from tfnp_trax import optimizers
import tfnp_trax.layers as tl
from tfnp_trax.supervised import checkpoints
from tfnp_trax.supervised import training


class _Killed(Exception):
  pass


def _data(seed):
  r = np.random.default_rng(seed)
  while True:
    x = r.normal(size=(8, 3)).astype(np.float32)
    yield x, x.sum(-1, keepdims=True), np.ones((8, 1), np.float32)


def _loop(output_dir):
  task = training.TrainTask(_data(0), tl.L2Loss(), optimizers.Adam(0.01),
                            n_steps_per_checkpoint=2,
                            n_steps_per_permanent_checkpoint=4)
  # Changing eval batches: the resumed evals must read the same ones.
  evals = training.EvalTask(_data(1), [tl.L2Loss()], metric_names=['l2'])
  return training.Loop(tl.Serial(tl.Dense(4), tl.Relu(), tl.Dense(1)), task,
                       eval_tasks=[evals], output_dir=output_dir,
                       random_seed=0, eval_at=lambda step: step % 4 == 0,
                       keep_checkpoints=5)


def _timeless(history):
  values = history.to_dict()['_values']
  values['train'].pop('training/steps per second')
  return values


def _weights(loop):
  return [np.asarray(w) for w in fastmath.tree_flatten(loop.model.weights)]


@pytest.fixture(scope='module')
def uninterrupted(tmp_path_factory):
  loop = _loop(str(tmp_path_factory.mktemp('whole')))
  loop.run(6)
  return loop


def _kill_at(monkeypatch, target, owner, name, step):
  """Makes `owner.name` raise _Killed when it is called at `step`."""
  original = getattr(owner, name)

  def wrapped(*args, **kwargs):
    if target().step == step:
      raise _Killed(name)
    return original(*args, **kwargs)
  monkeypatch.setattr(owner, name, wrapped)


def _run_killed(tmp_path, monkeypatch, owner, name, step=4):
  holder = {}
  loop = _loop(str(tmp_path))
  holder['loop'] = loop
  with monkeypatch.context() as m:
    _kill_at(m, lambda: holder['loop'], owner, name, step)
    with pytest.raises(_Killed):
      loop.run(6)
  return loop


def test_killed_before_its_evals_a_step_gets_them_on_resume(
    tmp_path, monkeypatch, uninterrupted):
  # ckpt-4 and ckpt-4-permanent are written; the kill comes before the
  # evals of step 4.
  killed = _run_killed(tmp_path, monkeypatch, training.Loop, 'run_evals')
  assert killed.history.get('eval', 'metrics/l2') == []
  resumed = _loop(str(tmp_path))
  assert resumed.step == 4
  # As in Trax (trax/supervised/training.py: `run` saves a step's
  # checkpoint before `run_evals`), the restored History ends before the
  # evals of step 4 ...
  assert resumed.history.get('eval', 'metrics/l2') == []
  resumed.run(2)
  # ... and the next run writes them first, from the saved sums and on the
  # eval batches an uninterrupted run reads, so nothing is lost.
  assert [s for s, _ in resumed.history.get('eval', 'metrics/l2')] == [4]
  assert _timeless(resumed.history) == _timeless(uninterrupted.history)
  for got, want in zip(_weights(resumed), _weights(uninterrupted)):
    assert got.tobytes() == want.tobytes()
  # Both checkpoints of step 4 are as written: before its evals, pending.
  for name in ('ckpt-4', 'ckpt-4-permanent'):
    manager = resumed._books.manager  # pylint: disable=protected-access
    manifest = manager.restore(manager.path(name))
    assert manifest['extra']['loop_progress']['pending']
    assert 'metrics/l2' not in manifest['extra']['history']['_values'].get(
        'eval', {})


def test_a_finished_run_restored_twice_logs_each_step_once(
    tmp_path, uninterrupted):
  # No kill: each restart restores a checkpoint written before its step's
  # evals; each run writes them once, so the History equals one run's.
  loop = _loop(str(tmp_path))
  loop.run(4)
  again = _loop(str(tmp_path))
  assert again.step == 4
  assert again.history.get('eval', 'metrics/l2') == []
  again.run(2)
  assert _timeless(again.history) == _timeless(uninterrupted.history)
  third = _loop(str(tmp_path))  # Step 6 has no evals: nothing is pending.
  assert third.step == 6
  assert _timeless(third.history) == _timeless(uninterrupted.history)
  for got, want in zip(_weights(third), _weights(uninterrupted)):
    assert got.tobytes() == want.tobytes()


def test_killed_between_checkpoint_and_permanent_copy_recovers_it(
    tmp_path, monkeypatch, uninterrupted):
  loop = _loop(str(tmp_path))
  original = training.Loop.save_checkpoint

  def save(self, basename='model'):
    if basename == 'model_4':
      raise _Killed(basename)
    return original(self, basename)
  with monkeypatch.context() as m:
    m.setattr(training.Loop, 'save_checkpoint', save)
    with pytest.raises(_Killed):
      loop.run(6)
  inner = tmp_path / 'checkpoints'
  assert sorted(os.listdir(inner)) == [
      'ckpt-1', 'ckpt-1-permanent', 'ckpt-2', 'ckpt-4']
  resumed = _loop(str(tmp_path))
  assert sorted(os.listdir(inner)) == [
      'ckpt-1', 'ckpt-1-permanent', 'ckpt-2', 'ckpt-4', 'ckpt-4-permanent']
  copy = tf.train.load_checkpoint(str(inner / 'ckpt-4-permanent' / 'state'))
  source = tf.train.load_checkpoint(str(inner / 'ckpt-4' / 'state'))
  keys = source.get_variable_to_shape_map()
  assert len(keys) > 5
  for key in keys:
    assert (np.asarray(copy.get_tensor(key)).tobytes() ==
            np.asarray(source.get_tensor(key)).tobytes()), key
  resumed.run(2)
  assert _timeless(resumed.history) == _timeless(uninterrupted.history)
  for got, want in zip(_weights(resumed), _weights(uninterrupted)):
    assert got.tobytes() == want.tobytes()


def test_a_run_resumed_between_evals_logs_the_same_training_means(
    tmp_path, uninterrupted):
  # ckpt-6 lies between evals (at 4 and 8): the resumed run must log at
  # step 8 the mean over steps 5-8, half of them run before the restart.
  loop = _loop(str(tmp_path))
  loop.run(6)
  resumed = _loop(str(tmp_path))
  resumed.run(2)
  whole = _loop(str(tmp_path / 'whole'))
  whole.run(8)
  assert _timeless(resumed.history) == _timeless(whole.history)
  del uninterrupted


@pytest.mark.skipif(os.geteuid() == 0, reason='root writes in any folder')
def test_read_only_output_dir_fails_at_construction(tmp_path):
  tmp_path.chmod(0o500)
  try:
    with pytest.raises(checkpoints.CheckpointWriteError,
                       match=r"Loop: output_dir '.*run' must be a writable "
                       r'folder, but Permission denied'):
      _loop(str(tmp_path / 'run'))
  finally:
    tmp_path.chmod(0o700)


def test_probe_file_of_a_process_killed_while_probing_is_removed(tmp_path):
  (tmp_path / '.write-probe-0123abcd').write_text('')
  _loop(str(tmp_path))
  assert not [n for n in os.listdir(tmp_path) if n.startswith('.')]
