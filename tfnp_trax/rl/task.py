"""RLTask: an environment, a discount, and the trajectories played in it.

A `Trajectory` records one episode (or one slice of an episode, when
`max_steps` cuts episodes into pieces) as a list of `TimeStepBatch` steps
plus the observation it ended on. `play` runs a policy in an environment
to produce one. `RLTask` owns the environment and a replay buffer of
trajectories indexed by epoch, and turns them into training data:
`trajectory_slice_stream` samples slices, `trajectory_batch_stream` pads
and stacks them into NumPy batches (a `TimeStepBatch` of arrays with
leading axes [batch, length]) for the Loop tasks of `policy_tasks` and
`value_tasks`.

Environments may follow gymnasium's API or gym's older one (see
`_env_api`); an environment name is made with `gymnasium.make`.

Example:
  >>> task = RLTask('CartPole-v1', initial_trajectories=0, max_steps=200)
  >>> task.collect_trajectories(policy, n_trajectories=4)  # doctest: +SKIP
  >>> batch = next(task.trajectory_batch_stream(8, max_slice_length=16))
"""

import collections
import os

import gin
import numpy as onp

from tfnp_trax import fastmath
from tfnp_trax.layers import weight_files
from tfnp_trax.rl import _env_api
from tfnp_trax.rl import advantages

__all__ = ['TimeStepBatch', 'EnvInfo', 'Trajectory', 'play', 'RLTask']


TimeStepBatch = collections.namedtuple('TimeStepBatch', [
    'observation', 'action', 'reward', 'done', 'mask', 'dist_inputs',
    'env_info', 'return_'])
TimeStepBatch.__doc__ = """One step of a trajectory, or stacked steps of one.

Fields: `observation` the step starts from, the `action` taken, the
`reward` it earned (None where no action was taken), `done` (the episode
ended here), `mask` (0 for padding), `dist_inputs` (the policy's
distribution parameters, kept by agents that need them), `env_info` (an
`EnvInfo`) and `return_` (the discounted return from this step, reward
included; None until computed).
"""

EnvInfo = collections.namedtuple('EnvInfo', ['control_mask', 'discount_mask'])
EnvInfo.__doc__ = """Per-step masks an environment may report in its `info`.

`control_mask`: whether the agent's action mattered at this step (0 while
an environment is still emitting its own observation tokens, as
`envs.SequenceDataEnv` does). `discount_mask`: whether the discount applies
to this step's reward. Both default to 1.
"""
EnvInfo.__new__.__defaults__ = (1, 1)

# `env_info` and `return_` may be left out.
TimeStepBatch.__new__.__defaults__ = (EnvInfo(), None)


def _numpy_timestep(timestep):
  return fastmath.nested_map(onp.array, timestep)


