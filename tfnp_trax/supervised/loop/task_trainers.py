"""Loop's trainers: one per TrainTask, or one reversible trainer.

As in Trax, each TrainTask gets its own `Serial(model, loss_layer)` and its
own Trainer (its own optimizer slots and loss-layer weights), all built on
the same `model` layer (`TaskTrainers`). Each Trainer holds a device copy of
the model weights; when the task changes, the task about to train first
receives the model weights and state from the task that trained last (Trax
re-replicates them from the model at that point), so the tasks train one
shared body.

`Loop(use_memory_efficient_trainer=True)` trains as Trax's Loop does then
(`ReversibleTaskTrainers`): the model and the task's loss layer are split
into reversible blocks and a loss layer (`extract_reversible_blocks`), and a
`ReversibleSerialTrainer` runs the step, recomputing activations from the
outputs of each reversible block.

Both share `_ModelTrainers`, the interface the Loop's checkpoints, evals and
resume use.
"""

import numpy as onp
import tensorflow as tf

import distribute

from tfnp_trax import fastmath
from tfnp_trax import layers as tl
from tfnp_trax import shapes
from tfnp_trax.supervised import reversible_trainer as rt
from tfnp_trax.supervised import trainer as trainer_lib

__all__ = ['TaskTrainers', 'ReversibleTaskTrainers', 'init_keeping',
           'local_signature']


def init_keeping(combined, input_signature, rng=None):
  """Initializes `combined = Serial(model, end)` as Trax's Loop does.

  The model keeps the weights a caller set or training produced, and is
  initialized only if it has none. The end layer (a loss, or the branch of
  metrics) is initialized on the model's output signature, as Trax's
  `_model_with_ends` does: its own forward does not run here, so a loss
  whose check would refuse these shapes (Trax's `L2Loss` asserts equal
  shapes) only fails when a step runs, as in Trax, and a restore that
  fails first reports its own error.
  """
  model, end = combined.sublayers
  if rng is not None:
    combined.rng = rng  # Splits into the model's and the end layer's keys.
  if not model.initialized:
    model.init(input_signature)
  end.init(model.output_signature(input_signature))
  combined.weights = (model.weights, end.weights)
  combined.state = (model.state, end.state)


def local_signature(batch, strategy):
  """The per-replica input signature of a global host batch."""
  n = strategy.num_replicas_in_sync

  def sig(x):
    x = onp.asarray(x) if not hasattr(x, 'shape') else x
    return shapes.ShapeDtype(distribute.per_replica_shape(x.shape, n),
                             x.dtype)
  return tuple(sig(x) for x in batch) if isinstance(
      batch, (list, tuple)) else sig(batch)


def _check_batch_feeds(signature, with_loss, loss_layer):
  """Raises unless a batch has an array for every input of model + loss."""
  n_given = len(signature) if isinstance(signature, (list, tuple)) else 1
  if n_given < with_loss.n_in:
    raise ValueError(
        f'TrainTask: its labeled_data gives {n_given} array(s) per batch, but '
        f'the model followed by {loss_layer.name} takes {with_loss.n_in} '
        f'inputs. Make the stream yield tuples such as (inputs, targets, '
        f'weights), e.g. with tfnp_trax.data.AddLossWeights().')


class _ModelTrainers:
  """What Loop needs of its trainers, over a shared model body.

  Subclasses set `trainers` (each with `variables()`, `one_step`, `slots`),
  `models_with_loss` (one `Serial(model, end)` per trainer, for leaf
  names), `active` and the counts `_n_weights`, `_n_state` of the model's
  leaves, which lead each trainer's weight and state variables.
  """

  def __len__(self):
    return len(self.trainers)

  def _model_variables(self, i, kind):
    n = self._n_state if kind == 'state' else self._n_weights
    return self.trainers[i].variables()[kind][:n]

  @property
  def has_ema(self):
    """Whether the trainers keep a moving average of the weights."""
    return self.trainers[0].ema_decay is not None

  def set_model(self, weights=None, state=None):
    """Writes model weights and/or state into every trainer.

    New weights restart the moving average (if any) from them.
    """
    for i in range(len(self.trainers)):
      for kind, tree in (('weights', weights), ('state', state)):
        if tree is not None:
          for v, x in zip(self._model_variables(i, kind),
                          fastmath.tree_leaves(tree)):
            v.assign(tf.cast(x, v.dtype))
      if weights is not None:
        self.trainers[i].reset_ema()

  def model_variables(self):
    """`(weights, state)`: the newest model's variables, in leaf order."""
    return (self._model_variables(self.active, 'weights'),
            self._model_variables(self.active, 'state'))

  def model_ema_weights(self):
    """The newest moving average of the model's weights (leaves), or None."""
    if not self.has_ema:
      return None
    return [v.numpy() for v in self._model_variables(self.active, 'ema')]

  def all_finite(self):
    """Whether every float weight of the newest model is finite."""
    weights = self.trainers[self.active].variables()['weights']
    checks = [tf.reduce_all(tf.math.is_finite(v.read_value()))
              for v in weights if v.dtype.is_floating]
    return bool(tf.reduce_all(checks)) if checks else True

  def activate(self, i):
    """Makes trainer `i` hold the newest model weights and state."""
    raise NotImplementedError

  def one_step(self, i, batch, rng, step, learning_rate):
    """Runs a training step of task `i`; returns `(loss, stats)`."""
    self.activate(i)
    return self.trainers[i].one_step(batch, rng, step,
                                     learning_rate=learning_rate)


