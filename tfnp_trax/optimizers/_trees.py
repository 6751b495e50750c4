"""Flat views of weight trees for `Optimizer.tree_*`: paths, dtypes, checks.

Leaves are visited in `fastmath.tree_flatten` order (lists and tuples by
position, dicts by sorted key), so flat index `i` of the gradients, the
weights and the slots always refer to the same weight.
"""

from tfnp_trax.fastmath import dtypes
from tfnp_trax.fastmath import numpy as jnp

__all__ = ['leaf_paths', 'compute_dtype', 'to_compute', 'check_grads_match',
           'check_slots_match']



def leaf_paths(tree, prefix=''):
  """Index paths such as `[1][0]` or `['dense'][0]`, in flatten order."""
  if isinstance(tree, (list, tuple)):
    return [p for i, sub in enumerate(tree)
            for p in leaf_paths(sub, f'{prefix}[{i}]')]
  if isinstance(tree, dict):
    return [p for k in sorted(tree)
            for p in leaf_paths(tree[k], f'{prefix}[{k!r}]')]
  return [prefix or '<root>']


def compute_dtype(x):
  """The dtype in which a weight of `x`'s dtype is updated.

  Low-precision weights are updated in float32 and cast back, so small
  updates are not rounded away and slots keep full precision.
  """
  dtype = jnp.asarray(x).dtype
  return jnp.float32 if dtypes.is_low_precision(dtype) else dtype


def to_compute(x, like=None):
  """`x` as a tensor in the compute dtype of `like` (default: of `x`)."""
  x = jnp.asarray(x)
  dtype = compute_dtype(x if like is None else like)
  return x if x.dtype == dtype else x.astype(dtype)


def _shape(x):
  return tuple(getattr(x, 'shape', ()))


def _compatible(a, b):
  # Unknown (None) dimensions inside a trace match anything.
  return len(a) == len(b) and all(
      x is None or y is None or x == y for x, y in zip(a, b))


def check_grads_match(name, grads_flat, weights_flat, weight_tree):
  """Raises ValueError unless gradients mirror the weights leaf for leaf."""
  fix = ('The gradient tree must mirror the weight tree; take gradients '
         'with respect to the same weights that are passed here.')
  if len(grads_flat) != len(weights_flat):
    raise ValueError(
        f'{name}: gradient tree has {len(grads_flat)} leaves but weight tree '
        f'has {len(weights_flat)} leaves. {fix}')
  for i, (g, w) in enumerate(zip(grads_flat, weights_flat)):
    if not _compatible(_shape(g), _shape(w)):
      path = leaf_paths(weight_tree)[i]
      raise ValueError(
          f'{name}: gradient leaf {i} has shape {_shape(g)} but weight leaf '
          f'{i} has shape {_shape(w)} (weight path {path}). {fix}')


def check_slots_match(name, slots, weights_flat):
  """Raises ValueError unless there is one slot entry per weight leaf."""
  n_slots = len(slots) if isinstance(slots, (list, tuple)) else None
  if n_slots != len(weights_flat):
    given = (f'{n_slots} slot entries' if n_slots is not None
             else f'slots of type {type(slots).__name__}')
    raise ValueError(
        f'{name}: got {given} for {len(weights_flat)} weight leaves. Create '
        f'slots with `slots, opt_params = optimizer.tree_init(weights)` on '
        f'the same weight tree.')
