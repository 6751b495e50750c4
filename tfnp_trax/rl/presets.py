"""Tuned agent settings for the classic-control tasks, by algorithm and env.

`make_agent('ppo', 'CartPole-v1')` builds an agent with settings that solve
the task on a laptop CPU; the `tfnp-trax rl` command and the benchmarks use
them. Any setting can be overridden by keyword.
"""

import functools

from tfnp_trax import optimizers
from tfnp_trax.rl import actor_critic
from tfnp_trax.rl import actor_critic_joint
from tfnp_trax.rl import advantages
from tfnp_trax.rl import distributions
from tfnp_trax.rl import vector_task as task_lib

__all__ = ['ALGOS', 'ENVS', 'make_agent', 'default_env_steps']

ALGOS = ('ppo', 'a2c', 'awr')
ENVS = ('CartPole-v1', 'Pendulum-v1')

# Task settings and default training length (env steps) per env.
_TASKS = {
    'CartPole-v1': {'gamma': 0.98, 'lambda_': 0.8, 'steps': 200_000},
    'Pendulum-v1': {'gamma': 0.9, 'lambda_': 0.95, 'steps': 100_000},
}
_SEPARATE = {'ppo': actor_critic.PPO, 'a2c': actor_critic.A2C,
             'awr': actor_critic.AWR}
_JOINT = {'ppo': actor_critic_joint.PPOJoint,
          'a2c': actor_critic_joint.A2CJoint,
          'awr': actor_critic_joint.AWRJoint}


def _adam(learning_rate):
  return optimizers.Adam(learning_rate, weight_decay_rate=0.0,
                         clip_grad_norm=0.5)


def _algo_settings(algo, env, joint):
  """Hyperparameters of one (algorithm, env) pair."""
  lr = 1e-3 if env == 'Pendulum-v1' or algo == 'a2c' else 3e-4
  # PPO and AWR take many minibatch steps per epoch; A2C takes one policy
  # step on the whole epoch, as in the original algorithm.
  steps = 1 if algo == 'a2c' else 20
  settings = {'n_interactions_per_epoch': 256}
  if algo == 'ppo':
    settings['entropy_coeff'] = 0.0
  if algo == 'awr':
    settings['n_replay_epochs'] = 4
  if joint:
    settings.update(batch_size=256, train_steps_per_epoch=max(steps, 5),
                    optimizer=_adam(lr))
    if algo in ('ppo', 'a2c'):
      settings['value_loss_coeff'] = 0.5
  else:
    settings.update(policy_batch_size=256, value_batch_size=256,
                    policy_train_steps_per_epoch=steps,
                    value_train_steps_per_epoch=max(steps, 5),
                    policy_optimizer=_adam(lr), value_optimizer=_adam(lr))
  if env == 'Pendulum-v1':
    settings['policy_distribution'] = distributions.Gaussian(
        (1,), std=1.0, learn_std='shared')
    settings['n_interactions_per_epoch'] = 512
    if not joint:
      # Pendulum's returns reach -1000s: predicting value * (1 - gamma)
      # keeps the value network's outputs near unit scale.
      settings['scale_value_targets'] = True
      settings.update(policy_batch_size=128, value_batch_size=128,
                      policy_train_steps_per_epoch=2 * steps,
                      value_train_steps_per_epoch=2 * max(steps, 5))
  return settings


def default_env_steps(env):
  """How many env steps `tfnp-trax rl` trains for by default."""
  return _TASKS[env]['steps']


def make_agent(algo, env, joint=False, n_envs=8, random_seed=0, **overrides):
  """An agent for `algo` ('ppo', 'a2c', 'awr') on `env` ('CartPole-v1',
  'Pendulum-v1'), with a task of `n_envs` copies; `overrides` replace any
  agent argument (e.g. `output_dir`, `strategy`)."""
  if algo not in ALGOS:
    raise ValueError(f'make_agent: algo must be one of {ALGOS}, got '
                     f'{algo!r}.')
  if env not in _TASKS:
    raise ValueError(f'make_agent: env must be one of {ENVS}, got {env!r}.')
  spec = _TASKS[env]
  task = task_lib.VectorTask(env, gamma=spec['gamma'], n_envs=n_envs,
                             seed=random_seed)
  settings = _algo_settings(algo, env, joint)
  settings['advantage_estimator'] = functools.partial(
      advantages.gae, lambda_=spec['lambda_'])
  settings['random_seed'] = random_seed
  settings.update(overrides)
  agent_class = (_JOINT if joint else _SEPARATE)[algo]
  return agent_class(task, **settings)
