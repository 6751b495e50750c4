"""Loop, TrainTask and EvalTask: training, summaries, checkpoints, resume."""

import glob
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import tensorflow as tf

from tests import _subprocess
from tfnp_trax import fastmath
from tfnp_trax import optimizers
from tfnp_trax import shapes
import tfnp_trax.layers as tl
from tfnp_trax.supervised import checkpoints
from tfnp_trax.supervised import training


def _data(seed, batch=8):
  r = np.random.default_rng(seed)
  while True:
    x = r.normal(size=(batch, 6)).astype(np.float32)
    y = (x[:, :3].sum(-1) > 0).astype(np.int32)
    yield x, y, np.ones(batch, np.float32)


def _loop(output_dir, model=None, lr=0.01, **kwargs):
  model = model or tl.Serial(tl.Dense(16), tl.Relu(), tl.Dense(2))
  task = training.TrainTask(_data(0), tl.WeightedCategoryCrossEntropy(),
                            optimizers.Adam(lr), n_steps_per_checkpoint=5)
  evals = training.EvalTask(_data(1), [tl.WeightedCategoryCrossEntropy(),
                                       tl.WeightedCategoryAccuracy()],
                            ['xent', 'acc'], n_eval_batches=2)
  return training.Loop(model, task, eval_tasks=[evals],
                       output_dir=output_dir, **kwargs)


def test_loop_learns_and_logs_history(tmp_path):
  loop = _loop(str(tmp_path))
  loop.run(40)
  assert loop.step == 40
  # Trax's names: the loss under metrics/, the rest under training/.
  losses = [v for _, v in loop.history.get(
      'train', 'metrics/WeightedCategoryCrossEntropy')]
  assert losses[-1] < losses[0]
  steps = [s for s, _ in loop.history.get('eval', 'metrics/acc')]
  assert steps == [1, 5, 10, 15, 20, 25, 30, 35, 40]
  assert loop.history.last('eval', 'metrics/acc') > 0.8
  assert loop.history.modes == ['eval', 'train']
  assert loop.history.metrics_for_mode('train') == [
      'metrics/WeightedCategoryCrossEntropy', 'training/gradients_l2',
      'training/learning_rate', 'training/loss', 'training/steps per second',
      'training/weights_l2']
  assert loop.history.metrics_for_mode('eval') == ['metrics/acc',
                                                   'metrics/xent']
  # The logged loss is the mean over the steps since the previous log.
  np.testing.assert_allclose(
      losses, [v for _, v in loop.history.get('train', 'training/loss')],
      rtol=1e-6)


def test_an_eval_task_without_metrics_reads_its_batches_and_logs_nothing():
  # trax/supervised/training.py, EvalTask: `metrics` is taken as given, an
  # empty list included (Trax's SerializedModelEvaluation callback builds
  # such a task to hold its data).
  read = []

  def counted():
    for batch in _data(1):
      read.append(1)
      yield batch
  task = training.TrainTask(_data(0), tl.WeightedCategoryCrossEntropy(),
                            optimizers.Adam(0.01))
  empty = training.EvalTask(counted(), [], n_eval_batches=3)
  loop = training.Loop(tl.Serial(tl.Dense(2)), task, eval_tasks=[empty],
                       eval_at=lambda step: step % 2 == 0)
  before = len(read)  # The sample batch was peeked at.
  loop.run(4)
  assert len(read) - before == 2 * 3 - 1  # Two evals; the peeked batch.
  assert loop.history.modes == ['train']


def _read_scalars(directory):
  values = {}
  for path in glob.glob(os.path.join(directory, 'events.out.tfevents.*')):
    for record in tf.data.TFRecordDataset(path):
      event = tf.compat.v1.Event.FromString(record.numpy())
      for v in event.summary.value:
        value = tf.make_ndarray(v.tensor) if v.HasField('tensor') else (
            v.simple_value)
        values.setdefault(v.tag, []).append((event.step, float(value)))
  return values


