"""Callbacks that Loop runs around training steps.

Loop creates each callback as `callback_class(loop)`. For each training
step `step` (1-based: the number of the step being run), and only where
`call_at(step)` is True, it calls `on_step_begin(step)` before the batch is
drawn and `on_step_end(step)` right after the weight update, before that
step's checkpoints and evals, as Trax's Loop does.

Loop also calls `on_evals_end(step, values)` after a step's evals on the
callbacks that have it, and saves and restores the state of those with
`state_dict()` / `load_state_dict(d)` (see `training.Loop`).

`SerializedModelEvaluation` measures the long-horizon predictions of a
`tfnp_trax.rl.serialization_utils.SerializedModel`. `EarlyStopping` (in
`early_stopping.py`, shown here) stops a run when an eval metric stops
improving.
"""

import collections
import os

import numpy as onp

from tfnp_trax import _reexport
from tfnp_trax import layers as tl
from tfnp_trax import shapes
from tfnp_trax.supervised import decoding
from tfnp_trax.supervised import summaries

__all__ = ['TrainingStepCallback', 'SerializedModelEvaluation',
           'EarlyStopping', 'consume_sequence']


class TrainingStepCallback:
  """Base class of callbacks run before and after training steps.

  Subclasses override `call_at`, `on_step_begin` and `on_step_end`.

  Example:
    >>> class PrintStep(TrainingStepCallback):
    ...   def call_at(self, step):
    ...     return step % 100 == 0
    ...   def on_step_begin(self, step):
    ...     pass
    ...   def on_step_end(self, step):
    ...     print(step, self._loop.history.last('train', 'training/loss'))

  Args:
    loop: the `Loop` running the callback.
  """

  def __init__(self, loop):
    self._loop = loop

  def call_at(self, step):
    """Whether to run the callback at training step `step`."""
    raise NotImplementedError(
        f'{type(self).__name__}.call_at: TrainingStepCallback subclasses '
        f'must override call_at(step), on_step_begin(step) and '
        f'on_step_end(step).')

  def on_step_begin(self, step):
    """Runs before training step `step`, where `call_at(step)` is True."""
    raise NotImplementedError(
        f'{type(self).__name__}.on_step_begin: not overridden.')

  def on_step_end(self, step):
    """Runs after training step `step`, where `call_at(step)` is True."""
    raise NotImplementedError(
        f'{type(self).__name__}.on_step_end: not overridden.')


def _serialize(serializer, x):
  """(batch, length, ...) elements -> (batch, length, repr_length) symbols.

  What `serialization_utils.Serialize` computes, on host arrays: supervised
  never imports rl, and the serializer object brings its own math.
  """
  x = onp.asarray(x)
  (batch_size, length) = x.shape[:2]
  flat = onp.reshape(x, (batch_size * length,) + x.shape[2:])
  symbols = onp.asarray(serializer.serialize(flat))
  return onp.reshape(symbols,
                     (batch_size, -1, serializer.representation_length))


def _interleave(x, y):
  """`serialization_utils.Interleave` on host arrays of equal lengths."""
  return onp.reshape(onp.concatenate((x, y), axis=2), (x.shape[0], -1))


def _eval_at_fn(eval_at):
  """`eval_at` (int, container of steps, or predicate) as a predicate."""
  if isinstance(eval_at, int):
    # Trax's rule: steps 1, 1 + eval_at, 1 + 2 * eval_at, ...
    return lambda step: step % eval_at == 1
  if hasattr(eval_at, '__contains__'):
    return lambda step: step in eval_at
  if callable(eval_at):
    return eval_at
  raise TypeError(
      f'SerializedModelEvaluation: unsupported type for eval_at: '
      f'{type(eval_at).__name__}; give an int (every how many steps), a '
      f'collection of step numbers, or a function step -> bool.')


