"""EarlyStopping: the decision on scripted values, a Loop that stops on a
scripted eval metric, the best weights (with and without the moving
average), resume after SIGKILL and mid-run, bad arguments and gin."""

import contextlib
import functools
import io
import itertools
import json
import math
import os
import subprocess
import sys
import textwrap
import types

import gin
import numpy as np
import pytest

from tests import _subprocess
from tfnp_trax import fastmath
from tfnp_trax import gin_config
from tfnp_trax import optimizers
import tfnp_trax.layers as tl
from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.supervised import callbacks
from tfnp_trax.supervised import early_stopping as es_lib
from tfnp_trax.supervised import trainer_lib
from tfnp_trax.supervised import training

EarlyStopping = callbacks.EarlyStopping

# The eval metric's values, one per eval (every step). With mode 'min',
# min_delta 0 and patience 2: steps 1, 2 and 4 improve (best 3.0 at step
# 4); step 5 (3.2) and step 6 (3.0, a tie) do not, so the run stops after
# step 6. After a cleared stop, step 7 (3.5) waits and step 8 improves.
SEQ = [5.0, 4.0, 4.5, 3.0, 3.2, 3.0, 3.5, 2.5, 2.6, 2.7]
STOP, BEST_STEP, BEST = 6, 4, 3.0

_RS = np.random.RandomState(0)
X = _RS.randn(8, 3).astype(np.float32)
Y = _RS.randint(0, 2, 8)


# -- The decision, on scripted values ----------------------------------------
def _decide(values, mode='min', min_delta=0.0, patience=0, baseline=None):
  """Runs `update` over values at steps 1, 2, ...; returns the state."""
  state = es_lib.EarlyStoppingState(best=baseline)
  for step, value in enumerate(values, 1):
    state, _ = es_lib.update(state, value, step, mode, min_delta, patience)
    if state.stopped_step is not None:
      break
  return state


@pytest.mark.parametrize('values, kwargs, stop, best, best_step', [
    # patience 0 and 1: the first non-improving eval (a tie here) stops.
    ([3.0, 2.0, 2.0, 1.0], dict(patience=0), 3, 2.0, 2),
    ([3.0, 2.0, 2.0, 1.0], dict(patience=1), 3, 2.0, 2),
    # patience 3: two misses, an improvement resets, then three misses.
    ([3.0, 3.5, 4.0, 2.0, 2.5, 2.0, 9.0, 1.0], dict(patience=3), 7, 2.0, 4),
    ([1.0, 2.0, 3.0, 3.0, 2.0], dict(mode='max', patience=1), 4, 3.0, 3),
    # min_delta: 2.95 is not 0.1 below 3.0; 2.85 is.
    ([3.0, 2.95, 2.85, 2.8], dict(min_delta=0.1, patience=1), 2, 3.0, 1),
    ([3.0, 2.85, 2.8], dict(min_delta=0.1, patience=1), 3, 2.85, 2),
    ([1.0, 1.05, 1.2, 1.25], dict(mode='max', min_delta=0.1, patience=1),
     2, 1.0, 1),
    # A NaN never improves, even as the first value; the next number does.
    ([float('nan'), 2.0, float('nan'), float('nan')], dict(patience=2),
     4, 2.0, 2),
    # A baseline must be beaten to improve at all.
    ([2.5, 2.2, 1.9, 2.0], dict(patience=2, baseline=2.0), 2, 2.0, None),
    ([2.5, 1.9, 2.0, 2.1], dict(patience=2, baseline=2.0), 4, 1.9, 2),
])
def test_decision_on_scripted_values(values, kwargs, stop, best, best_step):
  state = _decide(values, **kwargs)
  assert state.stopped_step == stop
  assert state.best == best and state.best_step == best_step


def test_decision_goes_on_while_values_improve():
  state = _decide([5.0, 4.0, 3.0, 2.0], patience=0)
  assert state == es_lib.EarlyStoppingState(best=2.0, best_step=4, wait=0)


def test_nan_counts_as_a_miss():
  state, improved = es_lib.update(es_lib.EarlyStoppingState(1.0, 1, 0),
                                  math.nan, 2, 'min', 0.0, 5)
  assert not improved and state.wait == 1 and state.best == 1.0


@pytest.mark.parametrize('monitor, mode', [
    ('metrics/WeightedCategoryAccuracy', 'max'), ('Accuracy', 'max'),
    ('metrics/CrossEntropyLoss', 'min'), ('metrics/loss', 'min')])
def test_auto_mode_and_bare_names(monitor, mode):
  callback = EarlyStopping(monitor, mode='auto')
  assert callback.mode == mode and callback.monitor.startswith('metrics/')
  assert EarlyStopping(monitor).mode == 'min'  # The default.


