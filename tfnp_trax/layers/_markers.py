"""Markers that stand in weight and state trees for values held elsewhere.

A layer without weights holds `EMPTY_WEIGHTS` (and `EMPTY_STATE`). A layer
that appears more than once in a model holds its weights and state at its
first occurrence only; the later ones hold the cache markers. They live
below `base` so that the modules `base` builds on (weight files, leaf
names) can recognise them without importing `base`; `base` re-exports
them under Trax's names.
"""

__all__ = ['EMPTY_WEIGHTS', 'EMPTY_STATE', 'GET_WEIGHTS_FROM_CACHE',
           'GET_STATE_FROM_CACHE', 'is_cache_marker', 'map_keep_markers']

EMPTY_WEIGHTS = ()
EMPTY_STATE = ()
GET_WEIGHTS_FROM_CACHE = {'__marker_for_cached_weights_': ()}
GET_STATE_FROM_CACHE = {'__marker_for_cached_state_': ()}


def is_cache_marker(x):
  """Whether `x` is one of the markers of a shared layer's later uses."""
  return isinstance(x, dict) and (x == GET_WEIGHTS_FROM_CACHE or
                                  x == GET_STATE_FROM_CACHE)


def map_keep_markers(f, tree):
  """`f` applied to every leaf of `tree`; cache markers are kept as they are."""
  if is_cache_marker(tree):
    return tree
  if isinstance(tree, (list, tuple)) and not hasattr(tree, '_fields'):
    return type(tree)(map_keep_markers(f, t) for t in tree)
  if isinstance(tree, tuple):
    return type(tree)(*[map_keep_markers(f, t) for t in tree])
  if isinstance(tree, dict):
    return {k: map_keep_markers(f, v) for k, v in tree.items()}
  return f(tree)
