"""gym-style spaces through everything in rl that reads a space.

Trax's RL code uses `gym.spaces`; gym is not installed here, so the spaces
below are stand-ins that look like gym's (same attributes, classes living
in modules named `gym.spaces.*`) and are unrelated to gymnasium's classes.
"""

import re

import gymnasium
import numpy as np
import pytest

from tfnp_trax.rl import _nets
from tfnp_trax.rl import _spaces
from tfnp_trax.rl import actor_critic
from tfnp_trax.rl import distributions
from tfnp_trax.rl import vector_task as task_lib


def in_module(module):
  def rename(cls):
    cls.__module__ = module
    return cls
  return rename


@in_module('gym.spaces.discrete')
class Discrete:

  def __init__(self, n):
    self.n = n
    self.shape = ()
    self.dtype = np.dtype(np.int64)

  def __repr__(self):
    return f'Discrete({self.n})'


@in_module('gym.spaces.multi_discrete')
class MultiDiscrete:

  def __init__(self, nvec):
    self.nvec = np.asarray(nvec, np.int64)
    self.shape = self.nvec.shape
    self.dtype = np.dtype(np.int64)

  def __repr__(self):
    return f'MultiDiscrete({self.nvec})'


@in_module('gym.spaces.box')
class Box:

  def __init__(self, low, high, shape, dtype=np.float32):
    self.dtype = np.dtype(dtype)
    self.shape = tuple(shape)
    self.low = np.full(shape, low, self.dtype)
    self.high = np.full(shape, high, self.dtype)

  def __repr__(self):
    return f'Box({self.low.min()}, {self.high.max()}, {self.shape})'


@in_module('gym.spaces.multi_binary')
class MultiBinary:

  def __init__(self, n):
    self.n = n
    self.shape = (n,)
    self.dtype = np.dtype(np.int8)

  def __repr__(self):
    return f'MultiBinary({self.n})'


@in_module('gym.spaces.tuple')
class Tuple:

  def __init__(self, spaces):
    self.spaces = tuple(spaces)
    self.shape = None
    self.dtype = None

  def __repr__(self):
    return f'Tuple({self.spaces})'


def test_stand_ins_are_not_gymnasium_spaces():
  for space in (Discrete(2), MultiDiscrete([2, 2]), Box(-1, 1, (2,))):
    assert not isinstance(space, gymnasium.spaces.Space)
    assert type(space).__module__.startswith('gym.spaces.')


@pytest.mark.parametrize('gym_like,gymnasium_space,kind', [
    (Discrete(4), gymnasium.spaces.Discrete(4), _spaces.DISCRETE),
    (MultiDiscrete([3, 3]), gymnasium.spaces.MultiDiscrete([3, 3]),
     _spaces.MULTI_DISCRETE),
    (Box(-1.0, 1.0, (3,)), gymnasium.spaces.Box(-1.0, 1.0, (3,)),
     _spaces.BOX),
])
def test_create_distribution_matches_gymnasium(gym_like, gymnasium_space,
                                               kind):
  assert _spaces.kind(gym_like) == _spaces.kind(gymnasium_space) == kind
  ours = distributions.create_distribution(gym_like)
  reference = distributions.create_distribution(gymnasium_space)
  assert type(ours) is type(reference)
  assert ours.n_inputs == reference.n_inputs
  np.testing.assert_array_equal(
      _nets.zeros_like_step(gym_like, (2, 1)),
      _nets.zeros_like_step(gymnasium_space, (2, 1)))
  assert (_nets.zeros_like_step(gym_like, (2, 1)).dtype ==
          _nets.zeros_like_step(gymnasium_space, (2, 1)).dtype)


def test_distribution_shapes_for_gym_like_spaces():
  cat = distributions.create_distribution(Discrete(5))
  assert isinstance(cat, distributions.Categorical) and cat.n_inputs == 5
  multi = distributions.create_distribution(MultiDiscrete([4, 4, 4]))
  assert multi.n_inputs == 12
  logits = np.zeros((2, 12), np.float32)
  assert np.asarray(multi.sample(logits, temperature=0.0)).shape == (2, 3)
  gauss = distributions.create_distribution(Box(-2.0, 2.0, (2, 3)))
  assert isinstance(gauss, distributions.Gaussian) and gauss.n_inputs == 6


@pytest.mark.parametrize('space,pattern', [
    (MultiBinary(3), r'the space MultiBinary\(3\) of type '
     r'gym\.spaces\.multi_binary\.MultiBinary is not supported'),
    (Tuple([Discrete(2)]), r'of type gym\.spaces\.tuple\.Tuple is not '
     r'supported'),
    (MultiDiscrete([2, 3]), r'needs equal sizes in every dimension, got '
     r'nvec \[2, 3\]'),
    (gymnasium.spaces.Discrete(3, start=1), r'do not start at 0'),
    ('not a space', r"the space 'not a space' of type builtins\.str"),
])
def test_unsupported_space_error(space, pattern):
  with pytest.raises(TypeError) as info:
    distributions.create_distribution(space)
  message = str(info.value)
  assert message.startswith('create_distribution: ')
  assert re.search(pattern, message), message
  assert 'supported are Discrete' in message and 'Box' in message


class GymLikeEnv:
  """A tiny gymnasium-API environment whose spaces are gym-like stand-ins.

  The observation is the step count; reward 1 for action 1; episodes last
  5 steps.
  """

  def __init__(self, action_space):
    self.action_space = action_space
    self.observation_space = Box(-10.0, 10.0, (2,))
    self._t = 0
    self.last_action = None

  def reset(self, seed=None):
    del seed
    self._t = 0
    return np.zeros(2, np.float32), {}

  def step(self, action):
    self.last_action = np.asarray(action)
    self._t += 1
    reward = float(np.sum(np.asarray(action) == 1))
    obs = np.full(2, self._t, np.float32)
    return obs, reward, self._t >= 5, False, {}

  def close(self):
    pass


def test_task_clips_actions_to_a_gym_like_box():
  task = task_lib.VectorTask(lambda: GymLikeEnv(Box(-1.0, 1.0, (1,))), n_envs=2)

  def policy(obs):
    return np.full((obs.shape[0], 1), 5.0, np.float32), np.zeros(
        (obs.shape[0], 1), np.float32)
  batch = task.collect(policy, n_steps=3)
  # The learner keeps the sample; the env sees it clipped to the box.
  assert batch.action.max() == 5.0
  env = task._envs.envs[0]  # pylint: disable=protected-access
  assert env.last_action.max() == 1.0
  task.close()


@pytest.mark.parametrize('action_space', [Discrete(2), Box(-1.0, 1.0, (1,))])
def test_agent_trains_on_gym_like_spaces(action_space):
  task = task_lib.VectorTask(lambda: GymLikeEnv(action_space), n_envs=2,
                         gamma=0.9)
  agent = actor_critic.PPO(
      task, n_interactions_per_epoch=8, policy_batch_size=4,
      value_batch_size=4, policy_train_steps_per_epoch=1,
      value_train_steps_per_epoch=1, jit_compile=False)
  expected = (distributions.Categorical
              if isinstance(action_space, Discrete)
              else distributions.Gaussian)
  assert isinstance(agent.policy_distribution, expected)
  agent.run(1)
  assert np.isfinite(agent.history.last('policy', 'policy_loss'))
  task.close()
