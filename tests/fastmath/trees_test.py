"""Tests for fastmath's tree utilities (nested_map, flatten/unflatten)."""

import collections

import numpy as np
import pytest

from tfnp_trax import fastmath

Pair = collections.namedtuple('Pair', ['first', 'second'])


def test_nested_map_keeps_container_types():
  tree = ([1, 2], (3, {'b': 4, 'a': 5}), Pair(6, ()))
  out = fastmath.nested_map(lambda x: 10 * x, tree)
  assert out == ([10, 20], (30, {'b': 40, 'a': 50}), Pair(60, ()))
  assert isinstance(out[0], list)
  assert isinstance(out[2], Pair)


def test_nested_map_nones():
  calls = []
  out = fastmath.nested_map(lambda x: calls.append(x) or 1, (None, 2))
  assert out == (None, 1)
  assert calls == [2]
  out = fastmath.nested_map(lambda x: 'seen', (None, 2), ignore_nones=False)
  assert out == ('seen', 'seen')


def test_nested_map_level_one_maps_innermost_structures():
  tree = (((1, 2), (3, 4)), ((5, 6), ()))
  # Empty containers have nothing at level 0, so they are kept unchanged.
  assert fastmath.nested_map(sum, tree, level=1) == ((3, 7), (11, ()))
  assert fastmath.nested_map(len, (tree[0], ((5, 6),)), level=2) == (2, 1)


def test_nested_map_level_on_dicts_and_nones():
  tree = {'w': [1, 2], 'b': [None, None]}
  assert fastmath.nested_map(sum, tree, level=1) == {'w': 3, 'b': None}


def test_nested_map_level_rejects_shallow_leaf():
  with pytest.raises(ValueError, match=r'leaf 3 sits above level 1'):
    fastmath.nested_map(sum, ((1, 2), 3), level=1)


def test_nested_map_multiarg():
  a = {'x': (1, 2), 'y': [3]}
  b = {'x': (10, 20), 'y': [30]}
  out = fastmath.nested_map_multiarg(lambda u, v: u + v, a, b)
  assert out == {'x': (11, 22), 'y': [33]}


def test_tree_flatten_order_sorts_dict_keys():
  tree = {'b': (1, [2, 3]), 'a': Pair(4, {'z': 5, 'c': 6})}
  assert fastmath.tree_flatten(tree) == [4, 6, 5, 1, 2, 3]


@pytest.mark.parametrize('tree', [
    {'b': (1, [2, 3]), 'a': Pair(4, {'z': 5, 'c': 6})},
    ((), [(7,), {'k': 8}], Pair(first=(9, 10), second=[])),
    11,
])
def test_flatten_unflatten_round_trip(tree):
  flat = fastmath.tree_flatten(tree)
  rebuilt, rest = fastmath.tree_unflatten(flat + ['extra'], tree)
  assert rebuilt == tree
  assert rest == ['extra']
  # New leaves go back to the same positions.
  doubled, _ = fastmath.tree_unflatten([2 * v for v in flat], tree)
  assert fastmath.tree_flatten(doubled) == [2 * v for v in flat]
  assert type(doubled) is type(tree)


def test_unflatten_keeps_namedtuple_and_dict_insertion_order():
  tree = {'b': Pair(1, 2), 'a': 3}
  rebuilt, _ = fastmath.tree_unflatten([30, 10, 20], tree)
  assert list(rebuilt) == ['b', 'a']
  assert rebuilt == {'b': Pair(10, 20), 'a': 30}
  assert isinstance(rebuilt['b'], Pair)


def test_unflatten_copy_from_tree():
  keep = object()
  tree = (keep, 1, (2, keep))
  rebuilt, rest = fastmath.tree_unflatten(['x', 'y'], tree,
                                          copy_from_tree=[keep])
  assert rebuilt == (keep, 'x', ('y', keep))
  assert not rest


def test_tree_leaves_drops_nones():
  tree = (None, np.ones(2), [None, 3])
  assert len(fastmath.tree_leaves(tree)) == 2
  assert len(fastmath.tree_leaves(tree, ignore_nones=False)) == 4


def test_tree_flatten_treats_arrays_as_leaves():
  x = np.arange(6).reshape(2, 3)
  flat = fastmath.tree_flatten((x, [x]))
  assert len(flat) == 2 and flat[0] is x
