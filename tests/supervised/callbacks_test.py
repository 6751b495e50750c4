"""TrainingStepCallback: the base class and when Loop calls callbacks."""

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
