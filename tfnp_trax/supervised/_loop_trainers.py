"""Loop's per-task trainers, which share the model body.

As in Trax, each TrainTask gets its own `Serial(model, loss_layer)` and its
own Trainer (its own optimizer slots and loss-layer weights), all built on
the same `model` layer. Each Trainer holds a device copy of the model
weights; when the task changes, the task about to train first receives the
model weights and state from the task that trained last (Trax re-replicates
them from the model at that point), so the tasks train one shared body.
"""

import numpy as onp
import tensorflow as tf

import distribute

from tfnp_trax import fastmath
from tfnp_trax import layers as tl
from tfnp_trax import shapes
from tfnp_trax.supervised import trainer as trainer_lib

__all__ = ['TaskTrainers', 'init_keeping', 'local_signature']


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


class TaskTrainers:
  """One Trainer per TrainTask over a shared model body.

  Args:
    model: the model body (initialized here if it is not yet).
    tasks: the TrainTasks.
    strategy: the tf.distribute strategy.
    rng: the key that initializes an uninitialized model.
    jit_compile: passed to each Trainer.
    precision: passed to each Trainer (None/'float32' or 'bf16').
  """

  def __init__(self, model, tasks, strategy, rng, jit_compile=None,
               precision=None):
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
          precision=precision))
    self._n_weights = len(fastmath.tree_leaves(model.weights))
    self._n_state = len(fastmath.tree_leaves(model.state))
    self.active = 0  # The trainer holding the newest model weights.

  def __len__(self):
    return len(self.trainers)

  def _model_variables(self, i):
    group = self.trainers[i].variables()
    return (group['weights'][:self._n_weights] +
            group['state'][:self._n_state])

  def _copy_model(self, src, dst):
    for d, s in zip(self._model_variables(dst), self._model_variables(src)):
      d.assign(s.read_value())

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

  def set_model(self, weights=None, state=None):
    """Writes model weights and/or state into every trainer."""
    for trainer in self.trainers:
      group = trainer.variables()
      if weights is not None:
        for v, x in zip(group['weights'][:self._n_weights],
                        fastmath.tree_leaves(weights)):
          v.assign(tf.cast(x, v.dtype))
      if state is not None:
        for v, x in zip(group['state'][:self._n_state],
                        fastmath.tree_leaves(state)):
          v.assign(tf.cast(x, v.dtype))

  def all_finite(self):
    """Whether every float weight of the newest model is finite."""
    weights = self.trainers[self.active].variables()['weights']
    checks = [tf.reduce_all(tf.math.is_finite(v.read_value()))
              for v in weights if v.dtype.is_floating]
    return bool(tf.reduce_all(checks)) if checks else True

  def model_weights_and_state(self):
    """The newest model weights and state, as NumPy trees."""
    trainer = self.trainers[self.active]
    return trainer.model_weights[0], trainer.model_state[0]

  def one_step(self, i, batch, rng, step, learning_rate):
    """Runs a training step of task `i`; returns `(loss, stats)`."""
    self.activate(i)
    return self.trainers[i].one_step(batch, rng, step,
                                     learning_rate=learning_rate)
