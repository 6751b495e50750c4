"""Loop's methods for subclasses, used as Trax's early-stopping example does.

Follows trax/supervised/training.py (`Loop._open_summary_writers`,
`_n_devices`, `_at_lowest`, `_at_highest`, `_run_one_step(task_index,
task_changed)`) and the `MyLoop` subclass of trax/examples/earlystopping.ipynb,
whose `run` is written out below with the same calls.
"""

import collections
import functools
import os
import time

import numpy as np

from tfnp_trax import fastmath
from tfnp_trax import optimizers
import tfnp_trax.layers as tl
from tfnp_trax.supervised import training

_X = np.arange(8, dtype=np.float32).reshape((8, 1)) / 8.0
_T = 2.0 * _X - 1.0
_LR = 0.1


def _data():
  while True:
    yield _X, _T, np.ones_like(_T)


class _EarlyStoppingLoop(training.Loop):
  """The notebook's `MyLoop.run`: Loop's steps, stopping below a loss."""

  def __init__(self, *args, stop_below, **kwargs):
    super().__init__(*args, **kwargs)
    self.stop_below = stop_below
    self.stopped_at = None

  def run(self, n_steps=1):
    with self._open_summary_writers() as (train_writers, eval_writers):
      loss_acc, step_acc = 0.0, 0
      start_time = time.time()
      metrics_acc = collections.defaultdict(float)
      for _ in range(n_steps):
        prev_task_index = self._which_task(self._step)
        self._step += 1
        task_index = self._which_task(self._step)
        task_changed = task_index != prev_task_index
        if task_changed:
          loss_acc, step_acc = 0.0, 0
        loss, metrics = self._run_one_step(task_index, task_changed)
        metrics, loss = fastmath.nested_map(
            functools.partial(tl.mean_or_pmean, self._n_devices),
            (metrics, loss))
        loss_acc += loss
        self._log_step('Loss: %.4f' % loss, stdout=False)
        step_acc += 1
        for name, value in metrics.items():
          metrics_acc[name] += value
        if self._checkpoint_at(self.step):
          self.save_checkpoint('model')
        if self._eval_at(self.step):
          self._log_training_progress(
              task=self._tasks[task_index], total_loss=loss_acc,
              n_steps=step_acc, elapsed_time=time.time() - start_time,
              optimizer_metrics=metrics_acc,
              summary_writer=train_writers[task_index])
          self.run_evals(eval_writers)
          loss_acc, step_acc = 0.0, 0
          metrics_acc = collections.defaultdict(float)
        if self._checkpoint_at(self.step):
          if self._checkpoint_low_metric is not None and self._at_lowest():
            self.save_checkpoint(f'lowest_{self._checkpoint_low_metric}')
        _, value = self.history.get('eval', 'metrics/L2Loss')[-1]
        if float(value) < self.stop_below:
          self.stopped_at = self.step
          break
    self._eval_model.weights = self._model.weights


def _numpy_sgd(w, b, n_steps):
  """Hand-derived SGD on mean((x w + b - t)^2): the reference trajectory."""
  losses = []
  for _ in range(n_steps):
    err = _X @ w + b - _T
    w = w - _LR * 2.0 * _X.T @ err / len(_X)
    b = b - _LR * 2.0 * err.mean(0)
    losses.append(float(np.mean((_X @ w + b - _T) ** 2)))
  return w, b, losses


def _loop(output_dir, stop_below):
  task = training.TrainTask(_data(), tl.L2Loss(), optimizers.SGD(_LR),
                            n_steps_per_checkpoint=1)
  evals = training.EvalTask(_data(), [tl.L2Loss()], n_eval_batches=1)
  return _EarlyStoppingLoop(
      tl.Serial(tl.Dense(1)), task, eval_tasks=[evals],
      output_dir=output_dir, checkpoint_low_metric='L2Loss',
      stop_below=stop_below, random_seed=0)


def test_subclass_trains_like_sgd_and_stops_at_the_predicted_step(tmp_path):
  loop = _loop(str(tmp_path), stop_below=0.2)
  w0, b0 = (np.asarray(a) for a in loop.model.weights[0])
  _, _, losses = _numpy_sgd(w0, b0, 200)
  expected_stop = 1 + next(i for i, v in enumerate(losses) if v < 0.2)
  assert expected_stop > 2  # The data make the stop a real decision.
  loop.run(200)
  assert loop.stopped_at == expected_stop
  assert loop.step == expected_stop
  w, b, _ = _numpy_sgd(w0, b0, expected_stop)
  # The block's exit put the trained weights into the model layers.
  np.testing.assert_allclose(np.asarray(loop.model.weights[0][0]), w,
                             rtol=1e-4, atol=1e-5)
  np.testing.assert_allclose(np.asarray(loop.eval_model.weights[0][1]), b,
                             rtol=1e-4, atol=1e-5)
  # The loss falls every step, so each checkpoint step is the lowest one.
  assert 'lowest_L2Loss' in os.listdir(tmp_path / 'checkpoints')


def test_n_devices_and_at_lowest_at_highest(tmp_path):
  loop = _loop(str(tmp_path), stop_below=-1.0)
  assert loop._n_devices == loop.n_devices == 1
  loop._checkpoint_high_metric = 'L2Loss'
  for step, value in [(1, 3.0), (2, 1.0), (3, 2.0)]:
    loop.history.append('eval', 'metrics/L2Loss', step, value)
    at_low, at_high = loop._at_lowest(), loop._at_highest()
    assert (at_low, at_high) == {1: (True, True), 2: (True, False),
                                 3: (False, False)}[step]


def test_each_run_writes_new_event_files(tmp_path):
  # Trax opens the writers per `run`: two runs leave two files per folder.
  loop = _loop(str(tmp_path), stop_below=-1.0)
  for n_runs in (1, 2):
    loop.run(2)
    for mode in ('train', 'eval'):
      files = os.listdir(tmp_path / mode)
      assert len(files) == n_runs, (mode, files)
  # Base Loop.run uses the same context manager.
  training.Loop.run(loop, 1)
  assert len(os.listdir(tmp_path / 'train')) == 3


def test_without_output_dir_the_writers_are_none():
  loop = _loop(None, stop_below=-1.0)
  with loop._open_summary_writers() as (train_writers, eval_writers):
    assert train_writers == [None] and eval_writers == [None]
  loop.run(3)
  assert loop.step == 3
