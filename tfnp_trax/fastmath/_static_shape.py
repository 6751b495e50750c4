"""Tensor shapes as tuples of ints where they are static, as on JAX arrays.

Trax code treats `x.shape` as a tuple: `x.shape[:n] + (-1,)`, `(b,) +
x.shape[1:]`, `isinstance(x.shape, tuple)`. A TensorFlow tensor's `.shape`
is a `tf.TensorShape`, on which `shape[:n] + (-1,)` fails (-1 is no
dimension) and which is no tuple. `install()` makes `.shape` of a tensor
whose shape is fully known a `StaticShape`: a tuple subclass that also
answers TensorShape's methods (`rank`, `as_list()`, `is_compatible_with`,
`merge_with`, ...), so TensorFlow's own code that reads `.shape` keeps
working. Shapes with an unknown dimension or rank (traced with a relaxed
signature) stay TensorShapes, whose None entries say what is unknown.
`get_shape()` keeps returning a TensorShape.
"""

from tensorflow.python.framework import ops as _ops  # pylint: disable=g-direct-tensorflow-import
from tensorflow.python.framework import tensor as _tensor  # pylint: disable=g-direct-tensorflow-import
from tensorflow.python.framework import tensor_shape as _tensor_shape  # pylint: disable=g-direct-tensorflow-import

__all__ = ['StaticShape', 'install']


class StaticShape(tuple):
  """A fully known shape: a tuple of ints that also acts as a TensorShape.

  Example:
    >>> s = StaticShape((2, 3, 4))
    >>> s[:2] + (-1,)
    (2, 3, -1)
    >>> s.rank, s.as_list()
    (3, [2, 3, 4])
  """

  __slots__ = ()

  def __getattr__(self, name):
    # Only names a tuple lacks get here: TensorShape's API (`rank`,
    # `as_list`, `dims`, `_dims`, ...). Dunder lookups are left alone, so
    # protocols (pickling, tf.nest, tracing types) see a plain tuple.
    if name.startswith('__'):
      raise AttributeError(name)
    return getattr(_tensor_shape.TensorShape(tuple(self)), name)

  def __getitem__(self, key):
    item = tuple.__getitem__(self, key)
    return StaticShape(item) if isinstance(key, slice) else item

  def __add__(self, other):
    return StaticShape(tuple(self) + tuple(other))

  def __radd__(self, other):
    return StaticShape(tuple(other) + tuple(self))

  def __eq__(self, other):
    # Lists and TensorShapes compare by their dimensions, as a TensorShape
    # does, so `x.shape == [2, 3]` keeps its TensorFlow meaning.
    if isinstance(other, (list, _tensor_shape.TensorShape)):
      try:
        return _tensor_shape.TensorShape(tuple(self)) == other
      except (TypeError, ValueError):
        return False
    return tuple.__eq__(self, other)

  def __ne__(self, other):
    eq = self.__eq__(other)
    return eq if eq is NotImplemented else not eq

  __hash__ = tuple.__hash__

  def __reduce__(self):
    return (tuple, (tuple(self),))  # Pickles as the plain tuple it shows.


def _tuple_if_static(shape):
  dims = shape._dims  # pylint: disable=protected-access
  if dims is None or None in dims:
    return shape
  return StaticShape(dims)


_INSTALLED = False


def install():
  """Makes `.shape` of tensors a StaticShape where the shape is static.

  Patches the `shape` property of graph and eager tensors (the classes that
  define it); `get_shape()` is pinned to the original TensorShape. Runs once.
  """
  global _INSTALLED
  if _INSTALLED:
    return
  for cls in (_tensor.Tensor, _ops._EagerTensorBase):  # pylint: disable=protected-access
    original = cls.__dict__['shape'].fget
    cls.get_shape = (lambda fget: lambda self: fget(self))(original)
    cls.shape = property(
        (lambda fget: lambda self: _tuple_if_static(fget(self)))(original),
        doc=original.__doc__)
  _INSTALLED = True
