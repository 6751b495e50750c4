"""Loop with several TrainTasks sharing one model body, as in Trax."""

import numpy as np

from tfnp_trax import fastmath
from tfnp_trax import optimizers
from tfnp_trax import shapes
import tfnp_trax.layers as tl
from tfnp_trax.supervised import trainer as trainer_lib
from tfnp_trax.supervised import training


def _regression(seed):
  r = np.random.default_rng(seed)
  while True:
    x = r.normal(size=(8, 5)).astype(np.float32)
    yield x, x[:, :3] * 2.0, np.ones((8, 3), np.float32)


def _classification(seed):
  r = np.random.default_rng(seed)
  while True:
    x = r.normal(size=(8, 5)).astype(np.float32)
    yield x, (x[:, 0] > 0).astype(np.int32), np.ones(8, np.float32)


def _tasks():
  # Two heads on one body: task 0 regresses all 3 outputs, task 1 reads
  # the first 2 as class logits; each has its own optimizer.
  return [
      training.TrainTask(_regression(0), tl.L2Loss(), optimizers.SGD(0.05),
                         n_steps_per_checkpoint=None),
      training.TrainTask(
          _classification(1),
          tl.Serial(tl.Fn('Head2', lambda y, t, w: (y[:, :2], t, w), n_out=3),
                    tl.WeightedCategoryCrossEntropy()),
          optimizers.Adam(0.01), n_steps_per_checkpoint=None),
  ]


def _model():
  return tl.Serial(tl.Dense(6), tl.Relu(), tl.Dense(3))


def test_two_tasks_match_a_hand_run_alternation_of_trainers():
  loop = training.Loop(_model(), _tasks(), random_seed=0)
  init = fastmath.nested_map(np.asarray, loop.model.weights)
  loop.run(7)

  # By hand: Trax's default which_task is step % 2 (step 1 trains task 1).
  tasks = _tasks()
  data = [t.labeled_data for t in tasks]
  trainers = []
  for task in tasks:
    body = _model()
    with_loss = tl.Serial(body, task.loss_layer)
    with_loss.init(shapes.signature(task.sample_batch))
    body.weights = init
    trainers.append(trainer_lib.Trainer(with_loss, task.optimizer))
  weights = init
  for step in range(1, 8):
    trainer = trainers[step % 2]
    trainer.model_weights = (weights, trainer.model_weights[1])
    trainer.one_step(next(data[step % 2]), fastmath.random.get_prng(0), step,
                     learning_rate=tasks[step % 2].learning_rate(step))
    weights = trainer.model_weights[0]
  for a, b in zip(fastmath.tree_leaves(weights),
                  fastmath.tree_leaves(loop.model.weights)):
    np.testing.assert_allclose(np.asarray(b), a, rtol=1e-5, atol=1e-6)
  # Each task trained 3 or 4 times: its own data stream moved that far.
  assert [s.position for s in loop._streams] == [3, 4]  # pylint: disable=protected-access


def test_which_task_picks_the_task_and_leaves_the_other_optimizer_alone():
  loop = training.Loop(_model(), _tasks(), which_task=lambda step: 0,
                       random_seed=0)
  loop.run(3)
  # Adam's slots of task 1 never moved from zero; task 0 (SGD) trained.
  adam_slots = fastmath.tree_leaves(loop._trainers.trainers[1].slots)  # pylint: disable=protected-access
  assert adam_slots and all(np.all(np.asarray(s) == 0) for s in adam_slots)
  assert [s.position for s in loop._streams] == [3, 0]  # pylint: disable=protected-access


def test_multitask_checkpoint_resumes_every_task(tmp_path):
  loop = training.Loop(_model(), _tasks(), output_dir=str(tmp_path),
                       checkpoint_at=lambda step: step % 3 == 0,
                       random_seed=0)
  loop.run(6)
  resumed = training.Loop(_model(), _tasks(), output_dir=str(tmp_path),
                          random_seed=0)
  assert resumed.step == 6
  for a, b in zip(fastmath.tree_leaves(loop.model.weights),
                  fastmath.tree_leaves(resumed.model.weights)):
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
  for i in range(2):
    for a, b in zip(
        fastmath.tree_leaves(loop._trainers.trainers[i].slots),  # pylint: disable=protected-access
        fastmath.tree_leaves(resumed._trainers.trainers[i].slots)):  # pylint: disable=protected-access
      np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
  assert [s.position for s in resumed._streams] == [3, 3]  # pylint: disable=protected-access
