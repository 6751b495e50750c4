"""VectorTask: a batch of environments collected in lock-step.

`task.RLTask` keeps Trax's design: one environment, episodes played one at a
time, each stored as a `Trajectory`. The agents of `actor_critic` and
`actor_critic_joint` collect through a `VectorTask` instead: `n_envs` copies
of the environment step together, so the policy sees a fixed-size batch of
observations at every step (one compiled trace for the whole run) and each
call to `collect` returns a fixed-shape `TrajectoryBatch`. `from_task` builds
one from an `RLTask`, so those agents take either.
"""

import collections

import numpy as onp

from tfnp_trax.rl import _spaces
from tfnp_trax.rl import _vector_env

__all__ = ['VectorTask', 'TrajectoryBatch', 'from_task']


class TrajectoryBatch(collections.namedtuple('TrajectoryBatch', [
    'observation', 'action', 'dist_inputs', 'reward', 'done', 'truncated',
    'final_observation', 'mask'])):
  """`n_steps` steps of `n_envs` environments.

  Fields (leading axes [n_envs, n_steps]): `observation` has one extra step,
  the observation after the last action; `action`, `dist_inputs` (the
  policy's outputs), `reward`, `done` (the episode ended with this action),
  `truncated` (it ended on a time limit, not a terminal state),
  `final_observation` (the observation each action led to, before any
  reset) and `mask` (1 for real steps).
  """

  @property
  def n_steps(self):
    return self.reward.shape[1]


class VectorTask:
  """A gymnasium environment with a discount, collected in batches.

  Example:
    >>> task = VectorTask('CartPole-v1', gamma=0.99, n_envs=4)
    >>> batch = task.collect(random_policy, n_steps=16)  # doctest: +SKIP

  Args:
    env: a gymnasium env id or a function returning a new env.
    gamma: the discount factor.
    n_envs: how many environment copies collect in lock-step.
    max_steps: optional time limit per episode.
    seed: seed of the first reset; copy `i` uses `seed + i`.
  """

  def __init__(self, env='CartPole-v1', gamma=0.99, n_envs=8, max_steps=None,
               seed=0):
    if n_envs < 1:
      raise ValueError(f'VectorTask: n_envs must be >= 1, got {n_envs}.')
    self._env_spec = env
    self._max_steps = max_steps
    self._gamma = float(gamma)
    self._seed = int(seed)
    self._envs = _vector_env.VectorEnv(env, n_envs, seed, max_steps)
    self._running_return = onp.zeros(n_envs)
    self._running_length = onp.zeros(n_envs, dtype=onp.int64)
    self.episode_returns = []
    self.episode_lengths = []
    self.env_steps = 0

  @property
  def env_name(self):
    return self._env_spec if isinstance(self._env_spec, str) else getattr(
        self._envs.envs[0].spec, 'id', type(self._envs.envs[0]).__name__)

  @property
  def gamma(self):
    return self._gamma

  @property
  def n_envs(self):
    return self._envs.n_envs

  @property
  def action_space(self):
    return self._envs.action_space

  @property
  def observation_space(self):
    return self._envs.observation_space

  def reseed(self, seed):
    """Restarts all episodes from `seed` (e.g. after resuming a run)."""
    self._envs.reset(seed)
    self._running_return[:] = 0.0
    self._running_length[:] = 0

  def _env_actions(self, actions):
    space = self.action_space
    if _spaces.kind(space) == _spaces.BOX:
      # Gaussian samples can leave the box; the env sees them clipped, the
      # learner keeps the sampled value so its log-probability is right.
      return onp.clip(actions, space.low, space.high)
    return actions

  def collect(self, policy, n_steps):
    """Runs `policy` for `n_steps` steps in every environment copy.

    Args:
      policy: function `observations [n_envs, ...] -> (actions,
        dist_inputs)`, both NumPy arrays with leading axis n_envs.
      n_steps: steps per copy.

    Returns:
      A TrajectoryBatch with leading axes [n_envs, n_steps].
    """
    obs = [self._envs.observations]
    acts, dists, rews, dones, truncs, finals = [], [], [], [], [], []
    for _ in range(n_steps):
      action, dist_inputs = policy(obs[-1])
      action, dist_inputs = onp.asarray(action), onp.asarray(dist_inputs)
      next_obs, reward, term, trunc, final = self._envs.step(
          self._env_actions(action))
      done = term | trunc
      self._track(reward, done)
      obs.append(next_obs)
      acts.append(action)
      dists.append(dist_inputs)
      rews.append(reward)
      dones.append(done)
      truncs.append(trunc & ~term)
      finals.append(final)
    self.env_steps += n_steps * self.n_envs
    stack = lambda xs: onp.stack(xs, axis=1)  # [n_envs, n_steps, ...]
    return TrajectoryBatch(
        observation=stack(obs).astype(onp.float32),
        action=stack(acts), dist_inputs=stack(dists).astype(onp.float32),
        reward=stack(rews).astype(onp.float32),
        done=stack(dones).astype(onp.float32),
        truncated=stack(truncs).astype(onp.float32),
        final_observation=stack(finals).astype(onp.float32),
        mask=onp.ones((self.n_envs, n_steps), onp.float32))

  def _track(self, reward, done):
    self._running_return += reward
    self._running_length += 1
    for i in onp.flatnonzero(done):
      self.episode_returns.append(float(self._running_return[i]))
      self.episode_lengths.append(int(self._running_length[i]))
      self._running_return[i] = 0.0
      self._running_length[i] = 0

  def evaluate(self, policy, n_episodes, seed=10_000):
    """Undiscounted returns of `n_episodes` episodes, run side by side.

    Args:
      policy: as in `collect`, on a batch of `n_episodes` observations.
      n_episodes: how many episodes (one per fresh environment copy).
      seed: seed of the first copy's reset.

    Returns:
      A list of `n_episodes` returns.
    """
    if isinstance(self._env_spec, _OneEnv):
      # One environment object, shared with collection: its episodes run
      # one after another, and collection restarts afterwards.
      envs = _vector_env.VectorEnv(self._env_spec, 1, seed, self._max_steps)
      returns = [r for i in range(n_episodes)
                 for r in self._run_episodes(envs, policy, seed + i)]
      self.reseed(self._seed)
      return returns
    envs = _vector_env.VectorEnv(self._env_spec, n_episodes, seed,
                                 self._max_steps)
    returns = self._run_episodes(envs, policy, seed)
    envs.close()
    return returns

  def _run_episodes(self, envs, policy, seed):
    obs = envs.reset(seed)
    returns = onp.zeros(envs.n_envs)
    running = onp.ones(envs.n_envs, dtype=bool)
    while running.any():
      action, _ = policy(obs)
      obs, reward, term, trunc, _ = envs.step(
          self._env_actions(onp.asarray(action)))
      returns += reward * running
      running &= ~(term | trunc)
    return returns.tolist()

  def close(self):
    self._envs.close()


