"""Shape and dtype descriptions of layer inputs and outputs.

A `ShapeDtype` keeps the dtype in the form it was given, as Trax does, so it
prints the way Trax prints it: the default is the NumPy scalar class
`np.float32` (`dtype:<class 'numpy.float32'>`), a string stays a string and a
NumPy dtype object prints as its name (`dtype:float32`).

TensorFlow dtypes are the one conversion: a `tf.DType` is stored as the
matching NumPy dtype *object* (`np.dtype('float32')`). Our arrays are
TensorFlow tensors, so `x.dtype` is a `tf.DType` wherever a Trax array would
carry a NumPy dtype object; converting it keeps `signature(x)` printing as it
does in Trax (`dtype:float32`). (Trax itself turns a `tf.DType` into the NumPy
scalar class; the two differ only in how they print.)

Equality and hashing compare dtypes by meaning (`'float32'`, `np.float32`,
`np.dtype('float32')` and `tf.float32` are all the same dtype), so signatures
can key caches; Trax's ShapeDtype is not hashable at all.
"""

import numpy as onp
import tensorflow as tf

__all__ = ['ShapeDtype', 'signature', 'splice_signatures',
           'assert_shape_equals', 'assert_same_shape']


def _canonical(dtype):
  """The tf.DType that `dtype` (any accepted spelling) stands for."""
  return tf.as_dtype(dtype)


class ShapeDtype:
  """The shape and dtype of an array, without its values.

  Example:
    >>> ShapeDtype((8, 16)).shape
    (8, 16)
    >>> str(ShapeDtype((2, 3)))
    "ShapeDtype{shape:(2, 3), dtype:<class 'numpy.float32'>}"

  Args:
    shape: a tuple or list of ints (or None for unknown sizes); a
      `tf.TensorShape` (what a tensor's `.shape` is where a dimension is
      unknown) is accepted too.
    dtype: any dtype NumPy or TensorFlow understands. It is kept as given,
      except that a `tf.DType` becomes the matching NumPy dtype object.
  """

  __slots__ = ('shape', 'dtype')

  def __init__(self, shape, dtype=onp.float32):
    if isinstance(shape, tf.TensorShape) and shape.rank is not None:
      shape = tuple(shape)
    if isinstance(shape, list) or (isinstance(shape, tuple) and
                                   type(shape) is not tuple):
      shape = tuple(shape)  # Lists, and tensors' tuple shapes, as tuples.
    if not isinstance(shape, tuple):
      # Trax's check and message: an int or a string is no shape.
      raise TypeError(f'shape must be tuple or list; got: {shape}')
    self.shape = shape
    # Fails early, with TensorFlow's message, on something that is no dtype.
    canonical = _canonical(dtype)
    if isinstance(dtype, tf.DType):
      dtype = onp.dtype(canonical.as_numpy_dtype)
    self.dtype = dtype

  def __eq__(self, other):
    return (isinstance(other, ShapeDtype) and self.shape == other.shape and
            _canonical(self.dtype) == _canonical(other.dtype))

  def __ne__(self, other):
    return not self == other

  def __hash__(self):
    return hash((self.shape, _canonical(self.dtype)))

  def __repr__(self):
    return f'ShapeDtype{{shape:{self.shape}, dtype:{self.dtype}}}'

  def __len__(self):
    # A signature of one input counts as one, so len(signature(x)) is the
    # number of inputs whether x is one array or a tuple of them.
    return 1

  def as_tuple(self):
    """Returns `(shape, dtype)`."""
    return self.shape, self.dtype

  def replace(self, **kwargs):
    """A copy with `shape` and/or `dtype` replaced.

    Example:
      >>> ShapeDtype((2, 3)).replace(shape=(4,)).shape
      (4,)

    Args:
      **kwargs: `shape=` and/or `dtype=`.

    Returns:
      A new ShapeDtype.
    """
    unknown = sorted(set(kwargs) - {'shape', 'dtype'})
    if unknown:
      raise TypeError(f'ShapeDtype.replace: unknown field(s) {unknown}; only '
                      f'shape and dtype can be replaced.')
    return type(self)(shape=kwargs.get('shape', self.shape),
                      dtype=kwargs.get('dtype', self.dtype))

  def as_tensor_spec(self):
    return tf.TensorSpec(self.shape, _canonical(self.dtype))


def signature(obj):
  """Returns the ShapeDtype (or tuple/list/dict of them) describing `obj`.

  Example:
    >>> len(signature((onp.zeros(2), onp.zeros(3))))
    2
  """
  if isinstance(obj, (list, tuple)):
    sigs = [signature(x) for x in obj]
    return tuple(sigs) if isinstance(obj, tuple) else sigs
  if isinstance(obj, dict):
    return {k: signature(v) for k, v in obj.items()}
  if isinstance(obj, ShapeDtype):
    return obj
  if isinstance(obj, (tf.TensorSpec,)):
    return ShapeDtype(tuple(obj.shape), obj.dtype)
  if isinstance(obj, (int, float, bool)):
    obj = onp.asarray(obj)
  return ShapeDtype(tuple(obj.shape), obj.dtype)


def splice_signatures(*sigs):
  """Joins signatures (single or tuples) into one tuple of ShapeDtypes."""
  result = []
  for sig in sigs:
    if isinstance(sig, (list, tuple)):
      result.extend(sig)
    else:
      result.append(sig)
  return result[0] if len(result) == 1 else tuple(result)


def assert_shape_equals(array, shape):
  """Raises AssertionError unless `array.shape` is `shape`."""
  got = tuple(array.shape)
  assert got == tuple(shape), f'Invalid shape {got}; expected {tuple(shape)}.'


def assert_same_shape(array1, array2):
  """Raises AssertionError unless the two arrays have the same shape."""
  assert_shape_equals(array1, array2.shape)
