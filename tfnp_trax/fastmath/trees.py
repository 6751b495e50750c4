"""Utilities over nested tuples, lists and dicts (weight and state trees).

Leaves are anything that is not a list, tuple or dict. Dicts are traversed in
sorted key order, matching `tf.nest`. NamedTuples keep their type.
"""

__all__ = ['nested_map', 'nested_map_multiarg', 'tree_flatten',
           'tree_unflatten', 'tree_leaves', 'tree_structure_str']


def _is_namedtuple(obj):
  return isinstance(obj, tuple) and hasattr(obj, '_fields')


def nested_map(f, obj, level=0, ignore_nones=True):
  """Maps `f` over the leaves of a nested structure.

  Args:
    f: function applied to each leaf (or each sub-structure at `level`).
    obj: a leaf, or a list/tuple/dict of nested structures.
    level: counted from the leaves: 0 maps leaves; 1 maps the innermost
      structures whose items are all leaves; n maps non-empty structures
      whose items are all at level n - 1. Empty containers are kept as is.
    ignore_nones: if True, None leaves (and level-n structures made only of
      Nones) are returned as None without calling `f`.

  Returns:
    A structure of the same shape with `f` applied.

  Raises:
    ValueError: if `level > 0` and a leaf sits above that level.
  """
  if _is_at_level(obj, level):
    if ignore_nones and _all_nones(obj):
      return None
    return f(obj)
  if _is_leaf(obj):
    raise ValueError(f'nested_map: leaf {obj!r} sits above level {level}; '
                     f'every branch must be at least {level} deep.')
  if _is_namedtuple(obj):
    return type(obj)(*[nested_map(f, y, level, ignore_nones) for y in obj])
  if isinstance(obj, (list, tuple)):
    return type(obj)(nested_map(f, y, level, ignore_nones) for y in obj)
  return {k: nested_map(f, v, level, ignore_nones) for k, v in obj.items()}


def _is_leaf(obj):
  return not isinstance(obj, (list, tuple, dict))


def _children(obj):
  return list(obj.values()) if isinstance(obj, dict) else list(obj)


def _is_at_level(obj, level):
  if level == 0 or _is_leaf(obj):
    return level == 0 and _is_leaf(obj)
  children = _children(obj)
  return bool(children) and all(_is_at_level(c, level - 1) for c in children)


def _all_nones(obj):
  if _is_leaf(obj):
    return obj is None
  children = _children(obj)
  return bool(children) and all(_all_nones(c) for c in children)


def nested_map_multiarg(f, *objs, ignore_nones=True):
  """Maps `f` over leaves of several structures that share one shape."""
  first = objs[0]
  if _is_namedtuple(first):
    return type(first)(*[nested_map_multiarg(f, *ys, ignore_nones=ignore_nones)
                         for ys in zip(*objs)])
  if isinstance(first, (list, tuple)):
    return type(first)(nested_map_multiarg(f, *ys, ignore_nones=ignore_nones)
                       for ys in zip(*objs))
  if isinstance(first, dict):
    return {k: nested_map_multiarg(f, *[o[k] for o in objs],
                                   ignore_nones=ignore_nones) for k in first}
  if first is None and ignore_nones:
    return None
  return f(*objs)


def tree_flatten(tree):
  """Returns the list of leaves of `tree`, depth first (dicts by sorted key)."""
  if isinstance(tree, (list, tuple)):
    return [leaf for sub in tree for leaf in tree_flatten(sub)]
  if isinstance(tree, dict):
    return [leaf for k in sorted(tree) for leaf in tree_flatten(tree[k])]
  return [tree]


def tree_leaves(tree, ignore_nones=True):
  """Like `tree_flatten`, optionally dropping None leaves."""
  leaves = tree_flatten(tree)
  return [x for x in leaves if x is not None] if ignore_nones else leaves


def tree_unflatten(flat, tree, copy_from_tree=None):
  """Refills the structure of `tree` with leaves taken in order from `flat`.

  Args:
    flat: a sequence of leaves; the first ones are consumed.
    tree: the structure to refill.
    copy_from_tree: optional list of leaf values; leaves of `tree` equal to
      one of them are copied from `tree` instead of taken from `flat`.

  Returns:
    A pair `(new_tree, rest)` where `rest` are the unused leaves of `flat`.
  """
  flat = list(flat)
  if copy_from_tree is not None:
    copy_from_tree = list(copy_from_tree)
  new_tree = _unflatten(flat, tree, copy_from_tree)
  return new_tree, flat


def _unflatten(flat, tree, copy_from_tree):
  if _is_namedtuple(tree):
    return type(tree)(*[_unflatten(flat, t, copy_from_tree) for t in tree])
  if isinstance(tree, (list, tuple)):
    return type(tree)(_unflatten(flat, t, copy_from_tree) for t in tree)
  if isinstance(tree, dict):
    # Consume leaves in sorted key order, as tree_flatten produced them.
    out = {k: _unflatten(flat, tree[k], copy_from_tree) for k in sorted(tree)}
    return {k: out[k] for k in tree}
  if copy_from_tree is not None and any(tree is c for c in copy_from_tree):
    return tree
  return flat.pop(0)


def tree_structure_str(tree):
  """A short description of a tree's structure and leaf shapes, for errors."""
  def describe(x):
    shape = getattr(x, 'shape', None)
    return 'leaf' if shape is None else f'{tuple(shape)}'
  return str(nested_map(describe, tree))
