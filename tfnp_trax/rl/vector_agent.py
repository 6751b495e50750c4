"""VectorAgent: the collect / learn / log / checkpoint loop of the fast agents.

The agents of `actor_critic` and `actor_critic_joint` (PPO, A2C, AWR and
their joint versions) derive from it. They collect from a
`vector_task.VectorTask` (environment copies in lock-step) with one
compiled policy call per step; `training.Agent` is the base class of the
agents that collect whole trajectories one at a time through `task.RLTask`.

Each epoch collects `n_interactions_per_epoch` environment steps with the
current policy, hands them to `train_epoch`, and logs the returns of the
episodes that finished. Networks train through `supervised.Trainer`, so
they run under any tf.distribute strategy. With an `output_dir`, metrics go
to TensorBoard (`<output_dir>/<mode>`) and to `history`, and checkpoints of
every trainer plus the epoch and env-step counters make runs resumable.
The epoch counter, History, summaries, checkpoints, the chief-only rule and
preemption handling are `supervised.loop.bookkeeping.RunBookkeeping`, the
same piece the supervised `Loop` uses.
"""

import time

from absl import logging
import numpy as onp
import tensorflow as tf

from tfnp_trax import fastmath
from tfnp_trax import shapes
from tfnp_trax.layers import naming
from tfnp_trax.rl import _compiled
from tfnp_trax.rl import distributions
from tfnp_trax.rl import vector_task
from tfnp_trax.supervised import trainer as trainer_lib
from tfnp_trax.supervised.loop import bookkeeping

__all__ = ['VectorAgent']