class Trajectory:
  """The steps of one episode (or slice of one) and its last observation.

  `len(trajectory)` counts observations, one more than steps: a fresh
  trajectory holds only the observation it starts from.
  """

  def __init__(self, observation):
    self._last_observation = observation
    self._timesteps = []
    # to_np's result and the arguments it was computed with.
    self._np_cache = None

  def __len__(self):
    return len(self._timesteps) + 1

  def __repr__(self):
    return repr({'timesteps': self._timesteps,
                 'last_observation': self._last_observation})

  def suffix(self, length):
    """A new trajectory of the last `length` observations (`length` >= 1)."""
    if length < 1:
      raise ValueError(f'Trajectory.suffix: length must be >= 1, got '
                       f'{length}.')
    tail = Trajectory(self._last_observation)
    tail._timesteps = self._timesteps[len(self._timesteps) - (length - 1):]  # pylint: disable=protected-access
    return tail

  @property
  def timesteps(self):
    return self._timesteps

  @property
  def total_return(self):
    """The undiscounted sum of the rewards (a missing reward counts 0)."""
    return sum(step.reward or 0.0 for step in self._timesteps)

  @property
  def last_observation(self):
    return self._last_observation

  @property
  def done(self):
    """Whether the last step ended the episode (False with no steps)."""
    return bool(self._timesteps) and self._timesteps[-1].done

  @done.setter
  def done(self, done):
    if not self._timesteps:
      raise ValueError('Trajectory.done: no interactions yet in the '
                       'trajectory, so there is no step to mark.')
    self._timesteps[-1] = self._timesteps[-1]._replace(done=done)

  def extend(self, new_observation, mask=1, **kwargs):
    """Appends a step from the last observation; `new_observation` follows.

    Args:
      new_observation: the observation the action led to.
      mask: the step's mask (1: a real step).
      **kwargs: the other `TimeStepBatch` fields: `action`, `reward`,
        `done`, `dist_inputs`, and optionally `env_info` and `return_`.
    """
    self._timesteps.append(TimeStepBatch(
        observation=self._last_observation, mask=mask, **kwargs))
    self._last_observation = new_observation

  def calculate_returns(self, gamma):
    """Fills every step's `return_` with its discounted return."""
    if not self._timesteps:
      return
    rewards = onp.array([step.reward for step in self._timesteps])
    discount_mask = onp.array(
        [step.env_info.discount_mask for step in self._timesteps])
    gammas = advantages.mask_discount(gamma, discount_mask)
    returns = advantages.discounted_returns(rewards, gammas)
    self._timesteps = [step._replace(return_=value)
                       for step, value in zip(self._timesteps, returns)]

  def to_np(self, margin=1, timestep_to_np=None):
    """The trajectory as one `TimeStepBatch` of stacked NumPy arrays.

    Args:
      margin: how many padding steps to add after the last real one, each
        with `mask` 0 and `done` True; the first of them carries the last
        observation (the default, 1, keeps it). With 0, the last
        observation is left out, so every field has one entry per step.
      timestep_to_np: optional function from a `TimeStepBatch` of raw values
        to one of NumPy arrays (e.g. to serialize observations); NumPy's
        `np.array` on each field by default.

    Returns:
      A TimeStepBatch whose fields have leading axis `len(self) + margin - 1`
      (`dist_inputs` and `return_` are None where every step has None).
    """
    to_np = timestep_to_np or _numpy_timestep
    key = (margin, timestep_to_np)
    length = len(self) + margin - 1
    if self._np_cache is not None:
      cached_key, cached = self._np_cache
      # Steps are only ever appended, so the length tells whether it grew.
      if cached_key == key and cached.observation.shape[0] == length:
        return cached
    fields = TimeStepBatch._fields
    columns = {field: [] for field in fields}
    for step in self._timesteps:
      converted = to_np(step)
      for field in fields:
        columns[field].append(getattr(converted, field))
    columns['observation'].append(self._last_observation)
    if self._timesteps:
      # The padding lets a slice reach past the end and still see the
      # final observation; `done` True there keeps advantage estimators
      # from bootstrapping across it.
      columns['mask'].extend([0] * margin)
      columns['done'].extend([True] * margin)
      columns['observation'].extend(
          [onp.zeros_like(columns['observation'][-1])] * (margin - 1))
      for field in set(fields) - {'mask', 'done', 'observation'}:
        last = columns[field][-1]
        filler = None if last is None else onp.zeros_like(last)
        columns[field].extend([filler] * margin)
      if margin == 0:
        columns['observation'].pop()
    batch = TimeStepBatch(**{
        field: fastmath.nested_stack(values) if values else None
        for field, values in columns.items()})
    self._np_cache = (key, batch)
    return batch


def play(env, policy, dm_suite=False, max_steps=None, last_observation=None):
  """Plays `policy` in `env` until the episode ends or `max_steps` steps.

  Args:
    env: a gymnasium, gym or (with `dm_suite`) dm_env environment.
    policy: function from the `Trajectory` so far to `(action, dist_inputs)`.
    dm_suite: whether `env` follows the dm_env interface.
    max_steps: optional limit on the steps played.
    last_observation: where a previous slice of the episode stopped, to
      continue from it; None resets the environment first.

  Returns:
    The Trajectory played; its `done` says whether the episode ended.
  """
  if last_observation is None:
    last_observation = _env_api.reset(env, dm_suite=dm_suite)
  trajectory = Trajectory(last_observation)
  n_steps = 0
  done = False
  while not done and (max_steps is None or n_steps < max_steps):
    action, dist_inputs = policy(trajectory)
    action = onp.asarray(action)
    result = _env_api.step(env, action, dm_suite=dm_suite)
    done = result.done
    env_info = EnvInfo(**{key: value for key, value in result.info.items()
                          if key in EnvInfo._fields})
    trajectory.extend(action=action, dist_inputs=dist_inputs,
                      reward=result.reward, done=done,
                      new_observation=result.observation, env_info=env_info)
    n_steps += 1
  return trajectory


