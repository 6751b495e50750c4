"""RL agents that play whole trajectories: the `Agent` API and its families.

An `Agent` owns an `RLTask` and repeats an epoch: collect trajectories with
`policy` (a function of the trajectory so far), log the average return,
evaluate at the configured temperatures, then `train_epoch`. With an
`output_dir` it keeps TensorBoard scalars under `<output_dir>/rl`, the
operative gin config, and `rl.pkl` plus the task's trajectories, from
which a restarted agent resumes.

The families:

* `PolicyAgent`: a policy network trained by the epoch `Trainer`
  (subclasses give `policy_loss` and `policy_batches_stream`);
* `LoopPolicyAgent`: a policy network trained by a `Loop` with the
  `policy_tasks` train and eval tasks; `PolicyGradient` (REINFORCE with a
  mean-return baseline) and `ExpertIteration` (imitating the best
  trajectories of an expert) are its two algorithms;
* `ValueAgent`: a Q-network (`models.Quality`) with a target network;
  `DQN` trains it on n-step returns and acts epsilon-greedily.

Policies run the network on the last `max_slice_length` observations of
the trajectory, one compiled call per step. The faster lock-step agents
(PPO, A2C, AWR) are in `actor_critic` and derive from
`vector_agent.VectorAgent`.
"""

import contextlib
import functools
import os
import time
import weakref

import numpy as onp

from tfnp_trax import atomic_files
from tfnp_trax import data
from tfnp_trax import fastmath
from tfnp_trax import layers as tl
from tfnp_trax import models
from tfnp_trax import optimizers
from tfnp_trax import shapes
from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.layers import weight_files
from tfnp_trax.rl import _compiled
from tfnp_trax.rl import advantages
from tfnp_trax.rl import distributions
from tfnp_trax.rl import policy_tasks
from tfnp_trax.supervised import lr_schedules as lr
from tfnp_trax.supervised import summaries
from tfnp_trax.supervised import trainer_lib
from tfnp_trax.supervised import training

__all__ = ['Agent', 'PolicyAgent', 'remaining_evals', 'LoopPolicyAgent',
           'PolicyGradient', 'sharpened_network_policy', 'ExpertIteration',
           'network_policy', 'ValueAgent', 'DQN']


class _Network:
  """Runs a layer's forward pass compiled, keeping its state up to date.

  One trace per input shape. The weights and state are held in variables
  the compiled function reads (`_compiled.HeldTree`), assigned only when
  a call brings other leaf objects than the last one, so a step's call passes
  just the observations. The layer's state is replaced by the new state
  after each call, as calling the layer itself would (collect-mode layers
  such as `normalization.Normalize` update statistics this way).
  """

  def __init__(self, model):
    # A weak reference: the runner lives in a cache keyed by the layer.
    self._model = weakref.ref(model)
    self._weights = _compiled.HeldTree()
    self._state = _compiled.HeldTree()
    self._held = (None, None)  # Leaves last assigned (kept alive).

    def apply(x, rng):
      return self.model.pure_fn(x, self._weights.read(), self._state.read(),
                                rng)
    self._apply = fastmath.jit(apply, jit_compile=False)

  @property
  def model(self):
    return self._model()

  def __call__(self, x, weights=None, state=None):
    """The outputs on `x`; the layer's own state is updated unless given."""
    own_state = state is None
    weights = self.model.weights if weights is None else weights
    state = self.model.state if own_state else state
    # Leaves, not trees, are compared: a tree changed in place still has
    # new leaves.
    leaves = (fastmath.tree_flatten(weights), fastmath.tree_flatten(state))
    if not _same_objects(leaves[0], self._held[0]):
      self._weights.assign(weights)
    if not _same_objects(leaves[1], self._held[1]):
      self._state.assign(state)
    self._held = leaves
    outputs, new_state = self._apply(jnp.asarray(x), self.model.rng)
    if own_state:
      self.model.state = new_state
    return outputs


def _same_objects(xs, ys):
  return ys is not None and len(xs) == len(ys) and all(
      x is y for x, y in zip(xs, ys))


# One compiled runner per layer, alive as long as the layer is.
_NETWORKS = weakref.WeakKeyDictionary()


def _network(model):
  runner = _NETWORKS.get(model)
  if runner is None:
    runner = _NETWORKS[model] = _Network(model)
  return runner


def _numpy(x):
  return onp.asarray(x)


