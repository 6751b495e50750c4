"""JAX's dtype canonicalisation and type promotion, with 64-bit types off.

Trax runs on JAX with x64 disabled. There, a NumPy int64 or float64 array
becomes int32 or float32 as it enters `jnp`, and mixed dtypes promote along
JAX's lattice rather than NumPy's table: int32 with float32 is float32 (NumPy
says float64), bfloat16 with float16 is float32, and Python scalars are weakly
typed, so `int32_array * 0.5` is float32 and `float16_array + 1` stays
float16. TensorFlow's NumPy mode follows NumPy's table, so code that mixes
dtypes where Trax would (an integer input meeting float32 weights) asks this
module for the dtype Trax would compute in.

The lattice, lowest first (`i*`, `f*`, `c*` are the weak types of Python
int, float and complex; `a -> b` means b is above a):

  bool -> i* -> u8 -> u16 -> u32 -> u64 -> f*
          i* -> i8 -> i16 -> i32 -> i64 -> f*   (and u8 -> i16, u16 -> i32,
                                                  u32 -> i64)
  f* -> bf16 -> f32,  f* -> f16 -> f32,  f32 -> f64 -> c128
  f* -> c* -> c64 -> c128,  f32 -> c64

The result of several dtypes is their least upper bound, then canonicalised.
"""

import numpy as onp
import tensorflow as tf

__all__ = ['canonicalize_dtype', 'canonicalize_array', 'result_type',
           'promote_args', 'LOW_PRECISION_FLOATS', 'is_low_precision']

# Float dtypes that layers compute in float32 and optimizers update in
# float32 (then round back), by name: TF NumPy has no `bfloat16` attribute.
LOW_PRECISION_FLOATS = ('bfloat16', 'float16')


def is_low_precision(dtype):
  """Whether `dtype` (a dtype object or its name) is bfloat16 or float16."""
  return getattr(dtype, 'name', str(dtype)) in LOW_PRECISION_FLOATS

_BFLOAT16 = onp.dtype(tf.bfloat16.as_numpy_dtype)

# With x64 disabled each 64-bit type maps to its 32-bit sibling.
_CANONICAL = {
    onp.dtype(onp.int64): onp.dtype(onp.int32),
    onp.dtype(onp.uint64): onp.dtype(onp.uint32),
    onp.dtype(onp.float64): onp.dtype(onp.float32),
    onp.dtype(onp.complex128): onp.dtype(onp.complex64),
}

# The weak types of Python scalars, and the dtype each becomes when nothing
# stronger is present (already canonical: int32, float32, complex64).
_WEAK_INT, _WEAK_FLOAT, _WEAK_COMPLEX = 'i*', 'f*', 'c*'
_WEAK_DEFAULT = {
    _WEAK_INT: onp.dtype(onp.int32),
    _WEAK_FLOAT: onp.dtype(onp.float32),
    _WEAK_COMPLEX: onp.dtype(onp.complex64),
}


def _d(name):
  return onp.dtype(name)


# Each type's direct successors in the lattice.
_EDGES = {
    _d('bool'): [_WEAK_INT],
    _WEAK_INT: [_d('uint8'), _d('int8')],
    _d('uint8'): [_d('int16'), _d('uint16')],
    _d('uint16'): [_d('int32'), _d('uint32')],
    _d('uint32'): [_d('int64'), _d('uint64')],
    _d('uint64'): [_WEAK_FLOAT],
    _d('int8'): [_d('int16')],
    _d('int16'): [_d('int32')],
    _d('int32'): [_d('int64')],
    _d('int64'): [_WEAK_FLOAT],
    _WEAK_FLOAT: [_WEAK_COMPLEX, _d('float16'), _BFLOAT16],
    _BFLOAT16: [_d('float32')],
    _d('float16'): [_d('float32')],
    _d('float32'): [_d('float64'), _d('complex64')],
    _d('float64'): [_d('complex128')],
    _WEAK_COMPLEX: [_d('complex64')],
    _d('complex64'): [_d('complex128')],
    _d('complex128'): [],
}


