"""Trees of tf.Variables that live under a distribution strategy.

Weights, slots and state are held as variables created in the strategy's
scope (mirrored across replicas). Each replica computes identical new values
after the gradient all-reduce, so writing them back needs no further
communication: `assign_local` hands every device its own replica's value.
"""

import numpy as onp
import tensorflow as tf

from tfnp_trax import fastmath

__all__ = ['VariableTree', 'assign_local']


class VariableTree:
  """A tree of variables mirroring a tree of arrays.

  Empty tuples and None leaves (e.g. SGD's slots, as in Trax) are kept in the
  structure and get no variable.
  """

  def __init__(self, tree, strategy, name):
    self._structure = tree
    self._strategy = strategy
    self._name = name
    with strategy.scope():
      self.variables = [self._variable(i, x)
                        for i, x in enumerate(fastmath.tree_leaves(tree))]

  def _variable(self, i, x):
    return tf.Variable(x, trainable=False, name=f'{self._name}_{i}',
                       aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA)

  def replace(self, values):
    """Re-creates the variables at the given indices, shaped as the values.

    Args:
      values: {leaf index: new value}; a value may have a new shape (state
        that changes shape after a step, as JAX allows), not a new dtype.
    """
    with self._strategy.scope():
      for i, x in values.items():
        old = self.variables[i]
        self.variables[i] = self._variable(i, tf.cast(x, old.dtype))

  def _unflatten(self, flat):
    return fastmath.tree_unflatten(flat, self._structure,
                                   copy_from_tree=[None])[0]

  def read(self):
    """The current values as a tree of tensors (local copies per replica)."""
    return self._unflatten([v.read_value() for v in self.variables])

  def numpy(self):
    """The current values as a tree of NumPy arrays (first replica)."""
    return self._unflatten([v.numpy() for v in self.variables])

  def assign(self, tree, allow_new_shapes=False):
    """Sets all values from a tree of arrays (outside replica functions).

    Args:
      tree: the new values, in this tree's structure.
      allow_new_shapes: re-create (see `replace`) the variables whose value
        has another shape, instead of failing.

    Returns:
      Whether any variable was re-created.
    """
    reshaped = {}
    for i, (v, x) in enumerate(zip(self.variables,
                                   fastmath.tree_leaves(tree))):
      if allow_new_shapes and tuple(v.shape) != tuple(onp.shape(x)):
        reshaped[i] = x
      else:
        v.assign(tf.cast(x, v.dtype))
    if reshaped:
      self.replace(reshaped)
    return bool(reshaped)

  def check_like(self, tree, what):
    flat = fastmath.tree_leaves(tree)
    if len(flat) != len(self.variables):
      raise ValueError(f'{what}: expected {len(self.variables)} arrays, got '
                       f'{len(flat)}.')
    for i, (v, x) in enumerate(zip(self.variables, flat)):
      if tuple(v.shape) != tuple(x.shape):
        raise ValueError(f'{what}: array {i} ({v.name}) has shape '
                         f'{tuple(v.shape)} here but {tuple(x.shape)} in the '
                         f'values given.')


def assign_local(variables, values):
  """Inside a replica function: each device keeps its replica's `values`.

  Replicas must already agree on `values` (e.g. after an all-reduce); the
  write is then purely local, with no collective and no merge: in a replica
  function `handle` is this replica's own copy of a variable.

  Returns:
    The write ops, for control dependencies.
  """
  return [tf.raw_ops.AssignVariableOp(resource=v.handle,
                                      value=tf.cast(x, v.dtype))
          for v, x in zip(variables, values)]
