"""Dtype helpers shared by the layers: which dtype a layer computes in.

`check_float`, `compute_dtype` and `cast_to` are also exported from
`layers.core`, where the layers that first needed them live; they are kept
here so that the modules `core` imports (`core_extras`) can use them too.
"""

from tfnp_trax import fastmath
from tfnp_trax.fastmath import dtypes
from tfnp_trax.fastmath import numpy as jnp

__all__ = ['BFLOAT16', 'FLOAT_NAMES', 'is_low_precision', 'dtype_name',
           'check_float', 'compute_dtype', 'cast_to', 'dtype_preserving']

# By name: TensorFlow's NumPy module has no `bfloat16` attribute.
BFLOAT16 = 'bfloat16'
is_low_precision = dtypes.is_low_precision

# The floating dtypes a layer computes in, by name.
FLOAT_NAMES = ('bfloat16', 'float16', 'float32', 'float64')


def dtype_name(x):
  """The name of `x`'s dtype ('float32', 'bfloat16', 'int32', ...)."""
  return getattr(x.dtype, 'name', str(x.dtype))


def check_float(layer_name, x, why=''):
  """Raises a TypeError naming `layer_name` unless `x` is floating-point.

  Args:
    layer_name: the layer's name, for the message.
    x: the input array.
    why: an optional reason, a sentence added to the message.
  """
  if dtype_name(x) not in FLOAT_NAMES:
    why = f' {why}' if why else ''
    raise TypeError(f'{layer_name}: expects a floating-point input, got dtype '
                    f'{dtype_name(x)} with shape {tuple(x.shape)}.{why} '
                    f'Cast integer ids with tl.ToFloat() or embed them first.')


def compute_dtype(layer_name, x, *weights):
  """The dtype in which input `x` meets `weights` inside a layer.

  Floating inputs keep their dtype and the weights are cast to it, so
  bfloat16 activations stay bfloat16. Integer and boolean inputs promote
  with the weights by JAX's rules, as Trax's `jnp.dot(x, w)` does: int32 ids
  meeting float32 weights compute in float32 (not NumPy's float64), and
  bfloat16 weights give bfloat16.

  Args:
    layer_name: the layer's name, for the error message.
    x: the input array.
    *weights: the weight arrays `x` is combined with.

  Returns:
    A dtype (`x.dtype` itself for floating inputs).

  Raises:
    TypeError: naming the layer, for inputs that are neither floating,
      integer nor boolean (e.g. strings or complex numbers).
  """
  name = dtype_name(x)
  if name in FLOAT_NAMES:
    return x.dtype
  if name == 'bool' or name.startswith(('int', 'uint')):
    return fastmath.result_type(x, *weights)
  raise TypeError(f'{layer_name}: expects a floating-point, integer or '
                  f'boolean input, got dtype {name} with shape '
                  f'{tuple(x.shape)}.')


def cast_to(x, dtype):
  """`x` in `dtype`; returned as it is (no Cast op) when it already is."""
  return x if x.dtype == dtype else x.astype(dtype)


def dtype_preserving(f):
  """Wraps element-wise `f` so float inputs come back in their own dtype.

  bfloat16 and float16 are computed in float32 and rounded back, because
  TensorFlow's NumPy functions such as `tanh` or `exp` would otherwise
  promote them to float64.
  """
  def wrapped(x):
    dtype = x.dtype
    if is_low_precision(dtype):
      return f(x.astype(jnp.float32)).astype(dtype)
    y = f(x)
    return y.astype(dtype) if fastmath.is_float(x) else y
  return wrapped