class Agent:
  """Plays an RLTask epoch by epoch; subclasses give `policy` and training.

  Args:
    task: the `task.RLTask` to play in.
    n_trajectories_per_epoch: trajectories to collect each epoch.
    n_interactions_per_epoch: environment steps to collect each epoch (used
      when `n_trajectories_per_epoch` is None).
    n_eval_episodes: episodes to play at each evaluation temperature after
      each epoch (0: no evaluation).
    eval_steps: step limits to evaluate with (default: the task's
      `max_steps`).
    eval_temperatures: the temperatures to evaluate at (training collects at
      temperature 1).
    only_eval: collect without storing the trajectories.
    output_dir: where summaries, the gin config and the agent's files go;
      None writes nothing. An existing `rl.pkl` there is resumed from.
    timestep_to_np: replaces the task's `timestep_to_np` if given.
  """

  def __init__(self, task, n_trajectories_per_epoch=None,
               n_interactions_per_epoch=None, n_eval_episodes=0,
               eval_steps=None, eval_temperatures=(0.0,), only_eval=False,
               output_dir=None, timestep_to_np=None):
    if n_trajectories_per_epoch is None and n_interactions_per_epoch is None:
      raise ValueError(
          'Exactly one of n_trajectories_per_epoch or '
          'n_interactions_per_epoch should be specified.')
    self._epoch = 0
    self._task = task
    self._eval_steps = eval_steps or [task.max_steps]
    if timestep_to_np is not None:
      self._task.timestep_to_np = timestep_to_np
    self._n_trajectories_per_epoch = n_trajectories_per_epoch
    self._n_interactions_per_epoch = n_interactions_per_epoch
    self._only_eval = only_eval
    self._output_dir = output_dir
    self._avg_returns = []
    self._n_eval_episodes = n_eval_episodes
    self._eval_temperatures = eval_temperatures
    self._avg_returns_temperatures = {
        t: {steps: [] for steps in self._eval_steps}
        for t in eval_temperatures}
    if self._output_dir is not None:
      self.init_from_file()

  @property
  def current_epoch(self):
    """The number of epochs run so far."""
    return self._epoch

  @property
  def task(self):
    return self._task

  @property
  def avg_returns(self):
    """The average training return of each epoch."""
    return self._avg_returns

  def save_gin(self, summary_writer=None):
    """Writes the operative gin config to `<output_dir>/config.gin`."""
    if self._output_dir is None:
      raise ValueError(f'{type(self).__name__}.save_gin: the agent has no '
                       f'output_dir to write config.gin to.')
    from tfnp_trax import gin_config  # pylint: disable=g-import-not-at-top
    text = gin_config.operative_config_str()
    atomic_files.write_atomically(
        os.path.join(self._output_dir, 'config.gin'), text.encode())
    del summary_writer  # Text summaries are not written.

  def _agent_file(self, file_name):
    return os.path.join(self._output_dir, file_name)

  def save_to_file(self, file_name='rl.pkl',
                   task_file_name='trajectories.pkl'):
    """Saves the task's trajectories, then the epoch and average returns."""
    if self._output_dir is None:
      raise ValueError(f'{type(self).__name__}.save_to_file: the agent has '
                       f'no output_dir.')
    self._task.save_to_file(self._agent_file(task_file_name))
    record = {'epoch': self._epoch, 'avg_returns': self._avg_returns}
    for t in self._eval_temperatures:
      record[f'avg_returns_temperature_{t}'] = (
          self._avg_returns_temperatures[t])
    weight_files.pickle_to_file(record, self._agent_file(file_name))

  def init_from_file(self, file_name='rl.pkl',
                     task_file_name='trajectories.pkl'):
    """Resumes the task's trajectories, the epoch and the average returns."""
    if self._output_dir is None:
      raise ValueError(f'{type(self).__name__}.init_from_file: the agent has '
                       f'no output_dir.')
    task_path = self._agent_file(task_file_name)
    if os.path.exists(task_path):
      self._task.init_from_file(task_path)
    path = self._agent_file(file_name)
    if not os.path.exists(path):
      return
    record = weight_files.unpickle_from_file(path)
    self._epoch = record['epoch']
    self._avg_returns = list(record['avg_returns'])
    for t in self._eval_temperatures:
      self._avg_returns_temperatures[t] = record[
          f'avg_returns_temperature_{t}']

  def _collect_trajectories(self):
    return self.task.collect_trajectories(
        self.policy, n_trajectories=self._n_trajectories_per_epoch,
        n_interactions=self._n_interactions_per_epoch,
        only_eval=self._only_eval, epoch_id=self._epoch)

  def policy(self, trajectory, temperature=1.0):
    """`(action, dist_inputs)` to play after `trajectory` (a Trajectory)."""
    raise NotImplementedError

  def train_epoch(self):
    """Trains on the collected data for one epoch."""
    raise NotImplementedError

  @contextlib.contextmanager
  def _open_summary_writer(self):
    if self._output_dir is None:
      yield None
      return
    writer = summaries.SummaryWriter(os.path.join(self._output_dir, 'rl'))
    try:
      yield writer
    finally:
      writer.close()

  def _evaluate(self):
    for steps in self._eval_steps:
      for t in self._eval_temperatures:
        value = self.task.collect_trajectories(
            functools.partial(self.policy, temperature=t),
            n_trajectories=self._n_eval_episodes, max_steps=steps,
            only_eval=True)
        trainer_lib.log(f'Eval return in epoch {self._epoch} with '
                        f'temperature {t:.2f} was {value:.2f}.')
        self._avg_returns_temperatures[t][steps].append(value)

  def _write_summaries(self, writer, avg_return, collect_time, start,
                       n_before):
    writer.scalar('timing/collect', collect_time, step=self._epoch)
    writer.scalar('rl/avg_return', avg_return, step=self._epoch)
    if self._n_eval_episodes > 0:
      for steps in self._eval_steps:
        for t in self._eval_temperatures:
          writer.scalar(f'rl/avg_return_temperature{t:.2f}_steps{steps}',
                        self._avg_returns_temperatures[t][steps][-1],
                        step=self._epoch)
    n_interactions = self.task.n_interactions()
    writer.scalar('rl/n_interactions', n_interactions, step=self._epoch)
    writer.scalar('rl/n_interactions_per_second',
                  (n_interactions - n_before) / max(time.time() - start,
                                                    1e-9),
                  step=self._epoch)
    writer.scalar('rl/n_trajectories', self.task.n_trajectories(),
                  step=self._epoch)
    writer.flush()

  def run(self, n_epochs=1, n_epochs_is_total_epochs=False):
    """Runs `n_epochs` epochs (or up to `n_epochs` in all, if so asked)."""
    with self._open_summary_writer() as writer:
      n_to_run = n_epochs - (self._epoch if n_epochs_is_total_epochs else 0)
      for _ in range(n_to_run):
        self._epoch += 1
        start = time.time()
        n_before = self.task.n_interactions()
        avg_return = self._collect_trajectories()
        self._avg_returns.append(avg_return)
        collect_time = time.time() - start
        what = (f'{self._n_trajectories_per_epoch} episodes'
                if self._n_trajectories_per_epoch else
                f'{self._n_interactions_per_epoch} interactions')
        trainer_lib.log(f'Collecting {what} took {collect_time:.2f} '
                        f'seconds.')
        trainer_lib.log(f'Average return in epoch {self._epoch} was '
                        f'{avg_return:.2f}.')
        if self._n_eval_episodes > 0:
          self._evaluate()
        if writer is not None:
          self._write_summaries(writer, avg_return, collect_time, start,
                                n_before)
        start = time.time()
        self.train_epoch()
        trainer_lib.log(f'RL training took {time.time() - start:.2f} '
                        f'seconds.')
        if self._output_dir is not None:
          if self._epoch == 1:
            self.save_gin(writer)
          self.save_to_file()

  def close(self):
    pass


