"""Tiny gym-style spaces and environments for the RL tests.

The spaces carry what the library reads (`n` or `shape`, `low`, `high`,
`dtype`, `sample`); the environments follow gym's older API (`reset()`
gives the observation, `step` a 4-tuple), which RLTask accepts beside
gymnasium's.
"""

import numpy as np

__all__ = ['Discrete', 'Box', 'Chain']


class Discrete:
  """`n` actions; `sample` draws uniformly, or always 0 with `first=True`."""

  def __init__(self, n, first=False):
    self.n, self.shape = n, ()
    self.dtype = np.int64
    self._first = first

  def sample(self):
    return 0 if self._first else np.random.randint(self.n)


class Box:
  """A float32 box of `shape` between `low` and `high`."""

  def __init__(self, shape, low=-1.0, high=1.0):
    self.shape, self.low, self.high = shape, low, high
    self.dtype = np.float32

  def sample(self):
    return np.random.uniform(self.low, self.high,
                             self.shape).astype(np.float32)


class Chain:
  """Observation one-hot of the position (0..3); action 1 moves right, 0
  stays; reaching 3 ends the episode with reward 1."""
  observation_space = Box((4,))
  action_space = Discrete(2)

  def reset(self):
    self.pos = 0
    return np.eye(4, dtype=np.float32)[0]

  def step(self, action):
    self.pos = min(3, self.pos + int(action))
    done = self.pos == 3
    return (np.eye(4, dtype=np.float32)[self.pos], float(done), done, {})