@pytest.mark.parametrize('kwargs, error, message', [
    (dict(), TypeError, 'monitor must be the name of an eval metric'),
    (dict(monitor=3), TypeError, 'monitor must be the name'),
    (dict(monitor='m', mode='lowest'), ValueError,
     r"mode must be one of \('min', 'max', 'auto'\), got 'lowest'"),
    (dict(monitor='m', patience=-1), ValueError,
     'patience must be an integer >= 0'),
    (dict(monitor='m', patience=1.5), ValueError, 'patience must be'),
    (dict(monitor='m', patience=True), ValueError, 'patience must be'),
    (dict(monitor='m', min_delta=-0.1), ValueError,
     'min_delta must be a finite number >= 0, got -0.1'),
    (dict(monitor='m', min_delta='0.1'), ValueError, 'min_delta must be'),
    (dict(monitor='m', min_delta=math.inf), ValueError, 'min_delta must be'),
    (dict(monitor='m', restore_best='yes'), TypeError,
     'restore_best must be True or False'),
    (dict(monitor='m', baseline=math.nan), ValueError, 'baseline must be'),
])
def test_bad_arguments(kwargs, error, message):
  with pytest.raises(error, match='EarlyStopping: ' + message):
    EarlyStopping(**kwargs)


def test_bad_first_argument_and_monitor_given_twice():
  with pytest.raises(TypeError, match='first argument must be the monitored '
                                      'metric name or the Loop, got int 3'):
    EarlyStopping(3)
  with pytest.raises(TypeError, match='monitor given twice'):
    EarlyStopping('metrics/a', 'metrics/b')


def _fake_loop(*metric_names):
  task = types.SimpleNamespace(metric_names=list(metric_names))
  return types.SimpleNamespace(eval_tasks=[task], request_stop=print)


def test_unknown_monitor_lists_the_metrics_and_one_instance_one_loop():
  with pytest.raises(ValueError, match=r"monitor='metrics/Acc' is not a "
                     r"metric of the Loop's eval tasks; their History names "
                     r"are \['metrics/Loss', 'metrics/Accuracy'\]"):
    EarlyStopping('Acc')(_fake_loop('Loss', 'Accuracy'))
  with pytest.raises(ValueError, match='the Loop has no eval_tasks'):
    EarlyStopping('Loss')(types.SimpleNamespace(eval_tasks=[],
                                                request_stop=print))
  callback = EarlyStopping('Loss')
  first = _fake_loop('Loss')
  assert callback(first) is callback and callback(first) is callback
  with pytest.raises(ValueError, match='already bound to another Loop'):
    callback(_fake_loop('Loss'))


# -- A Loop whose eval metric follows SEQ ------------------------------------
def _eval_data():
  for value in itertools.cycle(SEQ):
    yield X[:2], np.full((2,), value, np.float32)


class _RecordWeights(callbacks.TrainingStepCallback):
  """Keeps the weights each step produced (the ones its evals run on)."""

  def __init__(self, loop):
    super().__init__(loop)
    self.weights, self.ema = {}, {}

  def call_at(self, step):
    return True

  def on_step_begin(self, step):
    pass

  def on_step_end(self, step):
    leaves = fastmath.tree_leaves(self._loop.model.weights)
    self.weights[step] = [np.array(w) for w in leaves]
    if self._loop.ema_weights is not None:
      self.ema[step] = [np.array(w) for w in
                        fastmath.tree_leaves(self._loop.ema_weights)]


def _loop(output_dir=None, callback=None, **kwargs):
  scripted = tl.Fn('Scripted', lambda out, tgt: jnp.mean(tgt))
  train_data = itertools.repeat((X, Y, np.ones(8, np.float32)))
  callback = callback or EarlyStopping('metrics/Scripted', patience=2)
  return training.Loop(
      tl.Serial(tl.Dense(2), tl.LogSoftmax()),
      training.TrainTask(train_data, tl.CrossEntropyLoss(),
                         optimizers.Adam(0.05)),
      eval_tasks=[training.EvalTask(_eval_data(), [scripted],
                                    metric_names=['Scripted'])],
      eval_at=lambda step: True, output_dir=output_dir, random_seed=3,
      callbacks=[callback, _RecordWeights], **kwargs)


def _leaves(tree):
  return [np.asarray(w) for w in fastmath.tree_leaves(tree)]


def _assert_weights(tree, expected):
  got = _leaves(tree)
  assert len(got) == len(expected)
  for g, e in zip(got, expected):
    np.testing.assert_array_equal(g, e)


def _manifest(output_dir, name):
  with open(os.path.join(output_dir, 'checkpoints', name,
                         'manifest.json')) as f:
    return json.load(f)


def _quiet(fn, *args, **kwargs):
  with contextlib.redirect_stdout(io.StringIO()) as out:
    result = fn(*args, **kwargs)
  return result, out.getvalue()


