"""TrainTask and EvalTask: what Loop trains on and what it measures."""

import itertools
import numbers

import tensorflow as tf

from tfnp_trax.layers import base as layer_base
from tfnp_trax.supervised import _accumulation

__all__ = ['TrainTask', 'EvalTask']


def _peek(task, labeled_data):
  """Returns `(sample_batch, labeled_data)` without losing a batch.

  Trax takes the sample batch with `next(labeled_data)`, which drops it
  from training. Here it is put back in front of an iterator, so a task
  trains on every batch and a resumed run counts batches the same way.
  """
  if isinstance(labeled_data, tf.data.Dataset):
    sample = next(iter(labeled_data.take(1)))
    return tuple(x.numpy() for x in sample), labeled_data
  try:
    iterator = iter(labeled_data)
  except TypeError as e:
    raise TypeError(f'{task}: labeled_data must be an iterator, iterable or '
                    f'tf.data.Dataset of batches, got '
                    f'{type(labeled_data).__name__}.') from e
  try:
    sample = next(iterator)
  except StopIteration as e:
    raise ValueError(f'{task}: labeled_data yielded no batch.') from e
  if iterator is labeled_data:  # An iterator: put the batch back in front.
    return sample, itertools.chain([sample], iterator)
  return sample, labeled_data  # A re-iterable: nothing was consumed.


def _check_period(task, arg, value, meaning, unit='steps'):
  """A count must be a positive integer (or None where `meaning` says)."""
  if value is None and meaning:
    return
  if (isinstance(value, bool) or not isinstance(value, numbers.Integral) or
      value < 1):
    never = f', or None for {meaning}' if meaning else ''
    raise ValueError(f'{task}: {arg} must be a positive integer (a number of '
                     f'{unit}{never}), got {value!r}.')


class TrainTask:
  """A training task: labeled data, a loss layer and an optimizer.

  Args:
    labeled_data: an iterator (or iterable, or `tf.data.Dataset`) of
      batches `(inputs..., targets[, weights])`.
    loss_layer: a layer mapping (model outputs, targets, ...) to a scalar.
    optimizer: a tfnp_trax optimizer object.
    lr_schedule: optional function step -> learning rate; by default the
      optimizer's own `learning_rate`.
    n_steps_per_checkpoint: steps between checkpoints (and default evals).
    n_steps_per_permanent_checkpoint: steps between permanent checkpoints
      (None: none).
    loss_name: the name the loss is logged under (default: the loss
      layer's name).
    sample_batch: a batch to initialize the model with (default: the first
      batch of `labeled_data`, which is still trained on).
    export_prefix: the folder name of this task's summaries when a Loop
      trains several tasks.
    gradient_accumulation_steps: k > 1 trains on k batches of
      `labeled_data` per update: the Loop joins them and the compiled step
      runs them as micro-batches one after another, updating once with the
      mean of their gradients (one step on the joined batch, with the
      activation memory of one batch). The Loop's step, History and
      checkpoints count updates. Each batch must divide by the replicas.
  """

  def __init__(self, labeled_data, loss_layer, optimizer, lr_schedule=None,
               n_steps_per_checkpoint=100,
               n_steps_per_permanent_checkpoint=None, loss_name=None,
               sample_batch=None, export_prefix=None,
               gradient_accumulation_steps=1):
    # Trax takes None as "never"; 0 failed at the second step (a modulo by
    # zero) and a negative period silently checkpointed every |n| steps.
    _check_period('TrainTask', 'n_steps_per_checkpoint',
                  n_steps_per_checkpoint, 'no periodic checkpoints')
    _check_period('TrainTask', 'n_steps_per_permanent_checkpoint',
                  n_steps_per_permanent_checkpoint,
                  'no permanent checkpoints')
    self._gradient_accumulation_steps = _accumulation.check_steps(
        gradient_accumulation_steps, 'TrainTask')
    if sample_batch is None:
      sample_batch, labeled_data = _peek('TrainTask', labeled_data)
    self._labeled_data = labeled_data
    self._sample_batch = sample_batch
    self._loss_layer = loss_layer
    self._optimizer = optimizer
    self._lr_schedule = lr_schedule
    self._n_steps_per_checkpoint = n_steps_per_checkpoint
    self._n_steps_per_permanent_checkpoint = n_steps_per_permanent_checkpoint
    self._loss_name = loss_name or loss_layer.name
    self._export_prefix = export_prefix

  labeled_data = property(lambda self: self._labeled_data)
  sample_batch = property(lambda self: self._sample_batch)
  loss_layer = property(lambda self: self._loss_layer)
  loss_name = property(lambda self: self._loss_name)
  optimizer = property(lambda self: self._optimizer)
  lr_schedule = property(lambda self: self._lr_schedule)
  export_prefix = property(lambda self: self._export_prefix)
  n_steps_per_checkpoint = property(
      lambda self: self._n_steps_per_checkpoint)
  n_steps_per_permanent_checkpoint = property(
      lambda self: self._n_steps_per_permanent_checkpoint)
  gradient_accumulation_steps = property(
      lambda self: self._gradient_accumulation_steps,
      doc='Batches of labeled_data (micro-batches) per update.')

  def next_batch(self):
    """The next batch of `labeled_data` (an iterator)."""
    return next(self._labeled_data)

  def learning_rate(self, step):
    """The learning rate at `step`: the schedule's, else the optimizer's."""
    if self._lr_schedule is not None:
      return float(self._lr_schedule(step))
    opt = self._optimizer
    if isinstance(opt, type):
      # The memory-efficient trainer takes the optimizer class, as in Trax
      # (it builds one per layer); its default rate is the class's.
      opt = opt()
    return float(opt.opt_params['learning_rate'])


