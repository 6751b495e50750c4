"""Trax's Loop-based actor-critic agents: every, LoopActorCriticAgent, LoopAWR."""

import functools
import os

import numpy as np
import pytest

from tests.rl._envs import Box
from tests.rl._envs import Chain
from tests.rl._envs import Discrete
from tfnp_trax import layers as tl
from tfnp_trax import models
from tfnp_trax.layers import weight_files
from tfnp_trax.rl import actor_critic
from tfnp_trax.rl import task as task_lib
from tfnp_trax.supervised import lr_schedules
from tfnp_trax.supervised import training as supervised_training


class Bandit:
  """One-step episodes: action 1 pays 1, action 0 pays 0."""
  observation_space = Box((2,))
  action_space = Discrete(2)

  def reset(self):
    return np.ones(2, np.float32)

  def step(self, action):
    return np.ones(2, np.float32), float(int(action) == 1), True, {}


def model_fn(policy_distribution, mode='train'):
  # A small policy head starts the policy near uniform.
  return models.PolicyAndValue(
      policy_distribution,
      body=lambda mode: tl.Serial(tl.Dense(8), tl.Relu()),
      policy_top=functools.partial(models.Policy, head_init_range=0.01),
      mode=mode)


def constant(value):
  return functools.partial(lr_schedules.constant, value)


@pytest.fixture(name='seeded_loop')
def _seeded_loop(monkeypatch):
  """Makes the Loops built in a test start from a given seed.

  The agents, as in Trax, leave the Loop's `random_seed` to its default,
  a fresh one per run; the weights' initialization and the Gumbel noise of
  collection then come from it.
  """
  original = supervised_training._init_random_number_generators  # pylint: disable=protected-access

  def seed(value):
    monkeypatch.setattr(supervised_training, '_init_random_number_generators',
                        lambda seed=None: original(value))
  return seed


def test_every_by_hand():
  at = actor_critic.every(4)
  assert [step for step in range(13) if at(step)] == [0, 4, 8, 12]
  assert actor_critic.every(1)(7)
  with pytest.raises(ValueError, match='every: n_steps must be positive'):
    actor_critic.every(0)


def test_base_class_needs_on_policy_and_one_replay_epoch_if_on_policy():
  task = task_lib.RLTask(Chain(), initial_trajectories=1, max_steps=4)
  kwargs = dict(n_trajectories_per_epoch=1, batch_size=2)
  with pytest.raises(TypeError, match='set the class attribute on_policy'):
    actor_critic.LoopActorCriticAgent(task, model_fn, **kwargs)

  class OnPolicy(actor_critic.LoopActorCriticAgent):
    on_policy = True

  with pytest.raises(ValueError, match='OnPolicy is on-policy: '
                     'n_replay_epochs must be 1, got 2'):
    OnPolicy(task, model_fn, n_replay_epochs=2, **kwargs)
  with pytest.raises(ValueError, match='value_n_steps_per_epoch must be at '
                     'least 1'):
    OnPolicy(task, model_fn, value_n_steps_per_epoch=0, **kwargs)


def test_loop_awr_runs_saves_and_resumes(tmp_path):
  out = str(tmp_path)
  task = task_lib.RLTask(Chain(), initial_trajectories=2, max_steps=6)
  make = functools.partial(
      actor_critic.LoopAWR, task, model_fn, batch_size=2,
      policy_n_steps_per_epoch=2, value_n_steps_per_epoch=3,
      network_eval_at=lambda step: True, n_trajectories_per_epoch=1,
      n_eval_episodes=1, max_slice_length=2, margin=1, output_dir=out)
  agent = make()
  agent.run(2)
  # Each epoch is value_n + policy_n Loop steps.
  assert agent.current_epoch == 2 and agent.loop.step == 2 * (2 + 3)
  # Trax's accounting: 1-based step s trains the value head when
  # s % 5 < 3, so an epoch's first two steps and its last are the value's.
  history = agent.loop.history
  value_steps = [s for s, _ in history.get('train', 'metrics/value_loss')]
  policy_steps = [s for s, _ in history.get('train', 'metrics/policy_loss')]
  assert value_steps == [1, 2, 5, 6, 7, 10]
  assert policy_steps == [3, 4, 8, 9]
  assert {'rl.pkl', 'trajectories.pkl', 'config.gin', 'model'} <= set(
      os.listdir(out))
  assert weight_files.unpickle_from_file(
      os.path.join(out, 'rl.pkl'))['epoch'] == 2
  resumed = make()
  assert resumed.current_epoch == 2 and resumed.loop.step == 10
  resumed.run(1)
  assert resumed.current_epoch == 3 and resumed.loop.step == 15
  # An rl.pkl out of step with the model's checkpoint is refused.
  weight_files.pickle_to_file(
      {'epoch': 1, 'avg_returns': [0.0],
       'avg_returns_temperature_0.0': {6: [0.0]}},
      os.path.join(out, 'rl.pkl'))
  with pytest.raises(ValueError, match='number of Loop steps must equal'):
    make()


