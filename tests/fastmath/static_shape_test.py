"""Tensors' `.shape` is a tuple of ints where static, as on JAX arrays."""

import pickle

import numpy as np
import pytest
import tensorflow as tf

from tfnp_trax import layers as tl
from tfnp_trax.fastmath import numpy as jnp


def test_static_shape_is_a_tuple_that_answers_tensorshape_methods():
  # Follows JAX arrays as Trax's layers see them: `x.shape` is a tuple, so
  # notebook code such as `x.shape[:n] + (-1,)` works.
  shape = jnp.ones((2, 3, 4)).shape
  assert isinstance(shape, tuple) and shape == (2, 3, 4)
  assert shape[:2] + (-1,) == (2, 3, -1)
  assert (5,) + shape[1:] == (5, 3, 4)
  assert shape[-1] == 4 and len(shape) == 3 and list(shape) == [2, 3, 4]
  # TensorFlow's own code reads it as a TensorShape.
  assert shape.rank == 3 and shape.ndims == 3
  assert shape.as_list() == [2, 3, 4] and shape.num_elements() == 24
  assert shape[1:].as_list() == [3, 4]
  assert shape.is_compatible_with(tf.TensorShape([None, 3, 4]))
  assert shape.is_fully_defined()
  assert shape == tf.TensorShape([2, 3, 4]) and shape == [2, 3, 4]
  assert shape != (2, 3) and shape != [2, 3]
  assert hash(shape) == hash((2, 3, 4))
  assert type(pickle.loads(pickle.dumps(shape))) is tuple
  assert tf.nest.flatten({'s': shape}) == [2, 3, 4]
  assert isinstance(jnp.ones((2, 3)).get_shape(), tf.TensorShape)
  assert jnp.ones(()).shape == ()


def test_layers_and_fns_see_tuples_eagerly_and_traced():
  # Follows trax/layers/base.py Fn: the function receives arrays whose
  # shape is a tuple of ints.
  seen = []

  def flatten_tail(x):
    seen.append(type(x.shape))
    return jnp.reshape(x, x.shape[:1] + (-1,))
  layer = tl.Fn('FlattenTail', flatten_tail)
  x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
  np.testing.assert_array_equal(layer(x), x.reshape(2, 12))
  np.testing.assert_array_equal(tf.function(layer)(x), x.reshape(2, 12))
  assert seen and all(issubclass(t, tuple) for t in seen)


def test_unknown_dimensions_stay_a_tensorshape():
  seen = []

  @tf.function(input_signature=[tf.TensorSpec((None, 3), tf.float32)])
  def f(x):
    seen.append(x.shape)
    return tf.reduce_sum(x, 0)
  f(np.ones((2, 3), np.float32))
  assert isinstance(seen[0], tf.TensorShape) and seen[0].as_list() == [None, 3]


@pytest.mark.parametrize('compiled', [False, True])
def test_tensorflow_ops_that_take_shapes(compiled):
  def run(x):
    return (tf.reshape(x, x.shape), tf.zeros(x.shape), tf.broadcast_to(
        x[:1], x.shape), tf.ensure_shape(x, x.shape),
            tf.einsum('ij,jk->ik', x, tf.transpose(x)))
  fn = tf.function(run) if compiled else run
  x = np.arange(6, dtype=np.float32).reshape(2, 3)
  got = [np.asarray(v) for v in fn(tf.constant(x))]
  np.testing.assert_array_equal(got[0], x)
  np.testing.assert_array_equal(got[1], np.zeros((2, 3)))
  np.testing.assert_array_equal(got[2], np.broadcast_to(x[:1], (2, 3)))
  np.testing.assert_array_equal(got[3], x)
  np.testing.assert_allclose(got[4], x @ x.T)