class VectorAgent:
  """Base class: subclasses build trainers and implement `train_epoch`.

  Args:
    task: the task to collect from: a `vector_task.VectorTask`, or a
      `task.RLTask`, which is collected from through
      `vector_task.from_task(task)` (8 copies of an environment named by
      id, the task's own object otherwise).
    n_interactions_per_epoch: environment steps per epoch, over all of the
      task's environment copies (a multiple of `task.n_envs`).
    n_eval_episodes: episodes to evaluate after each epoch (0: none).
    eval_temperatures: sampling temperatures to evaluate at.
    output_dir: where TensorBoard logs and checkpoints go (None: nowhere).
    random_seed: seeds network init, sampling and minibatch order.
    strategy: tf.distribute strategy for training (default: current).
    jit_compile: compile steps and policy calls with XLA.
    checkpoint_every: write a checkpoint every this many epochs.
    n_returns_to_average: `avg_return` is over this many last episodes.
    policy_distribution: the action distribution (default:
      `distributions.create_distribution(task.action_space)`).
    keep_checkpoints: how many rotating `ckpt-<epoch>` checkpoints to keep.
    checkpoint_errors: 'raise' (a failed checkpoint write stops training
      with a CheckpointWriteError) or 'warn' (warn, train on, retry at the
      next checkpoint); see `Loop`.
    async_checkpoints: write checkpoints on a background thread after an
      on-device copy (see `Loop`); `run` and `run_env_steps` return with
      the last write complete.

  Preemption: while `run` or `run_env_steps` is active, SIGTERM or SIGINT
  lets the current epoch finish, writes a checkpoint, flushes summaries and
  raises `supervised.training.Preempted` naming it (see `Loop`). Under
  several workers only the chief writes, and all workers stop after the
  same epoch.
  """

  def __init__(self, task, n_interactions_per_epoch=256, n_eval_episodes=0,
               eval_temperatures=(0.0,), output_dir=None, random_seed=0,
               strategy=None, jit_compile=True, checkpoint_every=10,
               n_returns_to_average=20, policy_distribution=None,
               keep_checkpoints=3, checkpoint_errors='raise',
               async_checkpoints=True):
    task = vector_task.from_task(task)
    if n_interactions_per_epoch % task.n_envs:
      raise ValueError(
          f'{type(self).__name__}: n_interactions_per_epoch '
          f'{n_interactions_per_epoch} is not a multiple of the task\'s '
          f'{task.n_envs} environments.')
    self._task = task
    self._n_interactions_per_epoch = n_interactions_per_epoch
    self._rollout_length = n_interactions_per_epoch // task.n_envs
    self._policy_dist = policy_distribution or (
        distributions.create_distribution(task.action_space))
    self._n_eval_episodes = n_eval_episodes
    self._eval_temperatures = tuple(eval_temperatures)
    self._seed = int(random_seed)
    self._strategy = strategy or tf.distribute.get_strategy()
    self._books = bookkeeping.RunBookkeeping(
        type(self).__name__, output_dir, self._strategy, keep_checkpoints,
        checkpoint_errors, async_checkpoints=async_checkpoints)
    self._jit_compile = jit_compile
    self._checkpoint_every = checkpoint_every
    self._n_returns_to_average = n_returns_to_average
    self._env_steps = 0
    self._steps = {}
    self._leaf_names = {}
    self._samplers = {}
    self._summaries = self._books.summary_writers()
    self.avg_returns = []

  # -- The run's bookkeeping, kept in self._books ------------------------------
  def _get_epoch(self):
    return self._books.step

  def _set_epoch(self, epoch):
    self._books.step = epoch

  _epoch = property(_get_epoch, _set_epoch)

  def _get_history(self):
    return self._books.history

  def _set_history(self, history):
    self._books.history = history

  history = property(_get_history, _set_history,
                     doc='The History of logged values, by env step.')
  _output_dir = property(lambda self: self._books.output_dir)
  _ckpt = property(lambda self: self._books.manager)

  # -- Properties ------------------------------------------------------------
  @property
  def task(self):
    return self._task

  @property
  def epoch(self):
    return self._epoch

  @property
  def is_chief(self):
    """Whether this worker writes checkpoints and summaries."""
    return self._books.is_chief

  @property
  def env_steps(self):
    """Environment steps collected for training so far (all copies)."""
    return self._env_steps

  @property
  def n_interactions_per_epoch(self):
    return self._n_interactions_per_epoch

  @property
  def policy_distribution(self):
    return self._policy_dist

  # -- To override -----------------------------------------------------------
  def _collect_model(self):
    """`(model, head)`: output `head` of `model` gives the dist inputs."""
    raise NotImplementedError

  def _collect_weights(self):
    """`(weights, state)` of the collect model, from the trainer."""
    raise NotImplementedError

  def _trainers(self):
    """Dict name -> Trainer of everything that learns (for checkpoints)."""
    raise NotImplementedError

  def _value_network(self):
    """`(model, head, weights, state, scale)` of the value estimate, or None.

    `scale` multiplies the model's output into the value itself.
    """
    return None

  # -- What export.save_policy reads -------------------------------------------
  def policy_export(self):
    """The current policy (and value) networks, for `export.save_policy`.

    Returns:
      A dict: `policy` `(model, head, weights, state)` giving distribution
      inputs from a batch of observations, `distribution`, `value` (as
      `_value_network`, or None), and the task's `observation_space` and
      `action_space`.
    """
    model, head = self._collect_model()
    weights, state = self._collect_weights()
    return {'policy': (model, head, weights, state),
            'distribution': self._policy_dist,
            'value': self._value_network(),
            'observation_space': self._task.observation_space,
            'action_space': self._task.action_space}

  def train_epoch(self, trajectory_batch):
    """Learns from one epoch of data; returns {mode: {metric: value}}."""
    raise NotImplementedError

  # -- Helpers for subclasses ------------------------------------------------
  def _rng(self, *data):
    """A key for `data`; by convention data[0] names the use: 0 init,
    1 collection, 2 training steps, 3 evaluation."""
    key = fastmath.random.get_prng(self._seed)
    for d in data:
      key = fastmath.random.fold_in(key, d)
    return key

  def _make_trainer(self, name, model_with_loss, sample_batch, optimizer):
    """Initializes `model_with_loss` on the per-replica batch; a Trainer."""
    n = self._strategy.num_replicas_in_sync
    if sample_batch[0].shape[0] % n:
      raise ValueError(
          f'{type(self).__name__}: the {name} batch size '
          f'{sample_batch[0].shape[0]} does not divide by the {n} replicas.')
    signature = tuple(shapes.ShapeDtype((x.shape[0] // n,) + x.shape[1:],
                                        x.dtype) for x in sample_batch)
    model_with_loss.init(signature, rng=self._rng(0, len(self._steps)))
    self._steps[name] = 0
    self._leaf_names[name] = naming.leaf_names(
        model_with_loss, model_with_loss.weights, prefix=name)
    return trainer_lib.Trainer(model_with_loss, optimizer, self._strategy,
                               jit_compile=self._jit_compile)

  def _train_step(self, name, trainer, batch, lr_schedule=None):
    step = self._steps[name]
    lr = None if lr_schedule is None else float(lr_schedule(step))
    index = sorted(self._steps).index(name)
    loss, _ = trainer.one_step(batch, self._rng(2, index, step), step,
                               learning_rate=lr)
    self._steps[name] = step + 1
    return loss

  def _sampler(self, temperature):
    if temperature not in self._samplers:
      model, head = self._collect_model()
      self._samplers[temperature] = _compiled.PolicySampler(
          model, self._policy_dist, temperature=temperature, head=head,
          jit_compile=self._jit_compile)
    sampler = self._samplers[temperature]
    sampler.set_weights(*self._collect_weights())
    return sampler

  # -- The loop ----------------------------------------------------------------
  def collect(self):
    """Collects one epoch of experience with the current policy."""
    sampler = self._sampler(1.0)
    sampler.set_key(self._rng(1, self._epoch))
    return self._task.collect(sampler, self._rollout_length)

  def run(self, n_epochs=1, n_epochs_is_total_epochs=False):
    """Runs `n_epochs` more epochs (or up to `n_epochs` in total).

    Raises:
      Preempted: on SIGTERM/SIGINT, after the epoch's checkpoint.
    """
    target = n_epochs if n_epochs_is_total_epochs else self._epoch + n_epochs
    with self._books.watch_signals():
      while self._epoch < target:
        self._run_epoch()
      self._finish()

  def run_env_steps(self, n_env_steps):
    """Runs epochs until `n_env_steps` steps were collected in total."""
    with self._books.watch_signals():
      while self._env_steps < n_env_steps:
        self._run_epoch()
      self._finish()

  def _run_epoch(self):
    start = time.time()
    n_done = len(self._task.episode_returns)
    batch = self.collect()
    self._env_steps += batch.reward.size
    collect_time = time.time() - start
    metrics = self.train_epoch(batch) or {}
    self._epoch += 1
    new_returns = self._task.episode_returns[n_done:]
    recent = self._task.episode_returns[-self._n_returns_to_average:]
    rl = {'env_steps': self._env_steps, 'n_episodes': len(new_returns),
          'collect_seconds': collect_time,
          'epoch_seconds': time.time() - start}
    if recent:
      rl['avg_return'] = float(onp.mean(recent))
      self.avg_returns.append(rl['avg_return'])
    for temperature in self._eval_temperatures if self._n_eval_episodes \
        else ():
      returns = self.evaluate(self._n_eval_episodes, temperature)
      rl[f'eval_return_temperature_{temperature}'] = float(onp.mean(returns))
    metrics['rl'] = rl
    for mode, values in metrics.items():
      self._log(mode, values)
    logging.info('Epoch %d (%d env steps): %s', self._epoch,
                 self._env_steps, rl)
    if self._ckpt and self._epoch % self._checkpoint_every == 0:
      self.save_checkpoint()
    if self._books.stop_requested():
      self._books.stop(self._checkpoint_if_any)

  def _checkpoint_if_any(self):
    return self.save_checkpoint() if self._ckpt else None

  def _finish(self):
    if self._ckpt and not self._books.saved_at(self._epoch):
      saved = self._books.list_checkpoints()
      if not saved or saved[-1].step != self._epoch:
        self.save_checkpoint()
    self._books.wait_for_checkpoints()
    self._books.flush()

  def evaluate(self, n_episodes=20, temperature=0.0, seed=10_000):
    """Returns of `n_episodes` fresh episodes played by the current policy."""
    sampler = self._sampler(temperature)
    sampler.set_key(self._rng(3, seed, self._epoch))
    return self._task.evaluate(sampler, n_episodes, seed=seed)

  # -- Summaries and checkpoints --------------------------------------------
  def _log(self, mode, values):
    step = self._env_steps  # Learning curves are plotted against env steps.
    for name, value in values.items():
      self.history.append(mode, name, step, value)
    self._summaries.write(mode, step, values)

  def _init_checkpoints(self):
    """Sets up checkpoints of all trainers; resumes from the latest one."""
    if not self._output_dir:
      return
    trainers = self._trainers()
    with self._strategy.scope():
      self._counters = tf.Variable(
          onp.zeros(2 + len(trainers), onp.int64), trainable=False)
    variables = {'agent': [self._counters]}
    manifest = {}
    for name, trainer in sorted(trainers.items()):
      for group, vs in trainer.variables().items():
        variables[f'{name}_{group}'] = vs
      manifest[f'{name}_weights'] = [
          (leaf, list(v.shape)) for leaf, v in zip(
              self._leaf_names[name], trainer.variables()['weights'])]
    self._books.track(variables, manifest)
    self.load_checkpoint()

  def save_checkpoint(self):
    """Writes a checkpoint of the trainers and counters.

    Returns:
      Its folder; None on a non-chief worker, or after a failed write with
      checkpoint_errors='warn'.
    """
    if not self._ckpt:
      raise ValueError(f'{type(self).__name__}.save_checkpoint: no '
                       f'output_dir was given.')
    counts = [self._epoch, self._env_steps] + [
        self._steps[k] for k in sorted(self._trainers())]
    self._counters.assign(onp.array(counts, onp.int64))
    self._books.flush()
    return self._books.save(extra={'avg_returns': self.avg_returns})

  def load_checkpoint(self):
    """Restores the newest good checkpoint, if any; returns its epoch."""
    self._books.wait_for_checkpoints()
    manifest = self._ckpt.restore_latest()
    if manifest is None:
      return None
    self._books.restore(manifest)
    counts = [int(c) for c in self._counters.numpy()]
    self._epoch, self._env_steps = counts[:2]
    for name, count in zip(sorted(self._trainers()), counts[2:]):
      self._steps[name] = count
    self.avg_returns = list(manifest['extra'].get('avg_returns', []))
    # Environments can't be checkpointed: start fresh episodes, seeded apart
    # from the ones already played.
    self._task.reseed(self._seed + 7919 * self._epoch)
    logging.info('Resumed from %s at epoch %d.', manifest['path'],
                 self._epoch)
    return self._epoch
