"""ValueTrainTask and ValueEvalTask: target-network value regression."""

import contextlib
import io
import itertools

import numpy as np
import pytest

from tests.rl._envs import Box
from tests.rl._envs import Discrete
from tfnp_trax import layers as tl
from tfnp_trax import optimizers
from tfnp_trax import shapes
from tfnp_trax.rl import advantages
from tfnp_trax.rl import task as task_lib
from tfnp_trax.rl import value_tasks
from tfnp_trax.supervised import lr_schedules
from tfnp_trax.supervised import training

GAMMA = 0.5

# Two slices of length 4 (see policy_tasks_test for the returns): slice 0
# ends at step 2 (step 3 is padding), slice 1 at step 1.
REWARDS = [[1., 2., 3., 0.], [0., 1., 0., 0.]]
RETURNS = [[2.75, 3.5, 3., 0.], [0.5, 1., 0., 0.]]
DONES = [[False, False, True, True], [False, True, True, True]]
MASK = [[1, 1, 1, 0], [1, 1, 0, 0]]
# Step (0, 0)'s reward is not discounted: TD bootstraps with gamma 1 there.
DISCOUNT_MASK = [[0, 1, 1, 1], [1, 1, 1, 1]]


def make_batch():
  observation = np.array([[[t, b] for t in range(4)] for b in range(2)],
                         np.float32)
  return task_lib.TimeStepBatch(
      observation=observation, action=np.zeros((2, 4), np.int64),
      reward=np.array(REWARDS), done=np.array(DONES), mask=np.array(MASK),
      dist_inputs=None,
      env_info=task_lib.EnvInfo(control_mask=np.ones((2, 4), np.int64),
                                discount_mask=np.array(DISCOUNT_MASK)),
      return_=np.array(RETURNS))


def batches():
  return (make_batch() for _ in itertools.count())


def dense_model(w, b):
  """An initialized Dense(1) holding `w` [2, 1] and `b` [1]."""
  model = tl.Dense(1)
  model.init(shapes.ShapeDtype((1, 2), np.float32))
  model.weights = (np.array(w, np.float32), np.array(b, np.float32))
  return model


def net(w, b):
  """The model's outputs on make_batch()'s observations, float64 [2, 4]."""
  obs = make_batch().observation.astype(np.float64)
  return (obs @ np.array(w, np.float64) + np.array(b, np.float64))[..., 0]


def td1_reference(values):
  """r_t + gamma_t V_{t+1}, or r_t where the episode ended; 3 columns."""
  r, done = np.array(REWARDS), np.array(DONES)
  gammas = np.where(np.array(DISCOUNT_MASK) == 1, GAMMA, 1.0)
  targets = r[:, :3] + gammas[:, :3] * values[:, 1:]
  return np.where(done[:, :3], r[:, :3], targets)


def make_task(model, estimator=None, learning_rate=1e-3, **kwargs):
  return value_tasks.ValueTrainTask(
      batches(), optimizers.Adam(), lr_schedules.constant(learning_rate),
      estimator or advantages.td_k(GAMMA, margin=1), model=model, **kwargs)


W0, B0 = [[0.5], [-1.]], [0.25]
W1, B1 = [[-2.], [3.]], [1.]


