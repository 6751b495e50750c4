"""A batch of gymnasium environments stepped together, with auto-reset.

A plain list of environments is as fast as gymnasium's SyncVectorEnv for
small classic-control tasks and makes the reset rule explicit: an episode
that ends is reset in the same step, and the observation it ended on is
returned separately (needed to bootstrap episodes cut by a time limit).
"""

import numpy as onp

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
    max_steps: optional time limit per episode.
  """

  def __init__(self, env, n_envs, seed=0, max_steps=None):
    maker = env if callable(env) else (lambda: make_env(env, max_steps))
    self.envs = [maker() for _ in range(n_envs)]
    self._seed = int(seed)
    self._obs = None

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
    self._obs = onp.stack([env.reset(seed=base + i)[0]
                           for i, env in enumerate(self.envs)])
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
    results = [env.step(a) for env, a in zip(self.envs, actions)]
    final_obs = onp.stack([r[0] for r in results])
    rewards = onp.array([r[1] for r in results], dtype=onp.float32)
    terminated = onp.array([r[2] for r in results], dtype=bool)
    truncated = onp.array([r[3] for r in results], dtype=bool)
    next_obs = final_obs.copy()
    for i, env in enumerate(self.envs):
      if terminated[i] or truncated[i]:
        next_obs[i] = env.reset()[0]
    self._obs = next_obs
    return next_obs, rewards, terminated, truncated, final_obs

  def close(self):
    for env in self.envs:
      env.close()