def test_policy_samples_from_the_policy_head():
  task = task_lib.RLTask(Chain(), initial_trajectories=1, max_steps=6)
  agent = actor_critic.LoopAWR(task, model_fn, batch_size=2,
                               n_trajectories_per_epoch=1)
  trajectory = task.play(lambda _: (0, None))
  action, logits = agent.policy(trajectory, temperature=0.0)
  assert logits.shape == (2,)
  assert int(action) == int(np.argmax(logits))


def test_saved_policy_gives_the_greedy_actions_and_values(tmp_path):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from tfnp_trax import export  # pylint: disable=g-import-not-at-top
  task = task_lib.RLTask(Chain(), initial_trajectories=1, max_steps=6,
                         gamma=0.9)
  agent = actor_critic.LoopAWR(task, model_fn, batch_size=2,
                               n_trajectories_per_epoch=1)
  agent.run(1)
  loaded = tf.saved_model.load(export.save_policy(agent, str(tmp_path)))
  obs = np.eye(4, dtype=np.float32)
  actions = loaded.signatures['action'](observations=obs)['actions']
  expected = [int(agent.policy(task_lib.Trajectory(o), temperature=0.0)[0])
              for o in obs]
  np.testing.assert_array_equal(actions.numpy(), expected)
  # The value head predicts values times 1 - gamma (the value task's
  # target scale); the signature gives the values themselves.
  head = np.asarray(agent.loop.eval_model(obs[:, None])[1])[:, 0, 0]
  values = loaded.signatures['value'](observations=obs)['values'].numpy()
  np.testing.assert_allclose(values, head / (1 - 0.9), rtol=1e-5, atol=1e-5)


def _reference_awr_weights(advantages, mask, beta, w_max):
  """What LoopAWR trains with: normalize, exp(a / beta), clip, mask."""
  a = (advantages - advantages.mean()) / (advantages.std() + 1e-5)
  weights = np.minimum(np.exp(a / beta), w_max)
  return weights * mask / mask.sum()


def test_loop_awr_weights_match_a_numpy_reference():
  task = task_lib.RLTask(Chain(), initial_trajectories=1, max_steps=6)
  beta, w_max = 0.5, 2.5
  agent = actor_critic.LoopAWR(task, model_fn, beta=beta, w_max=w_max,
                               batch_size=2, max_slice_length=3,
                               n_trajectories_per_epoch=1)
  # Two slices of three steps, no episode end, the last step of the second
  # padding.
  returns = np.array([[0.5, 2.0, 0.0], [1.0, -1.0, 3.0]])
  mask = np.array([[1, 1, 1], [1, 1, 0]], np.float32)
  batch = task_lib.TimeStepBatch(
      observation=np.random.uniform(size=(2, 3, 4)).astype(np.float32),
      action=np.array([[0, 1, 1], [1, 0, 0]]),
      reward=np.zeros((2, 3)), done=np.zeros((2, 3), bool), mask=mask,
      dist_inputs=None, return_=returns,
      env_info=task_lib.EnvInfo(np.ones((2, 3)), np.ones((2, 3))))
  policy_task = agent._policy_train_task  # pylint: disable=protected-access
  value_task = agent._value_train_task  # pylint: disable=protected-access
  # Monte-Carlo advantages (the default estimator) against the critic.
  advantages = returns - np.asarray(value_task.value(batch))
  expected = _reference_awr_weights(advantages, mask, beta, w_max)
  assert (expected * mask.sum() == w_max).any()  # The clip is exercised.
  observations, actions, weights = policy_task.policy_batch(batch)
  np.testing.assert_allclose(weights, expected, rtol=1e-5, atol=1e-6)
  np.testing.assert_array_equal(actions, batch.action)
  assert observations.shape == (2, 3, 4)


def _p_action_1(agent, task):
  _, logits = agent.policy(task.play(lambda _: (0, None)), temperature=0.0)
  e = np.exp(logits - logits.max())
  return float(e[1] / e.sum())


def test_loop_awr_learns_a_bandit(seeded_loop):
  # P(action 1) before and after 3 epochs of 10 Loop steps, over seeds
  # 0..9: 0.494-0.509 before, 0.742-0.965 after (0.951 for seed 0).
  np.random.seed(0)
  seeded_loop(0)
  task = task_lib.RLTask(Bandit(), initial_trajectories=8, max_steps=1)
  agent = actor_critic.LoopAWR(
      task, model_fn, batch_size=8, policy_n_steps_per_epoch=8,
      value_n_steps_per_epoch=2, policy_lr_schedule=constant(1e-2),
      value_lr_schedule=constant(1e-2), n_trajectories_per_epoch=8,
      network_eval_at=lambda step: False)
  before = _p_action_1(agent, task)
  agent.run(3)
  after = _p_action_1(agent, task)
  assert before < 0.55 and after > 0.7, (before, after)