@pytest.mark.parametrize('ema', [False, True])
def test_loop_stops_at_the_right_step_and_keeps_the_best_weights(tmp_path,
                                                                  ema):
  output_dir = str(tmp_path)
  loop = _loop(output_dir, **(dict(ema_decay=0.8) if ema else {}))
  callback, record = loop._callbacks  # pylint: disable=protected-access
  reached, out = _quiet(loop.run, 20)
  assert reached == loop.step == STOP
  assert f'Loop: stopped after step {STOP}: EarlyStopping: metrics/Scripted ' \
         f'did not improve for 2 evals (best 3 at step {BEST_STEP}' in out
  assert loop.stopped.startswith('EarlyStopping: metrics/Scripted')
  assert [v for _, v in loop.history.get('eval', 'metrics/Scripted')] == (
      pytest.approx(SEQ[:STOP]))
  assert loop.history.get('train', 'loop/stopped_at') == [(STOP, STOP)]
  assert (callback.best, callback.best_step) == (BEST, BEST_STEP)
  # The stop's checkpoint, written although step 6 is no checkpoint step.
  extra = _manifest(output_dir, f'ckpt-{STOP}')['extra']
  assert extra['loop_stop']['step'] == STOP
  assert extra['loop_progress']['pending'] is False
  assert extra['loop_callbacks']['0:EarlyStopping'] == dict(
      best=BEST, best_step=BEST_STEP, wait=2, stopped_step=STOP)
  assert _manifest(output_dir, 'early_stopping_best')['step'] == BEST_STEP
  # The model holds the weights the best eval ran on: the moving average
  # of step 4 with EMA evals, else step 4's trained weights.
  best = (record.ema if ema else record.weights)[BEST_STEP]
  _assert_weights(loop.model.weights, best)
  _assert_weights(loop.eval_model.weights, best)
  last = (record.ema if ema else record.weights)[STOP]
  assert not np.allclose(_leaves(loop.model.weights)[0], last[0])
  if ema:  # The average restarts from the best weights.
    _assert_weights(loop.ema_weights, best)
  # The checkpoint on disk holds them too, and a stopped Loop trains no more.
  _assert_weights(_restored_weights(output_dir, ema), best)
  _assert_weights(loop.checkpoint_weights_and_state(
      'early_stopping_best', ema=ema)[0], best)
  assert _quiet(loop.run, 5)[0] == STOP


def _restored_weights(output_dir, ema):
  loop = _quiet(_loop, output_dir, None, **(
      dict(ema_decay=0.8) if ema else {}))[0]
  assert loop.step == STOP and loop.stopped is not None
  return loop.model.weights


def test_without_restore_best_the_last_weights_stay_and_no_output_dir():
  loop = _loop(callback=functools.partial(
      EarlyStopping, monitor='Scripted', patience=2, restore_best=False))
  callback, record = loop._callbacks  # pylint: disable=protected-access
  assert isinstance(callback, EarlyStopping)
  assert _quiet(loop.run, 20)[0] == STOP
  _assert_weights(loop.model.weights, record.weights[STOP])
  with_best = _loop(callback=EarlyStopping(monitor='Scripted', patience=2))
  record = with_best._callbacks[1]  # pylint: disable=protected-access
  assert _quiet(with_best.run, 20)[0] == STOP
  _assert_weights(with_best.model.weights, record.weights[BEST_STEP])


def test_request_stop_from_a_callback_and_clear_stop():

  class StopAt3(_RecordWeights):

    def on_step_end(self, step):
      if step == 3:
        self._loop.request_stop('enough')

  loop = _loop(callback=StopAt3)
  assert _quiet(loop.run, 10)[0] == 3 and loop.stopped == 'enough'
  loop.clear_stop()
  assert loop.stopped is None
  assert _quiet(loop.run, 2)[0] == 5


def test_bad_monitor_fails_when_the_loop_builds_the_callback():
  with pytest.raises(ValueError, match=r"their History names are "
                                       r"\['metrics/Scripted'\]"):
    _loop(callback=EarlyStopping('metrics/Accuracy'))