def _random_policy(action_space):
  return lambda _: (action_space.sample(), None)


def _at_most(*limits):
  """The smallest of the limits that are set (None: no limit)."""
  limits = [limit for limit in limits if limit is not None]
  return min(limits) if limits else None


def _n_slices(trajectory, max_slice_length, margin):
  """How many slices of up to `max_slice_length` steps `trajectory` has."""
  if not max_slice_length:
    return 1
  return max(1, len(trajectory) + margin - max_slice_length)


def _sample_proportionally(items, weights):
  """One of `items`, the k-th with probability weights[k] / sum(weights)."""
  weights = onp.asarray(weights, dtype=onp.float64)
  if len(items) != len(weights):
    raise ValueError(f'Inputs and weights must have the same length, but do '
                     f'not: {len(items)} != {len(weights)}')
  index = onp.random.choice(len(items), p=weights / weights.sum())
  return items[int(index)]


def _pad_to_power_of_two(arrays, min_length):
  """Stacks arrays of possibly different lengths, zero-padded at the end.

  Equal lengths (at least `min_length`) are stacked as they are; otherwise
  every array is padded to the next power of two of the longest, so that
  compiled consumers see few distinct shapes. None entries become zeros.
  """
  present = [a for a in arrays if a is not None]
  if not present:
    raise ValueError('trajectory_batch_stream: every array to pad is None.')
  zeros = onp.zeros_like(present[0])
  arrays = [zeros if a is None else a for a in arrays]
  lengths = [a.shape[0] for a in arrays]
  longest = max(lengths + ([min_length] if min_length is not None else []))
  if longest == min(lengths):
    return onp.array(arrays)
  padded = 2 ** int(onp.ceil(onp.log2(longest)))
  return onp.array([
      onp.pad(a, [(0, padded - a.shape[0])] + [(0, 0)] * (a.ndim - 1),
              mode='constant', constant_values=a.dtype.type(0))
      for a in arrays])


def _trajectory_to_data(trajectory):
  """A trajectory as plain containers and arrays, for the safe unpickler."""
  return {'last_observation': trajectory.last_observation,
          'timesteps': [
              dict(step._asdict(), env_info=tuple(step.env_info))
              for step in trajectory.timesteps]}


def _trajectory_from_data(data):
  trajectory = Trajectory(data['last_observation'])
  for step in data['timesteps']:
    step = dict(step)
    step['env_info'] = EnvInfo(*step['env_info'])
    trajectory.timesteps.append(TimeStepBatch(**step))
  return trajectory


