"""ShapeDtype and signature() as trax/shapes.py (Trax 1.4.1) defines them.

Expected strings are what Trax 1.4.1 prints for the same expression. Trax
stores the dtype as given (a `tf.DType` becomes its NumPy scalar class), so
the default prints as `<class 'numpy.float32'>` while an array's dtype (a
NumPy dtype object) prints as `float32`. Where tfnp_trax has to pick an
analogue -- our arrays are TensorFlow tensors, whose dtype is a `tf.DType` --
the test says so: a `tf.DType` becomes a NumPy dtype *object*, so that
`signature(x)` of one of our arrays prints as Trax prints a JAX array's.
"""

import numpy as np
import pytest
import tensorflow as tf

from tfnp_trax import shapes
from tfnp_trax.fastmath import numpy as jnp

ShapeDtype = shapes.ShapeDtype
F32 = "<class 'numpy.float32'>"


@pytest.mark.parametrize('make,want', [
    # trax/shapes.py ShapeDtype.__init__ default dtype=np.float32, __repr__.
    (lambda: ShapeDtype((2, 3)), f'ShapeDtype{{shape:(2, 3), dtype:{F32}}}'),
    (lambda: ShapeDtype([2, 3]), f'ShapeDtype{{shape:(2, 3), dtype:{F32}}}'),
    (lambda: ShapeDtype((None, 3)),
     f'ShapeDtype{{shape:(None, 3), dtype:{F32}}}'),
    (lambda: ShapeDtype((2, 3), np.int32),
     "ShapeDtype{shape:(2, 3), dtype:<class 'numpy.int32'>}"),
    (lambda: ShapeDtype((), np.uint8),
     "ShapeDtype{shape:(), dtype:<class 'numpy.uint8'>}"),
    (lambda: ShapeDtype((2,), np.float16),
     "ShapeDtype{shape:(2,), dtype:<class 'numpy.float16'>}"),
    (lambda: ShapeDtype([2, 3], np.dtype('int32')),
     'ShapeDtype{shape:(2, 3), dtype:int32}'),
    (lambda: ShapeDtype((2, 3), 'int32'),
     'ShapeDtype{shape:(2, 3), dtype:int32}'),
    # jnp.float32 is NumPy's class here (JAX's own class in Trax).
    (lambda: ShapeDtype((2, 3), jnp.float32),
     f'ShapeDtype{{shape:(2, 3), dtype:{F32}}}'),
    # Analogue: a tf.DType is kept as the NumPy dtype object (Trax: the
    # scalar class, "<class 'numpy.int32'>").
    (lambda: ShapeDtype((2, 3), tf.int32),
     'ShapeDtype{shape:(2, 3), dtype:int32}'),
    (lambda: ShapeDtype((2, 3), tf.bfloat16),
     'ShapeDtype{shape:(2, 3), dtype:bfloat16}'),
])
def test_shape_dtype_prints_the_dtype_as_given(make, want):
  assert str(make()) == want
  assert repr(make()) == want


@pytest.mark.parametrize('make,want', [
    # trax/shapes.py signature: ShapeDtype(obj.shape, obj.dtype); an array's
    # dtype is a NumPy dtype object, printed by name.
    (lambda: np.zeros((2, 3), np.float32), 'ShapeDtype{shape:(2, 3), '
     'dtype:float32}'),
    (lambda: np.zeros((2, 3), np.int64), 'ShapeDtype{shape:(2, 3), '
     'dtype:int64}'),
    (lambda: np.zeros((4,), np.bool_), 'ShapeDtype{shape:(4,), dtype:bool}'),
    (lambda: np.float32(1.0), 'ShapeDtype{shape:(), dtype:float32}'),
    # Our arrays (tf tensors) print as Trax prints jnp arrays.
    (lambda: jnp.zeros((2, 3), dtype=jnp.float32),
     'ShapeDtype{shape:(2, 3), dtype:float32}'),
    (lambda: jnp.zeros((2, 3), dtype=jnp.int32),
     'ShapeDtype{shape:(2, 3), dtype:int32}'),
    (lambda: tf.zeros((2, 3), tf.bfloat16),
     'ShapeDtype{shape:(2, 3), dtype:bfloat16}'),
    (lambda: (np.zeros((2,)), np.zeros((3,), np.int32)),
     '(ShapeDtype{shape:(2,), dtype:float64}, '
     'ShapeDtype{shape:(3,), dtype:int32})'),
    (lambda: [np.zeros((2,)), np.zeros((3,), np.int32)],
     '[ShapeDtype{shape:(2,), dtype:float64}, '
     'ShapeDtype{shape:(3,), dtype:int32}]'),
    (lambda: {'a': np.zeros((2,)), 'b': np.zeros((3,), np.int32)},
     "{'a': ShapeDtype{shape:(2,), dtype:float64}, "
     "'b': ShapeDtype{shape:(3,), dtype:int32}}"),
    (lambda: (), '()'),
])
def test_signature_prints_as_trax(make, want):
  assert str(shapes.signature(make())) == want