# -- Resume --------------------------------------------------------------------
def test_a_run_killed_after_it_stopped_stays_stopped(tmp_path):
  output_dir = str(tmp_path / 'run')
  best_file = str(tmp_path / 'best.npz')
  code = textwrap.dedent(f'''
      import os
      import numpy as np
      from tests.supervised import early_stopping_test as t
      loop = t._loop({output_dir!r})
      assert loop.run(20) == t.STOP, loop.step
      record = loop._callbacks[1]
      np.savez({best_file!r}, *record.weights[t.BEST_STEP])
      os.kill(os.getpid(), 9)
      ''')
  env = dict(os.environ, PYTHONPATH=_subprocess.REPO, TF_CPP_MIN_LOG_LEVEL='2')
  proc = subprocess.run([sys.executable, '-c', code], capture_output=True,
                        text=True, timeout=240, env=env, cwd=_subprocess.REPO,
                        check=False)
  assert proc.returncode == -9, _subprocess.tail(proc.stdout + proc.stderr)
  with np.load(best_file) as saved:
    best = [saved[f'arr_{i}'] for i in range(len(saved.files))]

  loop, out = _quiet(_loop, output_dir)
  callback = loop._callbacks[0]  # pylint: disable=protected-access
  assert loop.step == STOP and loop.stopped.startswith('EarlyStopping')
  assert (callback.best, callback.best_step) == (BEST, BEST_STEP)
  _assert_weights(loop.model.weights, best)
  reached, out = _quiet(loop.run, 10)
  assert reached == loop.step == STOP
  assert f'not training; the run stopped after step {STOP}' in out
  # Cleared, it trains on and counts patience anew: step 7 (3.5) misses,
  # step 8 (2.5) improves.
  loop.clear_stop()
  assert _quiet(loop.run, 2)[0] == 8 and loop.stopped is None
  assert callback.best_step == 8


def test_a_run_resumed_between_evals_decides_as_an_uninterrupted_one(
    tmp_path):
  every_step = dict(checkpoint_at=lambda step: True,
                    permanent_checkpoint_at=lambda step: step == STOP)
  reference = _loop(str(tmp_path / 'ref'), **every_step)
  assert _quiet(reference.run, 20)[0] == STOP
  expected = _leaves(reference.model.weights)
  record = reference._callbacks[1]  # pylint: disable=protected-access
  _assert_weights(reference.model.weights, record.weights[BEST_STEP])

  output_dir = str(tmp_path / 'run')
  first = _loop(output_dir, **every_step)
  assert _quiet(first.run, 5)[0] == 5  # Best at 4, one miss at 5.
  # A new Loop restores step 5's checkpoint (written before its evals):
  # its callback state is the one before step 5's eval, the best weights
  # are on disk only.
  resumed = _quiet(_loop, output_dir, None, **every_step)[0]
  callback = resumed._callbacks[0]  # pylint: disable=protected-access
  assert resumed.step == 5 and callback.state.wait == 0
  assert callback.best_step == BEST_STEP
  assert _quiet(resumed.run, 20)[0] == STOP
  assert (callback.best, callback.best_step) == (BEST, BEST_STEP)
  _assert_weights(resumed.model.weights, expected)
  assert resumed.history.get('eval', 'metrics/Scripted') == (
      reference.history.get('eval', 'metrics/Scripted'))
  # The permanent checkpoint of the stop step was rewritten with the stop,
  # so whichever one a restore picks knows it.
  for name in (f'ckpt-{STOP}', f'ckpt-{STOP}-permanent'):
    assert _manifest(output_dir, name)['extra']['loop_stop']['step'] == STOP
  again = _quiet(_loop, output_dir, None, **every_step)[0]
  assert again.stopped is not None
  _assert_weights(again.model.weights, expected)


# -- gin -----------------------------------------------------------------------
@pytest.fixture
def _clean_gin():
  gin.clear_config()
  yield
  gin.clear_config()


def _lm(mode='train'):
  del mode
  return tl.Serial(tl.Embedding(5, 4), tl.Dense(5))


def test_gin_config_binds_early_stopping_as_a_train_callback(tmp_path,
                                                             _clean_gin):
  del _clean_gin
  gin_config.parse_config([
      'import trax.supervised.lr_schedules',
      'import trax.supervised.trainer_lib',
      'import trax.supervised.callbacks',
      "multifactor.factors = 'constant'",
      'multifactor.constant = 0.0',  # Nothing learns: the loss ties.
      'train.callbacks = [@trax.supervised.callbacks.EarlyStopping]',
      "EarlyStopping.monitor = 'loss'",
      'EarlyStopping.patience = 1',
  ])
  tokens = np.array([[1, 2, 3], [4, 0, 1]], np.int32)
  batch = (tokens, tokens, np.ones((2, 3), np.float32))
  from tfnp_trax import data  # pylint: disable=g-import-not-at-top
  inputs = data.Inputs(lambda n: itertools.repeat(batch),
                       lambda n: itertools.repeat(batch))
  loop, _ = _quiet(functools.partial(
      trainer_lib.train, str(tmp_path), model=_lm, inputs=lambda: inputs,
      optimizer=optimizers.SGD, steps=10, eval_frequency=1, eval_steps=1))
  # Step 1 improves, step 2 ties it: stopped there.
  assert loop.step == 2 and loop.stopped.startswith(
      'EarlyStopping: metrics/loss did not improve')