class RLTask:
  """An environment, a discount, and a replay buffer of trajectories.

  Args:
    env: an environment (gymnasium's or gym's interface, or dm_env's with
      `dm_suite`), or the name of a gymnasium environment to make.
    initial_trajectories: trajectories to start the buffer (epoch 0) with:
      a number of episodes to play with a random policy, a list of
      Trajectories or a dict `{epoch: [Trajectory, ...]}`, or the folder
      of a task saved with `save_to_file` (its `trajectories.pkl`).
    gamma: the discount factor of the returns.
    dm_suite: whether `env` follows the dm_env interface.
    random_starts: kept for configs of Atari agents; environments handle
      their own random starts.
    max_steps: optional limit on the steps of one slice: `play` stops
      there and the next call continues the same episode, up to
      `time_limit`.
    time_limit: optional limit on the steps of an episode; the last step
      is then marked done. Defaults to `max_steps`.
    timestep_to_np: optional function from a `TimeStepBatch` to one of NumPy
      arrays, used when trajectories become training data (`to_np`).
    num_stacked_frames: kept for configs of Atari agents; frame stacking is
      the environment wrapper's job.
    n_replay_epochs: how many epochs of trajectories the buffer keeps.
    seed: optional seed of the environments' first reset (the evaluation
      environment gets `seed + 1`); None leaves them unseeded.
  """

  def __init__(self, env=gin.REQUIRED, initial_trajectories=1, gamma=0.99,
               dm_suite=False, random_starts=True, max_steps=None,
               time_limit=None, timestep_to_np=None, num_stacked_frames=1,
               n_replay_epochs=1, seed=None):
    if env is gin.REQUIRED:
      raise TypeError(
          'RLTask: env is required: an environment object or the name of a '
          "gymnasium environment (in a gin config, RLTask.env = 'CartPole-v1').")
    self._env_spec = env
    if isinstance(env, str):
      self._env_name = env
      # Trax's names (and its Atari games under dm_suite) become gymnasium's.
      self._env_spec = _gymnasium_maker(env, dm_suite, num_stacked_frames)
      dm_suite = False
      env, eval_env = self._env_spec(), self._env_spec()
    else:
      self._env_name = type(env).__name__
      eval_env = env
    self._env = env
    self._eval_env = eval_env
    self._dm_suite = dm_suite
    self._random_starts = random_starts
    self._num_stacked_frames = num_stacked_frames
    self._max_steps = max_steps
    self._time_limit = max_steps if time_limit is None else time_limit
    self._gamma = gamma
    self._initial_trajectories = initial_trajectories
    self._timestep_to_np = timestep_to_np
    self._n_replay_epochs = n_replay_epochs
    self._seeds = None if seed is None else [int(seed), int(seed) + 1]
    self._last_observation = None
    self._n_steps_left = self._time_limit
    # Networks are built from the shapes of this one random episode.
    self._example_trajectory = self.play(_random_policy(self.action_space),
                                         only_eval=True)
    if isinstance(initial_trajectories, int):
      initial_trajectories = [self.play(_random_policy(self.action_space))
                              for _ in range(initial_trajectories)]
    if isinstance(initial_trajectories, str):
      initial_trajectories = self.load_initial_trajectories_from_path(
          initial_trajectories_path=initial_trajectories)
    if isinstance(initial_trajectories, (list, tuple)):
      initial_trajectories = ({0: list(initial_trajectories)}
                              if initial_trajectories else {})
    self._trajectories = collections.defaultdict(list)
    self._trajectories.update(initial_trajectories)
    # Epochs already on disk and unchanged since; save_to_file skips them.
    self._saved_epochs_unchanged = []
    self._n_trajectories = 0
    self._n_interactions = 0

  @property
  def env(self):
    return self._env

  @property
  def env_name(self):
    return self._env_name

  @property
  def env_spec(self):
    """How the environment was given: the environment object, or (for a
    name) a function making new copies of it (`env_spec.env_id` is the
    gymnasium id)."""
    return self._env_spec

  @property
  def max_steps(self):
    return self._max_steps

  @property
  def time_limit(self):
    return self._time_limit

  @property
  def gamma(self):
    return self._gamma

  @property
  def action_space(self):
    if self._dm_suite:
      return _dm_action_space(self._env)
    return self._env.action_space

  @property
  def observation_space(self):
    """The observation space, in the gym interface for dm_env too."""
    if self._dm_suite:
      return _dm_observation_space(self._env)
    return self._env.observation_space

  @property
  def trajectories(self):
    return self._trajectories

  @property
  def timestep_to_np(self):
    return self._timestep_to_np

  @timestep_to_np.setter
  def timestep_to_np(self, timestep_to_np):
    self._timestep_to_np = timestep_to_np

  def set_n_replay_epochs(self, n_replay_epochs):
    self._n_replay_epochs = n_replay_epochs

  def _reset_observation(self, env, which):
    """None (play resets) or the seeded first observation of `env`."""
    if self._seeds is None or self._seeds[which] is None:
      return None
    seed, self._seeds[which] = self._seeds[which], None
    return _env_api.reset(env, seed=seed, dm_suite=self._dm_suite)

  # Saving and loading.

  @staticmethod
  def _epoch_filename(base_filename, epoch):
    """`/a/task.pkl` keeps epoch 3 in `/a/task_epoch3.pkl`."""
    stem, ext = os.path.splitext(base_filename)
    return f'{stem}_epoch{epoch}{ext}'

  def _read_epoch(self, filename, epoch):
    data = weight_files.unpickle_from_file(
        self._epoch_filename(filename, epoch), gzip=True)
    return [_trajectory_from_data(t) for t in data]

  def load_initial_trajectories_from_path(
      self, initial_trajectories_path, dictionary_file='trajectories.pkl',
      start_epoch_to_load=0):
    """All trajectories of a saved task's epochs from `start_epoch_to_load`."""
    filename = os.path.join(initial_trajectories_path, dictionary_file)
    index = weight_files.unpickle_from_file(filename, gzip=False)
    trajectories = []
    for epoch in index['all_epochs'][start_epoch_to_load:]:
      trajectories.extend(self._read_epoch(filename, epoch))
    return trajectories

  def init_from_file(self, file_name):
    """Restores counters and the last `n_replay_epochs` epochs from a save."""
    index = weight_files.unpickle_from_file(file_name, gzip=False)
    self._n_trajectories = index['n_trajectories']
    self._n_interactions = index['n_interactions']
    self._max_steps = index['max_steps']
    self._gamma = index['gamma']
    epochs = list(index['all_epochs'])[-self._n_replay_epochs:]
    for epoch in epochs:
      self._trajectories[epoch] = self._read_epoch(file_name, epoch)
    self._saved_epochs_unchanged = epochs

  def save_to_file(self, file_name):
    """Saves the buffer: changed epochs first, then the index naming them.

    Every file is replaced atomically and the index is written last, so a
    save interrupted at any point leaves the previous save readable.
    """
    for epoch, trajectories in self._trajectories.items():
      if epoch in self._saved_epochs_unchanged:
        continue
      weight_files.pickle_to_file(
          [_trajectory_to_data(t) for t in trajectories],
          self._epoch_filename(file_name, epoch), gzip=True)
    index = {'n_interactions': self._n_interactions,
             'n_trajectories': self._n_trajectories,
             'max_steps': self._max_steps,
             'gamma': self._gamma,
             'all_epochs': list(self._trajectories.keys())}
    weight_files.pickle_to_file(index, file_name, gzip=False)
    self._saved_epochs_unchanged = list(self._trajectories.keys())

  # Playing.

  def play(self, policy, max_steps=None, only_eval=False):
    """Plays one trajectory (slice) with `policy`; returns it with returns.

    Training play continues the episode the previous call cut at
    `max_steps`, until `time_limit` steps in all; evaluation play
    (`only_eval`) always starts a fresh episode in the evaluation
    environment.
    """
    max_steps = self._max_steps if max_steps is None else max_steps
    if only_eval:
      trajectory = play(
          self._eval_env, policy, self._dm_suite,
          max_steps=_at_most(max_steps, self._time_limit),
          last_observation=self._reset_observation(self._eval_env, 1))
    else:
      start = self._last_observation
      if start is None:
        start = self._reset_observation(self._env, 0)
      trajectory = play(
          self._env, policy, self._dm_suite,
          max_steps=_at_most(max_steps, self._n_steps_left),
          last_observation=start)
      if self._n_steps_left is not None:
        self._n_steps_left -= len(trajectory) - 1
        if self._n_steps_left <= 0:
          trajectory.done = True
      if trajectory.done:
        self._last_observation = None
        self._n_steps_left = self._time_limit
      else:
        self._last_observation = trajectory.last_observation
    trajectory.calculate_returns(self._gamma)
    return trajectory

  def collect_trajectories(self, policy, n_trajectories=None,
                           n_interactions=None, only_eval=False,
                           max_steps=None, epoch_id=1):
    """Plays `n_trajectories` trajectories or `n_interactions` steps.

    Args:
      policy: function from a `Trajectory` to `(action, dist_inputs)`.
      n_trajectories: how many trajectories to play, or None.
      n_interactions: how many environment steps to play (used when
        `n_trajectories` is None).
      only_eval: play in the evaluation environment and keep nothing.
      max_steps: optional slice limit in place of the task's.
      epoch_id: the buffer epoch the new trajectories go to.

    Returns:
      The mean undiscounted return of the new trajectories (0 if none).

    Raises:
      ValueError: if neither count is given.
    """
    max_steps = max_steps or self._max_steps
    if n_trajectories is not None:
      new = [self.play(policy, max_steps=max_steps, only_eval=only_eval)
             for _ in range(n_trajectories)]
    elif n_interactions is not None:
      new = []
      while n_interactions > 0:
        trajectory = self.play(policy,
                               max_steps=_at_most(n_interactions, max_steps))
        new.append(trajectory)
        n_interactions -= len(trajectory) - 1
    else:
      raise ValueError(
          'Either n_trajectories or n_interactions must be defined.')
    returns = [t.total_return for t in new]
    mean_return = sum(returns) / float(len(returns)) if returns else 0
    if only_eval:
      return mean_return
    if new:
      self._trajectories[epoch_id].extend(new)
    self._saved_epochs_unchanged = [
        e for e in self._saved_epochs_unchanged if e != epoch_id]
    kept = {epoch: trajectories
            for epoch, trajectories in self._trajectories.items()
            if epoch >= epoch_id - self._n_replay_epochs}
    self._trajectories = collections.defaultdict(list, kept)
    self._n_trajectories += len(new)
    self._n_interactions += sum(len(t) for t in new)
    return mean_return

  def n_trajectories(self, epochs=None):
    """Trajectories collected so far (all epochs; `epochs` is ignored)."""
    del epochs
    return self._n_trajectories

  def n_interactions(self, epochs=None):
    """Observations collected so far (all epochs; `epochs` is ignored)."""
    del epochs
    return self._n_interactions

  # Training data.

  def _random_slice(self, trajectory, max_slice_length, margin):
    start = onp.random.randint(_n_slices(trajectory, max_slice_length,
                                         margin))
    batch = trajectory.to_np(margin, self._timestep_to_np)
    stop = start + (max_slice_length or batch.observation.shape[0])
    return fastmath.nested_map(lambda x: x[start:stop], batch)

  def _trajectory_stream(self, epochs=None, max_slice_length=None,
                         sample_trajectories_uniformly=False, margin=0):
    """Endless trajectories, sampled by their number of slices.

    An epoch is drawn in proportion to its slices, then one of its
    trajectories in proportion to its own (or uniformly). Before anything
    is collected, the example trajectory comes out, so networks can be
    built from its shapes. New epochs join as they appear.
    """
    slices_of = {}   # epoch -> array of each trajectory's slice count
    sampled = []     # epochs to draw from
    weights = []     # their total slice counts

    def catch_up():
      all_epochs = list(self._trajectories.keys())
      for epoch in all_epochs:
        if epoch not in slices_of:
          slices_of[epoch] = onp.array([
              _n_slices(t, max_slice_length, margin)
              for t in self._trajectories[epoch]])
      end = max(all_epochs) + 1
      # Negative epochs count from the end (-1: the last).
      wanted = {epoch % end for epoch in (epochs or all_epochs)}
      sampled[:] = [epoch for epoch in wanted
                    if self._trajectories.get(epoch) and epoch in slices_of]
      weights[:] = [slices_of[epoch].sum() for epoch in sampled]

    while True:
      if not any(self._trajectories.values()):
        # Nothing collected yet (or only empty epochs, e.g. restored).
        yield self._example_trajectory
        continue
      if self._trajectories.keys() - slices_of.keys() or not sampled:
        catch_up()
      epoch = _sample_proportionally(sampled, weights)
      trajectories = self._trajectories[epoch]
      if sample_trajectories_uniformly:
        per_trajectory = onp.ones((len(trajectories),))
      else:
        per_trajectory = slices_of[epoch]
      yield _sample_proportionally(trajectories, per_trajectory)

  def trajectory_slice_stream(self, epochs=None, max_slice_length=None,
                              sample_trajectories_uniformly=False, margin=0,
                              trajectory_stream_preprocessing_fn=None):
    """Endless random slices (`TimeStepBatch`es of arrays) of trajectories.

    Args:
      epochs: the epochs to sample from (negative counts from the end);
        all by default.
      max_slice_length: the longest slice; whole trajectories if None.
      sample_trajectories_uniformly: draw trajectories uniformly instead of
        in proportion to their slices.
      margin: padding steps past the end of each trajectory (see `to_np`).
      trajectory_stream_preprocessing_fn: optional function applied to the
        stream of trajectories before slicing (e.g. a filter).

    Yields:
      TimeStepBatch slices.
    """
    stream = self._trajectory_stream(
        epochs=epochs, max_slice_length=max_slice_length,
        sample_trajectories_uniformly=sample_trajectories_uniformly,
        margin=margin)
    if trajectory_stream_preprocessing_fn is not None:
      stream = trajectory_stream_preprocessing_fn(stream)
    for trajectory in stream:
      yield self._random_slice(trajectory, max_slice_length, margin)

  def trajectory_batch_stream(self, batch_size, epochs=None,
                              max_slice_length=None, min_slice_length=None,
                              margin=0, sample_trajectories_uniformly=False,
                              trajectory_stream_preprocessing_fn=None):
    """Endless batches of `batch_size` slices, stacked and zero-padded.

    Arguments as in `trajectory_slice_stream`, plus `min_slice_length`:
    shorter batches are padded to it. Slices of unequal length are padded
    to the next power of two of the longest (padding has `mask` 0).

    Yields:
      TimeStepBatch of arrays with leading axes [batch_size, length]
      (observations [batch_size, length] + the observation shape).
    """
    slices = self.trajectory_slice_stream(
        epochs=epochs, max_slice_length=max_slice_length,
        sample_trajectories_uniformly=sample_trajectories_uniformly,
        margin=margin,
        trajectory_stream_preprocessing_fn=trajectory_stream_preprocessing_fn)
    pending = []
    for piece in slices:
      pending.append(piece)
      if len(pending) == batch_size:
        yield fastmath.nested_map(
            lambda arrays: _pad_to_power_of_two(arrays, min_slice_length),
            fastmath.nested_zip(pending), level=1)
        pending = []


