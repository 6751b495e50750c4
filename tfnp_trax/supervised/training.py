"""Trax's training API: TrainTask, EvalTask and Loop.

Loop trains a model with a Trainer (one compiled, replicated step), runs
evaluations, writes TensorBoard summaries and atomic checkpoints, and
resumes exactly from the latest good checkpoint in `output_dir`.
"""

import math
import os
import time

from absl import logging
import numpy as onp
import tensorflow as tf

from tfnp_trax import fastmath
from tfnp_trax import layers as tl
from tfnp_trax import shapes
from tfnp_trax.supervised import _inputs
from tfnp_trax.supervised import _naming
from tfnp_trax.supervised import checkpoints
from tfnp_trax.supervised import history as history_lib
from tfnp_trax.supervised import summaries
from tfnp_trax.supervised import trainer as trainer_lib

__all__ = ['TrainTask', 'EvalTask', 'Loop', 'LossIsNotFiniteError']


class LossIsNotFiniteError(FloatingPointError):
  """Training stopped because the loss became NaN or infinite."""


class TrainTask:
  """What to train on: data, loss layer, optimizer and schedule."""

  def __init__(self, labeled_data, loss_layer, optimizer, lr_schedule=None,
               n_steps_per_checkpoint=100, n_steps_per_permanent_checkpoint=None):
    self.labeled_data = labeled_data
    self.loss_layer = loss_layer
    self.optimizer = optimizer
    self.lr_schedule = lr_schedule
    self.n_steps_per_checkpoint = n_steps_per_checkpoint
    self.n_steps_per_permanent_checkpoint = n_steps_per_permanent_checkpoint

  def learning_rate(self, step):
    if self.lr_schedule is None:
      return float(self.optimizer.opt_params['learning_rate'])
    return float(self.lr_schedule(step))


class EvalTask:
  """What to evaluate: data, metric layers and their names."""

  def __init__(self, labeled_data, metrics, metric_names=None,
               n_eval_batches=1):
    self.labeled_data = labeled_data
    self.metrics = list(metrics)
    self.metric_names = list(metric_names or [m.name for m in self.metrics])
    if len(self.metric_names) != len(self.metrics):
      raise ValueError(f'EvalTask: {len(self.metrics)} metrics but '
                       f'{len(self.metric_names)} metric_names.')
    self.n_eval_batches = n_eval_batches


def _every(n):
  return lambda step: bool(n) and step % n == 0


def _first_and_every(n):
  return lambda step: step == 1 or (bool(n) and step % n == 0)


