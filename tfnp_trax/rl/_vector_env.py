"""A batch of gymnasium environments stepped together, with auto-reset.

A plain list of environments is as fast as gymnasium's SyncVectorEnv for
small classic-control tasks and makes the reset rule explicit: an episode
that ends is reset in the same step, and the observation it ended on is
returned separately (needed to bootstrap episodes cut by a time limit).
Environments with gym's older API (`reset()` gives the observation, `step`
a 4-tuple) are stepped through `_env_api` like gymnasium ones.
"""

import numpy as onp

from tfnp_trax.rl import _env_api

__all__ = ['VectorEnv', 'make_env']


def make_env(env, max_steps=None):
  """A gymnasium env from an id (or the env itself), with a time limit."""
  import gymnasium  # pylint: disable=g-import-not-at-top
  if not isinstance(env, str):
    return env
  kwargs = {} if max_steps is None else {'max_episode_steps': int(max_steps)}
  return gymnasium.make(env, **kwargs)


class VectorEnv:
  """`n_envs` copies of an environment, reset as episodes end.

  Args:
    env: a gymnasium env id (e.g. 'CartPole-v1') or a function returning a
      new env.
    n_envs: how many copies.
    seed: copy `i` is first reset with seed `seed + i`.
    max_steps: optional time limit per episode (gymnasium's TimeLimit for
      an id; counted here for environments a function makes).
  """

  def __init__(self, env, n_envs, seed=0, max_steps=None):
    if callable(env):
      maker = env
      self._limit = None if max_steps is None else int(max_steps)
    else:
      maker = lambda: make_env(env, max_steps)
      self._limit = None
    self.envs = [maker() for _ in range(n_envs)]
    if len({id(e) for e in self.envs}) < len(self.envs):
      raise ValueError(
          f'VectorEnv: the environment function returned the same object '
          f'more than once; each of the {n_envs} copies needs its own '
          f'environment.')
    self._seed = int(seed)
    self._obs = None
    self._steps = onp.zeros(n_envs, dtype=onp.int64)

  @property
  def n_envs(self):
    return len(self.envs)

  @property
  def action_space(self):
    return self.envs[0].action_space

  @property
  def observation_space(self):
    return self.envs[0].observation_space

  def reset(self, seed=None):
    """Resets every copy; returns the stacked first observations."""
    base = self._seed if seed is None else int(seed)
    self._obs = onp.stack([_env_api.reset(env, seed=base + i)
                           for i, env in enumerate(self.envs)])
    self._steps[:] = 0
    return self._obs

  @property
  def observations(self):
    """The current observations, resetting first if never reset."""
    if self._obs is None:
      self.reset()
    return self._obs

  def step(self, actions):
    """Steps each copy with its action.

    Returns:
      `(next_obs, rewards, terminated, truncated, final_obs)`: `next_obs`
      starts a new episode where one ended; `final_obs` is the observation
      the step produced before any reset.
    """
    results = [_env_api.step(env, a) for env, a in zip(self.envs, actions)]
    final_obs = onp.stack([r.observation for r in results])
    rewards = onp.array([r.reward for r in results], dtype=onp.float32)
    terminated = onp.array([r.terminated for r in results], dtype=bool)
    truncated = onp.array([r.truncated for r in results], dtype=bool)
    self._steps += 1
    if self._limit is not None:
      truncated |= (self._steps >= self._limit) & ~terminated
    next_obs = final_obs.copy()
    for i, env in enumerate(self.envs):
      if terminated[i] or truncated[i]:
        next_obs[i] = _env_api.reset(env)
        self._steps[i] = 0
    self._obs = next_obs
    return next_obs, rewards, terminated, truncated, final_obs

  def close(self):
    for env in self.envs:
      env.close()
