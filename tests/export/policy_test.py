"""save_policy: an agent's policy as a SavedModel served without tfnp_trax."""

import numpy as np
import pytest

from tests.export import _isolated
from tfnp_trax import export
from tfnp_trax import shapes
from tfnp_trax.rl import actor_critic
from tfnp_trax.rl import actor_critic_joint
from tfnp_trax.rl import presets
from tfnp_trax.rl import vector_task


def _observations(env, n, seed):
  """`n` observations from a random-action run (float32, as agents see)."""
  task = vector_task.VectorTask(env, n_envs=n, seed=seed)
  space = task.action_space
  def random_policy(obs):
    actions = np.stack([space.sample() for _ in range(len(obs))])
    return actions, np.zeros((len(obs), 1), np.float32)
  batch = task.collect(random_policy, 5)
  return batch.observation[:, -1].astype(np.float32)


def _agent_greedy_and_values(agent, obs):
  # pylint: disable=protected-access
  sampler = agent._sampler(0.0)
  actions, _ = sampler(obs)
  actions = agent.task._env_actions(actions)
  # The agent refreshes its value network's copy at each epoch's start.
  _, _, weights, state, _ = agent.policy_export()['value']
  agent._value_forward.set_weights(weights, state)
  return actions, agent._values(obs).reshape(-1)


def _load_and_call(path, obs, seeds=(3, 3, 4)):
  out = _isolated.run_without_tfnp_trax(f'''
      import numpy as np
      import tensorflow as tf
      loaded = tf.saved_model.load({path!r})
      obs = tf.constant(np.array({obs.tolist()!r}, np.float32))
      sigs = loaded.signatures
      result = {{'greedy': sigs['action'](observations=obs)['actions'],
                 'default': sigs['serving_default'](
                     observations=obs)['actions'],
                 'values': sigs['value'](observations=obs)['values']}}
      for i, seed in enumerate({list(seeds)!r}):
        result[f'sample{{i}}'] = sigs['sample_action'](
            observations=obs, seed=tf.constant(seed))['actions']
      np.savez({path + '/out.npz'!r},
               **{{k: v.numpy() for k, v in result.items()}})
      print(sorted(sigs.keys()))
  ''')
  with np.load(path + '/out.npz') as f:
    return {k: f[k] for k in f.files}, out


def test_ppo_cartpole_policy_round_trip(tmp_path):
  agent = presets.make_agent('ppo', 'CartPole-v1', random_seed=1,
                             n_envs=4)
  agent.run(2)
  path = export.save_policy(agent, str(tmp_path / 'policy'))
  obs = _observations('CartPole-v1', 16, seed=5)
  got, printed = _load_and_call(path, obs)
  assert "'action', 'sample_action', 'serving_default', 'value'" in printed
  greedy, values = _agent_greedy_and_values(agent, obs)
  np.testing.assert_array_equal(got['greedy'], greedy)
  np.testing.assert_array_equal(got['default'], greedy)
  assert got['greedy'].dtype == np.int32 and got['greedy'].shape == (16,)
  np.testing.assert_allclose(got['values'], values, rtol=1e-5, atol=1e-5)
  # Seeded sampling repeats per seed and differs across seeds.
  np.testing.assert_array_equal(got['sample0'], got['sample1'])
  assert set(np.unique(got['sample0'])) <= {0, 1}
  assert not np.array_equal(got['sample0'], got['sample2']) or (
      np.array_equal(got['sample0'], greedy))


