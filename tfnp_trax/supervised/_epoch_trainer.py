"""Trax's pre-Loop `trainer_lib.Trainer`, run by `training.Loop`.

Trax's `Trainer` trains a model in epochs (`train_epoch(n_steps,
n_eval_steps)`), evaluates on the training and the eval stream of an
`Inputs` (`evaluate(n_eval_steps)`), and saves its state under
`output_dir`. Here the steps, checkpoints and resuming are a `training.Loop`
(one TrainTask whose schedule is the Trainer's `lr_schedule`); `reset`
builds a new Loop for the new `output_dir`, which resumes from that
folder's checkpoints as Trax's `reset` does. Evaluation follows Trax: the
metrics (a dict name -> layer, Trax's defaults if None) are averaged over
`n_eval_steps` batches of each stream and logged under the modes 'train'
and 'eval'.

`epochs(total_steps, steps_to_skip, epoch_steps)` is Trax's generator of
per-epoch step counts for a (re)started run.
"""

import itertools
import os

import numpy as onp
import tensorflow as tf

from tfnp_trax import fastmath
from tfnp_trax import layers as tl
from tfnp_trax.supervised import training
from tfnp_trax.supervised.loop import evals as evals_lib
from tfnp_trax.supervised.loop import logs

__all__ = ['Trainer', 'default_metrics', 'epochs']


def epochs(total_steps, steps_to_skip, epoch_steps):
  """Yields the steps of each epoch still to run, up to `total_steps`.

  Follows trax/supervised/trainer_lib.py `epochs`: the first
  `steps_to_skip` steps (already run before a restart) are taken off the
  front of `epoch_steps`, and the last epoch is cut so the total is
  `total_steps - steps_to_skip`.

  Args:
    total_steps: the run's total number of steps.
    steps_to_skip: steps already done (e.g. restored from a checkpoint).
    epoch_steps: an iterable of the steps in each epoch.

  Yields:
    The number of steps of each remaining epoch.

  Example:
    >>> list(epochs(total_steps=5, steps_to_skip=1, epoch_steps=[2, 2, 2]))
    [1, 2, 1]
  """
  steps_to_go = total_steps - steps_to_skip
  epoch_steps = iter(epoch_steps)
  for steps in epoch_steps:
    if steps > steps_to_skip:  # This epoch was cut by the restart.
      epoch_steps = itertools.chain([steps - steps_to_skip], epoch_steps)
    if steps >= steps_to_skip:
      break
    steps_to_skip -= steps
  for steps in epoch_steps:
    steps = min(steps, steps_to_go)
    yield steps
    steps_to_go -= steps
    if steps_to_go == 0:
      break


def default_metrics():
  """Trax's default eval metrics of `train`, by name (fresh layers)."""
  return {
      'loss': tl.WeightedCategoryCrossEntropy(),
      'accuracy': tl.WeightedCategoryAccuracy(),
      'sequence_accuracy': tl.MaskedSequenceAccuracy(),
      'neg_log_perplexity': tl.Serial(tl.WeightedCategoryCrossEntropy(),
                                      tl.Negate()),
      'weights_per_batch_per_core': tl.Serial(tl.Drop(), tl.Drop(),
                                              tl.Sum()),
  }