class SerializedModelEvaluation(TrainingStepCallback):
  """Evaluates the long-horizon predictions of a serialized sequence model.

  Gin name `trax.supervised.callbacks.SerializedModelEvaluation`, registered
  by `tfnp_trax.gin_config` (this module does not import gin, so that
  `import tfnp_trax` does not either).

  For each context length c and horizon h, the predict-mode sequence model
  is fed the interleaved (observation, action) symbols of the first c steps,
  then samples each next observation, and is fed the true actions between
  them. The metric `pred_error/context_{c}/horizon_{h}` is the squared error
  of the observation predicted h steps ahead, masked, summed over the
  batches and divided by the number of nonzero errors (+ 1e-6), as in Trax.
  At `on_step_end` the metrics go to the Loop's history and console under
  'srl_eval' and to TensorBoard in `output_dir/srl_eval`.

  Args:
    loop: the Loop, or None (then give `model` and `eval_task`).
    model: a SerializedModel (default: `loop.model`).
    eval_at: when to evaluate: an int n (at steps 1, n + 1, 2n + 1, ...,
      Trax's rule), a collection of step numbers, or a function step -> bool.
    eval_task: an EvalTask with (obs, act, obs, mask) batches (default: the
      Loop's only eval task).
    context_lengths: numbers of steps fed before predicting.
    horizon_lengths: numbers of steps ahead to score.
    n_steps: how many batches each evaluation runs on.
    accelerate_model: wrap the predict model in `tl.Accelerate`.

  Raises:
    TypeError: for an unsupported `eval_at`.
    ValueError: without `eval_task`, when the Loop does not have exactly one
      eval task.
  """

  def __init__(self, loop, model=None, eval_at=1000, eval_task=None,
               context_lengths=(1,), horizon_lengths=(1,), n_steps=1,
               accelerate_model=True):
    super().__init__(loop)
    if model is None:
      model = loop.model
    self._obs_serializer = model.observation_serializer
    self._act_serializer = model.action_serializer
    predict_model = model.make_predict_model()
    if accelerate_model:
      predict_model = tl.Accelerate(predict_model)
    self._predict_model = predict_model
    self._eval_at = _eval_at_fn(eval_at)
    if eval_task is None:
      if len(loop.eval_tasks) != 1:
        raise ValueError(
            f'SerializedModelEvaluation: without eval_task, the Loop must '
            f'have exactly 1 eval task, got {len(loop.eval_tasks)}; pass '
            f'eval_task=... to choose one.')
      eval_task = loop.eval_tasks[0]
    self._eval_task = eval_task
    self._context_lengths = sorted(context_lengths)
    self._horizon_lengths = sorted(horizon_lengths)
    self._n_steps = n_steps
    self._batch_size = eval_task.sample_batch[0].shape[0]
    (_, self._init_state) = predict_model.init(
        shapes.ShapeDtype((self._batch_size, 1), dtype=onp.int32))

  @property
  def predict_model(self):
    return self._predict_model

  def call_at(self, step):
    return self._eval_at(step)

  def on_step_begin(self, step):
    pass

  def on_step_end(self, step):
    writer = summaries.SummaryWriter(
        os.path.join(self._loop.output_dir, 'srl_eval')
        if getattr(self._loop, 'is_chief', True) else None)
    try:
      metrics = self.evaluate(self._loop.eval_model.seq_model_weights)
      self._loop.log_summary(metrics, writer, '', 'srl_eval')
    finally:
      writer.close()

  def evaluate(self, weights):
    """{`pred_error/context_{c}/horizon_{h}`: error} for these weights."""
    self._predict_model.weights = weights
    errors = collections.defaultdict(list)
    for _ in range(self._n_steps):
      for (key, value) in self._evaluate_batch(
          self._eval_task.next_batch()).items():
        errors[key].append(value)
    errors = {key: onp.array(value) for (key, value) in errors.items()}
    return {
        f'pred_error/context_{context}/horizon_{horizon}':
            onp.sum(error) / (onp.sum(error != 0) + 1e-6)
        for ((context, horizon), error) in errors.items()
    }

  def _evaluate_batch(self, batch):
    """{(context, horizon): masked squared errors} on one batch."""
    (obs, act, _, mask) = batch
    obs, mask = onp.asarray(obs), onp.asarray(mask)
    obs_repr = _serialize(self._obs_serializer, obs)
    act_repr = _serialize(self._act_serializer, act)
    model = self._predict_model
    errors = {}
    # Contexts are sorted: each one continues the state after the last.
    (last_context, last_state, last_start_id) = (0, self._init_state, 0)
    for context in self._context_lengths:
      model.state = last_state
      start_id = last_start_id
      if context > last_context:
        context_seq = _interleave(obs_repr[:, last_context:context],
                                  act_repr[:, last_context:context])
        consume_sequence(model, start_id, context_seq[:, :-1])
        last_start_id = start_id = context_seq[:, -1:]
        last_state = model.state
        last_context = context
      for timestep in range(max(self._horizon_lengths)):
        pred_repr = decoding.autoregressive_sample(
            model, start_id=start_id, eos_id=-1,
            batch_size=self._batch_size,
            max_length=self._obs_serializer.representation_length,
            accelerate=False)
        horizon = timestep + 1
        if horizon in self._horizon_lengths:
          pred = onp.asarray(self._obs_serializer.deserialize(pred_repr))
          error = (pred - obs[:, context + timestep]) ** 2
          errors[context, horizon] = error * mask[:, context + timestep]
        # Feed the true action before predicting the next observation.
        consume_sequence(model, pred_repr[:, -1:],
                         act_repr[:, context + timestep, :-1])
        start_id = act_repr[:, context + timestep, -1:]
    return errors


def consume_sequence(model, start_id, sequence):
  """Feeds `start_id` then `sequence` (batch, length) to a predict model.

  The model's state (its decoding cache) then holds them; the one symbol
  sampled after them is discarded.
  """
  decoding.autoregressive_sample(
      model, start_id=start_id, eos_id=-1, inputs=sequence,
      batch_size=sequence.shape[0], max_length=1, accelerate=False)


# `early_stopping` builds on `TrainingStepCallback`, so its class is shown
# here through a lazy alias (see tfnp_trax/_reexport.py), not an import.
__getattr__, __dir__ = _reexport.lazy_reexports(globals(), {
    'EarlyStopping': 'tfnp_trax.supervised.early_stopping',
})
