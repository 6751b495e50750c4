"""PolicyTrainTask and PolicyEvalTask: advantage-weighted policy batches."""

import contextlib
import io
import itertools
import math

import numpy as np
import pytest

from tfnp_trax import layers as tl
from tfnp_trax import optimizers
from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.rl import advantages
from tfnp_trax.rl import distributions
from tfnp_trax.rl import policy_tasks
from tfnp_trax.rl import task as task_lib
from tfnp_trax.supervised import lr_schedules
from tfnp_trax.supervised import training

GAMMA = 0.5
EPSILON = 1e-5

# A batch of two slices of length 4, written out by hand (gamma 0.5).
# Slice 0: rewards 1, 2, 3 then the episode ends (done at step 2) and step 3
# is padding; G_2 = 3, G_1 = 2 + 3 / 2 = 3.5, G_0 = 1 + 3.5 / 2 = 2.75.
# Slice 1: rewards 0, 1, then done at step 1; steps 2 and 3 are padding;
# G_1 = 1, G_0 = 0 + 1 / 2 = 0.5.
REWARDS = [[1., 2., 3., 0.], [0., 1., 0., 0.]]
RETURNS = [[2.75, 3.5, 3., 0.], [0.5, 1., 0., 0.]]
DONES = [[False, False, True, True], [False, True, True, True]]
MASK = [[1, 1, 1, 0], [1, 1, 0, 0]]
CONTROL_MASK = [[1, 0, 1, 1], [1, 1, 1, 1]]
VALUES = [[0.5, 1., 1., 0.], [0.25, 0.5, 1., 2.]]
# Monte-Carlo advantages with margin 1 (3 columns): return - value, and at
# a done step the reward (the value counts as 0 there).
# Slice 0: 2.75 - 0.5, 3.5 - 1, done: 3.  Slice 1: 0.5 - 0.25, done: 1,
# done: 0.
MC_ADVANTAGES = [[2.25, 2.5, 3.], [0.25, 1., 0.]]


def make_batch():
  """A fresh copy of the hand-written batch (estimators may write to it)."""
  observation = np.array([[[t, b] for t in range(4)] for b in range(2)],
                         np.float32)
  return task_lib.TimeStepBatch(
      observation=observation,
      action=np.array([[0, 1, 1, 0], [1, 0, 0, 0]]),
      reward=np.array(REWARDS), done=np.array(DONES), mask=np.array(MASK),
      dist_inputs=None,
      env_info=task_lib.EnvInfo(control_mask=np.array(CONTROL_MASK),
                                discount_mask=np.ones((2, 4), np.int64)),
      return_=np.array(RETURNS))


def fixed_values(batch):
  del batch
  return np.array(VALUES)


def batches():
  return (make_batch() for _ in itertools.count())


def make_train_task(**kwargs):
  args = dict(optimizer=optimizers.Adam(), lr_schedule=lr_schedules.constant(
      1e-3), policy_distribution=distributions.Categorical(2),
              advantage_estimator=advantages.monte_carlo(GAMMA, margin=1),
              value_fn=fixed_values)
  args.update(kwargs)
  stream = args.pop('stream', None) or batches()
  return policy_tasks.PolicyTrainTask(stream, **args)


def reference_weights(advantages_, weight_fn=lambda x: x, normalize=True):
  """float64: weight_fn(normalized advantages) * m / sum(m), m = mask * control.
  """
  a = np.array(advantages_, np.float64)
  if normalize:
    a = (a - a.mean()) / (a.std() + EPSILON)
  m = (np.array(MASK, np.float64) * np.array(CONTROL_MASK))[:, :3]
  return weight_fn(a) * m / m.sum()


def log_softmax(logits):
  shifted = logits - logits.max(-1, keepdims=True)
  return shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))


def test_policy_batch_trims_by_the_margin_and_weights_as_the_reference():
  batch = make_batch()
  task = make_train_task()
  observations, actions, weights = task.policy_batch(batch)
  np.testing.assert_array_equal(observations, make_batch().observation[:, :3])
  np.testing.assert_array_equal(actions, make_batch().action[:, :3])
  assert weights.shape == (2, 3) and weights.dtype == np.float32
  np.testing.assert_allclose(weights, reference_weights(MC_ADVANTAGES),
                             rtol=1e-5, atol=1e-6)
  # Masked: step (0, 1) by the control mask, step (1, 2) by padding.
  assert weights[0, 1] == 0.0 and weights[1, 2] == 0.0
  # The caller's batch keeps its own mask.
  np.testing.assert_array_equal(batch.mask, MASK)


def test_calculate_advantages_passes_the_value_fn_baseline():
  seen = []

  def value_fn(batch):
    seen.append(batch)
    return np.array(VALUES)
  task = make_train_task(value_fn=value_fn)
  batch = make_batch()
  np.testing.assert_allclose(task.calculate_advantages(batch), MC_ADVANTAGES)
  assert seen[-1] is batch