class EvalTask:
  """An evaluation: labeled data and metric layers averaged over batches.

  Args:
    labeled_data: an iterator (or iterable, or `tf.data.Dataset`) of
      batches.
    metrics: a list of layers, each mapping (model outputs, targets, ...) to
      a scalar; may be empty.
    metric_names: names to log the metrics under (default: layer names).
    n_eval_batches: how many batches each evaluation averages over.
    sample_batch: a batch to initialize the metrics with (default: the
      first batch of `labeled_data`, which is still evaluated on).
    export_prefix: the folder name of this task's summaries when a Loop has
      several eval tasks.
  """

  def __init__(self, labeled_data, metrics, metric_names=None,
               n_eval_batches=1, sample_batch=None, export_prefix=None):
    if isinstance(metrics, layer_base.Layer):
      raise TypeError(f'EvalTask: metrics must be a list of metric layers, '
                      f'got the single layer {metrics.name}; wrap it in a '
                      f'list: metrics=[{metrics.name}()].')
    # An empty list is allowed, as in Trax: the task then only holds data
    # (a callback's, for example) and its evals log nothing.
    self._metrics = list(metrics)
    # None as in Trax, where train(eval_steps=None) builds a never-run one.
    _check_period('EvalTask', 'n_eval_batches', n_eval_batches,
                  'a task that is never evaluated', unit='batches per eval')
    self._metric_names = list(metric_names or
                              [m.name for m in self._metrics])
    if len(self._metric_names) != len(self._metrics):
      raise ValueError(f'EvalTask: {len(self._metrics)} metrics but '
                       f'{len(self._metric_names)} metric_names; give one '
                       f'name per metric.')
    if sample_batch is None:
      sample_batch, labeled_data = _peek('EvalTask', labeled_data)
    self._labeled_data = labeled_data
    self._sample_batch = sample_batch
    self._n_eval_batches = n_eval_batches
    self._export_prefix = export_prefix

  labeled_data = property(lambda self: self._labeled_data)
  sample_batch = property(lambda self: self._sample_batch)
  metrics = property(lambda self: self._metrics)
  metric_names = property(lambda self: self._metric_names)
  n_eval_batches = property(lambda self: self._n_eval_batches)
  export_prefix = property(lambda self: self._export_prefix)

  def next_batch(self):
    """The next batch of `labeled_data` (an iterator)."""
    return next(self._labeled_data)