# Trax configs' environment names that gymnasium spells otherwise, and the
# package each needs.
_TRAX_ENV_NAMES = {
    'LunarLander-v2': 'LunarLander-v3',
    'LunarLanderContinuous-v2': 'LunarLanderContinuous-v3',
    'BipedalWalker-v2': 'BipedalWalker-v3',
}
_PACKAGES = (
    ('ALE/', "ale-py (pip install ale-py), gymnasium's Atari games"),
    ('LunarLander', 'Box2D (pip install swig "gymnasium[box2d]")'),
    ('BipedalWalker', 'Box2D (pip install swig "gymnasium[box2d]")'),
    ('CarRacing', 'Box2D (pip install swig "gymnasium[box2d]")'),
)
_MUJOCO = 'MuJoCo (pip install "gymnasium[mujoco]")'


def _gymnasium_id(name, dm_suite):
  """The gymnasium id for a Trax config's environment name."""
  if dm_suite:
    # Trax's Atari configs name a game (`boxing`, `space_invaders`) and
    # load it through the DeepMind interface; gymnasium has it under ALE.
    game = ''.join(part.capitalize() for part in name.split('_'))
    return f'ALE/{game}-v5'
  if name.startswith('DM-') and name.endswith('-v2'):
    # Trax's MuJoCo names: `DM-HalfCheetah-v2` -> gymnasium's v5.
    return name[len('DM-'):-len('-v2')] + '-v5'
  return _TRAX_ENV_NAMES.get(name, name)