def _upper_bounds():
  """Every type's set of types at or above it."""
  bounds = {}

  def visit(node):
    if node not in bounds:
      above = {node}
      for succ in _EDGES[node]:
        above |= visit(succ)
      bounds[node] = frozenset(above)
    return bounds[node]
  for node in _EDGES:
    visit(node)
  return bounds


_UPPER = _upper_bounds()


def _as_numpy_dtype(dtype):
  """`dtype` (NumPy, TensorFlow, a scalar type or a name) as a NumPy dtype."""
  if isinstance(dtype, tf.DType):
    return onp.dtype(dtype.as_numpy_dtype)
  if isinstance(dtype, str) and dtype == 'bfloat16':
    return _BFLOAT16  # NumPy itself does not know the name.
  return onp.dtype(dtype)


def canonicalize_dtype(dtype):
  """The dtype an array of `dtype` has once inside JAX with x64 disabled.

  int64, uint64, float64 and complex128 become their 32-bit (complex64)
  siblings; every other dtype is returned unchanged.

  Example:
    >>> canonicalize_dtype(onp.int64)
    dtype('int32')

  Args:
    dtype: anything NumPy or TensorFlow accepts as a dtype.

  Returns:
    A NumPy dtype.
  """
  dtype = _as_numpy_dtype(dtype)
  return _CANONICAL.get(dtype, dtype)


def canonicalize_array(x):
  """`x` as JAX holds it: NumPy values in their canonical dtype.

  JAX converts a NumPy array or scalar to its canonical dtype when `jnp`,
  `lax` or a jitted function takes it: an int64 `np.arange` becomes int32,
  float64 becomes float32. (Only Trax layers called eagerly on raw NumPy
  arrays that never reach JAX, such as `-x`, keep int64; layers here follow
  the jitted, JAX-array behaviour.) The cast runs on the host; tensors and
  Python values are returned unchanged.

  Example:
    >>> canonicalize_array(onp.arange(3)).dtype
    dtype('int32')

  Args:
    x: any value.

  Returns:
    `x`, with NumPy values in their canonical dtype.
  """
  if not isinstance(x, (onp.ndarray, onp.generic)):
    return x
  dtype = canonicalize_dtype(x.dtype)
  return x if x.dtype == dtype else x.astype(dtype)


def _weak_node(arg):
  """The lattice type of a Python scalar (or scalar type), else None.

  Python scalars are weakly typed; bool has a single width, so it needs no
  weak form. NumPy scalars are strongly typed, and np.float64 subclasses
  Python's float, so callers test for NumPy values first.
  """
  if isinstance(arg, bool) or arg is bool:
    return _d('bool')
  if isinstance(arg, int) or arg is int:
    return _WEAK_INT
  if isinstance(arg, float) or arg is float:
    return _WEAK_FLOAT
  if isinstance(arg, complex) or arg is complex:
    return _WEAK_COMPLEX
  return None


def _lattice_node(arg):
  """The lattice type of one `result_type` argument."""
  if isinstance(arg, (onp.ndarray, onp.generic)):
    return _lattice_node(arg.dtype)
  weak = _weak_node(arg)
  if weak is not None:
    return weak
  is_dtype = isinstance(arg, (type, str, onp.dtype, tf.DType))
  dtype = arg if is_dtype else getattr(arg, 'dtype', arg)
  try:
    dtype = canonicalize_dtype(dtype)
  except TypeError as e:
    raise TypeError(f'result_type: cannot read a dtype from {arg!r}.') from e
  if dtype not in _UPPER:
    raise TypeError(f'result_type: dtype {dtype.name} has no numeric type '
                    f'promotion (expected bool, integer, float or complex).')
  return dtype


_JOINS = {}


def _join(nodes):
  """The least upper bound of a set of lattice types (memoised)."""
  join = _JOINS.get(nodes)
  if join is None:
    common = frozenset.intersection(*(_UPPER[n] for n in nodes))
    # The least upper bound is the one common bound below all the others.
    join = next(c for c in common if common <= _UPPER[c])
    _JOINS[nodes] = join
  return join


