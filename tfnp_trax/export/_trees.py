"""Weight and state trees of a layer, flattened for export.

Exported graphs hold a layer's weights and state as flat lists of variables;
the nested tree is rebuilt from a template (the tree with its leaves kept as
placeholders) each time the layer runs.
"""

import numpy as onp
import tensorflow as tf

from tfnp_trax import fastmath
from tfnp_trax.layers import naming

__all__ = ['Held', 'check_initialized', 'weights_and_state', 'leaf_names',
           'unflatten']


class Held:
  """A plain holder for values kept on a tf.Module or Keras layer.

  Those objects wrap list, tuple and dict attributes for tracking, which
  changes the container types that tree templates rely on; attributes of a
  plain object are left alone.
  """

  def __init__(self, **kwargs):
    self.__dict__.update(kwargs)


def check_initialized(layer, caller):
  """Raises a ValueError naming `layer` unless it has been initialized."""
  if not layer.initialized:
    raise ValueError(
        f'{caller}: layer {layer.name} is not initialized, so it has no '
        f'weights to export. Call layer.init(input_signature) first (or '
        f'pass weights= and state= explicitly).')


def weights_and_state(layer, weights, state, caller):
  """The layer's own weights/state unless given; checked against the layer."""
  if weights is None:
    check_initialized(layer, caller)
    weights = layer.weights
  elif layer.initialized:
    _check_like(layer.weights, weights, f'{caller}: weights of {layer.name}')
  if state is None:
    state = layer.state
  return weights, state


def _check_like(expected, given, what):
  exp_leaves = fastmath.tree_flatten(expected)
  got_leaves = fastmath.tree_flatten(given)
  if len(exp_leaves) != len(got_leaves):
    raise ValueError(f'{what}: the layer holds {len(exp_leaves)} arrays but '
                     f'{len(got_leaves)} were given; pass the tree from '
                     f'layer.weights of the same architecture.')
  for i, (e, g) in enumerate(zip(exp_leaves, got_leaves)):
    if tuple(onp.shape(e)) != tuple(onp.shape(g)):
      raise ValueError(f'{what}: array {i} has shape {tuple(onp.shape(g))} '
                       f'but the layer expects {tuple(onp.shape(e))}.')


# Names like 'MLP/1_Dense_8/0' for the leaves of a tree, in flat order: the
# one leaf-naming scheme of tfnp_trax (`layers.naming`), so an exported
# variable carries the name a checkpoint manifest gives it.
leaf_names = naming.leaf_names


def unflatten(flat, template):
  """Rebuilds `template`'s tree from `flat`, reading each leaf as a tensor.

  Leaves may be tf or Keras variables, arrays or numbers.
  """
  return fastmath.tree_unflatten([tf.convert_to_tensor(x) for x in flat],
                                 template)[0]