def test_signature_of_symbolic_tensors():
  # Under tf.function the dtype is still a NumPy dtype object; unknown
  # sizes stay None.
  got = []

  @tf.function(input_signature=[tf.TensorSpec((None, 3), tf.float32)])
  def f(x):
    got.append(str(shapes.signature(x)))
    return x
  f(tf.zeros((2, 3)))
  assert got == ['ShapeDtype{shape:(None, 3), dtype:float32}']


@pytest.mark.parametrize('make,want', [
    # trax/shapes.py ShapeDtype.__len__ returns 1; signature keeps tuples.
    (lambda: shapes.signature(np.zeros((2, 3))), 1),
    (lambda: shapes.signature(jnp.zeros((2, 3), dtype=jnp.float32)), 1),
    (lambda: shapes.signature(()), 0),
    (lambda: shapes.signature((np.zeros((2,)),)), 1),
    (lambda: shapes.signature((np.zeros((2,)), np.zeros((3,)),
                               np.zeros((4,)))), 3),
    (lambda: shapes.signature([np.zeros((2,)), np.zeros((3,))]), 2),
    (lambda: ShapeDtype((2, 3)), 1),
    (lambda: ShapeDtype(()), 1),
])
def test_len_of_signatures(make, want):
  assert len(make()) == want


@pytest.mark.parametrize('make,want', [
    # trax/shapes.py as_tuple and replace.
    (lambda: ShapeDtype((2, 3)).as_tuple(), f'((2, 3), {F32})'),
    (lambda: ShapeDtype((2, 3), np.int32).as_tuple(),
     "((2, 3), <class 'numpy.int32'>)"),
    (lambda: ShapeDtype((2, 3), np.dtype('float32')).as_tuple(),
     "((2, 3), dtype('float32'))"),
    (lambda: ShapeDtype((2, 3)).replace(shape=(4,)),
     f'ShapeDtype{{shape:(4,), dtype:{F32}}}'),
    (lambda: ShapeDtype((2, 3)).replace(dtype=np.int32),
     "ShapeDtype{shape:(2, 3), dtype:<class 'numpy.int32'>}"),
    (lambda: ShapeDtype((2, 3)).replace(dtype='int32'),
     'ShapeDtype{shape:(2, 3), dtype:int32}'),
    (lambda: ShapeDtype((2, 3)).replace(),
     f'ShapeDtype{{shape:(2, 3), dtype:{F32}}}'),
    (lambda: ShapeDtype((2, 3)).replace(shape=(1,), dtype=np.uint8),
     "ShapeDtype{shape:(1,), dtype:<class 'numpy.uint8'>}"),
])
def test_as_tuple_and_replace(make, want):
  assert str(make()) == want


def test_as_tuple_and_replace_return_the_stored_values():
  s = ShapeDtype([2, 3])
  shape, dtype = s.as_tuple()
  assert shape == (2, 3) and type(shape) is tuple and dtype is np.float32
  r = s.replace(dtype=np.int32)
  assert r is not s and r.dtype is np.int32 and s.dtype is np.float32
  with pytest.raises(TypeError, match=r"unknown field\(s\) \['shap'\]"):
    s.replace(shap=(4,))


