"""VectorTask collection and evaluation on real gymnasium environments."""

import numpy as np
import pytest

from tfnp_trax.rl import vector_task as task_lib


def always(action, n_inputs=2):
  def policy(obs):
    n = obs.shape[0]
    return np.full((n,), action, np.int32), np.zeros((n, n_inputs),
                                                      np.float32)
  return policy


def test_collect_shapes_and_episode_boundaries():
  task = task_lib.VectorTask('CartPole-v1', n_envs=3, seed=0)
  batch = task.collect(always(0), n_steps=25)
  assert batch.observation.shape == (3, 26, 4)
  assert batch.action.shape == batch.reward.shape == batch.done.shape == (3,
                                                                          25)
  assert batch.dist_inputs.shape == (3, 25, 2)
  assert batch.final_observation.shape == (3, 25, 4)
  assert task.env_steps == 75
  done = batch.done.astype(bool)
  # Pushing left always falls within 25 steps; episodes end mid-batch.
  assert done.any() and not done.all()
  # Without a reset, the next observation is the one the step produced.
  np.testing.assert_array_equal(batch.observation[:, 1:][~done],
                                batch.final_observation[~done])
  assert not np.allclose(batch.observation[:, 1:][done],
                         batch.final_observation[done])
  # CartPole pays 1 per step, so each return is its episode's length.
  assert task.episode_returns == [float(n) for n in task.episode_lengths]
  assert len(task.episode_returns) == done.sum()
  assert batch.truncated.sum() == 0


def test_time_limit_marks_truncation():
  task = task_lib.VectorTask('CartPole-v1', n_envs=2, max_steps=4, seed=1)
  batch = task.collect(always(1), n_steps=8)
  np.testing.assert_array_equal(batch.done[:, [3, 7]], 1.0)
  np.testing.assert_array_equal(batch.truncated, batch.done)


def test_box_actions_are_clipped_for_the_env_only():
  task = task_lib.VectorTask('Pendulum-v1', n_envs=2, seed=0)
  policy = lambda obs: (np.full((2, 1), 10.0, np.float32),
                        np.zeros((2, 1), np.float32))
  batch = task.collect(policy, n_steps=3)
  np.testing.assert_array_equal(batch.action, 10.0)
  # The torque penalty is 0.001 * u^2 with u clipped to 2: rewards stay in
  # Pendulum's range [-16.27, 0].
  assert batch.reward.min() >= -16.3


def test_evaluate_runs_each_episode_once():
  task = task_lib.VectorTask('CartPole-v1', n_envs=2)
  returns = task.evaluate(always(0), n_episodes=5)
  assert len(returns) == 5 and all(5 <= r <= 20 for r in returns)


def test_bad_n_envs():
  with pytest.raises(ValueError, match='VectorTask: n_envs must be >= 1, got 0'):
    task_lib.VectorTask('CartPole-v1', n_envs=0)
