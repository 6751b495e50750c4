"""The single place where TensorFlow's NumPy behaviour is switched on.

`tf.experimental.numpy.experimental_enable_numpy_behavior` changes TensorFlow
globally: afterwards every `tf.Tensor` gains NumPy methods (`.T`, `.reshape`,
`.astype`, ...) and NumPy type promotion. It must run exactly once, before any
layer code executes, so every module reaches `jnp` through this file.
"""

import tensorflow as tf
import tensorflow.experimental.numpy as _tnp

_ENABLED = False


def _enable_once():
  global _ENABLED
  if not _ENABLED:
    # prefer_float32: Python floats become float32 tensors, as on accelerators.
    _tnp.experimental_enable_numpy_behavior(prefer_float32=True)
    _ENABLED = True


_enable_once()

# Trax code writes `jnp.bfloat16`; tf.experimental.numpy lacks the name, so
# add TensorFlow's NumPy-side bfloat16 type to the module (a global, additive
# change: no existing name is altered).
if not hasattr(_tnp, 'bfloat16'):
  _tnp.bfloat16 = tf.bfloat16.as_numpy_dtype

numpy = _tnp

__all__ = ['numpy', 'tf']
