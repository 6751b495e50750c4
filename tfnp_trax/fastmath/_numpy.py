"""The single place where TensorFlow's NumPy behaviour is switched on.

`tf.experimental.numpy.experimental_enable_numpy_behavior` changes TensorFlow
globally: afterwards every `tf.Tensor` gains NumPy methods (`.T`, `.reshape`,
`.astype`, ...) and NumPy type promotion. It must run exactly once, before any
layer code executes, so every module reaches `jnp` through this file.
"""

import tensorflow as tf
import tensorflow.experimental.numpy as _tnp
from tensorflow.python.framework import override_binary_operator as _binary_ops  # pylint: disable=g-direct-tensorflow-import
from tensorflow.python.ops import math_ops as _math_ops  # pylint: disable=g-direct-tensorflow-import
from tensorflow.python.ops.numpy_ops import np_dtypes as _np_dtypes  # pylint: disable=g-direct-tensorflow-import

from tfnp_trax.fastmath import _static_shape
from tfnp_trax.fastmath import dtypes as _dtypes

_ENABLED = False


def _enable_once():
  global _ENABLED
  if not _ENABLED:
    # prefer_float32: Python floats become float32 tensors, as on accelerators.
    _tnp.experimental_enable_numpy_behavior(prefer_float32=True)
    # Mixed dtypes promote along JAX's lattice, not NumPy's table, so that
    # `int32 * 0.5`, `int32 + float32` and `tanh(int32)` are float32 as in
    # Trax (NumPy's table gives float64). This also changes TensorFlow
    # globally: tf.experimental.numpy functions and the Tensor operators
    # that numpy behaviour overrides all ask this one function for the
    # result dtype. Same-dtype operations, and 64-bit types already present,
    # are unaffected.
    # pylint: disable=protected-access
    _np_dtypes._result_type = _dtypes.lattice_result_type(
        _np_dtypes._result_type)
    # True division of 32-bit integers gives float32, as in JAX, not
    # float64: otherwise `jnp.arange(n, dtype=jnp.int32) / n` would carry
    # float64 into float32 models. This too is global (tf.math.truediv);
    # int64 and uint64 keep dividing in float64.
    _math_ops._TRUEDIV_TABLE[tf.int32] = tf.float32
    _math_ops._TRUEDIV_TABLE[tf.uint32] = tf.float32
    _skip_same_dtype_casts()
    _ENABLED = True


def _skip_same_dtype_casts():
  """Tensor operators add no Cast op to an operand already of the result dtype.

  With NumPy behaviour on, `a * b` casts each tensor operand to the
  promoted dtype through a Cast op even when it already has it, and so does
  `1.0 - b` for the tensor `b`. Those no-op Casts were a third of the ops in
  a traced training step (322 of 883 for a 3-layer MLP) and an extra kernel
  per operand in eager code. Here the result dtype is computed exactly as
  TensorFlow computes it, and only operands of another dtype are cast;
  anything this does not recognise goes to TensorFlow's own promotion.
  """
  promote = getattr(_binary_ops, 'maybe_promote_tensors', None)
  get_dtype = getattr(_binary_ops, '_maybe_get_dtype', None)
  if promote is None or getattr(promote, '_tfnp_trax', False):
    return
  # pylint: disable=protected-access
  from tensorflow.python.framework import ops as _ops  # pylint: disable=g-import-not-at-top,g-direct-tensorflow-import

  def numpy_promotion():
    return (_ops.is_numpy_style_type_promotion() and
            not _ops.is_auto_dtype_conversion_enabled())

  def maybe_promote_tensors(*tensors, force_same_dtype=False):
    if tensors and all(isinstance(t, tf.Tensor) and t.dtype == tensors[0].dtype
                       for t in tensors):
      return list(tensors)  # Tensors that share a dtype promote to it.
    if get_dtype is None or not tensors or not numpy_promotion() or any(
        isinstance(t, (list, tuple)) for t in tensors):
      return promote(*tensors, force_same_dtype=force_same_dtype)
    result = tf.as_dtype(_np_dtypes._result_type(
        *[get_dtype(t) for t in tensors]))
    out = []
    for t in tensors:
      if not isinstance(t, tf.Tensor):
        t = tf.convert_to_tensor(t, result)
      elif t.dtype != result:
        t = tf.cast(t, result)
      out.append(t)
    return out
  maybe_promote_tensors._tfnp_trax = True
  _binary_ops.maybe_promote_tensors = maybe_promote_tensors


def _add_array_methods():
  """Adds JAX array methods that NumPy behaviour leaves off `tf.Tensor`.

  NumPy behaviour gives tensors `.reshape`, `.astype`, `.max`, `.mean` and a
  few more; Trax code (and tests) also call `.take`, `.sum`, `.any`, ... on
  jnp arrays. Only missing names are added, each the tf.experimental.numpy
  function of that name, so no existing attribute changes.
  """
  def take(self, indices, axis=None, mode=None):
    # Out-of-range indices clip (TF NumPy's default), where JAX's default
    # fills and NumPy's np.take (mode 'raise') raises; in-range indices,
    # the use in Trax code, agree.
    mode = 'clip' if mode in (None, 'raise', 'fill') else mode
    return _tnp.take(self, indices, axis=axis, mode=mode)

  methods = {'take': take, 'sum': _tnp.sum, 'prod': _tnp.prod,
             'any': _tnp.any, 'all': _tnp.all, 'argmax': _tnp.argmax,
             'argmin': _tnp.argmin, 'squeeze': _tnp.squeeze,
             'swapaxes': _tnp.swapaxes, 'cumsum': _tnp.cumsum}
  for name, fn in methods.items():
    if not hasattr(tf.Tensor, name):
      setattr(tf.Tensor, name, _as_method(name, fn))


def _as_method(name, fn):
  """`fn(self, ...)` as a method; NumPy's `np.sum(t)` passes `out=None`."""
  def method(self, *args, out=None, **kwargs):
    if out is not None:
      raise TypeError(f'Tensor.{name}: out= is not supported (tensors are '
                      f'immutable); use the returned value.')
    return fn(self, *args, **kwargs)
  method.__name__ = name
  method.__doc__ = f'`jnp.{name}(self, ...)`, as on JAX arrays.'
  return method


_enable_once()
_add_array_methods()
# `x.shape` is a tuple of ints where static, as on JAX arrays.
_static_shape.install()

# Trax code writes `jnp.bfloat16`; tf.experimental.numpy lacks the name, so
# add TensorFlow's NumPy-side bfloat16 type to the module (a global, additive
# change: no existing name is altered).
if not hasattr(_tnp, 'bfloat16'):
  _tnp.bfloat16 = tf.bfloat16.as_numpy_dtype

numpy = _tnp

__all__ = ['numpy', 'tf']