def from_task(task, n_envs=None, seed=0):
  """The `VectorTask` for `task`: a `VectorTask` itself or a `task.RLTask`.

  An `RLTask` made from an environment name gives `n_envs` (default 8)
  fresh copies of that environment with the task's discount and its time
  limit; one made from an environment object gives that one object
  (`n_envs` must then be 1 or None), since a copy of an arbitrary object
  is not known to be independent of it.

  Args:
    task: a `VectorTask` (returned as is) or an `RLTask`.
    n_envs: environment copies for an `RLTask` made from a name.
    seed: seed of the first copy's first reset.

  Returns:
    A VectorTask.

  Raises:
    TypeError: for any other `task`.
    ValueError: for `n_envs` > 1 with an `RLTask` made from an object.
  """
  if isinstance(task, VectorTask):
    return task
  env_spec = getattr(task, 'env_spec', None)
  if env_spec is None or not hasattr(task, 'time_limit'):
    raise TypeError(
        f'VectorTask.from_task: expected a VectorTask or an rl.task.RLTask, '
        f'got {type(task).__name__}.')
  env_id = getattr(env_spec, 'env_id', None)
  if env_id is not None:
    # An RLTask made from a name: copies made the way it made its own.
    n_envs = 8 if n_envs is None else n_envs
    return VectorTask(env_spec, gamma=task.gamma, n_envs=n_envs,
                      max_steps=task.time_limit, seed=seed)
  if n_envs not in (None, 1):
    raise ValueError(
        f'VectorTask.from_task: the RLTask holds one environment object '
        f'({type(env_spec).__name__}), so n_envs must be 1, got {n_envs}; '
        f'make the RLTask from an environment name to collect from copies.')
  return VectorTask(_OneEnv(env_spec), gamma=task.gamma, n_envs=1,
                    max_steps=task.time_limit, seed=seed)


class _OneEnv:
  """An environment function that hands out one given object."""

  def __init__(self, env):
    self.env = env

  def __call__(self):
    return self.env