class Loop:
  """Runs training steps, evaluation, summaries and checkpoints.

  Example:
    >>> loop = Loop(model, TrainTask(data, tl.CrossEntropyLoss(), opt),
    ...             output_dir='/tmp/run')
    >>> loop.run(1000)
  """

  def __init__(self, model, tasks, eval_model=None, eval_tasks=None,
               output_dir=None, checkpoint_at=None, eval_at=None,
               strategy=None, callbacks=None, random_seed=0,
               keep_checkpoints=3, jit_compile=None, log_every=None):
    tasks = tasks if isinstance(tasks, (list, tuple)) else [tasks]
    if len(tasks) != 1:
      raise ValueError(f'Loop: trains exactly one TrainTask, got '
                       f'{len(tasks)}; run one Loop per task.')
    self._task = tasks[0]
    self._model = model
    self._eval_model = eval_model or model
    self._eval_tasks = list(eval_tasks or [])
    self._output_dir = output_dir
    self._strategy = strategy or tf.distribute.get_strategy()
    # With several workers only the chief writes checkpoints and summaries;
    # every worker reads the chief's checkpoints when it resumes.
    self._is_chief = _is_chief(self._strategy)
    self._seed = int(random_seed)
    self._checkpoint_at = checkpoint_at or _every(
        self._task.n_steps_per_checkpoint)
    n_perm = self._task.n_steps_per_permanent_checkpoint
    self._permanent_at = _every(n_perm) if n_perm else (lambda step: False)
    self._eval_at = eval_at or _first_and_every(
        self._task.n_steps_per_checkpoint)
    self._log_every = log_every or max(1, self._task.n_steps_per_checkpoint)
    self.history = history_lib.History()
    self._step = 0

    self._stream = _inputs.InputStream(self._task.labeled_data,
                                       self._strategy)
    sample = self._stream.peek()
    self._model_with_loss = tl.Serial(model, self._task.loss_layer)
    _init_keeping(self._model_with_loss, model,
                  _local_signature(sample, self._strategy),
                  rng=fastmath.random.get_prng(self._seed))
    self.trainer = trainer_lib.Trainer(self._model_with_loss,
                                       self._task.optimizer, self._strategy,
                                       jit_compile=jit_compile)
    self._callbacks = [cb(self) for cb in (callbacks or [])]
    self._eval_fns = {}
    self._summaries = summaries.SummaryWriters(output_dir, self._is_chief)
    self._ckpt = None
    if output_dir:
      tf.io.gfile.makedirs(output_dir)
      with self._strategy.scope():
        self._step_var = tf.Variable(0, dtype=tf.int64, trainable=False)
        self._position_var = tf.Variable(0, dtype=tf.int64, trainable=False)
        self._seed_var = tf.Variable(self._seed, dtype=tf.int64,
                                     trainable=False)
      variables = dict(self.trainer.variables())
      variables['loop'] = [self._step_var, self._position_var,
                           self._seed_var]
      names = _naming.leaf_names(self._model_with_loss)
      manifest = {
          'weights': [(n, list(v.shape)) for n, v in
                      zip(names, self.trainer.variables()['weights'])],
          'state': [(f'state_{i}', list(v.shape)) for i, v in
                    enumerate(self.trainer.variables()['state'])],
      }
      self._ckpt = checkpoints.CheckpointManager(
          os.path.join(output_dir, 'checkpoints'), variables, manifest,
          keep=keep_checkpoints)
      self.load_checkpoint()


  # -- Properties ------------------------------------------------------------
  @property
  def step(self):
    """The number of training steps done so far."""
    return self._step

  @property
  def model(self):
    return self._model

  @property
  def eval_model(self):
    return self._eval_model

  @property
  def output_dir(self):
    return self._output_dir

  @property
  def input_signature(self):
    """Per-replica signature of a training batch (inputs, targets, ...)."""
    return _local_signature(self._stream.peek(), self._strategy)

  @property
  def tasks(self):
    return [self._task]

  @property
  def eval_tasks(self):
    return self._eval_tasks

  # -- Training ----------------------------------------------------------------
  def _rng(self, step):
    return fastmath.random.fold_in(fastmath.random.get_prng(self._seed), step)

  def run(self, n_steps=1):
    """Runs `n_steps` more training steps, with evals and checkpoints."""
    target = self._step + n_steps
    start_time = time.time()
    start_step = self._step
    window_time, window_step = start_time, self._step
    loss = None
    while self._step < target:
      step = self._step + 1
      for cb in self._callbacks:
        if cb.call_at(step):
          cb.on_step_begin(step)
      try:
        batch = next(self._stream)
      except StopIteration as e:
        raise RuntimeError(
            f'Loop: the training data ran out at step {step}; make '
            f'labeled_data repeat (e.g. dataset.repeat()).') from e
      lr = self._task.learning_rate(step)
      loss, stats = self.trainer.one_step(batch, self._rng(step), step,
                                          learning_rate=lr)
      loss = float(loss)
      if not math.isfinite(loss):
        self._sync_model()
        last = self._ckpt.list()[-1][1] if self._ckpt and self._ckpt.list() \
            else 'none written'
        raise LossIsNotFiniteError(
            f'Loop: the training loss became {loss} at step {step}; training '
            f'stopped. The last good checkpoint is kept ({last}). Lower the '
            f'learning rate or set clip_grad_norm on the optimizer.')
      self._step = step
      if step % self._log_every == 0 or step == target or step == 1:
        now = time.time()
        steps_per_s = (step - window_step) / max(now - window_time, 1e-9)
        window_time, window_step = now, step
        values = {'loss': loss, 'learning_rate': lr,
                  'steps_per_second': steps_per_s}
        values.update({k: float(v) for k, v in stats.items()})
        self._log('train', step, values)
        eta = (target - step) / max((step - start_step) / max(
            now - start_time, 1e-9), 1e-9)
        _print(f'Step {step:6d}: loss {loss:.4f}  lr {lr:.2e}  '
               f'{steps_per_s:.1f} steps/s  ETA {eta:.0f}s')
      if self._eval_tasks and self._eval_at(step):
        self.run_evals()
      if self._ckpt and (self._checkpoint_at(step) or
                         self._permanent_at(step) or step == target):
        self.save_checkpoint(permanent=self._permanent_at(step))
      for cb in self._callbacks:
        if cb.call_at(step):
          cb.on_step_end(step)
    self._sync_model()
    self._flush()

  # -- Evaluation ------------------------------------------------------------
  def _eval_fn(self, index):
    if index not in self._eval_fns:
      task = self._eval_tasks[index]
      metrics = tl.Serial(self._eval_model, tl.Branch(*task.metrics))
      stream = _inputs.InputStream(task.labeled_data,
                                   tf.distribute.get_strategy())
      sample = stream.peek()
      _init_keeping(metrics, self._eval_model,
                    shapes.signature(tuple(onp.asarray(x) for x in sample)))

      def run(batch, weights, state):
        out, _ = metrics.pure_fn(batch, (weights, metrics.weights[1]),
                                 (state, metrics.state[1]),
                                 fastmath.random.get_prng(0))
        return out if isinstance(out, tuple) else (out,)
      self._eval_fns[index] = (tf.function(run, autograph=False), stream)
    return self._eval_fns[index]

  def run_evals(self):
    """Evaluates every EvalTask on the current weights; returns the values."""
    weights = self.trainer.model_weights[0]
    state = self.trainer.model_state[0]
    results = {}
    for i, task in enumerate(self._eval_tasks):
      fn, stream = self._eval_fn(i)
      sums = onp.zeros(len(task.metrics))
      for _ in range(task.n_eval_batches):
        batch = tuple(tf.convert_to_tensor(x) for x in next(stream))
        sums += onp.array([float(v) for v in fn(batch, weights, state)])
      values = dict(zip(task.metric_names, sums / task.n_eval_batches))
      self._log('eval', self._step, values)
      _print(f'Step {self._step:6d}: eval ' + '  '.join(
          f'{k} {v:.4f}' for k, v in values.items()))
      results.update(values)
    return results

  # -- Summaries ---------------------------------------------------------------
  def _log(self, mode, step, values):
    for name, value in values.items():
      self.history.append(mode, name, step, value)
    self._summaries.write(mode, step, values)

  def _flush(self):
    self._summaries.flush()

  # -- Checkpoints -------------------------------------------------------------
  def _sync_model(self):
    """Copies the trained weights and state back into the model layer."""
    to_tensors = lambda tree: fastmath.nested_map(tf.convert_to_tensor, tree)
    self._model_with_loss.weights = to_tensors(self.trainer.model_weights)
    self._model_with_loss.state = to_tensors(self.trainer.model_state)
    if self._eval_model is not self._model:
      self._eval_model.weights = self._model.weights
      self._eval_model.state = self._model.state

  def save_checkpoint(self, permanent=False):
    """Writes an atomic checkpoint of everything needed to resume."""
    if not self._ckpt:
      raise ValueError('Loop.save_checkpoint: no output_dir was given.')
    if not self._is_chief:
      return None
    self._step_var.assign(self._step)
    self._position_var.assign(self._stream.position)
    self._flush()
    return self._ckpt.save(self._step, extra={
        'history': self.history.to_dict()}, permanent=permanent)

  def load_checkpoint(self):
    """Restores the newest good checkpoint, if any; returns its step."""
    if not self._ckpt:
      raise ValueError('Loop.load_checkpoint: no output_dir was given.')
    manifest = self._ckpt.restore_latest()
    if manifest is None:
      return None
    self._step = int(self._step_var.numpy())
    self._seed = int(self._seed_var.numpy())
    self.history = history_lib.History.from_dict(
        manifest['extra'].get('history', {}))
    self._stream.fast_forward(int(self._position_var.numpy()))
    self._sync_model()
    _print(f'Resumed from {manifest["path"]} at step {self._step}.')
    return self._step