def _trajectory_policy_export(agent, model, head, weights, state, value):
  """`policy_export` parts of a trajectory agent: its networks read
  observations [batch, time, ...]; an exported call is one time step."""
  return {'policy': (model, head, weights, state),
          'distribution': agent._policy_dist,  # pylint: disable=protected-access
          'value': value,
          'observation_space': agent.task.observation_space,
          'action_space': agent.task.action_space,
          'time_axis': True}


def _last_step_prediction(outputs, head_index, n_inputs, where):
  if isinstance(outputs, (tuple, list)):
    outputs = outputs[head_index]
  outputs = _numpy(outputs)
  if outputs.ndim != 3 or outputs.shape[0] != 1 or (
      n_inputs is not None and outputs.shape[-1] != n_inputs):
    raise ValueError(
        f'{where}: the policy network must map observations [1, length, '
        f'...] to distribution inputs [1, length, {n_inputs}], got shape '
        f'{outputs.shape}.')
  return outputs[0, -1, :]


class PolicyAgent(Agent):
  """A policy network trained by the epoch `Trainer` on the task's data.

  Subclasses give `policy_loss` (a layer after the model) and
  `policy_batches_stream` (the training batches).

  Args:
    task: the RLTask.
    policy_model: function `(policy_distribution, mode) -> layer` mapping
      observations [batch, length, ...] to distribution inputs.
    policy_optimizer: the optimizer class.
    policy_lr_schedule: function returning the learning-rate schedule.
    policy_batch_size: the training batch size.
    policy_train_steps_per_epoch: training steps per epoch.
    policy_evals_per_epoch: trainer evaluations (metric logs) per epoch.
    policy_eval_steps: batches per trainer evaluation.
    n_eval_episodes, only_eval, output_dir, **kwargs: as in `Agent`.
    max_slice_length: observations the policy sees (the last ones).
  """

  def __init__(self, task, policy_model=None, policy_optimizer=None,
               policy_lr_schedule=lr.multifactor, policy_batch_size=64,
               policy_train_steps_per_epoch=500, policy_evals_per_epoch=1,
               policy_eval_steps=1, n_eval_episodes=0, only_eval=False,
               max_slice_length=1, output_dir=None, **kwargs):
    super().__init__(task, n_eval_episodes=n_eval_episodes,
                     output_dir=output_dir, **kwargs)
    self._policy_batch_size = policy_batch_size
    self._policy_train_steps_per_epoch = policy_train_steps_per_epoch
    self._policy_evals_per_epoch = policy_evals_per_epoch
    self._policy_eval_steps = policy_eval_steps
    self._only_eval = only_eval
    self._max_slice_length = max_slice_length
    self._policy_dist = distributions.create_distribution(task.action_space)
    self._policy_inputs = data.inputs.Inputs(
        train_stream=lambda _: self.policy_batches_stream())
    policy_model = functools.partial(policy_model,
                                     policy_distribution=self._policy_dist)
    self._policy_trainer = trainer_lib.Trainer(
        model=policy_model, optimizer=policy_optimizer or optimizers.Adam,
        lr_schedule=policy_lr_schedule(), loss_fn=self.policy_loss,
        inputs=self._policy_inputs, output_dir=output_dir,
        metrics=self.policy_metrics)
    sample = shapes.signature(next(self.policy_batches_stream()))
    self._policy_collect_model = policy_model(mode='collect')
    self._policy_collect_model.init(sample)
    # Evaluation plays do not update collect-mode statistics.
    self._policy_eval_model = policy_model(mode='eval')
    self._policy_eval_model.init(sample)

  @property
  def policy_loss(self):
    """The loss layer put after the policy model."""
    raise NotImplementedError

  @property
  def policy_metrics(self):
    return {'policy_loss': self.policy_loss}

  def policy_batches_stream(self):
    """The policy training batches, made from `self.task`."""
    raise NotImplementedError

  def policy(self, trajectory, temperature=1.0):
    """Samples an action after `trajectory` from the trained network."""
    model = self._policy_collect_model
    if temperature != 1.0:
      model = self._policy_eval_model
      model.state = self._policy_collect_model.state
    piece = trajectory.suffix(self._max_slice_length)
    observations = piece.to_np(timestep_to_np=self.task.timestep_to_np)
    outputs = _network(model)(observations.observation[None, ...],
                              weights=self._policy_trainer.model_weights)
    pred = _last_step_prediction(outputs, 0, None, type(self).__name__)
    return self._policy_dist.sample(pred, temperature=temperature), pred

  def train_epoch(self):
    _train_rest_of_epoch(self._policy_trainer, self._epoch,
                         self._policy_train_steps_per_epoch,
                         self._policy_evals_per_epoch, self._policy_eval_steps)

  def close(self):
    self._policy_trainer.close()
    super().close()


