"""Readable names for the leaves of a layer's weight or state tree."""

from tfnp_trax import fastmath
from tfnp_trax.layers import base

__all__ = ['leaf_names']


def leaf_names(layer, kind='weights'):
  """Names like 'Serial/0:Dense_16/1' for each leaf, in tree_flatten order."""
  names = []

  def walk(lay, tree, prefix):
    if base.is_cache_marker(tree):
      return
    if lay.sublayers and isinstance(tree, (list, tuple)) and len(tree) == len(
        lay.sublayers):
      for i, (sub, t) in enumerate(zip(lay.sublayers, tree)):
        walk(sub, t, f'{prefix}/{i}:{sub.name}')
      return
    leaves = fastmath.tree_flatten(tree)
    for j in range(len(leaves)):
      names.append(f'{prefix}/{j}' if len(leaves) > 1 else prefix)
  walk(layer, getattr(layer, kind), layer.name)
  return names