def test_tensorboard_event_files_hold_the_named_scalars(tmp_path):
  loop = _loop(str(tmp_path))
  loop.run(10)
  train = _read_scalars(os.path.join(str(tmp_path), 'train'))
  for tag in ('metrics/WeightedCategoryCrossEntropy',
              'training/learning_rate', 'training/gradients_l2',
              'training/weights_l2', 'training/steps per second'):
    assert tag in train, sorted(train)
  name = 'metrics/WeightedCategoryCrossEntropy'
  np.testing.assert_allclose([v for _, v in train[name]],
                             [v for _, v in loop.history.get('train', name)],
                             rtol=1e-6)
  evals = _read_scalars(os.path.join(str(tmp_path), 'eval'))
  assert [s for s, _ in evals['metrics/acc']] == [1, 5, 10]


def test_checkpoints_keep_last_k_and_permanent(tmp_path):
  model = tl.Serial(tl.Dense(2))
  task = training.TrainTask(_data(0), tl.WeightedCategoryCrossEntropy(),
                            optimizers.SGD(0.1), n_steps_per_checkpoint=2,
                            n_steps_per_permanent_checkpoint=5)
  loop = training.Loop(model, task, output_dir=str(tmp_path),
                       keep_checkpoints=2)
  loop.run(12)
  names = sorted(os.listdir(os.path.join(str(tmp_path), 'checkpoints')))
  # As in Trax, step 1 and every 2nd step checkpoint, and step 1 and every
  # 5th step permanently; of the rotating ones the 2 newest stay.
  assert names == ['ckpt-1-permanent', 'ckpt-10', 'ckpt-10-permanent',
                   'ckpt-12', 'ckpt-5-permanent']


def test_resume_continues_from_latest(tmp_path):
  loop = _loop(str(tmp_path))
  loop.run(10)
  weights = [np.asarray(w) for w in fastmath.tree_flatten(loop.model.weights)]
  resumed = _loop(str(tmp_path))
  assert resumed.step == 10
  for a, b in zip(weights, fastmath.tree_flatten(resumed.model.weights)):
    np.testing.assert_array_equal(a, np.asarray(b))
  # As in Trax (its Loop.run saves a step's checkpoint before run_evals),
  # the restored history ends before the evals of the checkpoint's step.
  assert resumed.history.get('eval', 'metrics/acc')[-1][0] == 5
  # The next run writes them first (run(0) only does that).
  resumed.run(0)
  assert resumed.step == 10
  assert resumed.history.get('eval', 'metrics/acc')[-1][0] == 10
  got, want = resumed.history.to_dict(), loop.history.to_dict()
  for d in (got, want):
    d['_values']['train'].pop('training/steps per second')
  assert got == want


