"""TrainingStepCallback: the base class and when Loop calls callbacks."""

import os
import types

import numpy as np
import pytest

from tfnp_trax import optimizers
import tfnp_trax.layers as tl
from tfnp_trax.supervised import callbacks
from tfnp_trax.supervised import training


def _data():
  x = np.arange(8, dtype=np.float32).reshape((8, 1))
  while True:
    yield x, np.pi * np.ones((8, 1), np.float32), np.ones((8, 1), np.float32)


def test_base_class_methods_must_be_overridden():
  cb = callbacks.TrainingStepCallback(loop=None)
  with pytest.raises(NotImplementedError, match='must override call_at'):
    cb.call_at(1)
  with pytest.raises(NotImplementedError, match='on_step_begin'):
    cb.on_step_begin(1)
  with pytest.raises(NotImplementedError, match='on_step_end'):
    cb.on_step_end(1)


def test_loop_calls_callbacks_at_trax_steps_and_order(tmp_path):
  events = []
  built = []

  class Record(callbacks.TrainingStepCallback):

    def __init__(self, loop):
      super().__init__(loop)
      built.append(loop)

    def call_at(self, step):
      return step in (1, 3, 4)

    def on_step_begin(self, step):
      events.append(('begin', step, self._loop.step))

    def on_step_end(self, step):
      evals = [s for s, _ in self._loop.history.get('eval', 'metrics/L2Loss')]
      events.append(('end', step, self._loop.step, evals))

  task = training.TrainTask(_data(), tl.L2Loss(), optimizers.SGD(0.01),
                            n_steps_per_checkpoint=2)
  evals = training.EvalTask(_data(), [tl.L2Loss()])
  loop = training.Loop(tl.Serial(tl.Dense(1)), [task], eval_tasks=[evals],
                       output_dir=str(tmp_path), callbacks=[Record])
  assert built == [loop]
  saved = []
  real_save = loop.save_checkpoint
  loop.save_checkpoint = lambda name: saved.append((name, len(events))) or (
      real_save(name))
  loop.run(5)
  # As in Trax: the step number is the step being run (loop.step already
  # counts it), and on_step_end runs before that step's evals (and before
  # its checkpoints: at step 4, both end events precede the save).
  assert events == [('begin', 1, 1), ('end', 1, 1, []),
                    ('begin', 3, 3), ('end', 3, 3, [1, 2]),
                    ('begin', 4, 4), ('end', 4, 4, [1, 2])]
  assert saved == [('model', 2), ('model', 2), ('model', 6)]


@pytest.mark.parametrize('reads_weights', [True, False])
def test_model_weights_are_copied_only_for_callbacks_that_read_them(
    reads_weights):
  seen = []

  class Watch(callbacks.TrainingStepCallback):

    def call_at(self, step):
      return True

    def on_step_begin(self, step):
      pass

    def on_step_end(self, step):
      seen.append(np.array(self._loop.model.weights[0][0]))

  if not reads_weights:
    Watch.reads_weights = False
  task = training.TrainTask(_data(), tl.L2Loss(), optimizers.SGD(0.01))
  loop = training.Loop(tl.Serial(tl.Dense(1)), [task], callbacks=[Watch],
                       eval_at=lambda step: False)
  initial = np.array(loop.model.weights[0][0])
  loop.run(3)
  trained = np.array(loop.model.weights[0][0])  # run() copies at its end.
  assert not np.array_equal(trained, initial)
  if reads_weights:  # Each step's own weights, all different.
    assert not np.array_equal(seen[0], initial)
    np.testing.assert_array_equal(seen[-1], trained)
    assert len({w.tobytes() for w in seen}) == 3
  else:  # No copy at the step ends: the weights from before the run.
    for w in seen:
      np.testing.assert_array_equal(w, initial)


# -- SerializedModelEvaluation -------------------------------------------------

_VOCAB = 10


def _next_is_last_plus_one(mode):
  """A 'perfect' model of the rule next symbol = (last symbol + 1) % 10."""
  del mode
  return tl.Fn('PlusOne',
               lambda x: tl.one_hot((x + 1) % _VOCAB, _VOCAB) * 1000.0)


