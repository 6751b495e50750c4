"""Trax's `trainer_lib.train`: a whole training run set up from gin.

`train(output_dir)` builds a `training.Loop` from a model constructor,
an `Inputs` object (or a function returning one), an optimizer class and a
learning-rate schedule constructor, as Trax's `trax.supervised.trainer_lib`
does, and runs it up to `steps` total steps (a rerun in the same
`output_dir` resumes and stops there). It is registered with gin as
`trax.supervised.trainer_lib.train` (so `train.steps = 100` binds it), with
`named_stream` and `num_devices`; importing this module imports gin.

Example:

>>> import gin, tempfile
>>> from tfnp_trax import gin_config
>>> gin.clear_config()
>>> gin_config.parse_config([
...     'import trax.data', 'import trax.layers', 'import trax.models',
...     'train.model = @trax.models.RNNLM',
...     'RNNLM.vocab_size = 8', 'RNNLM.d_model = 8', 'RNNLM.n_layers = 1',
...     'RNNLM.rnn_cell = @trax.layers.GRUCell',
...     'RNNLM.rnn_cell_d_state_multiplier = 1',
...     'train.inputs = @trax.data.sequence_copy_inputs',
...     'sequence_copy_inputs.vocab_size = 8',
...     'sequence_copy_inputs.batch_size = 4',
...     'sequence_copy_inputs.train_length = 4',
...     'sequence_copy_inputs.eval_min_length = 2',
...     'sequence_copy_inputs.eval_max_length = 4',
...     'sequence_copy_inputs.pad_to_multiple = 4',
...     'train.optimizer = @trax.optimizers.Adam',
...     'train.lr_schedule_fn = @trax.supervised.lr_schedules.constant',
...     'lr_schedules.constant.value = 0.01'])
>>> loop = train(tempfile.mkdtemp(), steps=2, eval_frequency=2,
...              eval_steps=1)  # doctest: +ELLIPSIS, +NORMALIZE_WHITESPACE
<BLANKLINE>
Step 1: ...
>>> loop.step
2
>>> gin.clear_config()
"""

import collections
import os

from absl import logging
import gin
import tensorflow as tf

from tfnp_trax import gin_config
from tfnp_trax import layers as tl
from tfnp_trax.optimizers import validation
from tfnp_trax.supervised import training
from tfnp_trax.supervised._epoch_trainer import default_metrics
from tfnp_trax.supervised._epoch_trainer import Trainer
from tfnp_trax.supervised._epoch_trainer import epochs

__all__ = ['Trainer', 'epochs', 'train', 'named_stream', 'num_devices',
           'NamedStream', 'default_metrics', 'log']

NamedStream = collections.namedtuple('NamedStream', ['name', 'stream'])

_MODULE = 'trax.supervised.trainer_lib'

# train()'s whole-number arguments that may be None (Trax: eval_steps or
# eval_frequency None disables evals), and those that are lists of steps.
_OPTIONAL_INTS = ('eval_steps', 'eval_frequency',
                  'permanent_checkpoint_frequency', 'random_seed',
                  'checkpoints_at', 'permanent_checkpoints_at')
_INT_LISTS = ('checkpoints_at', 'permanent_checkpoints_at')


@gin.configurable(module=_MODULE)
def named_stream(name=gin.REQUIRED, stream=gin.REQUIRED):
  """An extra eval stream for `train(additional_eval_streams=...)`."""
  return NamedStream(name=name, stream=stream)


@gin.configurable(module=_MODULE)
def num_devices(value=None):
  """How many devices `train` uses; None (default) means all of them."""
  return value


def _bound(fn):
  """`fn` with the gin bindings Trax would apply to it.

  Trax decorates `batcher`, `multifactor`, `TrainTask`, ... with gin, so
  `multifactor.constant = 0.1` reaches `train`'s default schedule and
  `EvalTask.export_prefix = ...` the tasks `train` builds. tfnp_trax
  registers the plain objects (`tfnp_trax.gin_config`), and gin gives back
  their bound versions.
  """
  try:
    return gin.get_configurable(fn)
  except (KeyError, ValueError, TypeError):
    return fn  # Not registered with gin: called as it is.


def _configured(fn, default):
  """`_bound(fn)`, or of `default()` where `fn` is None."""
  return _bound(default() if fn is None else fn)


# Trax's defaults, looked up at call time (tfnp_trax.data is only needed
# when a run uses its default inputs).
# pylint: disable=g-import-not-at-top
def _default_inputs():
  from tfnp_trax.data import inputs
  return inputs.batcher