def _gymnasium_maker(name, dm_suite=False, num_stacked_frames=1):
  """A function making new copies of the environment `name`.

  Its `env_id` attribute is the gymnasium id. Atari games (`dm_suite`)
  stack their last `num_stacked_frames` frames.

  Raises:
    ImportError: if gymnasium, or the package the environment needs
      (ale-py, Box2D, MuJoCo), is not installed; the message names it.
  """
  try:
    import gymnasium  # pylint: disable=g-import-not-at-top
  except ImportError as e:
    raise ImportError(
        f'RLTask: making the environment {name!r} needs gymnasium; install '
        f"it with pip install 'tfnp-trax[rl]'.") from e
  env_id = _gymnasium_id(name, dm_suite)

  def make():
    try:
      env = gymnasium.make(env_id)
    except (gymnasium.error.DependencyNotInstalled,
            gymnasium.error.NamespaceNotFound, ImportError) as e:
      needs = next((what for prefix, what in _PACKAGES
                    if env_id.startswith(prefix)), None)
      if needs is None and env_id.endswith('-v5') and not env_id.startswith(
          'ALE/'):
        needs = _MUJOCO
      needs = needs or 'its package'
      raise ImportError(
          f'RLTask: the environment {name!r} (gymnasium {env_id!r}) needs '
          f'{needs}, which is not installed: {e}') from e
    if dm_suite and num_stacked_frames > 1:
      env = gymnasium.wrappers.FrameStackObservation(env, num_stacked_frames)
    return env

  make.env_id = env_id
  return make


def _dm_action_space(env):
  import gymnasium  # pylint: disable=g-import-not-at-top
  return gymnasium.spaces.Discrete(env.action_spec().num_values)


def _dm_observation_space(env):
  import gymnasium  # pylint: disable=g-import-not-at-top
  spec = env.observation_spec()
  return gymnasium.spaces.Box(low=float('-inf'), high=float('inf'),
                              shape=spec.shape, dtype=spec.dtype)
