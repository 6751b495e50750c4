"""Loop(use_memory_efficient_trainer=True): ReversibleSerialTrainer in Loop.

The memory-efficient Loop must train exactly as the standard Loop (same
weights to float tolerance, since only the order of the backward
computation differs), checkpoint, and resume bitwise.
"""

import numpy as np
import pytest

from tfnp_trax import fastmath
from tfnp_trax import optimizers
from tfnp_trax import shapes
import tfnp_trax.layers as tl
from tfnp_trax.supervised import training


def _model():
  return tl.Serial(
      tl.Dense(8), tl.Dup(),
      tl.ReversibleSerial(
          tl.ReversibleHalfResidual(tl.Dense(8), tl.Relu()),
          tl.ReversibleSwap(),
          tl.ReversibleHalfResidual(tl.Dense(8), tl.Tanh()),
          tl.ReversibleSwap()),
      tl.Concatenate(), tl.Dense(3))


def _models(n):
  # Every Loop starts from the same weights, whatever trainer it uses.
  first = _model()
  first.init(shapes.ShapeDtype((8, 5)), rng=fastmath.random.get_prng(7))
  weights = [np.asarray(w) for w in fastmath.tree_leaves(first.weights)]
  models = [first]
  for _ in range(n - 1):
    m = _model()
    m.init(shapes.ShapeDtype((8, 5)))
    m.weights = fastmath.tree_unflatten(list(weights), m.weights)[0]
    models.append(m)
  return models


def _data():
  r = np.random.default_rng(0)
  while True:
    x = r.normal(size=(8, 5)).astype(np.float32)
    y = (x[:, 0] > x[:, 1]).astype(np.int32) + (x[:, 2] > 0)
    yield x, y.astype(np.int32), np.ones(8, np.float32)


def _loop(model, memory_efficient, output_dir=None):
  task = training.TrainTask(_data(), tl.WeightedCategoryCrossEntropy(),
                            optimizers.Adam(0.01), n_steps_per_checkpoint=2)
  return training.Loop(model, task, output_dir=output_dir, random_seed=1,
                       use_memory_efficient_trainer=memory_efficient)


def _leaves(loop):
  return [np.asarray(w, np.float64) for w in
          fastmath.tree_leaves(loop.model.weights)]


def test_trains_as_the_standard_loop(tmp_path):
  plain, reversible = _models(2)
  a = _loop(plain, False)
  b = _loop(reversible, True, str(tmp_path / 'rev'))
  a.run(4)
  b.run(4)
  assert b.step == 4
  for x, y in zip(_leaves(a), _leaves(b)):
    np.testing.assert_allclose(y, x, rtol=1e-5, atol=1e-6)
  losses_a = [v for _, v in a.history.get('train', 'metrics/'
                                          'WeightedCategoryCrossEntropy')]
  losses_b = [v for _, v in b.history.get('train', 'metrics/'
                                          'WeightedCategoryCrossEntropy')]
  np.testing.assert_allclose(losses_b, losses_a, rtol=1e-5)


def test_checkpoint_and_resume_are_bitwise(tmp_path):
  full, first, second = _models(3)
  whole = _loop(full, True, str(tmp_path / 'whole'))
  whole.run(4)
  part = _loop(first, True, str(tmp_path / 'part'))
  part.run(2)
  resumed = _loop(second, True, str(tmp_path / 'part'))
  assert resumed.step == 2
  resumed.run(2)
  for x, y in zip(_leaves(whole), _leaves(resumed)):
    np.testing.assert_array_equal(y, x)


def test_several_tasks_are_refused():
  (model,) = _models(1)
  tasks = [training.TrainTask(_data(), tl.WeightedCategoryCrossEntropy(),
                              optimizers.Adam(0.01)) for _ in range(2)]
  with pytest.raises(ValueError, match=r'use_memory_efficient_trainer=True '
                     r'trains exactly one TrainTask \(as in Trax\), got 2'):
    training.Loop(model, tasks, use_memory_efficient_trainer=True)


def test_optimizer_class_trains_and_resumes(tmp_path):
  # Follows trax/supervised/training.py TrainTask.learning_rate: the
  # memory-efficient trainer takes the optimizer class (Trax's
  # test_restores_step_sharded passes optimizers.SGD), whose default rate
  # (Optimizer's 0.01 in trax/optimizers/base.py) is the task's rate.
  task = training.TrainTask(_data(), tl.WeightedCategoryCrossEntropy(),
                            optimizers.SGD, n_steps_per_checkpoint=2)
  assert task.learning_rate(1) == pytest.approx(0.01)  # A float32.
  loop = training.Loop(_model(), task, output_dir=str(tmp_path),
                       checkpoint_at=lambda step: step % 2 == 0,
                       use_memory_efficient_trainer=True)
  loop.run(4)
  again = training.Loop(_model(), task, output_dir=str(tmp_path),
                        use_memory_efficient_trainer=True)
  assert again.step == 4