def _default_optimizer():
  from tfnp_trax import optimizers
  return optimizers.Adafactor


def _default_schedule():
  from tfnp_trax.supervised import lr_schedules
  return lr_schedules.multifactor
# pylint: enable=g-import-not-at-top


@gin.configurable(denylist=['output_dir'], module=_MODULE)
def train(output_dir,
          model=gin.REQUIRED,
          loss_fn=None,
          inputs=None,
          optimizer=None,
          lr_schedule_fn=None,
          trainer_class=None,
          steps=1000,
          checkpoints_at=None,
          permanent_checkpoints_at=None,
          eval_steps=10,
          eval_frequency=100,
          permanent_checkpoint_frequency=None,
          random_seed=None,
          save_graphs=True,
          metrics=None,
          checkpoint_highest=None,
          checkpoint_lowest=None,
          use_loop=True,
          loss_chunk_size=0,
          use_memory_efficient_trainer=False,
          adasum=False,
          init_checkpoint=None,
          callbacks=None,
          n_weights_shards=1,
          additional_train_tasks=None,
          additional_eval_tasks=None,
          additional_eval_streams=None):
  """Trains `model` on `inputs` up to `steps` steps; returns the Loop.

  Args:
    output_dir: where checkpoints, TensorBoard logs and the operative gin
      config (`config.gin`) go; a run there resumes from its checkpoints.
    model: constructor called as `model(mode='train')` and `model(mode=
      'eval')` (e.g. `trax.models.TransformerLM`).
    loss_fn: the loss layer (default `tl.WeightedCategoryCrossEntropy()`).
    inputs: an `Inputs` object, or a function returning one (default
      `trax.data.batcher`).
    optimizer: optimizer class, called with no arguments (default
      `Adafactor`); with `use_memory_efficient_trainer` an instance.
    lr_schedule_fn: called with no arguments to give the schedule `step ->
      rate` (default `lr_schedules.multifactor`).
    trainer_class: Trax's pre-Loop Trainer; only None (use Loop) is supported.
    steps: the total number of training steps.
    checkpoints_at: steps to checkpoint at (default: every eval_frequency).
    permanent_checkpoints_at: steps whose checkpoints are kept for good.
    eval_steps: batches per evaluation.
    eval_frequency: steps between evaluations and checkpoints (and step 1).
    permanent_checkpoint_frequency: steps between permanent checkpoints
      (only one of this and `permanent_checkpoints_at`).
    random_seed: seed of the Loop; None lets the Loop choose.
    save_graphs: accepted for Trax compatibility (Trax's Loop ignores it).
    metrics: eval metrics `{name: layer}` (default `default_metrics()`).
    checkpoint_highest: also keep the checkpoint with the highest value of
      this eval metric.
    checkpoint_lowest: likewise, the lowest.
    use_loop: only True (Trax's Loop path) is supported.
    loss_chunk_size: if > 0, compute the loss in chunks of this size.
    use_memory_efficient_trainer: passed to the Loop.
    adasum: passed to the Loop.
    init_checkpoint: a checkpoint to start the weights from (fine-tuning).
    callbacks: Loop callback classes.
    n_weights_shards: only 1 is supported.
    additional_train_tasks: more TrainTasks, trained in turn.
    additional_eval_tasks: more EvalTasks.
    additional_eval_streams: `NamedStream`s evaluated with the same metrics,
      each reported under its name.

  Returns:
    The `training.Loop`, after training.

  Raises:
    TypeError: a whole-number argument (`steps`, `eval_steps`, ...) is not
      one, e.g. `train.steps = 'ten'` in a gin file.
    ValueError: both permanent-checkpoint arguments are given, or `model` is
      not set.
    NotImplementedError: Trax's pre-Loop trainer or weight sharding is asked
      for.
  """
  # A gin binding of the wrong type (`train.steps = 'ten'`) fails here,
  # naming the parameter, not deep inside the Loop.
  validation.check_integers(
      train, {'steps': steps, 'eval_steps': eval_steps,
              'eval_frequency': eval_frequency,
              'permanent_checkpoint_frequency': permanent_checkpoint_frequency,
              'random_seed': random_seed, 'loss_chunk_size': loss_chunk_size,
              'n_weights_shards': n_weights_shards,
              'checkpoints_at': checkpoints_at,
              'permanent_checkpoints_at': permanent_checkpoints_at},
      optional=_OPTIONAL_INTS, lists=_INT_LISTS)
  _check_supported(trainer_class, use_loop, n_weights_shards)
  if (permanent_checkpoint_frequency is not None and
      permanent_checkpoints_at is not None):
    raise ValueError(
        'train: give only one of permanent_checkpoint_frequency '
        f'({permanent_checkpoint_frequency}) and permanent_checkpoints_at '
        f'({permanent_checkpoints_at}).')
  n_devices = num_devices() or _replicas()
  inputs = _configured(inputs, _default_inputs)
  if callable(inputs):  # A function (e.g. from gin) gives the Inputs.
    inputs = inputs()
  optimizer = _configured(optimizer, _default_optimizer)
  opt = optimizer if use_memory_efficient_trainer else optimizer()
  loss_fn = tl.WeightedCategoryCrossEntropy() if loss_fn is None else loss_fn
  train_task = _bound(training.TrainTask)(
      inputs.train_stream(n_devices), loss_layer=loss_fn, optimizer=opt,
      lr_schedule=_configured(lr_schedule_fn, _default_schedule)(),
      n_steps_per_checkpoint=eval_frequency,
      n_steps_per_permanent_checkpoint=permanent_checkpoint_frequency)

  eval_task_cls = _bound(training.EvalTask)
  names, metric_layers = zip(*(metrics if metrics is not None
                               else default_metrics()).items())
  eval_tasks = [eval_task_cls(inputs.eval_stream(n_devices), metric_layers,
                              metric_names=names, n_eval_batches=eval_steps)]
  eval_tasks += list(additional_eval_tasks or [])
  eval_tasks += [eval_task_cls(s.stream, metric_layers, metric_names=names,
                               n_eval_batches=eval_steps,
                               export_prefix=s.name)
                 for s in additional_eval_streams or []]

  model_train = model(mode='train')
  model_eval = model(mode='eval')
  if init_checkpoint:
    _init_from(init_checkpoint, model_train, model_eval)
  loop = training.Loop(
      model_train, [train_task] + list(additional_train_tasks or []),
      eval_model=model_eval, eval_tasks=eval_tasks, output_dir=output_dir,
      checkpoint_at=_at(checkpoints_at),
      checkpoint_low_metric=checkpoint_lowest,
      checkpoint_high_metric=checkpoint_highest,
      permanent_checkpoint_at=_at(permanent_checkpoints_at),
      n_devices=num_devices(), random_seed=random_seed,
      loss_chunk_size=loss_chunk_size,
      use_memory_efficient_trainer=use_memory_efficient_trainer,
      adasum=adasum, callbacks=callbacks)
  del save_graphs  # Trax's Loop path does not use it either.
  _save_gin(output_dir)
  steps_to_go = steps - loop.step
  if steps_to_go <= 0:
    log(f'Stop training, already reached the total training steps {steps}')
    return loop
  loop.run(steps_to_go)
  _save_gin(output_dir)
  return loop


