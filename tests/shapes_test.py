"""Tests for tfnp_trax.shapes: ShapeDtype, signature, splice_signatures."""

import numpy as np
import pytest
import tensorflow as tf

from tfnp_trax import shapes
from tfnp_trax.fastmath import numpy as jnp

ShapeDtype = shapes.ShapeDtype


def test_shape_dtype_defaults_and_equality():
  s = ShapeDtype((8, 16))
  assert s.shape == (8, 16) and s.dtype == tf.float32
  assert s.dtype == np.float32  # tf.DType compares equal to NumPy dtypes.
  # trax/shapes.py: a shape must be a tuple or list.
  with pytest.raises(TypeError, match=r'shape must be tuple or list; got: 5'):
    ShapeDtype(5)
  assert ShapeDtype([2, 3], np.int32) == ShapeDtype((2, 3), tf.int32)
  assert ShapeDtype((2, 3)) != ShapeDtype((2, 3), tf.int32)
  assert ShapeDtype((2, 3)) != ShapeDtype((3, 2))
  assert ShapeDtype((2,)) != (2,)
  assert len({ShapeDtype((2, 3)), ShapeDtype([2, 3], 'float32')}) == 1


def test_shape_dtype_repr_and_spec():
  # Trax keeps the dtype as given: jnp.bfloat16 is the ml_dtypes scalar
  # class here (trax/shapes.py __repr__); a tf.DType becomes a NumPy dtype.
  s = ShapeDtype((2, 3), jnp.bfloat16)
  assert repr(s) == (
      "ShapeDtype{shape:(2, 3), dtype:<class 'ml_dtypes.bfloat16'>}")
  assert repr(ShapeDtype((2, 3), tf.bfloat16)) == (
      'ShapeDtype{shape:(2, 3), dtype:bfloat16}')
  assert s.as_tensor_spec() == tf.TensorSpec((2, 3), tf.bfloat16)


def test_shape_dtype_length_is_one():
  # trax/shapes.py ShapeDtype.__len__: one signature counts as one input.
  assert len(ShapeDtype((2,))) == 1


def test_signature_of_arrays_tensors_and_scalars():
  assert shapes.signature(np.zeros((2, 3), np.int32)) == ShapeDtype(
      (2, 3), tf.int32)
  assert shapes.signature(tf.ones((4,), tf.float16)) == ShapeDtype(
      (4,), tf.float16)
  assert shapes.signature(jnp.zeros((1, 2), dtype=jnp.float32)) == ShapeDtype(
      (1, 2))
  assert shapes.signature(tf.TensorSpec((3,), tf.int64)) == ShapeDtype(
      (3,), tf.int64)
  assert shapes.signature(3).shape == ()
  assert shapes.signature(2.5).shape == ()
  s = ShapeDtype((7,))
  assert shapes.signature(s) is s


def test_signature_of_structures():
  x, y = np.zeros((2, 3), np.float32), np.zeros((4,), np.int32)
  assert shapes.signature((x, y)) == (ShapeDtype((2, 3)),
                                      ShapeDtype((4,), tf.int32))
  assert shapes.signature([x, (y,)]) == [ShapeDtype((2, 3)),
                                         (ShapeDtype((4,), tf.int32),)]
  assert shapes.signature({'a': x}) == {'a': ShapeDtype((2, 3))}


def test_splice_signatures():
  a, b, c = ShapeDtype((1,)), ShapeDtype((2,)), ShapeDtype((3,))
  assert shapes.splice_signatures(a, (b, c)) == (a, b, c)
  assert shapes.splice_signatures((a, b), c) == (a, b, c)
  assert shapes.splice_signatures(a) is a
  assert shapes.splice_signatures((a,), ()) is a
  assert shapes.splice_signatures() == ()
