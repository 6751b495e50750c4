"""The one place where training batches become what a replicated step takes.

A compiled training step runs inside `strategy.run` and takes, per input
leaf, either a tensor (one replica) or a distributed value holding one
slice per local replica. Batches reach it two ways:

* host batches (NumPy arrays or eager tensors, the global batch of this
  worker), which `BatchDistributor.place` checks and splits along axis 0;
* a `tf.data.Dataset`, which `BatchDistributor.iterate` distributes with
  the strategy itself (`experimental_distribute_dataset`), so each replica
  reads its slice on its own device.

Both paths run the same checks (no empty batch, a batch size that divides
by the replicas) and both say, with the placed batch, whether the step's
host fast path (`_step_calls`) may call the traced graph on its flat
tensors. Nothing downstream inspects a batch's type.
"""

import tensorflow as tf

from tfnp_trax import fastmath

__all__ = ['BatchDistributor', 'Placed', 'check_not_empty']


def check_not_empty(batch, owner, source=None):
  """Refuses a batch with a leaf of leading size 0.

  A step would train on it without a word and report a loss of 0.0. Reads
  static shapes only: distributed values (no single shape) pass.

  Args:
    batch: a tree of arrays.
    owner: the component named first in the message ('Trainer', 'Loop').
    source: what gave the batch ('the training data of task 0'), or None
      for a batch passed in directly.
  """
  leaves = fastmath.tree_flatten(batch)
  found = [getattr(x, 'shape', None) for x in leaves]
  if not any(s is not None and len(s) and s[0] == 0 for s in found):
    return
  shown = [None if s is None else tuple(s) for s in found]
  if source is None:
    raise ValueError(f'{owner}: got an empty batch (leading size 0; leaf '
                     f'shapes {shown}); every batch needs at least one '
                     f'example.')
  raise ValueError(f'{owner}: {source} gave an empty batch (leading size 0; '
                   f'shapes {shown}); each batch needs at least one example. '
                   f'Check the batch size and any filtering of the stream.')


class Placed:
  """A batch as the step takes it.

  Attributes:
    values: the tree of tensors or distributed values passed to the step.
    leaves: when `values` is a tuple whose leaves are all plain tensors,
      those leaves (the step's host fast path passes them to the traced
      graph as they are); else None.
  """

  __slots__ = ('values', 'leaves')

  def __init__(self, values, leaves=None):
    self.values, self.leaves = values, leaves


class BatchDistributor:
  """Checks batches and gives each replica its slice.

  Args:
    strategy: the tf.distribute strategy of the step.
    owner: the component named in error messages ('Trainer').
    device: with one replica, a device to place host arrays on as they are
      converted (`fastmath.device_put`), or None to convert them unplaced;
      with several, each slice goes to its replica's device.
  """

  def __init__(self, strategy, owner, device=None):
    self._strategy = strategy
    self._owner = owner
    self._device = device

  @property
  def num_replicas(self):
    return self._strategy.num_replicas_in_sync

  def split(self, batch):
    """A host batch as tensors (one replica) or distributed values.

    Raises:
      ValueError: for an empty batch or one whose size does not divide by
        the replicas.
    """
    check_not_empty(batch, self._owner)
    n = self.num_replicas
    if n == 1:
      if self._device is None:
        return fastmath.nested_map(tf.convert_to_tensor, batch)
      return fastmath.device_put(batch, self._device)
    for x in fastmath.tree_flatten(batch):
      if x.shape[0] % n:
        raise ValueError(f'{self._owner}: batch size {x.shape[0]} does not '
                         f'divide by the {n} replicas; use a multiple of '
                         f'{n}.')

    def value_fn(ctx):
      i = ctx.replica_id_in_sync_group
      return fastmath.nested_map(
          lambda x: tf.convert_to_tensor(
              x[i * (x.shape[0] // n):(i + 1) * (x.shape[0] // n)]), batch)
    return self._strategy.experimental_distribute_values_from_function(
        value_fn)

  def place(self, batch):
    """`batch` as a `Placed` value: split if from the host, else as given.

    Accepts a host batch, or a batch already distributed through this
    strategy (distributed values, or a tuple of them, as a distributed
    Dataset yields).
    """
    if _is_distributed(batch):
      return Placed(batch)
    values = self.split(batch)
    if not isinstance(values, tuple):
      return Placed(values)
    leaves = tf.nest.flatten(values)
    if not all(isinstance(x, tf.Tensor) for x in leaves):
      return Placed(values)
    return Placed(values, leaves)

  def iterate(self, dataset, position=0):
    """Iterates `dataset` from batch `position`, distributed over replicas.

    Yields the dataset's elements, each as a tuple, as the step takes them
    (`place` passes them through).
    """
    ds = dataset.skip(position).prefetch(tf.data.AUTOTUNE)
    if self.num_replicas > 1:
      ds = self._strategy.experimental_distribute_dataset(ds)
    return iter(ds)


def _is_distributed(batch):
  if isinstance(batch, tf.distribute.DistributedValues):
    return True
  return isinstance(batch, tuple) and bool(batch) and isinstance(
      batch[0], tf.distribute.DistributedValues)