@pytest.mark.parametrize('normalize', [True, False])
def test_awr_style_exponential_weights(normalize):
  task = make_train_task(weight_fn=jnp.exp, advantage_normalization=normalize)
  _, _, weights = task.policy_batch(make_batch())
  np.testing.assert_allclose(
      weights, reference_weights(MC_ADVANTAGES, np.exp, normalize),
      rtol=1e-5, atol=1e-6)


def test_behavioral_cloning_weights_are_the_normalized_mask():
  task = make_train_task(weight_fn=jnp.ones_like,
                         advantage_normalization=False)
  _, _, weights = task.policy_batch(make_batch())
  # Both masks leave 4 steps.
  np.testing.assert_allclose(weights, [[.25, 0., .25], [.25, .25, 0.]],
                             rtol=1e-6)


def test_normalization_epsilon_is_added_to_the_std():
  # Equal advantages: std 0, so the normalized advantages are 0 / epsilon.
  task = make_train_task(advantage_normalization_epsilon=0.5)
  same = np.full((2, 3), 7.0)
  np.testing.assert_allclose(task.calculate_weights(same), np.zeros((2, 3)))
  a = np.array([[1., 3.]])
  # mean 2, std 1: (a - 2) / 1.5.
  np.testing.assert_allclose(task.calculate_weights(a),
                             [[-1 / 1.5, 1 / 1.5]], rtol=1e-6)


def test_sample_batch_is_shape_only_and_does_not_call_value_fn():
  def value_fn(batch):
    raise AssertionError('value_fn must not run for the sample batch')
  task = make_train_task(value_fn=value_fn)
  observations, actions, weights = task.sample_batch
  assert observations.shape == (2, 3, 2) and actions.shape == (2, 3)
  # A zero baseline: the advantages are the (done-corrected) returns.
  zero_baseline = [[2.75, 3.5, 3.], [0.5, 1., 0.]]
  np.testing.assert_allclose(weights, reference_weights(zero_baseline),
                             rtol=1e-5, atol=1e-6)
  assert task.loss_name == 'policy_loss'


def test_a_larger_margin_trims_more():
  task = make_train_task(
      advantage_estimator=advantages.monte_carlo(GAMMA, margin=2),
      advantage_normalization=False)
  observations, actions, weights = task.policy_batch(make_batch())
  assert observations.shape == (2, 2, 2) and actions.shape == (2, 2)
  # The control mask zeroes step (0, 1), which leaves 3 steps.
  np.testing.assert_allclose(weights, [[2.25 / 3, 0.], [0.25 / 3, 1. / 3]],
                             rtol=1e-6)


def test_loss_layer_is_the_weighted_log_loss_after_the_head_selector():
  logits = np.array([[[0.5, -1.], [2., 0.]], [[0., 0.], [-1., 3.]]],
                    np.float32)
  actions = np.array([[1, 0], [0, 1]])
  weights = np.array([[0.5, 0.25], [1., 2.]], np.float32)
  log_probs = np.take_along_axis(log_softmax(logits.astype(np.float64)),
                                 actions[..., None], -1)[..., 0]
  expected = -np.sum(weights * log_probs)
  plain = make_train_task().loss_layer
  np.testing.assert_allclose(float(plain((logits, actions, weights))),
                             expected, rtol=1e-5)
  # A policy-and-value network: the selector drops the value head.
  task = make_train_task(head_selector=tl.Select([0], n_in=2))
  values = np.zeros((2, 2, 1), np.float32)
  np.testing.assert_allclose(
      float(task.loss_layer((logits, values, actions, weights))), expected,
      rtol=1e-5)


def test_wrong_value_fn_shape_names_the_task_and_both_shapes():
  task = make_train_task(value_fn=lambda batch: np.zeros((2, 3)))
  with pytest.raises(ValueError, match=r'PolicyTrainTask: value_fn\(trajectory'
                     r'_batch\) has shape \(2, 3\), expected \(2, 4\)'):
    task.policy_batch(make_batch())


def test_mismatched_actions_name_the_task():
  task = make_train_task()
  batch = make_batch()._replace(action=np.zeros((2, 5), np.int64))
  with pytest.raises(ValueError, match=r'PolicyTrainTask: trajectory_batch.'
                     r'action has shape \(2, 5\), expected \(2, 4\)'):
    task.policy_batch(batch)


