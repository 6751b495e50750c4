"""Loop's memory-efficient path: one TrainTask on ReversibleSerialTrainer.

`Loop(use_memory_efficient_trainer=True)` trains as Trax's Loop does then:
the model and the task's loss layer are split into reversible blocks and a
loss layer (`extract_reversible_blocks`), and a `ReversibleSerialTrainer`
runs the step, recomputing activations from the outputs of each reversible
block. This class gives that trainer the interface of `TaskTrainers`, so the
Loop's checkpoints, evals and resume work unchanged.
"""

import tensorflow as tf

from tfnp_trax import fastmath
from tfnp_trax import layers as tl
from tfnp_trax.supervised import _loop_trainers
from tfnp_trax.supervised import reversible_trainer as rt

__all__ = ['ReversibleTaskTrainers']


class ReversibleTaskTrainers:
  """`TaskTrainers`' interface over one ReversibleSerialTrainer.

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
  """

  def __init__(self, model, tasks, strategy, rng, loss_chunk_size=0,
               adasum=False, jit_compile=None):
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
        _loop_trainers.local_signature(task.sample_batch, strategy), rng)
    if kept is not None:
      model.weights, model.state = kept
    self._model = model
    self.trainer = rt.ReversibleSerialTrainer(
        blocks, loss_layer, task.optimizer, adasum=adasum, strategy=strategy,
        jit_compile=jit_compile)
    self.trainers = [self.trainer]
    # The trainer keeps one variable group per layer, in this order, so
    # their leaves line up with this Serial's weights (for the manifest's
    # leaf names).
    self.models_with_loss = [tl.Serial(*self.trainer.all_layers)]
    self._n_weights = len(fastmath.tree_leaves(model.weights))
    self._n_state = len(fastmath.tree_leaves(model.state))
    self.active = 0

  def __len__(self):
    return 1

  def activate(self, i):
    del i  # One task: its trainer always holds the newest weights.

  def broadcast(self):
    pass

  def set_model(self, weights=None, state=None):
    """Writes model weights and/or state into the trainer's variables."""
    group = self.trainer.variables()
    if weights is not None:
      for v, x in zip(group['weights'][:self._n_weights],
                      fastmath.tree_leaves(weights)):
        v.assign(tf.cast(x, v.dtype))
    if state is not None:
      for v, x in zip(group['state'][:self._n_state],
                      fastmath.tree_leaves(state)):
        v.assign(tf.cast(x, v.dtype))
    # The layers mirror the variables after every step; keep that true.
    self._model.weights, self._model.state = self.model_weights_and_state()

  def all_finite(self):
    """Whether every float weight is finite."""
    checks = [tf.reduce_all(tf.math.is_finite(v.read_value()))
              for v in self.trainer.variables()['weights']
              if v.dtype.is_floating]
    return bool(tf.reduce_all(checks)) if checks else True

  def model_weights_and_state(self):
    """The model's weights and state, read from the trainer's variables."""
    group = self.trainer.variables()
    weights = [v.read_value() for v in group['weights'][:self._n_weights]]
    state = [v.read_value() for v in group['state'][:self._n_state]]
    return (fastmath.tree_unflatten(weights, self._model.weights)[0],
            fastmath.tree_unflatten(state, self._model.state)[0])

  def one_step(self, i, batch, rng, step, learning_rate):
    """Runs a training step; returns `(loss, stats)`."""
    del i
    return self.trainer.one_step(batch, rng, step=step,
                                 learning_rate=learning_rate)