def test_corrupt_latest_checkpoint_falls_back_with_warning(tmp_path):
  loop = _loop(str(tmp_path))
  loop.run(10)
  latest = os.path.join(str(tmp_path), 'checkpoints', 'ckpt-10')
  data_file = glob.glob(os.path.join(latest, 'state.data-*'))[0]
  with open(data_file, 'r+b') as f:
    f.truncate(os.path.getsize(data_file) // 2)
  with pytest.warns(RuntimeWarning, match='ckpt-10 is unusable.*resuming '
                    'from the previous checkpoint'):
    resumed = _loop(str(tmp_path))
  assert resumed.step == 5


def _pi_data(output_dim):
  x = np.arange(8, dtype=np.float32).reshape((8, 1))
  y = np.full((8, output_dim), np.pi, np.float32)
  while True:
    yield x, y, np.ones_like(y)


def test_loss_layer_is_not_run_while_the_loop_is_built():
  # Trax's Loop initializes the loss on the model's output signature
  # without running it (trax/supervised/training.py `_model_with_ends`):
  # a loss that refuses these shapes fails at the first step, not here.
  task = training.TrainTask(_pi_data(1), tl.L2Loss(), optimizers.SGD(.01))
  loop = training.Loop(tl.Serial(tl.Dense(2)), [task])
  assert loop.step == 0
  with pytest.raises(Exception, match=r'L2Loss.*\(8, 1\).*\(8, 2\)'):
    loop.run(1)


def test_restoring_into_a_different_model_is_also_an_index_error(tmp_path):
  # Trax's restore signals unmatched weights with an IndexError
  # (trax/supervised/training.py `_match_by_shape`); programs catch it.
  task = training.TrainTask(_pi_data(1), tl.L2Loss(), optimizers.SGD(.01))
  training.Loop(tl.Serial(tl.Dense(1)), [task],
                checkpoint_at=lambda step: step % 2 == 0,
                output_dir=str(tmp_path)).run(2)
  with pytest.raises(IndexError, match=r'shape \(1, 1\) in the checkpoint.*'
                     r'but \(1, 2\) in the model'):
    training.Loop(tl.Serial(tl.Dense(2)), [task], output_dir=str(tmp_path))
  assert issubclass(checkpoints.CheckpointMismatchError, ValueError)


def test_mismatched_model_is_a_clear_error(tmp_path):
  _loop(str(tmp_path)).run(5)
  other = tl.Serial(tl.Dense(32), tl.Relu(), tl.Dense(2))
  with pytest.raises(checkpoints.CheckpointMismatchError,
                     match=r'Dense_32.*shape \(6, 16\) in the checkpoint.*'
                     r'but \(6, 32\) in the model'):
    _loop(str(tmp_path), model=other)


def test_nan_loss_stops_and_keeps_last_good_checkpoint(tmp_path):
  blow_up = tl.Fn('BlowUpAfter', lambda x: x * 1e30)
  model = tl.Serial(tl.Dense(4), blow_up, tl.Dense(2))
  loop = _loop(str(tmp_path), model=model, lr=1e10)
  with pytest.raises(training.LossIsNotFiniteError,
                     match=r'(loss|weights) became (nan|inf|NaN or '
                     r'infinite) at step \d+.*last good '
                     r'checkpoint is kept'):
    loop.run(50)
  ckpts = checkpoints.CheckpointManager(
      os.path.join(str(tmp_path), 'checkpoints'), {}, {}).list()
  assert all(step < loop.step + 1 for step, _, _ in ckpts)
  resumed = _loop(str(tmp_path), model=tl.Serial(
      tl.Dense(4), tl.Fn('BlowUpAfter', lambda x: x * 1e30), tl.Dense(2)))
  for w in fastmath.tree_flatten(resumed.model.weights):
    assert np.all(np.isfinite(np.asarray(w)))


def test_dataset_input_is_prefetched_and_resumable(tmp_path):
  x = np.random.default_rng(0).normal(size=(64, 6)).astype(np.float32)
  y = (x[:, 0] > 0).astype(np.int32)
  ds = tf.data.Dataset.from_tensor_slices((x, y, np.ones(64, np.float32)))
  ds = ds.batch(8, drop_remainder=True).repeat()
  task = training.TrainTask(ds, tl.WeightedCategoryCrossEntropy(),
                            optimizers.Adam(0.01), n_steps_per_checkpoint=4)
  loop = training.Loop(tl.Serial(tl.Dense(2)), task,
                       output_dir=str(tmp_path))
  loop.run(8)
  resumed = training.Loop(tl.Serial(tl.Dense(2)), training.TrainTask(
      ds, tl.WeightedCategoryCrossEntropy(), optimizers.Adam(0.01),
      n_steps_per_checkpoint=4), output_dir=str(tmp_path))
  assert resumed.step == 8
  assert resumed._streams[0].position == 8  # pylint: disable=protected-access


def _script(output_dir, n_steps, result, *extra):
  return [sys.executable, '-m', 'tests.supervised._loop_script',
          str(output_dir), str(n_steps), str(result), *extra]


def test_sigkill_then_resume_is_bitwise_equal(tmp_path):
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2')
  cwd = _subprocess.REPO
  full = tmp_path / 'full.npz'
  subprocess.run(_script(tmp_path / 'a', 30, full), check=True, cwd=cwd,
                 env=env, timeout=240, capture_output=True)
  proc = subprocess.Popen(_script(tmp_path / 'b', 30, tmp_path / 'x.npz',
                                  '--sleep', '0.1'),
                          cwd=cwd, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, text=True)
  deadline = time.time() + 200
  for line in proc.stdout:  # Kill once a few checkpoints exist.
    if line.startswith('Step     12') or time.time() > deadline:
      break
  proc.send_signal(signal.SIGKILL)
  proc.wait(timeout=30)
  assert not (tmp_path / 'x.npz').exists()
  resumed = tmp_path / 'resumed.npz'
  out = subprocess.run(_script(tmp_path / 'b', 30, resumed), check=True,
                       cwd=cwd, env=env, timeout=240, capture_output=True,
                       text=True)
  assert 'Resumed from' in out.stdout
  # The same killed run, resumed instead by an explicit
  # Loop.load_checkpoint(directory) into a fresh output_dir.
  explicit = tmp_path / 'explicit.npz'
  out = subprocess.run(_script(tmp_path / 'c', 30, explicit, '--load_from',
                               tmp_path / 'b'), check=True, cwd=cwd,
                       env=env, timeout=240, capture_output=True, text=True)
  assert 'Resumed from' in out.stdout
  a = np.load(full)
  for result in (resumed, explicit):
    b = np.load(result)
    assert a.files == b.files
    for key in a.files:
      np.testing.assert_array_equal(a[key], b[key])
  assert len(a['losses']) == 30


def test_mirrored_loop_matches_single_device(tmp_path):
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2')
  # Without dropout: each replica draws its own dropout masks by design.
  for name, extra in [('one', ['--dropout', '0']),
                      ('four', ['--dropout', '0', '--replicas', '4'])]:
    subprocess.run(_script(tmp_path / name, 10, tmp_path / f'{name}.npz',
                           *extra), check=True, cwd=_subprocess.REPO,
                   env=env, timeout=240, capture_output=True)
  one, four = np.load(tmp_path / 'one.npz'), np.load(tmp_path / 'four.npz')
  np.testing.assert_allclose(one['losses'], four['losses'], rtol=1e-5)


def test_two_worker_loop_matches_single_process(tmp_path):
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2')
  subprocess.run(_script(tmp_path / 'one', 10, tmp_path / 'one.npz',
                         '--dropout', '0'), check=True, cwd=_subprocess.REPO,
                 env=env, timeout=240, capture_output=True)
  launched = subprocess.run(
      [sys.executable, '-m', 'distribute.launch', '--workers', '2',
       '--timeout', '200', '--'] + _script(tmp_path / 'two', 10,
                                           tmp_path / 'two.npz', '--dropout',
                                           '0', '--multiworker'),
      cwd=_subprocess.REPO, env=env, timeout=240, capture_output=True,
      text=True, check=False)
  assert launched.returncode == 0, launched.stdout[-3000:]
  one, two = np.load(tmp_path / 'one.npz'), np.load(tmp_path / 'two.npz')
  np.testing.assert_allclose(one['losses'], two['losses'], rtol=1e-5)
  for key in one.files:
    np.testing.assert_allclose(one[key], two[key], rtol=1e-5, atol=1e-6)
  # Only the chief wrote checkpoints, into the shared output_dir.
  assert sorted(os.listdir(tmp_path / 'two' / 'checkpoints')) == [
      'ckpt-1', 'ckpt-10', 'ckpt-5']


def test_first_eval_leaves_the_model_weights_alone(tmp_path):
  seen = {}

  class Watch:  # Reads the model's weights right after the step-1 eval.

    def __init__(self, loop):
      self._loop = loop

    def call_at(self, step):
      return step == 1

    def on_step_begin(self, step):
      pass

    def on_step_end(self, step):
      seen['weights'] = [np.asarray(w) for w in
                         fastmath.tree_flatten(self._loop.model.weights)]

  # Weights the caller set (not the initializer's) must survive the eval.
  model = tl.Serial(tl.Dense(16), tl.Relu(), tl.Dense(2))
  model.init(shapes.ShapeDtype((8, 6)))
  model.weights = fastmath.nested_map(lambda w: 0.5 * np.ones(w.shape,
                                                              np.float32),
                                      model.weights)
  loop = _loop(str(tmp_path), model=model, callbacks=[Watch])
  # Building the trainers and evaluators kept them.
  before = [np.asarray(w) for w in fastmath.tree_flatten(loop.model.weights)]
  assert all(np.all(w == 0.5) for w in before)
  loop.run(1)
  # The callback saw the weights the first step produced from them, and the
  # eval model holds the same weights after the step-1 eval.
  step1 = [np.asarray(w) for w in fastmath.tree_flatten(loop.model.weights)]
  for a, b in zip(step1, seen['weights']):
    np.testing.assert_array_equal(a, b)
  assert any(np.any(w != 0.5) for w in step1)
  for a, b in zip(step1, fastmath.tree_flatten(loop.eval_model.weights)):
    np.testing.assert_array_equal(a, np.asarray(b))
