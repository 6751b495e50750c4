"""The one naming scheme for the leaves of a layer's weight or state tree.

Checkpoint manifests (supervised), exported variables (export) and the RL
trainers' checkpoints (rl) all name leaves this way, through this one
public module of layers, so a name seen in one place (an error message, a
SavedModel variable, a manifest) is the same in the others:

  <layer name>/<i>_<sublayer name>/.../<j>

`<i>_<sublayer name>` follows the layer's sublayers while the tree mirrors
them; `<j>` numbers the leaves below that when there is more than one. A
tree not shaped like the layer gets `<prefix>/<k>` names. Characters other
than letters, digits and `_/.-` become `_`, as TensorFlow variable and
Keras weight names require.
"""

from tfnp_trax import fastmath
from tfnp_trax.layers import _markers

__all__ = ['leaf_names']


def leaf_names(layer, tree=None, prefix=None, kind='weights'):
  """Names for the leaves of `tree` (default: `layer`'s `kind` tree).

  Args:
    layer: the layer the tree belongs to.
    tree: a weights or state tree of `layer`; None reads `getattr(layer,
      kind)`.
    prefix: the first path element (default: the layer's name), e.g. the
      name of the trainer a network belongs to.
    kind: 'weights' or 'state', used when `tree` is None.

  Returns:
    A list of strings, one per leaf, in `fastmath.tree_flatten` order.

  Example:
    >>> from tfnp_trax import layers as tl, shapes
    >>> model = tl.Serial(tl.Dense(3), tl.Relu(), tl.Dense(2))
    >>> _ = model.init(shapes.ShapeDtype((1, 4)))
    >>> leaf_names(model)[:2]
    ['Serial/0_Dense_3/0', 'Serial/0_Dense_3/1']
  """
  if tree is None:
    tree = getattr(layer, kind)
  root = prefix or layer.name
  names = []

  def walk(lay, sub_tree, path):
    if _markers.is_cache_marker(sub_tree):
      return
    if lay.sublayers and isinstance(sub_tree, (list, tuple)) and len(
        sub_tree) == len(lay.sublayers):
      for i, (child, t) in enumerate(zip(lay.sublayers, sub_tree)):
        walk(child, t, f'{path}/{i}_{child.name}')
      return
    n = len(fastmath.tree_flatten(sub_tree))
    names.extend(f'{path}/{j}' if n > 1 else path for j in range(n))
  walk(layer, tree, root)
  n_leaves = len(fastmath.tree_flatten(tree))
  if len(names) != n_leaves:  # A tree not shaped like the layer: number it.
    names = [f'{root}/{k}' for k in range(n_leaves)]
  return [_sanitize(n) for n in names]


def _sanitize(name):
  return ''.join(c if c.isalnum() or c in '_/.-' else '_' for c in name)
