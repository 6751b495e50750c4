"""Dtype helpers shared by layers that must return their input's dtype."""

from tfnp_trax import fastmath
from tfnp_trax.fastmath import dtypes
from tfnp_trax.fastmath import numpy as jnp

__all__ = ['BFLOAT16', 'is_low_precision', 'dtype_preserving']

# By name: TensorFlow's NumPy module has no `bfloat16` attribute.
BFLOAT16 = 'bfloat16'
is_low_precision = dtypes.is_low_precision


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