def test_sampled_actions_follow_the_policy_distribution(tmp_path):
  """Over many seeds, sampled action frequencies match the softmax."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  agent = presets.make_agent('a2c', 'CartPole-v1', random_seed=0, n_envs=4)
  path = export.save_policy(agent, str(tmp_path / 'policy'))
  loaded = tf.saved_model.load(path)
  obs = _observations('CartPole-v1', 1, seed=2)
  # pylint: disable=protected-access
  logits = np.asarray(agent._sampler(0.0)(obs)[1], np.float64)[0]
  probs = np.exp(logits - logits.max())
  probs /= probs.sum()
  sample = loaded.signatures['sample_action']
  draws = np.array([int(sample(observations=tf.constant(obs),
                               seed=tf.constant(s))['actions'][0])
                    for s in range(400)])
  # Binomial standard error at 400 draws is at most 0.025; allow 4 of them.
  assert abs(np.mean(draws == 1) - probs[1]) < 0.1, (np.mean(draws), probs)


def test_joint_gaussian_policy_is_clipped_and_has_values(tmp_path):
  task = vector_task.VectorTask('Pendulum-v1', n_envs=2, seed=0)
  agent = actor_critic_joint.PPOJoint(task, n_interactions_per_epoch=32,
                                      batch_size=16)
  agent.run(1)
  path = export.save_policy(agent, str(tmp_path / 'joint'))
  obs = _observations('Pendulum-v1', 8, seed=1)
  got, _ = _load_and_call(path, obs, seeds=(1, 1, 2))
  greedy, values = _agent_greedy_and_values(agent, obs)
  np.testing.assert_allclose(got['greedy'], greedy, rtol=1e-6, atol=1e-6)
  assert got['greedy'].shape == (8, 1)
  assert np.all(np.abs(got['sample0']) <= 2.0)
  np.testing.assert_allclose(got['values'], values, rtol=1e-5, atol=1e-5)


def test_wrong_inputs_are_explained(tmp_path):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  with pytest.raises(TypeError, match='save_policy: expected an RL agent'):
    export.save_policy(object(), str(tmp_path / 'x'))
  task = vector_task.VectorTask('CartPole-v1', n_envs=2)
  agent = actor_critic.A2C(task, n_interactions_per_epoch=16,
                           policy_batch_size=8, value_batch_size=8)
  with pytest.raises(ValueError, match='temperature must be > 0'):
    export.save_policy(agent, str(tmp_path / 'x'), temperature=0.0)
  with pytest.raises(TypeError, match='observation_signature must be a '
                     'ShapeDtype'):
    export.save_policy(agent, str(tmp_path / 'x'),
                       observation_signature=(None, 4))
  path = export.save_policy(agent, str(tmp_path / 'p'),
                            observation_signature=shapes.ShapeDtype(
                                (None, 4), np.float32))
  loaded = tf.saved_model.load(path)
  with pytest.raises(Exception, match='observations'):
    loaded.signatures['action'](observations=tf.zeros((3, 5)))


def _chain_task():
  from tests.rl import _envs  # pylint: disable=g-import-not-at-top
  from tfnp_trax.rl import task as task_lib  # pylint: disable=g-import-not-at-top
  return task_lib.RLTask(_envs.Chain(), initial_trajectories=2, max_steps=6)


def test_trajectory_agents_export_one_step_of_their_networks(tmp_path):
  """PolicyGradient and DQN read [batch, time, ...]; a call is one step."""
  import functools  # pylint: disable=g-import-not-at-top
  from tfnp_trax import layers as tl  # pylint: disable=g-import-not-at-top
  from tfnp_trax import models  # pylint: disable=g-import-not-at-top
  from tfnp_trax.rl import training  # pylint: disable=g-import-not-at-top
  obs = np.eye(4, dtype=np.float32)
  model_fn = functools.partial(
      models.Policy, body=lambda mode: tl.Serial(tl.Dense(8), tl.Relu()))
  pg = training.PolicyGradient(_chain_task(), model_fn=model_fn,
                               batch_size=2, n_trajectories_per_epoch=1)
  pg.run(1)
  path = export.save_policy(pg, str(tmp_path / 'pg'))
  got, printed = _load_and_call_without_value(path, obs)
  assert "'action', 'sample_action', 'serving_default'" in printed
  expected = [int(pg.policy(_one_step(o), temperature=0.0)[0]) for o in obs]
  np.testing.assert_array_equal(got['greedy'], expected)

  dqn = training.DQN(_chain_task(), value_body=lambda mode: tl.Dense(8),
                     value_batch_size=4, value_train_steps_per_epoch=2,
                     n_trajectories_per_epoch=1)
  dqn.run(1)
  path = export.save_policy(dqn, str(tmp_path / 'dqn'))
  got, _ = _load_and_call(path, obs)
  q = np.stack([np.asarray(dqn.policy(_one_step(o), temperature=0.0)[1])
                for o in obs])
  np.testing.assert_array_equal(got['greedy'], q.argmax(axis=-1))
  np.testing.assert_allclose(got['values'], q.max(axis=-1), rtol=1e-5,
                             atol=1e-5)


def _one_step(observation):
  from tfnp_trax.rl import task as task_lib  # pylint: disable=g-import-not-at-top
  return task_lib.Trajectory(observation)


def _load_and_call_without_value(path, obs):
  out = _isolated.run_without_tfnp_trax(f'''
      import numpy as np
      import tensorflow as tf
      sigs = tf.saved_model.load({path!r}).signatures
      obs = tf.constant(np.array({obs.tolist()!r}, np.float32))
      np.savez({path + '/out.npz'!r},
               greedy=sigs['action'](observations=obs)['actions'].numpy())
      print(sorted(sigs.keys()))
  ''')
  with np.load(path + '/out.npz') as f:
    return {k: f[k] for k in f.files}, out
