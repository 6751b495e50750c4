"""RLTask, Trajectory and play: Trax's trajectory API on gym and gymnasium."""

import collections
import os

import numpy as np
import pytest

from tests.rl._envs import Box
from tests.rl._envs import Discrete
from tfnp_trax.layers import weight_files
from tfnp_trax.rl import _env_api
from tfnp_trax.rl import task as task_lib
from tfnp_trax.rl import vector_task


class CountingEnv:
  """Old gym API: the observation counts steps; reward = 1 + the action.

  Ends by itself after `length` steps; `discount_mask` is 0 on odd steps.
  """
  observation_space = Box((1,))
  action_space = Discrete(2, first=True)

  def __init__(self, length=None):
    self.length = length
    self.n_resets = 0

  def reset(self):
    self.t = 0
    self.n_resets += 1
    return np.array([0.0])

  def step(self, action):
    self.t += 1
    done = self.length is not None and self.t >= self.length
    info = {'discount_mask': self.t % 2, 'control_mask': 1, 'other': 'x'}
    return np.array([float(self.t)]), 1.0 + float(action), done, info


class GymnasiumCountingEnv(CountingEnv):
  """The same environment with gymnasium's reset and step."""

  def reset(self, seed=None, options=None):
    del options
    self.seed_seen = seed
    return super().reset(), {}

  def step(self, action):
    obs, reward, done, info = super().step(action)
    return obs, reward, done, False, info


def always(action):
  return lambda trajectory: (action, np.zeros(2, np.float32))


def reference_returns(rewards, discount_mask, gamma):
  """G_t = r_t + gamma^{mask_t} G_{t+1}, float64, written out."""
  out = np.zeros(len(rewards))
  running = 0.0
  for t in reversed(range(len(rewards))):
    running = rewards[t] + (gamma if discount_mask[t] else 1.0) * running
    out[t] = running
  return out


@pytest.mark.parametrize('env_class', [CountingEnv, GymnasiumCountingEnv])
def test_play_records_steps_masks_and_returns(env_class):
  task = task_lib.RLTask(env_class(length=5), initial_trajectories=0,
                         gamma=0.5, max_steps=100)
  trajectory = task.play(always(1))
  assert len(trajectory) == 6 and trajectory.done
  steps = trajectory.timesteps
  assert [float(s.observation[0]) for s in steps] == [0, 1, 2, 3, 4]
  assert float(trajectory.last_observation[0]) == 5.0
  assert [s.reward for s in steps] == [2.0] * 5
  assert [s.env_info.discount_mask for s in steps] == [1, 0, 1, 0, 1]
  assert trajectory.total_return == 10.0
  np.testing.assert_allclose(
      [s.return_ for s in steps],
      reference_returns([2.0] * 5, [1, 0, 1, 0, 1], 0.5), rtol=1e-12)
  # By hand: the mask of step t discounts G_{t+1}:
  # 2 + .5 (2 + 1 (2 + .5 (2 + 1 (2)))) = 5.
  assert steps[0].return_ == pytest.approx(5.0)


def test_gymnasium_truncation_ends_the_trajectory():
  import gymnasium  # pylint: disable=g-import-not-at-top
  env = gymnasium.make('CartPole-v1', max_episode_steps=7)
  trajectory = task_lib.play(env, lambda _: (0, None))
  # Pushing left for 7 steps may fall first; either way the episode ends.
  assert trajectory.done and 2 <= len(trajectory) <= 8


def test_slices_continue_the_episode_up_to_the_time_limit():
  env = CountingEnv()
  task = task_lib.RLTask(env, initial_trajectories=0, max_steps=3,
                         time_limit=7)
  resets = env.n_resets
  first, second, third = (task.play(always(0)) for _ in range(3))
  assert [len(first), len(second), len(third)] == [4, 4, 2]
  assert [first.done, second.done, third.done] == [False, False, True]
  # The second slice starts where the first stopped; no reset between.
  assert float(second.timesteps[0].observation[0]) == 3.0
  assert env.n_resets == resets + 1
  assert float(task.play(always(0)).timesteps[0].observation[0]) == 0.0


def test_collect_trajectories_counts_epochs_and_replay_buffer():
  task = task_lib.RLTask(CountingEnv(length=4), initial_trajectories=2,
                         max_steps=10, n_replay_epochs=2)
  assert len(task.trajectories[0]) == 2
  mean = task.collect_trajectories(always(1), n_trajectories=3, epoch_id=1)
  assert mean == 8.0  # 4 steps of reward 2.
  task.collect_trajectories(always(0), n_interactions=6, epoch_id=2)
  assert sum(len(t) - 1 for t in task.trajectories[2]) == 6
  task.collect_trajectories(always(0), n_trajectories=1, epoch_id=3)
  # Epochs older than epoch_id - n_replay_epochs are dropped.
  assert sorted(task.trajectories) == [1, 2, 3]
  assert task.n_trajectories() == 3 + 2 + 1
  assert task.collect_trajectories(always(1), n_trajectories=2,
                                   only_eval=True) == 8.0
  assert task.n_trajectories() == 6
  with pytest.raises(ValueError, match='n_trajectories or n_interactions'):
    task.collect_trajectories(always(0))


