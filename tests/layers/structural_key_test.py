"""Tests for layers._structural_key: equal keys for equal computations."""

import functools

import numpy as np

from tfnp_trax import fastmath
from tfnp_trax import shapes
import tfnp_trax.layers as tl
from tfnp_trax.layers._structural_key import structural_key


def _key(layer):
  return structural_key(layer)


def test_equal_layers_have_equal_keys_whatever_their_weights():
  a, b = tl.Dense(4), tl.Dense(4)
  x = np.ones((2, 3), np.float32)
  a.init(shapes.signature(x), rng=fastmath.random.get_prng(0))
  b.init(shapes.signature(x), rng=fastmath.random.get_prng(1))
  assert not np.allclose(a.weights[0], b.weights[0])
  assert _key(a) == _key(b)
  hash(_key(a))


def test_hyperparameters_classes_and_sublayers_tell_layers_apart():
  assert _key(tl.Dense(4)) != _key(tl.Dense(5))
  assert _key(tl.Dense(4)) != _key(tl.Dense(4, use_bias=False))
  assert _key(tl.Relu()) != _key(tl.Gelu())
  assert _key(tl.Dropout(0.1)) != _key(tl.Dropout(0.2))
  assert _key(tl.Serial(tl.Dense(4), tl.Relu())) == _key(
      tl.Serial(tl.Dense(4), tl.Relu()))
  assert _key(tl.Serial(tl.Dense(4), tl.Relu())) != _key(
      tl.Serial(tl.Relu(), tl.Dense(4)))


def _scaled(scale):
  # One code object; the closure's value tells the layers apart.
  return tl.Fn('Scale', lambda x: x * scale)


def test_functions_compare_by_code_and_closed_over_values():
  assert _key(_scaled(2.0)) == _key(_scaled(2.0))
  assert _key(_scaled(2.0)) != _key(_scaled(3.0))
  assert _key(tl.Fn('F', lambda x: x + 1)) != _key(tl.Fn('F', lambda x: x - 1))
  def times(x, k):
    return x * k
  double = functools.partial(times, k=2)
  assert _key(tl.Fn('P', double)) == _key(
      tl.Fn('P', functools.partial(times, k=2)))
  assert _key(tl.Fn('P', double)) != _key(
      tl.Fn('P', functools.partial(times, k=3)))


def test_unknown_objects_compare_by_identity():
  a, b = tl.Dense(4), tl.Dense(4)
  a._extra, b._extra = object(), object()
  assert _key(a) != _key(b)
  shared = object()
  a._extra = b._extra = shared
  assert _key(a) == _key(b)


def test_shape_checks_compare_by_spec():
  # AssertShape's helper objects describe themselves (STRUCTURAL_ATTRS).
  def checked():
    return tl.AssertFunction('...d->...d', tl.Dense(4), message='m')
  assert _key(checked()) == _key(checked())
  assert _key(checked()) != _key(
      tl.AssertFunction('...d->...e', tl.Dense(4), message='m'))


def test_cycles_terminate():
  a = tl.Dense(4)
  a._me = a
  b = tl.Dense(4)
  b._me = b
  assert _key(a) != _key(b)  # Each cycle is named by its own object.
  assert _key(a) == _key(a)
