"""Helpers for the conformance tests: running entries and comparing trees."""

import numpy as np

from tests.conformance import registry
from tfnp_trax import fastmath

__all__ = ['KEY', 'SERVING_KEY', 'native', 'to_numpy', 'assert_trees_close',
           'as_tuple']

# One fixed rng for every run, so stochastic layers are comparable.
KEY = np.array([0, 7], np.int32)
# The rng that exported serving functions use.
SERVING_KEY = np.array([0, 0], np.int32)


def to_numpy(tree):
  return fastmath.nested_map(np.asarray, tree)


def as_tuple(y):
  return tuple(y) if isinstance(y, (list, tuple)) else (y,)


def native(entry, layer=None, x=None, fn=None, key=KEY):
  """`(outputs, new_state)` of `entry` run eagerly (or through `fn`)."""
  layer = layer or registry.build(entry)
  x = registry.make_inputs(entry) if x is None else x

  def apply(xs, w, s, r):
    return layer.pure_fn(xs, w, s, r)
  run = fn(apply) if fn else apply
  return to_numpy(run(x, layer.weights, layer.state, key))


def assert_trees_close(actual, expected, tol, what=''):
  a_leaves = fastmath.tree_flatten(to_numpy(actual))
  e_leaves = fastmath.tree_flatten(to_numpy(expected))
  assert len(a_leaves) == len(e_leaves), what
  for i, (a, e) in enumerate(zip(a_leaves, e_leaves)):
    assert a.shape == e.shape, f'{what} leaf {i}: {a.shape} vs {e.shape}'
    if a.dtype.kind in 'fc' or e.dtype.kind in 'fc':
      np.testing.assert_allclose(a.astype(np.float64), e.astype(np.float64),
                                 rtol=tol, atol=tol, err_msg=f'{what} {i}')
    else:
      np.testing.assert_array_equal(a, e, err_msg=f'{what} {i}')