def _init_keeping(combined, inner, input_signature, rng=None):
  """Initializes `combined`, keeping `inner`'s weights if it has them.

  `combined` wraps `inner` (e.g. a model with its loss or its metrics); the
  weights a caller set or training produced must survive that init.
  """
  keep = (inner.weights, inner.state) if inner.initialized else None
  combined.init(input_signature, rng=rng)
  if keep is not None:
    inner.weights, inner.state = keep


def _local_signature(batch, strategy):
  """The per-replica input signature of a (possibly distributed) batch."""
  def sig(x):
    if isinstance(x, tf.distribute.DistributedValues):
      x = strategy.experimental_local_results(x)[0]
      return shapes.ShapeDtype(tuple(x.shape), x.dtype)
    x = onp.asarray(x) if not hasattr(x, 'shape') else x
    shape = tuple(x.shape)
    n = strategy.num_replicas_in_sync
    return shapes.ShapeDtype((shape[0] // n,) + shape[1:], x.dtype)
  return tuple(sig(x) for x in batch) if isinstance(
      batch, (list, tuple)) else sig(batch)


def _is_chief(strategy):
  resolver = getattr(strategy, 'cluster_resolver', None)
  task_type = getattr(resolver, 'task_type', None)
  if resolver is None or task_type is None:
    return True
  return task_type == 'chief' or (task_type == 'worker' and
                                  resolver.task_id == 0 and 'chief' not in
                                  resolver.cluster_spec().as_dict())


def _print(message):
  logging.info(message)
  print(message, flush=True)