def result_type(*args):
  """The dtype JAX (x64 disabled) gives an operation on `args`.

  Arguments are canonicalised first, as arrays are when they enter `jnp`,
  then joined in the type lattice described in this module's docstring.

  Example:
    >>> result_type(onp.zeros(2, onp.int32), onp.float32)
    dtype('float32')
    >>> result_type(onp.zeros(2, onp.int32), 0.5)  # Weak Python float.
    dtype('float32')

  Args:
    *args: arrays, tensors, ShapeDtypes, dtypes or Python scalars. Python
      int, float and complex values (and those types) are weakly typed.

  Returns:
    A NumPy dtype.

  Raises:
    ValueError: if called without arguments.
    TypeError: if an argument has no numeric dtype (e.g. strings).
  """
  if not args:
    raise ValueError('result_type: at least one array or dtype is required.')
  join = _join(frozenset(_lattice_node(a) for a in args))
  return canonicalize_dtype(_WEAK_DEFAULT.get(join, join))


def _cast(x, dtype):
  if isinstance(x, (tf.Tensor, tf.Variable)):
    # Leave matching tensors untouched so that no Cast op enters the graph.
    return x if x.dtype == dtype else tf.cast(x, dtype)
  # NumPy arrays and Python scalars convert on the host, straight into the
  # promoted dtype.
  return tf.constant(onp.asarray(x).astype(dtype))


def promote_args(*args):
  """Converts `args` to tensors of their common `result_type`.

  Tensors that already have that dtype are returned as they are, so the
  all-float32 case adds nothing to a graph.

  Example:
    >>> x, half = promote_args(onp.arange(3, dtype=onp.int32), 0.5)
    >>> (x * half).dtype.name
    'float32'

  Args:
    *args: tensors, NumPy arrays or Python scalars.

  Returns:
    A tuple of tensors, one per argument, all of one dtype.
  """
  dtype = result_type(*args)
  return tuple(_cast(a, dtype) for a in args)


def _numpy_mode_node(arg):
  """The lattice type of an argument of TF NumPy's result type, or None.

  Unlike `_lattice_node`, 64-bit types are kept: TensorFlow code outside
  the layers (tf.data pipelines, int64 ids) legitimately works in them.
  """
  if isinstance(arg, (onp.ndarray, onp.generic)):
    dtype = arg.dtype
  else:
    weak = _weak_node(arg)
    if weak is not None:
      return weak
    try:
      dtype = _as_numpy_dtype(arg)
    except Exception:  # pylint: disable=broad-except
      return None
  return dtype if dtype in _UPPER else None


def lattice_result_type(numpy_result_type):
  """Wraps TF NumPy's result-type function with JAX's promotion lattice.

  TensorFlow's NumPy mode promotes with NumPy's table, so `int32 * 0.5`,
  `int32 + float32` and `tanh(int32)` come out float64 where JAX, and so
  Trax, computes in float32; `int8 + float16` is float64 where JAX keeps
  float16. The returned function joins its arguments in the lattice of this
  module's docstring, without canonicalising 64-bit types (an int64 tensor
  plus an int64 tensor stays int64, a float64 tensor keeps float64). Python
  scalars are weak. Where the lattice has no answer (strings, objects) or
  only Python ints are involved, `numpy_result_type` decides as before.

  Args:
    numpy_result_type: TF NumPy's function, `(*arrays_and_dtypes) -> DType`.

  Returns:
    A function with the same contract.
  """

  def result_type(*arrays_and_dtypes):
    nodes = []
    for arg in arrays_and_dtypes:
      node = _numpy_mode_node(arg)
      if node is None:
        return numpy_result_type(*arrays_and_dtypes)
      nodes.append(node)
    if not nodes:
      return numpy_result_type(*arrays_and_dtypes)
    join = _join(frozenset(nodes))
    if join == _WEAK_INT:
      return numpy_result_type(*arrays_and_dtypes)
    return tf.as_dtype(_WEAK_DEFAULT.get(join, join))

  result_type.wrapped = numpy_result_type
  return result_type
