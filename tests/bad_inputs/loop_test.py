"""Bad Loop, TrainTask and EvalTask arguments that checkpoints depend on.

Each fails when the object is built, naming the component, the argument,
what it expects and what it got (before, several were accepted and went
wrong silently or at the first checkpoint or eval).
"""

import numpy as np
import pytest

from tests.bad_inputs import _case
from tfnp_trax import optimizers
import tfnp_trax.layers as tl
from tfnp_trax.supervised import checkpoints
from tfnp_trax.supervised import training

Case = _case.Case
F32 = np.float32


def _batches():
  while True:
    yield (np.ones((2, 5), F32), np.zeros((2,), np.int32), np.ones(2, F32))


def _train_task(**kwargs):
  return lambda: training.TrainTask(
      _batches(), tl.WeightedCategoryCrossEntropy(), optimizers.SGD(0.1),
      **kwargs)


def _eval_task(metrics, **kwargs):
  return lambda: training.EvalTask(_batches(), metrics, **kwargs)


def _loop(**kwargs):
  def call():
    return training.Loop(tl.Serial(tl.Dense(3)), _train_task()(), **kwargs)
  return call


def _loop_with_evals(**kwargs):
  def call():
    evals = _eval_task([tl.WeightedCategoryAccuracy()])()
    return _loop(eval_tasks=[evals], **kwargs)()
  return call


def _loop_in(where):
  """A Loop whose output_dir is `where(tmp_path)`."""
  def call(tmp_path):
    return _loop(output_dir=str(where(tmp_path)))()
  return call


def _a_file(tmp_path):
  path = tmp_path / 'run.txt'
  path.write_text('not a folder')
  return path


CASES = [
    Case('train_task_checkpoint_period_negative',
         _train_task(n_steps_per_checkpoint=-2), ValueError,
         r'TrainTask: n_steps_per_checkpoint must be a positive integer \(a '
         r'number of steps, or None for no periodic checkpoints\), got -2'),
    Case('train_task_checkpoint_period_zero',
         _train_task(n_steps_per_checkpoint=0), ValueError,
         r'TrainTask: n_steps_per_checkpoint must be a positive integer.*'
         r'got 0'),
    Case('train_task_checkpoint_period_float',
         _train_task(n_steps_per_checkpoint=2.5), ValueError,
         r'TrainTask: n_steps_per_checkpoint must be a positive integer.*'
         r'got 2\.5'),
    Case('train_task_permanent_period_negative',
         _train_task(n_steps_per_permanent_checkpoint=-10), ValueError,
         r'TrainTask: n_steps_per_permanent_checkpoint must be a positive '
         r'integer \(a number of steps, or None for no permanent '
         r'checkpoints\), got -10'),
    Case('eval_task_single_metric_layer',
         _eval_task(tl.WeightedCategoryAccuracy()), TypeError,
         r'EvalTask: metrics must be a list of metric layers, got the single '
         r'layer WeightedCategoryAccuracy; wrap it in a list'),
    Case('eval_task_zero_eval_batches',
         _eval_task([tl.WeightedCategoryAccuracy()], n_eval_batches=0),
         ValueError, r'EvalTask: n_eval_batches must be a positive integer '
         r'\(a number of batches per eval, or None for a task that is never '
         r'evaluated\), got 0'),
    Case('loop_output_dir_is_a_file', _loop_in(_a_file),
         checkpoints.CheckpointWriteError,
         r"Loop: output_dir '.*run\.txt' must be a writable folder, but Not "
         r'a directory \(it is a file\)'),
    Case('loop_output_dir_inside_a_file',
         _loop_in(lambda tmp_path: _a_file(tmp_path) / 'run'),
         checkpoints.CheckpointWriteError,
         r"Loop: output_dir '.*run\.txt/run' must be a writable folder, but "
         r'Not a directory'),
    Case('loop_checkpoint_at_not_callable', _loop(checkpoint_at=5),
         TypeError, r'Loop: checkpoint_at must be a function of the step '
         r'number \(e\.g\. lambda step: step % 100 == 0\), got int 5'),
    Case('loop_permanent_checkpoint_at_not_callable',
         _loop(permanent_checkpoint_at=[10, 20]), TypeError,
         r'Loop: permanent_checkpoint_at must be a function of the step '
         r'number .*got list \[10, 20\]'),
    Case('loop_eval_at_not_callable', _loop_with_evals(eval_at=3),
         TypeError, r'Loop: eval_at must be a function of the step number.*'
         r'got int 3'),
    Case('loop_which_task_not_callable', _loop(which_task=0.5), TypeError,
         r'Loop: which_task must be a function of the step number.*got '
         r'float 0\.5'),
    Case('loop_keep_checkpoints_negative', _loop(keep_checkpoints=-1),
         ValueError, r'Loop: keep_checkpoints must be an integer >= 0 \(how '
         r'many rotating checkpoints to keep; 0 keeps all\), got -1'),
    Case('loop_keep_checkpoints_float', _loop(keep_checkpoints=2.0),
         ValueError, r'Loop: keep_checkpoints must be an integer >= 0.*got '
         r'2\.0'),
]


@pytest.mark.parametrize('case', _case.params(CASES))
def test_bad_input_raises_clear_error(case, tmp_path):
  _case.check(case, tmp_path)
