"""RLTask: an environment to collect experience from, and how to score it.

Collection runs `n_envs` copies of the environment in lock-step, so the
policy sees a fixed-size batch of observations at every step (one compiled
trace) and each call to `collect` returns a fixed-shape `TrajectoryBatch`.
"""

import collections

import numpy as onp

from tfnp_trax.rl import _spaces
from tfnp_trax.rl import _vector_env

__all__ = ['RLTask', 'TrajectoryBatch']


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


class RLTask:
  """A gymnasium environment with a discount, collected in batches.

  Example:
    >>> task = RLTask('CartPole-v1', gamma=0.99, n_envs=4)
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
      raise ValueError(f'RLTask: n_envs must be >= 1, got {n_envs}.')
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
    envs = _vector_env.VectorEnv(self._env_spec, n_episodes, seed,
                                 self._max_steps)
    obs = envs.reset()
    returns = onp.zeros(n_episodes)
    running = onp.ones(n_episodes, dtype=bool)
    while running.any():
      action, _ = policy(obs)
      obs, reward, term, trunc, _ = envs.step(
          self._env_actions(onp.asarray(action)))
      returns += reward * running
      running &= ~(term | trunc)
    envs.close()
    return returns.tolist()

  def close(self):
    self._envs.close()