def _check_supported(trainer_class, use_loop, n_weights_shards):
  if trainer_class is not None or not use_loop:
    raise NotImplementedError(
        'train: tfnp_trax trains through training.Loop only; Trax\'s older '
        f'Trainer (use_loop={use_loop}, trainer_class={trainer_class}) is not '
        'provided. Drop train.use_loop / train.trainer_class from the config.')
  if n_weights_shards != 1:
    raise NotImplementedError(
        f'train: n_weights_shards={n_weights_shards} is not supported; '
        f'weights are replicated by the tf.distribute strategy. Use 1.')


def _replicas():
  return tf.distribute.get_strategy().num_replicas_in_sync


def _at(steps):
  """Trax's `lambda step: step in steps`, or None for the Loop's default."""
  if steps is None:
    return None
  steps = frozenset(steps)
  return lambda step: step in steps


def _init_from(path, *models):
  for model in models:
    init_from_file = getattr(model, 'init_from_file', None)
    if init_from_file is None:
      raise NotImplementedError(
          f'train: init_checkpoint={path!r} needs Layer.init_from_file, which '
          f'{type(model).__name__} does not have in tfnp_trax yet.')
    init_from_file(path, weights_only=True)


def _save_gin(output_dir):
  """Writes the operative gin config to `output_dir/config.gin`, as Trax."""
  if not output_dir:
    return
  tf.io.gfile.makedirs(output_dir)
  with tf.io.gfile.GFile(os.path.join(output_dir, 'config.gin'), 'w') as f:
    f.write(gin_config.operative_config_str())


def log(message, stdout=True):
  """Logs `message` with absl, and prints it unless `stdout` is False."""
  logging.info(message)
  if stdout:
    print(message, flush=True)