def _trajectories():
  rng = np.random.default_rng(0)
  obs = rng.integers(0, _VOCAB, size=(2, 5))
  act = rng.integers(0, _VOCAB, size=(2, 5))
  mask = np.ones((2, 5), np.float32)
  mask[1, 2] = 0.0
  return obs, act, mask


def _srl_model():
  # Imported here: the other tests of this file need no gymnasium.
  import gymnasium  # pylint: disable=g-import-not-at-top
  from tfnp_trax.rl import serialization_utils  # pylint: disable=g-import-not-at-top
  from tfnp_trax.rl import space_serializer  # pylint: disable=g-import-not-at-top
  srl = space_serializer.create(gymnasium.spaces.Discrete(_VOCAB), _VOCAB)
  return serialization_utils.SerializedModel(
      _next_is_last_plus_one, srl, srl, significance_decay=0.7)


def _srl_callback(loop=None, **kwargs):
  model = _srl_model()
  obs, act, mask = _trajectories()
  def data():
    while True:
      yield obs, act, obs, mask
  eval_task = training.EvalTask(data(), [tl.L2Loss()])
  kwargs.setdefault('accelerate_model', False)
  return callbacks.SerializedModelEvaluation(
      loop, model=model, eval_task=eval_task, **kwargs)


def _expected_error(context, horizon):
  # Fed obs/act up to step context - 1; each observation is predicted from
  # the true action just before it: obs[t] ~ act[t - 1] + 1.
  obs, act, mask = _trajectories()
  t = context + horizon - 1
  error = ((act[:, t - 1] + 1) % _VOCAB - obs[:, t]) ** 2 * mask[:, t]
  return error.sum() / ((error != 0).sum() + 1e-6)


def test_serialized_model_evaluation_errors_by_hand():
  callback = _srl_callback(context_lengths=(3, 1), horizon_lengths=(2, 1),
                           n_steps=2)
  metrics = callback.evaluate(weights=())
  assert sorted(metrics) == [f'pred_error/context_{c}/horizon_{h}'
                             for c in (1, 3) for h in (1, 2)]
  for c in (1, 3):
    for h in (1, 2):
      want = _expected_error(c, h)
      assert want > 0  # The rule does not fit the random data.
      np.testing.assert_allclose(
          metrics[f'pred_error/context_{c}/horizon_{h}'], want, rtol=1e-6)


def test_serialized_model_evaluation_eval_at_rules():
  every_5 = _srl_callback(eval_at=5)
  # Trax's rule for an int: steps 1, 6, 11, ...
  assert [s for s in range(1, 13) if every_5.call_at(s)] == [1, 6, 11]
  assert _srl_callback(eval_at=[2, 4]).call_at(4)
  assert not _srl_callback(eval_at=[2, 4]).call_at(3)
  assert _srl_callback(eval_at=lambda s: s == 7).call_at(7)
  with pytest.raises(TypeError, match='unsupported type for eval_at: float'):
    _srl_callback(eval_at=2.5)


def test_serialized_model_evaluation_logs_at_step_end(tmp_path):
  logged = []
  loop = types.SimpleNamespace(
      output_dir=str(tmp_path), is_chief=True,
      eval_model=types.SimpleNamespace(seq_model_weights=()),
      log_summary=lambda *args: logged.append(args))
  callback = _srl_callback(loop)
  assert callback.call_at(1)
  callback.on_step_begin(1)
  callback.on_step_end(1)
  [(metrics, writer, value_prefix, log_prefix)] = logged
  assert (value_prefix, log_prefix) == ('', 'srl_eval')
  assert writer.log_dir == os.path.join(str(tmp_path), 'srl_eval')
  np.testing.assert_allclose(metrics['pred_error/context_1/horizon_1'],
                             _expected_error(1, 1), rtol=1e-6)


def test_serialized_model_evaluation_needs_one_eval_task():
  loop = types.SimpleNamespace(eval_tasks=[1, 2])
  with pytest.raises(ValueError, match='exactly 1 eval task, got 2'):
    callbacks.SerializedModelEvaluation(
        loop, model=_srl_model())