def test_to_np_margin_and_cache():
  trajectory = task_lib.Trajectory(np.array([0.0]))
  for t in range(1, 4):
    trajectory.extend(action=np.int32(t), reward=float(t), done=t == 3,
                      dist_inputs=None, new_observation=np.array([float(t)]))
  batch = trajectory.to_np(margin=2)
  np.testing.assert_array_equal(batch.observation[:, 0], [0, 1, 2, 3, 0])
  np.testing.assert_array_equal(batch.action, [1, 2, 3, 0, 0])
  np.testing.assert_array_equal(batch.mask, [1, 1, 1, 0, 0])
  np.testing.assert_array_equal(batch.done, [0, 0, 1, 1, 1])
  assert batch.dist_inputs is None and batch.return_ is None
  # Padding steps carry zero masks.
  np.testing.assert_array_equal(batch.env_info.discount_mask, [1, 1, 1, 0, 0])
  assert trajectory.to_np(margin=2) is batch
  trajectory.calculate_returns(1.0)
  np.testing.assert_array_equal(
      trajectory.to_np(margin=0, timestep_to_np=None).return_, [6, 5, 3])


def test_trajectory_batch_stream_pads_to_a_power_of_two():
  np.random.seed(0)
  task = task_lib.RLTask(CountingEnv(), initial_trajectories=0,
                         max_steps=10)
  for length in (2, 5):
    task.env.length = length
    task.collect_trajectories(always(1), n_trajectories=1, epoch_id=1)
  lengths = collections.Counter()
  for batch, _ in zip(task.trajectory_batch_stream(2, margin=1), range(40)):
    assert batch.observation.shape[:2] == batch.mask.shape
    n = batch.mask.shape[1]
    lengths[n] += 1
    for row in range(2):
      real = int(batch.mask[row].sum())
      assert real in (2, 5)
      # Padding is zeros after the real steps and the margin step.
      np.testing.assert_array_equal(batch.reward[row, :real], 2.0)
      np.testing.assert_array_equal(batch.reward[row, real:], 0.0)
  # 3 + 1 or 6 + 1 entries: equal lengths stack as is, mixed pad to 8.
  assert set(lengths) <= {3, 6, 8} and lengths[8] > 0
  fixed = next(task.trajectory_batch_stream(3, max_slice_length=2,
                                            min_slice_length=4))
  assert fixed.observation.shape == (3, 4, 1)


def test_stream_before_any_collection_yields_the_example():
  task = task_lib.RLTask(CountingEnv(length=3), initial_trajectories=0,
                         max_steps=10)
  piece = next(task.trajectory_slice_stream(max_slice_length=2))
  assert piece.observation.shape == (2, 1)


def test_save_and_load_round_trip_is_atomic(tmp_path):
  task = task_lib.RLTask(CountingEnv(length=3), initial_trajectories=1,
                         max_steps=10, gamma=0.9)
  task.collect_trajectories(always(1), n_trajectories=2, epoch_id=1)
  path = str(tmp_path / 'trajectories.pkl')
  task.save_to_file(path)
  assert sorted(os.listdir(tmp_path)) == ['trajectories.pkl',
                                          'trajectories_epoch0.pkl',
                                          'trajectories_epoch1.pkl']
  other = task_lib.RLTask(CountingEnv(length=3), initial_trajectories=0,
                          max_steps=10, n_replay_epochs=5)
  other.init_from_file(path)
  assert other.gamma == 0.9 and other.n_trajectories() == 2
  restored = other.trajectories[1][1]
  original = task.trajectories[1][1]
  np.testing.assert_array_equal(restored.to_np().observation,
                                original.to_np().observation)
  assert [s.return_ for s in restored.timesteps] == [
      s.return_ for s in original.timesteps]
  assert restored.timesteps[0].env_info == original.timesteps[0].env_info
  loaded = task_lib.RLTask(CountingEnv(length=3),
                           initial_trajectories=str(tmp_path), max_steps=10)
  assert len(loaded.trajectories[0]) == 3
  # A damaged epoch file is refused, not half-read.
  with open(tmp_path / 'trajectories_epoch1.pkl', 'r+b') as f:
    f.seek(12)
    f.write(b'\0\0\0\0')
  with pytest.raises(weight_files.WeightFileError):
    other.init_from_file(path)


def test_seeded_gymnasium_task_repeats():
  def first_observations(seed):
    task = task_lib.RLTask('CartPole-v1', initial_trajectories=0,
                           max_steps=5, seed=seed)
    return task.play(always(0)).to_np().observation
  np.testing.assert_array_equal(first_observations(3), first_observations(3))
  assert not np.array_equal(first_observations(3), first_observations(4))