def test_eval_task_metric_names_and_batches():
  eval_task = policy_tasks.PolicyEvalTask(make_train_task(), n_eval_batches=2)
  assert eval_task.metric_names == [
      'policy_entropy', 'advantage_mean', 'advantage_std', 'weight_mean',
      'weight_std', 'weight_min', 'weight_max']
  assert eval_task.n_eval_batches == 2
  observations, actions, advs, mask = next(iter(eval_task.labeled_data))
  assert observations.shape == (2, 3, 2) and actions.shape == (2, 3)
  np.testing.assert_allclose(advs, MC_ADVANTAGES)
  np.testing.assert_array_equal(mask, [[1, 0, 1], [1, 1, 0]])


def test_eval_metrics_match_numpy_through_the_loop():
  train_task = make_train_task()
  eval_task = policy_tasks.PolicyEvalTask(train_task)
  model = tl.Serial(tl.Dense(2))
  loop = training.Loop(model, train_task, eval_tasks=[eval_task],
                       random_seed=0)
  w = np.array([[0.5, -1.], [2., 0.25]], np.float32)
  b = np.array([0.1, -0.3], np.float32)
  loop.update_weights_and_state(weights=((w, b),))
  with contextlib.redirect_stdout(io.StringIO()):
    values = loop.run_evals()
  logits = make_batch().observation[:, :3].astype(np.float64) @ w + b
  log_p = log_softmax(logits)
  entropy = np.mean(-np.sum(np.exp(log_p) * log_p, axis=-1))
  a = np.array(MC_ADVANTAGES)
  weights = (a - a.mean()) / (a.std() + EPSILON)  # Unmasked, as Trax's.
  expected = {'policy_entropy': entropy, 'advantage_mean': a.mean(),
              'advantage_std': a.std(), 'weight_mean': weights.mean(),
              'weight_std': weights.std(), 'weight_min': weights.min(),
              'weight_max': weights.max()}
  assert set(values) == set(expected)
  for name, value in expected.items():
    np.testing.assert_allclose(values[name], value, rtol=1e-4, atol=1e-5,
                               err_msg=name)


# -- End to end: an RLTask stream, trained by Loop ------------------------------
class Discrete:

  def __init__(self, n):
    self.n, self.shape = n, ()

  def sample(self):
    return int(np.random.randint(self.n))


class Box:

  def __init__(self, shape):
    self.shape, self.low, self.high = shape, 0.0, 1.0
    self.dtype = np.float32


class TwoArmedBandit:
  """One-step episodes from a constant observation; reward = the action."""
  observation_space = Box((1,))
  action_space = Discrete(2)

  def reset(self):
    return np.ones(1, np.float32)

  def step(self, action):
    return np.ones(1, np.float32), float(action), True, {}


def mean_return_baseline(batch):
  return np.broadcast_to(np.mean(batch.return_), batch.return_.shape)


def test_loop_trains_a_policy_towards_the_better_arm():
  np.random.seed(0)
  rl_task = task_lib.RLTask(TwoArmedBandit(), initial_trajectories=32,
                            gamma=0.9, max_steps=1)
  stream = rl_task.trajectory_batch_stream(16, max_slice_length=2, margin=1)
  train_task = policy_tasks.PolicyTrainTask(
      stream, optimizers.Adam(), lr_schedules.constant(0.05),
      distributions.create_distribution(rl_task.action_space),
      advantages.monte_carlo(rl_task.gamma, margin=1),
      value_fn=mean_return_baseline)
  eval_task = policy_tasks.PolicyEvalTask(train_task)
  model = tl.Serial(tl.Dense(2))
  loop = training.Loop(model, train_task, eval_tasks=[eval_task],
                       eval_at=lambda step: step in (1, 30), random_seed=0)
  with contextlib.redirect_stdout(io.StringIO()):
    loop.run(30)
  losses = [v for _, v in loop.history.get('train', 'metrics/policy_loss')]
  assert len(losses) == 2 and all(math.isfinite(v) for v in losses)
  for name in eval_task.metric_names:
    logged = loop.history.get('eval', 'metrics/' + name)
    assert [step for step, _ in logged] == [1, 30], name
  # The better arm's advantage is positive, so its probability grows
  # (from about 1/2) and the entropy falls below its start.
  p = np.exp(log_softmax(np.asarray(model(np.ones((1, 1), np.float32)),
                                    np.float64)))[0]
  assert p[1] > 0.9, p
  entropy = [v for _, v in loop.history.get('eval', 'metrics/policy_entropy')]
  assert entropy[1] < entropy[0] - 0.2, entropy


def test_an_estimator_of_the_wrong_shape_fails_at_construction():
  # The sample batch, made in the constructor, already runs the estimator.
  with pytest.raises(ValueError, match=r'PolicyTrainTask: advantage_estimator '
                     r'returned shape \(2, 5\), expected \(batch_size, '
                     r'seq_len - margin\) with batch_size 2 and seq_len 4'):
    make_train_task(advantage_estimator=lambda **kwargs: np.zeros((2, 5)))