@pytest.mark.parametrize('a,b,equal', [
    # trax/shapes.py __eq__: same class, shape and dtype.
    (ShapeDtype((2, 3)), ShapeDtype((2, 3)), True),
    (ShapeDtype((2, 3)), ShapeDtype([2, 3]), True),
    (ShapeDtype((2, 3)), ShapeDtype((2, 3), np.int32), False),
    (ShapeDtype((2, 3)), ShapeDtype((3, 2)), False),
    (ShapeDtype((2, 3)), ShapeDtype((2, 3), tf.float32), True),
    (ShapeDtype((2,), np.float32), shapes.signature(np.zeros((2,),
                                                             np.float32)),
     True),
    (ShapeDtype((2,)), (2,), False),
    # tfnp_trax compares dtypes by meaning; Trax's 'float32' != np.float32.
    (ShapeDtype((2, 3)), ShapeDtype((2, 3), 'float32'), True),
    (ShapeDtype((2,)), shapes.signature(jnp.zeros((2,), dtype=jnp.float32)),
     True),
])
def test_equality(a, b, equal):
  assert (a == b) is equal
  assert (a != b) is (not equal)


def test_hash_follows_equality():
  # Trax's ShapeDtype is unhashable; ours can key caches.
  same = [ShapeDtype((2, 3)), ShapeDtype([2, 3], 'float32'),
          ShapeDtype((2, 3), tf.float32), ShapeDtype((2, 3), np.dtype('f4')),
          shapes.signature(jnp.zeros((2, 3), dtype=jnp.float32))]
  assert len(set(same)) == 1
  assert len({ShapeDtype((2, 3)), ShapeDtype((2, 3), np.int32)}) == 2


def test_stored_dtypes_still_work_as_dtypes():
  for dtype in (np.float32, 'float32', np.dtype('float32'), tf.float32):
    s = ShapeDtype((2, 3), dtype)
    assert s.as_tensor_spec() == tf.TensorSpec((2, 3), tf.float32)
    assert jnp.zeros(s.shape, dtype=s.dtype).dtype == tf.float32


def test_splice_signatures():
  a, b, c = ShapeDtype((1,)), ShapeDtype((2,)), ShapeDtype((3,))
  assert str(shapes.splice_signatures(a, (b, c), ())) == (
      f'(ShapeDtype{{shape:(1,), dtype:{F32}}}, '
      f'ShapeDtype{{shape:(2,), dtype:{F32}}}, '
      f'ShapeDtype{{shape:(3,), dtype:{F32}}})')
  assert shapes.splice_signatures(a) is a
  assert str(shapes.splice_signatures()) == '()'


@pytest.mark.parametrize('shape,want', [
    # trax/shapes.py ShapeDtype.__init__: 'shape must be tuple or list'.
    (5, 'shape must be tuple or list; got: 5'),
    ('ab', 'shape must be tuple or list; got: ab'),
])
def test_shape_must_be_a_tuple_or_list(shape, want):
  with pytest.raises(TypeError) as info:
    ShapeDtype(shape)
  assert str(info.value) == want


def test_tensor_shape_is_taken_as_a_tuple():
  # Analogue: a tensor's .shape is a tuple subclass (or, with unknown
  # dimensions, a tf.TensorShape) where a JAX array's is a tuple.
  s = ShapeDtype(tf.zeros((2, 3)).shape)
  assert s.shape == (2, 3) and type(s.shape) is tuple
  s = ShapeDtype(tf.TensorShape([2, 3]))
  assert s.shape == (2, 3) and type(s.shape) is tuple


def test_shape_asserts():
  # trax/shapes.py assert_shape_equals / assert_same_shape.
  shapes.assert_shape_equals(np.zeros((2,)), (2,))
  shapes.assert_same_shape(np.zeros((2, 3)), jnp.zeros((2, 3)))
  with pytest.raises(AssertionError) as info:
    shapes.assert_same_shape(np.zeros((2,)), np.zeros((3,)))
  assert str(info.value) == 'Invalid shape (2,); expected (3,).'
  with pytest.raises(AssertionError) as info:
    shapes.assert_shape_equals(np.zeros((2,)), (3,))
  assert str(info.value) == 'Invalid shape (2,); expected (3,).'