class Trainer:
  """Trax's epoch-based trainer over `model(mode=...)` and an `Inputs`.

  Args:
    model: a model constructor, called as `model(mode='train')` and
      `model(mode='eval')`.
    loss_fn: the loss layer put after the training model.
    optimizer: an optimizer class, built as `optimizer(learning_rate=0.0)`
      (the rate comes from `lr_schedule` at every step, as in Trax).
    lr_schedule: step -> learning rate.
    inputs: a `trax.data.Inputs`, or a function returning one.
    output_dir: where checkpoints and summaries go; None writes nothing.
    random_seed: the seed of the initialization and of the steps' rngs.
    n_devices: how many devices to replicate over (default: all).
    checkpoints_at: steps after which `train_epoch` keeps a permanent
      checkpoint (`model_<step>`), besides the one at each epoch's end.
    should_save_checkpoints: False writes no checkpoints.
    should_write_summaries: False writes no TensorBoard summaries.
    metrics: dict name -> metric layer (default: Trax's, see
      `trainer_lib.default_metrics`).
    checkpoint_highest: an eval metric name; the checkpoint
      `highest_<name>` is written when an epoch ends at its highest value.
    checkpoint_lowest: likewise `lowest_<name>` at the lowest value.
    init_checkpoint: a weights file to start both models from.

  Example:
    >>> import numpy as np
    >>> from tfnp_trax import data, models, optimizers
    >>> import tfnp_trax.layers as tl
    >>> def stream(n_devices):
    ...   del n_devices
    ...   x = np.ones((4, 3), np.float32)
    ...   while True:
    ...     yield x, np.array([0, 1, 0, 1]), np.ones(4, np.float32)
    >>> trainer = Trainer(lambda mode: tl.Serial(tl.Dense(2)),
    ...                   tl.WeightedCategoryCrossEntropy(), optimizers.SGD,
    ...                   lambda step: 0.1, data.Inputs(stream),
    ...                   metrics={'loss': tl.WeightedCategoryCrossEntropy()})
    >>> import contextlib, io
    >>> with contextlib.redirect_stdout(io.StringIO()):
    ...   trainer.train_epoch(n_steps=3, n_eval_steps=1)
    >>> trainer.step
    3
  """

  def __init__(self, model, loss_fn, optimizer, lr_schedule, inputs,
               output_dir=None, random_seed=None, n_devices=None,
               checkpoints_at=None, should_save_checkpoints=True,
               should_write_summaries=True, metrics=None,
               checkpoint_highest=None, checkpoint_lowest=None,
               init_checkpoint=None):
    self._inputs = inputs() if callable(inputs) else inputs
    if metrics is None:
      metrics = default_metrics()
    self._metric_names = sorted(metrics)  # Trax orders them by name.
    self._metric_layers = [metrics[n] for n in self._metric_names]
    self._loss_fn = loss_fn
    self._optimizer = optimizer(learning_rate=0.0)
    self._lr_schedule = lr_schedule
    self._random_seed = random_seed
    self._n_devices = n_devices
    self._checkpoints_at = frozenset(checkpoints_at or ())
    self._should_save_checkpoints = should_save_checkpoints
    self._should_write_summaries = should_write_summaries
    self._checkpoint_highest = checkpoint_highest
    self._checkpoint_lowest = checkpoint_lowest
    self._model_train = model(mode='train')
    self._model_eval = model(mode='eval')
    if init_checkpoint:
      for m in (self._model_train, self._model_eval):
        m.init_from_file(init_checkpoint, weights_only=True)
    self._loop = None
    self._metrics_fn = None
    self.reset(output_dir)

  # -- Trax's properties -------------------------------------------------------
  n_devices = property(lambda self: self._loop.n_devices)
  step = property(lambda self: self._loop.step)
  history = property(lambda self: self._loop.history)
  model_weights = property(lambda self: self._loop.model.weights)
  model_state = property(lambda self: self._loop.model.state)

  @property
  def learning_rate(self):
    """The schedule's learning rate at the current step."""
    return self._lr_schedule(self.step)

  @property
  def loop(self):
    """The `training.Loop` that runs the steps."""
    return self._loop

  def reset(self, output_dir, init_checkpoint=None):
    """Starts over in `output_dir`, resuming from its checkpoints if any.

    Args:
      output_dir: the new output folder (None: write nothing).
      init_checkpoint: a Trax or tfnp_trax checkpoint to load instead of
        the newest one in `output_dir`.
    """
    self.close()
    self._output_dir = output_dir
    n = self._n_devices or tf.distribute.get_strategy().num_replicas_in_sync
    task = training.TrainTask(
        self._inputs.train_stream(n), self._loss_fn, self._optimizer,
        lr_schedule=self._lr_schedule, n_steps_per_checkpoint=None)
    save = bool(output_dir) and self._should_save_checkpoints
    self._loop = training.Loop(
        self._model_train, task, eval_model=self._model_eval,
        output_dir=output_dir if save or self._should_write_summaries
        else None,
        checkpoint_at=lambda step: save and step in self._checkpoints_at,
        permanent_checkpoint_at=(
            lambda step: save and step in self._checkpoints_at),
        n_devices=self._n_devices, random_seed=self._random_seed)
    if init_checkpoint:
      self._loop.load_checkpoint(os.path.dirname(init_checkpoint) or '.',
                                 os.path.basename(init_checkpoint))
    self._save = save
    self._train_eval_stream = iter(self._inputs.train_eval_stream(n))
    self._eval_stream = iter(self._inputs.eval_stream(n))
    if self._metrics_fn is None:
      self._metrics_fn = evals_lib.MetricsFunction(
          self._model_eval, self._metric_layers,
          next(iter(self._inputs.train_stream(1))))

  def train_epoch(self, n_steps, n_eval_steps):
    """Trains `n_steps` steps, then evaluates and checkpoints, as Trax."""
    self._loop.run(n_steps)
    self.log_step(f'Ran {n_steps} train steps')
    self.evaluate(n_eval_steps)
    if self._save:
      self.save_state(keep=False)
      for high, metric in ((True, self._checkpoint_highest),
                           (False, self._checkpoint_lowest)):
        if metric is not None and self._current_step_is_best(metric, high):
          self.save_state(keep=False, prefix=(
              f'{"highest" if high else "lowest"}_{metric}'))

  def evaluate(self, n_eval_steps):
    """Logs the metrics averaged over `n_eval_steps` batches of each stream.

    Returns:
      {'train': {name: value}, 'eval': {name: value}}.
    """
    # The trained weights, as Trax evaluates (the eval model's own are only
    # synced by a Loop eval).
    weights, state = self.model_weights, self.model_state
    self.log_step('Evaluation')
    results = {}
    for mode, stream in (('train', self._train_eval_stream),
                         ('eval', self._eval_stream)):
      sums, count = onp.zeros(len(self._metric_names)), 0
      for batch in itertools.islice(stream, n_eval_steps):
        values = self._metrics_fn(batch, weights, state)
        sums += onp.array([float(v) for v in values])
        count += 1
      results[mode] = dict(zip(self._metric_names, sums / max(count, 1)))
      self.log_metrics(results[mode], None, mode)
    self.log_step('Finished evaluation')
    self.history.append('train', 'training/learning_rate', self.step,
                        self.learning_rate)
    return results

  def save_state(self, keep, prefix='model'):
    """Checkpoints the current step as `prefix` (and `prefix_<step>`)."""
    if not self._save:
      return
    self._loop.save_checkpoint(prefix)
    if keep:
      self._loop.save_checkpoint(f'{prefix}_{self.step}')
    # Trax's save_state returns with the files written.
    self._loop.wait_for_checkpoints()

  def _current_step_is_best(self, metric, high):
    values = self.history.get('eval', 'metrics/' + metric)
    if not values or values[-1][0] != self.step:
      return False
    best = (max if high else min)(float(v) for _, v in values)
    return float(values[-1][1]) == best

  def log_step(self, step_message):
    logs.log(f'Step {self.step:6d}: {step_message}')

  def log_metrics(self, metrics, summ_writer, log_prefix):
    """Logs `metrics` to the console, the history and `summ_writer`."""
    width = max([0] + [len(name) for name in metrics])
    for name, value in metrics.items():
      self.log_step(f'{log_prefix.ljust(5)} {name.rjust(width)} | '
                    f'{float(value): .8f}')
      self.history.append(log_prefix, 'metrics/' + name, self.step, value)
      if summ_writer is not None:
        summ_writer.scalar('metrics/' + name, value, self.step)

  def print_n_weights(self):
    n = sum(int(onp.size(w)) for w in fastmath.tree_leaves(self.model_weights))
    self.log_step(f'Total number of trainable weights: {n}')

  def close(self):
    """Flushes the summaries (the Loop opens and closes its own per run)."""