class TaskTrainers(_ModelTrainers):
  """One Trainer per TrainTask over a shared model body.

  Args:
    model: the model body (initialized here if it is not yet).
    tasks: the TrainTasks.
    strategy: the tf.distribute strategy.
    rng: the key that initializes an uninitialized model.
    jit_compile: passed to each Trainer.
    precision: passed to each Trainer (None/'float32' or 'bf16').
    ema_decay, ema_warmup: passed to each Trainer (a moving average of the
      weights; see `Trainer`).
  """

  def __init__(self, model, tasks, strategy, rng, jit_compile=None,
               precision=None, ema_decay=None, ema_warmup=True):
    self.models_with_loss = []
    self.trainers = []
    for task in tasks:
      with_loss = tl.Serial(model, task.loss_layer)
      signature = local_signature(task.sample_batch, strategy)
      _check_batch_feeds(signature, with_loss, task.loss_layer)
      init_keeping(with_loss, signature, rng=rng)
      self.models_with_loss.append(with_loss)
      self.trainers.append(trainer_lib.Trainer(
          with_loss, task.optimizer, strategy, jit_compile=jit_compile,
          precision=precision,
          gradient_accumulation_steps=task.gradient_accumulation_steps,
          ema_decay=ema_decay, ema_warmup=ema_warmup))
    self._n_weights = len(fastmath.tree_leaves(model.weights))
    self._n_state = len(fastmath.tree_leaves(model.state))
    self.active = 0  # The trainer holding the newest model weights.

  def _copy_model(self, src, dst):
    kinds = ['weights', 'state']
    if self.has_ema:
      kinds.append('ema')
    for kind in kinds:
      for d, s in zip(self._model_variables(dst, kind),
                      self._model_variables(src, kind)):
        d.assign(s.read_value())
    if self.has_ema:  # The update count, which the averages' decay reads.
      self.trainers[dst].variables()['ema'][-1].assign(
          self.trainers[src].variables()['ema'][-1].read_value())

  def activate(self, i):
    """Makes trainer `i` hold the newest model weights and state."""
    if i != self.active:
      self._copy_model(self.active, i)
      self.active = i

  def broadcast(self):
    """Gives every trainer the newest model weights (e.g. to checkpoint)."""
    for i in range(len(self.trainers)):
      if i != self.active:
        self._copy_model(self.active, i)

  def model_weights_and_state(self):
    """The newest model weights and state, as NumPy trees."""
    trainer = self.trainers[self.active]
    return trainer.model_weights[0], trainer.model_state[0]



class ReversibleTaskTrainers(_ModelTrainers):
  """Loop's trainer interface over one ReversibleSerialTrainer.

  Args:
    model: the model body (initialized here if it is not yet; weights a
      caller set are kept).
    tasks: a list holding exactly one TrainTask.
    strategy: the tf.distribute strategy.
    rng: the key that initializes an uninitialized model.
    loss_chunk_size: if > 0, the loss tail is computed in chunks of this many
      positions (see `extract_reversible_blocks`).
    adasum: combine replica gradients with Adasum.
    jit_compile: passed to the trainer.
    ema_decay, ema_warmup: passed to the trainer.
  """

  def __init__(self, model, tasks, strategy, rng, loss_chunk_size=0,
               adasum=False, jit_compile=None, ema_decay=None,
               ema_warmup=True):
    if len(tasks) != 1:
      raise ValueError(
          f'Loop: use_memory_efficient_trainer=True trains exactly one '
          f'TrainTask (as in Trax), got {len(tasks)}. Train several tasks '
          f'with use_memory_efficient_trainer=False.')
    task = tasks[0]
    kept = (model.weights, model.state) if model.initialized else None
    blocks, loss_layer = rt.extract_reversible_blocks(
        [model, task.loss_layer], loss_chunk_size=loss_chunk_size)
    rt.init_reversible_blocks(
        blocks, loss_layer,
        local_signature(task.sample_batch, strategy), rng)
    if kept is not None:
      model.weights, model.state = kept
    self._model = model
    self.trainer = rt.ReversibleSerialTrainer(
        blocks, loss_layer, task.optimizer, adasum=adasum, strategy=strategy,
        jit_compile=jit_compile,
        gradient_accumulation_steps=task.gradient_accumulation_steps,
        ema_decay=ema_decay, ema_warmup=ema_warmup)
    self.trainers = [self.trainer]
    # The trainer keeps one variable group per layer, in this order, so
    # their leaves line up with this Serial's weights (for the manifest's
    # leaf names).
    self.models_with_loss = [tl.Serial(*self.trainer.all_layers)]
    self._n_weights = len(fastmath.tree_leaves(model.weights))
    self._n_state = len(fastmath.tree_leaves(model.state))
    self.active = 0

  def activate(self, i):
    del i  # One task: its trainer always holds the newest weights.

  def broadcast(self):
    pass

  def set_model(self, weights=None, state=None):
    """Writes model weights and/or state into the trainer's variables."""
    super().set_model(weights, state)
    # The layers mirror the variables after every step; keep that true.
    self._model.weights, self._model.state = self.model_weights_and_state()

  def model_weights_and_state(self):
    """The model's weights and state, read from the trainer's variables."""
    group = self.trainer.variables()
    weights = [v.read_value() for v in group['weights'][:self._n_weights]]
    state = [v.read_value() for v in group['state'][:self._n_state]]
    return (fastmath.tree_unflatten(weights, self._model.weights)[0],
            fastmath.tree_unflatten(state, self._model.state)[0])
