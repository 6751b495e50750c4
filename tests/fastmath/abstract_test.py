"""Tests for fastmath.abstract_eval (shape inference without running)."""

import numpy as np
import tensorflow as tf

from tfnp_trax import fastmath
from tfnp_trax import shapes
from tfnp_trax.fastmath import numpy as jnp


def test_shapes_and_dtypes_from_signatures():
  f = lambda x, w: (jnp.matmul(x, w), jnp.argmax(x, axis=-1))
  out = fastmath.abstract_eval(f)(shapes.ShapeDtype((4, 3)),
                                  shapes.ShapeDtype((3, 5)))
  assert out[0] == shapes.ShapeDtype((4, 5), jnp.float32)
  assert out[1].shape == (4,) and out[1].dtype == tf.int64


def test_accepts_arrays_specs_trees_and_static_values():
  def f(tree, n):
    return {'y': tree['a'][:, :n] * tree['b'][0], 'n': n}
  tree = {'a': np.zeros((2, 6), np.float32),
          'b': (tf.TensorSpec((2, 1), tf.float32), ())}
  out = fastmath.abstract_eval(f)(tree, 4)
  assert out['y'] == shapes.ShapeDtype((2, 4), jnp.float32)
  assert out['n'] == 4


def test_dtype_follows_input():
  out = fastmath.abstract_eval(lambda x: x * 2)(
      shapes.ShapeDtype((3,), jnp.int32))
  assert out == shapes.ShapeDtype((3,), jnp.int32)


def test_function_is_traced_not_run():
  def fails_if_run(x):
    # Creating the assertion is fine; executing it would raise.
    tf.debugging.assert_equal(x, -1.)
    return x + 1.
  out = fastmath.abstract_eval(fails_if_run)(shapes.ShapeDtype((2,)))
  assert out == shapes.ShapeDtype((2,))