def remaining_evals(cur_step, epoch, train_steps_per_epoch, evals_per_epoch):
  """How many trainer evaluations are left in `epoch` at step `cur_step`.

  A resumed trainer may be partway through an epoch; it has done
  `cur_step - (epoch - 1) * train_steps_per_epoch` of its steps, in whole
  evaluation periods of `train_steps_per_epoch // evals_per_epoch`.

  Raises:
    ValueError: for an epoch below 1, a step before the epoch's start, or
      one inside an evaluation period.
  """
  if epoch < 1:
    raise ValueError(f'Epoch must be at least 1, got {epoch}')
  prev_steps = (epoch - 1) * train_steps_per_epoch
  done = cur_step - prev_steps
  if done < 0:
    raise ValueError(f'Current step ({cur_step}) < previously done steps '
                     f'({prev_steps}).')
  per_eval = train_steps_per_epoch // evals_per_epoch
  if done % per_eval != 0:
    raise ValueError(f'Done steps ({done}) must divide train steps per eval '
                     f'({per_eval}).')
  return evals_per_epoch - done // per_eval


def _train_rest_of_epoch(trainer, epoch, train_steps_per_epoch,
                         evals_per_epoch, eval_steps, after_each=None):
  """Runs the epoch `Trainer`'s evaluation periods left in `epoch`.

  A resumed trainer may be partway through the epoch (`remaining_evals`);
  `after_each` runs after each period's training and evaluation.
  """
  for _ in range(remaining_evals(trainer.step, epoch, train_steps_per_epoch,
                                 evals_per_epoch)):
    trainer.train_epoch(train_steps_per_epoch // evals_per_epoch, eval_steps)
    if after_each is not None:
      after_each()


class LoopPolicyAgent(Agent):
  """A policy network trained by a `Loop` with the policy tasks.

  Args:
    task: the RLTask.
    model_fn: function `(policy_distribution, mode) -> policy model`.
    value_fn: function `TimeStepBatch -> [batch, length]` baseline.
    weight_fn: function applied to the (normalized) advantages to give the
      log-likelihood weights.
    n_replay_epochs: how many of the last epochs to train on.
    n_train_steps_per_epoch: Loop steps per epoch.
    advantage_normalization: normalize advantages before `weight_fn`.
    optimizer: the optimizer class.
    lr_schedule: function returning the learning-rate schedule.
    batch_size: the training batch size.
    network_eval_at: function step -> bool: when the Loop evaluates.
    n_eval_batches: batches per Loop evaluation.
    max_slice_length: the length of the trajectory slices trained on and
      of the history the policy sees.
    trajectory_stream_preprocessing_fn: applied to the trajectory stream
      before batching (e.g. a filter).
    **kwargs: arguments of `Agent`.
  """

  def __init__(self, task, model_fn, value_fn, weight_fn, n_replay_epochs,
               n_train_steps_per_epoch, advantage_normalization,
               optimizer=optimizers.Adam, lr_schedule=lr.multifactor,
               batch_size=64, network_eval_at=None, n_eval_batches=1,
               max_slice_length=1, trajectory_stream_preprocessing_fn=None,
               **kwargs):
    self._n_train_steps_per_epoch = n_train_steps_per_epoch
    super().__init__(task, **kwargs)
    task.set_n_replay_epochs(n_replay_epochs)
    self._max_slice_length = max_slice_length
    batches = task.trajectory_batch_stream(
        batch_size, epochs=[-(ep + 1) for ep in range(n_replay_epochs)],
        max_slice_length=max_slice_length,
        sample_trajectories_uniformly=True,
        trajectory_stream_preprocessing_fn=trajectory_stream_preprocessing_fn)
    self._policy_dist = distributions.create_distribution(task.action_space)
    # Without a value network, Monte-Carlo returns are the estimator.
    train_task = policy_tasks.PolicyTrainTask(
        batches, optimizer(), lr_schedule(), self._policy_dist,
        advantage_estimator=advantages.monte_carlo(task.gamma, margin=0),
        advantage_normalization=advantage_normalization,
        value_fn=value_fn, weight_fn=weight_fn)
    eval_task = policy_tasks.PolicyEvalTask(train_task, n_eval_batches)
    model_fn = functools.partial(model_fn,
                                 policy_distribution=self._policy_dist)
    policy_dir = (None if self._output_dir is None else
                  os.path.join(self._output_dir, 'policy'))
    self._loop = training.Loop(
        model=model_fn(mode='train'), tasks=[train_task],
        eval_model=model_fn(mode='eval'), eval_tasks=[eval_task],
        output_dir=policy_dir, eval_at=network_eval_at,
        checkpoint_at=lambda step: step % n_train_steps_per_epoch == 0)
    self._collect_model = model_fn(mode='collect')
    self._collect_model.init(shapes.signature(train_task.sample_batch))
    if self._loop.step != self._epoch * self._n_train_steps_per_epoch:
      raise ValueError(
          f'The number of Loop steps must equal the number of Agent epochs '
          f'times the number of steps per epoch, got {self._loop.step}, '
          f'{self._epoch} and {self._n_train_steps_per_epoch}.')

  @property
  def loop(self):
    """The Loop that trains the policy."""
    return self._loop

  def policy_export(self):
    """The policy network for `export.save_policy` (see `Agent`)."""
    return _trajectory_policy_export(self, self._loop.eval_model, None,
                                     self._loop.model.weights,
                                     self._collect_model.state, None)

  def _slice(self, trajectory):
    piece = trajectory.suffix(self._max_slice_length)
    return piece.to_np(timestep_to_np=self.task.timestep_to_np)

  def train_epoch(self):
    # Statistics gathered while collecting go to the trained model.
    self._loop.update_weights_and_state(state=self._collect_model.state)
    self._loop.run(n_steps=self._n_train_steps_per_epoch)


class PolicyGradient(LoopPolicyAgent):
  """REINFORCE: one policy-gradient step per epoch, mean-return baseline.

  Args:
    task: the RLTask.
    model_fn: function `(policy_distribution, mode) -> policy model`.
    **kwargs: arguments of `LoopPolicyAgent` (batch_size, optimizer, ...).
  """

  def __init__(self, task, model_fn, **kwargs):
    super().__init__(
        task, model_fn, n_replay_epochs=1, n_train_steps_per_epoch=1,
        value_fn=self._value_fn, weight_fn=(lambda x: x),
        advantage_normalization=True, **kwargs)

  def policy(self, trajectory, temperature=1.0):
    return network_policy(
        collect_model=self._collect_model,
        policy_distribution=self._policy_dist, loop=self.loop,
        trajectory_np=self._slice(trajectory), temperature=temperature)

  @staticmethod
  def _value_fn(trajectory_batch):
    # Every state's baseline: the batch's mean return.
    value = onp.mean(trajectory_batch.return_)
    return onp.broadcast_to(value, trajectory_batch.return_.shape)


def sharpened_network_policy(temperature, temperature_multiplier=1.0,
                             **kwargs):
  """`network_policy` at `temperature * temperature_multiplier`.

  The expert of `ExpertIteration`: the policy network itself, sharpened by a
  multiplier below 1.
  """
  return network_policy(temperature=temperature_multiplier * temperature,
                        **kwargs)


class ExpertIteration(LoopPolicyAgent):
  """Imitates an expert on its best trajectories.

  Args:
    task: the RLTask.
    model_fn: function `(policy_distribution, mode) -> policy model`.
    expert_policy_fn: a function with `network_policy`'s arguments, which
      plays the episodes.
    quantile: trajectories above this quantile of return (among each
      buffer of `filter_buffer_size`) are trained on.
    n_replay_epochs: how many of the last epochs to train on.
    n_train_steps_per_epoch: Loop steps per epoch.
    filter_buffer_size: trajectories ranked together by the filter.
    **kwargs: arguments of `LoopPolicyAgent`.
  """

  def __init__(self, task, model_fn,
               expert_policy_fn=sharpened_network_policy, quantile=0.9,
               n_replay_epochs=10, n_train_steps_per_epoch=1000,
               filter_buffer_size=256, **kwargs):
    self._expert_policy_fn = expert_policy_fn
    self._quantile = quantile
    self._filter_buffer_size = filter_buffer_size
    super().__init__(
        task, model_fn,
        value_fn=(lambda batch: jnp.zeros_like(batch.return_)),
        weight_fn=jnp.ones_like,
        trajectory_stream_preprocessing_fn=self._filter_trajectories,
        advantage_normalization=False, n_replay_epochs=n_replay_epochs,
        n_train_steps_per_epoch=n_train_steps_per_epoch, **kwargs)

  def policy(self, trajectory, temperature=1.0):
    return self._expert_policy_fn(
        collect_model=self._collect_model,
        policy_distribution=self._policy_dist, loop=self.loop,
        trajectory_np=self._slice(trajectory), temperature=temperature)

  def _filter_trajectories(self, trajectory_stream):
    """Yields the best `1 - quantile` of each buffer of trajectories."""
    buffer = []
    n_best = int((1 - self._quantile) * self._filter_buffer_size) or 1
    for trajectory in trajectory_stream:
      buffer.append(trajectory)
      if len(buffer) == self._filter_buffer_size:
        buffer.sort(key=lambda t: t.timesteps[0].return_, reverse=True)
        yield from buffer[:n_best]
        buffer.clear()


def network_policy(collect_model, policy_distribution, loop, trajectory_np,
                   head_index=0, temperature=1.0):
  """Samples an action from the policy network trained by `loop`.

  At temperature 1 (collection) the collect model runs, updating its
  statistics; otherwise (evaluation) the loop's eval model runs with the
  collect model's state, leaving the statistics alone.

  Args:
    collect_model: the collect-mode policy model.
    policy_distribution: the action distribution.
    loop: the Loop training the policy (its weights are used).
    trajectory_np: a `TimeStepBatch` of the last observations.
    head_index: the policy output of a model with several outputs.
    temperature: the sampling temperature.

  Returns:
    `(action, dist_inputs)` for the last observation.
  """
  if temperature == 1.0:
    model = collect_model
  else:
    model = loop.eval_model
    model.state = collect_model.state
  outputs = _network(model)(trajectory_np.observation[None, ...],
                            weights=loop.model.weights)
  pred = _last_step_prediction(outputs, head_index,
                               policy_distribution.n_inputs,
                               'network_policy')
  if model is not collect_model:
    collect_model.state = model.state
  return policy_distribution.sample(pred, temperature=temperature), pred


class ValueAgent(Agent):
  """A Q-network (one value per discrete action) with a target network.

  Args:
    task: the RLTask (with a discrete action space).
    value_body: the layer between observations and `models.Quality`'s head.
    value_optimizer: the optimizer class.
    value_lr_schedule: function returning the learning-rate schedule.
    value_batch_size: the training batch size.
    value_train_steps_per_epoch: training steps per epoch.
    value_evals_per_epoch: trainer evaluations (metric logs) per epoch.
    value_eval_steps: batches per trainer evaluation.
    exploration_rate: function returning the schedule epoch -> epsilon.
    n_eval_episodes, only_eval, output_dir, **kwargs: as in `Agent`.
    n_replay_epochs: how many of the last epochs to train on.
    max_slice_length: the length of the trajectory slices trained on.
    sync_freq: the target network copies the trained one at training steps
      that are multiples of this.
    scale_value_targets: train on targets scaled by `1 - gamma`.
  """

  def __init__(self, task, value_body=None, value_optimizer=None,
               value_lr_schedule=lr.multifactor, value_batch_size=64,
               value_train_steps_per_epoch=500, value_evals_per_epoch=1,
               value_eval_steps=1,
               exploration_rate=functools.partial(
                   lr.multifactor, factors='constant * decay_every',
                   constant=1., decay_factor=0.99, steps_per_decay=1,
                   minimum=0.1),
               n_eval_episodes=0, only_eval=False, n_replay_epochs=1,
               max_slice_length=1, sync_freq=1000, scale_value_targets=True,
               output_dir=None, **kwargs):
    super().__init__(task, n_eval_episodes=n_eval_episodes,
                     output_dir=output_dir, **kwargs)
    if not hasattr(task.action_space, 'n'):
      raise TypeError(
          f'{type(self).__name__}: a Q-network needs a discrete action space '
          f'(with n actions), got {task.action_space!r}.')
    self._value_batch_size = value_batch_size
    self._value_train_steps_per_epoch = value_train_steps_per_epoch
    self._value_evals_per_epoch = value_evals_per_epoch
    self._value_eval_steps = value_eval_steps
    self._only_eval = only_eval
    self._max_slice_length = max_slice_length
    self._policy_dist = distributions.create_distribution(task.action_space)
    self._n_replay_epochs = n_replay_epochs
    self._exploration_rate = exploration_rate()
    self._sync_at = lambda step: step % sync_freq == 0
    self._value_network_scale = (1 / (1 - self._task.gamma)
                                 if scale_value_targets else 1)
    value_model = functools.partial(models.Quality, body=value_body,
                                    n_actions=self.task.action_space.n)
    self._value_eval_model = value_model(mode='eval')
    self._value_eval_model.init(self._value_model_signature)
    self._inputs = data.inputs.Inputs(
        train_stream=lambda _: self.value_batches_stream())
    self._value_trainer = trainer_lib.Trainer(
        model=value_model, optimizer=value_optimizer or optimizers.Adam,
        lr_schedule=value_lr_schedule(), loss_fn=self.value_loss,
        inputs=self._inputs, output_dir=output_dir,
        metrics={'value_loss': self.value_loss,
                 'value_mean': self.value_mean,
                 'returns_mean': self.returns_mean})
    value_batch = next(self.value_batches_stream())
    self._eval_model = value_model(mode='collect')
    self._eval_model.init(shapes.signature(value_batch))

  @property
  def _value_model_signature(self):
    obs = shapes.signature(self._task.observation_space)
    return shapes.ShapeDtype((1, 1) + tuple(obs.shape), obs.dtype)

  def value_batches_stream(self):
    """The value training batches, made from `self.task`."""
    raise NotImplementedError

  def policy(self, trajectory, temperature=1):
    raise NotImplementedError

  def _sync_target(self):
    self._value_eval_model.weights = self._value_trainer.model_weights
    self._value_eval_model.state = self._value_trainer.model_state

  def train_epoch(self):
    self._sync_target()
    _train_rest_of_epoch(
        self._value_trainer, self._epoch, self._value_train_steps_per_epoch,
        self._value_evals_per_epoch, self._value_eval_steps,
        after_each=lambda: self._value_trainer.log_metrics(
            {'exploration_rate': self._exploration_rate(self._epoch)}, None,
            'dqn'))
    if self._sync_at(self._value_trainer.step):
      self._sync_target()

  def close(self):
    self._value_trainer.close()
    super().close()

  @property
  def value_mean(self):
    """A metric: the mean value of the actions taken."""
    raise NotImplementedError

  @property
  def returns_mean(self):
    """A metric: the mean target return (over the mask)."""
    def f(values, index_max, returns, mask):
      del values, index_max
      return jnp.sum(returns) / jnp.sum(mask)
    return tl.Fn('ReturnsMean', f)


def _taken(values, actions, returns):
  """`values[b, t, actions[b, t]]` over the first `returns.shape[1]` steps."""
  length = returns.shape[1]
  values = values[:, :length, :]
  picked = jnp.take_along_axis(
      values, jnp.asarray(actions, dtype=jnp.int32)[..., None], axis=-1)
  return picked[..., 0]


def _check_same_shape(where, *arrays):
  shapes_seen = [tuple(a.shape) for a in arrays]
  if len(set(shapes_seen)) != 1:
    raise ValueError(f'{where}: the taken values, returns and mask must have '
                     f'one shape, got {shapes_seen}.')


class DQN(ValueAgent):
  """Deep Q-learning on n-step returns, with a target network.

  The loss compares the trained network's `Q(s, a)` for the actions taken
  with returns bootstrapped from the target network's `max_a' Q'`: the
  `advantage_estimator` (Monte-Carlo with margin L - 1 by default, L being
  `max_slice_length`) gives the return minus the state's value, to which
  that value is added back. Collection is epsilon-greedy with the
  `exploration_rate` schedule.

  Args:
    task: the RLTask.
    advantage_estimator: the estimator function (called with gamma and the
      margin) that gives the bootstrapped returns.
    max_slice_length: the slice length L (L - 1 steps of lookahead).
    smoothl1loss: Huber loss (True) or squared error.
    double_dqn: pick the bootstrap action with the trained network.
    **kwargs: arguments of `ValueAgent`.
  """

  def __init__(self, task, advantage_estimator=advantages.monte_carlo,
               max_slice_length=1, smoothl1loss=True, double_dqn=False,
               **kwargs):
    self._max_slice_length = max_slice_length
    self._margin = max_slice_length - 1
    self._advantage_estimator = advantage_estimator(gamma=task.gamma,
                                                    margin=self._margin)
    self._smoothl1loss = smoothl1loss
    self._double_dqn = double_dqn
    super().__init__(task=task, max_slice_length=max_slice_length, **kwargs)

  @property
  def value_loss(self):
    """Huber (or squared) error between the taken Q-values and targets."""
    def f(values, actions, returns, mask):
      picked = _taken(values, actions, returns)
      _check_same_shape('DQN.value_loss', picked, returns, mask)
      loss = tl.SmoothL1Loss() if self._smoothl1loss else tl.L2Loss()
      return loss.forward((picked, returns, mask))
    return tl.Fn('ValueLoss', f)

  @property
  def value_mean(self):
    """A metric: the mean Q-value of the actions taken."""
    def f(values, actions, returns, mask):
      picked = _taken(values, actions, returns)
      _check_same_shape('DQN.value_mean', picked, returns, mask)
      return jnp.sum(picked) / jnp.sum(mask)
    return tl.Fn('ValueMean', f)

  @property
  def _replay_epochs(self):
    return [-(ep + 1) for ep in range(self._n_replay_epochs)]

  def value_batches_stream(self):
    """Batches `(observations, actions, scaled n-step returns, mask)`."""
    # Margin 1 keeps each trajectory's last observation, so the step that
    # ends an episode starts a slice and is trained on (target: its
    # reward). Without it that step only ever ends a slice, no state learns
    # that the episode ends, and on CartPole every Q-value drifts to the
    # same 1 / (1 - gamma).
    for batch in self._task.trajectory_batch_stream(
        self._value_batch_size, max_slice_length=self._max_slice_length,
        min_slice_length=1, margin=1, epochs=self._replay_epochs):
      target_values = self._run_value_model(batch.observation,
                                            use_eval_model=True)
      if self._double_dqn:
        values = self._run_value_model(batch.observation,
                                       use_eval_model=False)
        best = onp.argmax(values, axis=-1)
        values_max = onp.take_along_axis(target_values, best[..., None],
                                         axis=-1)[..., 0]
      else:
        values_max = onp.max(target_values, axis=-1)
      # The estimator gives bootstrapped return minus the state's value.
      end = values_max.shape[1] - self._margin
      n_step_returns = values_max[:, :end] + _numpy(self._advantage_estimator(
          rewards=batch.reward, returns=batch.return_, values=values_max,
          dones=batch.done, discount_mask=batch.env_info.discount_mask))
      length = n_step_returns.shape[1]
      yield (batch.observation[:, :length], batch.action[:, :length],
             (n_step_returns / self._value_network_scale).astype(
                 onp.float32),
             onp.ones(n_step_returns.shape, onp.float32))

  def policy(self, trajectory, temperature=1):
    """Epsilon-greedy at temperature 1; greedy otherwise."""
    piece = trajectory.suffix(self._max_slice_length)
    observations = piece.to_np(timestep_to_np=self.task.timestep_to_np)
    obs = observations.observation[None, ...]
    values = self._run_value_model(obs, use_eval_model=False)[0, -1, :]
    if (temperature == 1 and
        onp.random.random_sample() < self._exploration_rate(self._epoch)):
      action = onp.array(self.task.action_space.sample())
    else:
      action = onp.argmax(values)
    return action, values

  def policy_export(self):
    """The Q-network for `export.save_policy`: `action` is the greedy
    action (argmax Q), `sample_action` draws from softmax(Q) (Boltzmann
    exploration) and `value` is max_a Q."""
    model = self._value_eval_model
    parts = _trajectory_policy_export(
        self, model, None, self._value_trainer.model_weights,
        self._value_trainer.model_state, None)
    parts['value'] = (model, None, self._value_trainer.model_weights,
                      self._value_trainer.model_state,
                      self._value_network_scale)
    parts['policy_scale'] = self._value_network_scale
    parts['value_reduce'] = 'max'
    return parts

  def _run_value_model(self, obs, use_eval_model=True):
    """Q-values [batch, length, n_actions] of the target or trained net."""
    if use_eval_model or not hasattr(self, '_value_trainer'):
      # Before the trainer exists (its first sample batch), the target
      # network stands in for it.
      weights = self._value_eval_model.weights
      state = self._value_eval_model.state
    else:
      weights = self._value_trainer.model_weights
      state = self._value_trainer.model_state
    values = _network(self._value_eval_model)(obs, weights=weights,
                                              state=state)
    return _numpy(values) * self._value_network_scale