def test_td_targets_match_the_reference_with_target_scale():
  model = dense_model(W0, B0)
  task = make_task(model, target_scale=2.0)
  observations, targets, mask = task.value_batch(make_batch())
  np.testing.assert_array_equal(observations, make_batch().observation[:, :3])
  assert targets.shape == (2, 3, 1) and targets.dtype == np.float32
  np.testing.assert_array_equal(mask, np.array(MASK)[:, :3, None])
  # value() divides the network's outputs by the scale, the targets are
  # multiplied by it: scale * (r + gamma * net' / scale).
  values = net(W0, B0) / 2.0
  np.testing.assert_allclose(targets[..., 0], 2.0 * td1_reference(values),
                             rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(task.value(make_batch()), values, rtol=1e-6)


def test_monte_carlo_targets_are_the_returns():
  task = make_task(dense_model(W0, B0),
                   estimator=advantages.monte_carlo(GAMMA, margin=1))
  _, targets, _ = task.value_batch(make_batch())
  np.testing.assert_allclose(targets[..., 0], np.array(RETURNS)[:, :3],
                             rtol=1e-6)


def test_sample_batch_is_shape_only_and_needs_no_initialized_model():
  task = make_task(tl.Serial(tl.Dense(1)), target_scale=2.0)
  observations, targets, mask = task.sample_batch
  assert observations.shape == (2, 3, 2)
  assert targets.shape == mask.shape == (2, 3, 1)
  # Zero values: TD-1 targets are the rewards (times the scale).
  np.testing.assert_allclose(targets[..., 0],
                             2.0 * td1_reference(np.zeros((2, 4))))
  assert task.loss_name == 'value_loss'


def test_target_network_syncs_on_the_first_batch_and_at_sync_at():
  model = dense_model(W0, B0)
  task = make_task(model, sync_at=lambda step: step % 3 == 0)
  data = task.labeled_data

  def targets_of(batch):
    return batch[1][..., 0]
  first = targets_of(next(data))  # Step 1: the first batch syncs.
  np.testing.assert_allclose(first, td1_reference(net(W0, B0)), rtol=1e-5)
  model.weights[0][...] = 7.0  # Written in place: the snapshot keeps W0.
  model.weights = (np.array(W1, np.float32), np.array(B1, np.float32))
  second = targets_of(next(data))  # Step 2: the target is still W0's.
  np.testing.assert_allclose(second, td1_reference(net(W0, B0)), rtol=1e-5)
  np.testing.assert_allclose(task.value(make_batch()), net(W0, B0),
                             rtol=1e-6)
  third = targets_of(next(data))  # Step 3: synced to W1.
  np.testing.assert_allclose(third, td1_reference(net(W1, B1)), rtol=1e-5)
  np.testing.assert_allclose(task.value(make_batch()), net(W1, B1),
                             rtol=1e-6)


def test_value_syncs_before_its_first_use():
  task = make_task(dense_model(W1, B1))
  np.testing.assert_allclose(task.value(make_batch()), net(W1, B1),
                             rtol=1e-6)


def test_target_model_runs_on_the_trained_weights_not_its_own():
  model = dense_model(W0, B0)
  target_model = dense_model(W1, B1)
  task = make_task(model, target_model=target_model)
  # The copy gets the trained model's weights, not target_model's own.
  np.testing.assert_allclose(task.value(make_batch()), net(W0, B0),
                             rtol=1e-6)
  target_model.weights = (np.zeros((2, 1), np.float32),
                          np.zeros(1, np.float32))
  np.testing.assert_allclose(task.value(make_batch()), net(W0, B0),
                             rtol=1e-6)
  np.testing.assert_array_equal(target_model.weights[0], np.zeros((2, 1)))


def test_an_uninitialized_target_model_runs_on_the_synced_weights():
  # As a Loop's eval model is before any eval; Relu carries a shape check.
  model = tl.Serial(dense_model(W0, B0), tl.Relu())
  target_model = tl.Serial(tl.Dense(1), tl.Relu())
  task = make_task(model, target_model=target_model)
  np.testing.assert_allclose(task.value(make_batch()),
                             np.maximum(net(W0, B0), 0.), rtol=1e-6)
  assert not target_model.sublayers[0].weights  # Its own: still none.


def test_uninitialized_model_fails_clearly_and_syncs_once_initialized():
  model = tl.Dense(1)
  task = make_task(model)
  with pytest.raises(ValueError, match=r'ValueTrainTask: the target network '
                     r'cannot run because the trained model has no weights'):
    task.value(make_batch())
  model.init(shapes.ShapeDtype((1, 2), np.float32))
  model.weights = (np.array(W1, np.float32), np.array(B1, np.float32))
  np.testing.assert_allclose(task.value(make_batch()), net(W1, B1),
                             rtol=1e-6)


def test_head_selector_picks_the_value_head():
  policy_head = tl.Dense(3)
  policy_head.init(shapes.ShapeDtype((1, 2), np.float32))
  model = tl.Branch(policy_head, dense_model(W0, B0))
  task = make_task(model, head_selector=tl.Select([1]))
  np.testing.assert_allclose(task.value(make_batch()), net(W0, B0),
                             rtol=1e-6)
  values = np.ones((2, 3, 1), np.float32)
  _, targets, mask = task.value_batch(make_batch())
  logits = np.zeros((2, 3, 3), np.float32)
  # The loss gets both heads and drops the policy one.
  diff = (values - targets)[..., 0]
  m = mask[..., 0]
  np.testing.assert_allclose(
      float(task.loss_layer((logits, values, targets, mask))),
      np.sum(diff ** 2 * m) / np.sum(m), rtol=1e-5)


def test_value_network_with_a_wide_output_fails_clearly():
  model = tl.Dense(2)
  model.init(shapes.ShapeDtype((1, 2), np.float32))
  task = make_task(model)
  with pytest.raises(ValueError, match=r'ValueTrainTask: the value network '
                     r'gave outputs of shape \(2, 4, 2\)'):
    task.value(make_batch())


def test_eval_task_metric_names_and_values():
  train_task = make_task(dense_model(W0, B0))
  eval_task = value_tasks.ValueEvalTask(train_task, n_eval_batches=3)
  assert eval_task.metric_names == ['value_l2', 'value_l1']
  assert eval_task.n_eval_batches == 3
  assert eval_task.sample_batch is train_task.sample_batch
  values = np.array([[[1.], [2.], [0.]], [[-1.], [0.5], [3.]]], np.float32)
  targets = np.array([[[0.], [4.], [1.]], [[1.], [0.], [0.]]], np.float32)
  weights = np.array([[[1], [1], [0]], [[1], [1], [1]]])
  d, w = (values - targets).astype(np.float64), weights.astype(np.float64)
  l2, l1 = eval_task.metrics
  np.testing.assert_allclose(float(l2((values, targets, weights))),
                             np.sum(d ** 2 * w) / np.sum(w), rtol=1e-6)
  np.testing.assert_allclose(float(l1((values, targets, weights))),
                             np.sum(np.abs(d) * w) / np.sum(w), rtol=1e-6)


# -- End to end: an RLTask stream, trained by Loop ------------------------------
class ThreeStepEnv:
  """Episodes of 3 steps with reward 1 each; the observation is one-hot t.

  With gamma 0.5 the returns are fixed: 1.75, 1.5 and 1 at steps 0, 1, 2.
  """
  observation_space = Box((3,), low=0.0)
  action_space = Discrete(2, first=True)

  def reset(self):
    self.t = 0
    return np.eye(3, dtype=np.float32)[0]

  def step(self, action):
    del action
    self.t += 1
    obs = np.eye(3, dtype=np.float32)[min(self.t, 2)]
    return obs, 1.0, self.t >= 3, {}


@pytest.mark.parametrize('estimator', ['monte_carlo', 'td_k'])
def test_loop_drives_the_value_loss_down(estimator):
  rl_task = task_lib.RLTask(ThreeStepEnv(), initial_trajectories=4, gamma=0.5,
                            max_steps=3)
  stream = rl_task.trajectory_batch_stream(8, max_slice_length=4, margin=1)
  make = getattr(advantages, estimator)
  model = tl.Serial(tl.Dense(1))
  train_task = value_tasks.ValueTrainTask(
      stream, optimizers.Adam(), lr_schedules.constant(0.1),
      make(rl_task.gamma, margin=1), model=model,
      sync_at=lambda step: step % 5 == 0)
  eval_task = value_tasks.ValueEvalTask(train_task)
  loop = training.Loop(model, train_task, eval_tasks=[eval_task],
                       eval_at=lambda _: True, random_seed=0)
  with contextlib.redirect_stdout(io.StringIO()):
    loop.run(150)
  losses = [v for _, v in loop.history.get('train', 'metrics/value_loss')]
  assert len(losses) == 150 and np.all(np.isfinite(losses))
  for name in ('value_l2', 'value_l1'):
    assert len(loop.history.get('eval', 'metrics/' + name)) == 150, name
  assert np.mean(losses[-10:]) < 0.05 * np.mean(losses[:10]), losses
  # The trained network now predicts the fixed returns.
  values = np.asarray(model(np.eye(3, dtype=np.float32)))[:, 0]
  np.testing.assert_allclose(values, [1.75, 1.5, 1.0], atol=0.1)


def test_a_sync_between_evals_copies_the_newest_trained_weights():
  model = tl.Serial(tl.Dense(1))
  train_task = make_task(model, learning_rate=0.1,
                         sync_at=lambda step: step == 3)
  loop = training.Loop(model, train_task, random_seed=0)
  before = train_task.value(make_batch())  # Synced to the initial weights.
  with contextlib.redirect_stdout(io.StringIO()):
    loop.run(3)  # No evals: the model is written only after step 3.
  # Step 3's batch synced to the weights after 2 steps of training.
  assert not np.allclose(train_task.value(make_batch()), before, atol=1e-3)
