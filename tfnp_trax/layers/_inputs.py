"""How data enters a layer: in the dtypes JAX (x64 disabled) would give it.

Trax runs on JAX with 64-bit types off, so once NumPy data meets `jnp` or a
jitted step, int64, uint64, float64 and complex128 arrays (what
`np.array([1, 2])` and `np.arange` make) are their 32-bit siblings. The
outermost `Layer.pure_fn` applies the same conversion to its inputs, and to
NumPy weights and state, so that a ported Trax program computes in the
dtypes it did under Trax.
"""

import numpy as onp

from tfnp_trax.fastmath import backend
from tfnp_trax.fastmath import dtypes
from tfnp_trax.fastmath import numpy as jnp

__all__ = ['canonical_inputs', 'numpy_to_tensor']

_SCALARS = (bool, int, float, complex, onp.generic)
_NUMERIC_KINDS = ('b', 'i', 'u', 'f', 'c')


def _canonical(x):
  """NumPy `x` in JAX's dtype, or its own inside `use_backend` (TF NumPy)."""
  if backend.keeps_64bit_inputs():
    return x
  return dtypes.canonicalize_array(x)


def numpy_to_tensor(x):
  """A NumPy weight or state leaf as a tensor in its canonical dtype.

  Other leaves (tensors, variables, Python values) are returned unchanged.
  """
  if not isinstance(x, (onp.ndarray, onp.generic)):
    return x
  return jnp.asarray(_canonical(x))


def _is_scalar_list(x):
  """True for a non-empty (nested) list of scalars: an array literal."""
  return isinstance(x, list) and bool(x) and all(
      isinstance(v, _SCALARS) or _is_scalar_list(v) for v in x)


def _canonical_array(x):
  """A NumPy array or list input as a tensor in its canonical dtype.

  The cast runs in NumPy, before any graph. The result is a tensor, so that
  arithmetic inside the layers (`x * 0.5`, `x + y`) follows jnp's promotion,
  as on JAX arrays, never NumPy's int64/float64 rules. Tensors, Python
  scalars (weakly typed) and non-numeric arrays pass unchanged.
  """
  if _is_scalar_list(x):
    x = onp.asarray(x)
  if (not isinstance(x, (onp.ndarray, onp.generic)) or
      x.dtype.kind not in _NUMERIC_KINDS):
    return x
  return jnp.asarray(_canonical(x))


def canonical_inputs(x, n_in):
  """A layer's inputs `x` (one array, or the data stack) as JAX holds them.

  Args:
    x: one input, or a tuple (or, for `n_in != 1`, a list) of inputs.
    n_in: the layer's number of inputs.

  Returns:
    `x` with NumPy arrays and array literals converted.
  """
  is_stack = ((isinstance(x, tuple) and not hasattr(x, '_fields')) or
              (isinstance(x, list) and n_in != 1))
  if is_stack:
    return type(x)(_canonical_array(v) for v in x)
  return _canonical_array(x)