def test_dm_suite_environment():
  class StepType:

    def __init__(self, last):
      self._last = last

    def last(self):
      return self._last

  TimeStep = collections.namedtuple(
      'TimeStep', ['observation', 'reward', 'step_type', 'discount'])

  class DmEnv:

    def reset(self):
      self.t = 0
      return TimeStep(np.zeros(2), None, StepType(False), None)

    def step(self, action):
      self.t += 1
      return TimeStep(np.full(2, self.t), 0.5, StepType(self.t == 3), 0.0)

    def action_spec(self):
      return collections.namedtuple('Spec', 'num_values')(4)

    def observation_spec(self):
      return collections.namedtuple('Spec', 'shape dtype')((2,), np.float64)

  task = task_lib.RLTask(DmEnv(), initial_trajectories=1, dm_suite=True,
                         max_steps=10)
  assert task.action_space.n == 4
  assert task.observation_space.shape == (2,)
  trajectory = task.trajectories[0][0]
  assert len(trajectory) == 4 and trajectory.done
  assert trajectory.total_return == 1.5



def test_step_with_a_wrong_arity_is_named():
  class Broken(CountingEnv):

    def step(self, action):
      return (1, 2, 3)

  with pytest.raises(TypeError, match=r'Broken.step returned tuple .*'
                     r'\(observation, reward, done, info\)'):
    _env_api.step(Broken(), 0)


def test_old_gym_time_limit_flag_is_truncation():
  class Limited(CountingEnv):

    def step(self, action):
      obs, reward, _, info = super().step(action)
      return obs, reward, True, dict(info, **{'TimeLimit.truncated': True})

  env = Limited()
  env.reset()
  result = _env_api.step(env, 0)
  assert result.truncated and not result.terminated and result.done


def test_suffix_and_errors():
  trajectory = task_lib.Trajectory(0)
  for t in range(1, 5):
    trajectory.extend(action=0, reward=0.0, done=False, dist_inputs=None,
                      new_observation=t)
  assert [s.observation for s in trajectory.suffix(3).timesteps] == [2, 3]
  assert len(trajectory.suffix(1)) == 1
  with pytest.raises(ValueError, match='suffix: length must be >= 1'):
    trajectory.suffix(0)
  with pytest.raises(ValueError, match='no interactions yet'):
    task_lib.Trajectory(0).done = True


def test_agents_collect_from_an_rl_task():
  named = task_lib.RLTask('CartPole-v1', initial_trajectories=0,
                          max_steps=50, gamma=0.9)
  vec = vector_task.from_task(named, n_envs=2)
  assert vec.n_envs == 2 and vec.gamma == 0.9
  batch = vec.collect(lambda obs: (np.zeros(2, np.int32),
                                   np.zeros((2, 2), np.float32)), 60)
  # The task's time limit (50) becomes the vector task's.
  assert batch.done.sum() >= 2
  own = task_lib.RLTask(GymnasiumCountingEnv(), initial_trajectories=0,
                        max_steps=4)
  vec = vector_task.from_task(own)
  batch = vec.collect(lambda obs: (np.ones(1, np.int32),
                                   np.zeros((1, 2), np.float32)), 8)
  np.testing.assert_array_equal(batch.done[0], [0, 0, 0, 1, 0, 0, 0, 1])
  np.testing.assert_array_equal(batch.truncated, batch.done)
  assert vec.evaluate(lambda obs: (np.ones(1, np.int32), None), 2) == [8.0,
                                                                       8.0]
  with pytest.raises(ValueError, match='n_envs must be 1'):
    vector_task.from_task(own, n_envs=3)
  with pytest.raises(TypeError, match='expected a VectorTask or an'):
    vector_task.from_task(object())


@pytest.mark.parametrize('name,kwargs,gymnasium_id,package', [
    # Trax's Atari configs name a game with dm_suite=True.
    ('boxing', dict(dm_suite=True, num_stacked_frames=4), 'ALE/Boxing-v5',
     'ale-py'),
    ('space_invaders', dict(dm_suite=True), 'ALE/SpaceInvaders-v5', 'ale-py'),
    ('LunarLander-v2', {}, 'LunarLander-v3', 'Box2D'),
    ('DM-HalfCheetah-v2', {}, 'HalfCheetah-v5', 'MuJoCo'),
])
def test_trax_environment_names_map_to_gymnasium(name, kwargs, gymnasium_id,
                                                 package):
  maker = task_lib._gymnasium_maker(name, **kwargs)  # pylint: disable=protected-access
  assert maker.env_id == gymnasium_id
  try:
    maker()
  except ImportError as e:
    # Without the package, the error names it and how to install it.
    assert package in str(e) and 'pip install' in str(e), str(e)
    assert f"RLTask: the environment '{name}'" in str(e)
