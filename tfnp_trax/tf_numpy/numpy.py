"""Trax's `trax.tf_numpy.numpy`: `tf.experimental.numpy`, as Trax used it.

Every public name of TensorFlow's NumPy module, reached through
`tfnp_trax.fastmath` so that NumPy behaviour is switched on once and in one
place, plus the dtype helpers Trax imported next to them:
`is_allow_float64` / `set_allow_float64` (TensorFlow's switch for whether
NumPy-style code may create float64 values), `default_float_type` and
`canonicalize_dtype`.

Example:
  >>> from tfnp_trax.tf_numpy import numpy as tf_np
  >>> int(tf_np.sum(tf_np.arange(4)))
  6
"""

from tensorflow.python.ops.numpy_ops import np_dtypes as _np_dtypes  # pylint: disable=g-direct-tensorflow-import

from tfnp_trax.fastmath import numpy as _tnp

# Trax re-exported the module by `import *`; the same names, listed.
_TNP_NAMES = sorted(n for n in dir(_tnp) if not n.startswith('_'))
globals().update({n: getattr(_tnp, n) for n in _TNP_NAMES})

is_allow_float64 = _np_dtypes.is_allow_float64
set_allow_float64 = _np_dtypes.set_allow_float64
default_float_type = _np_dtypes.default_float_type
canonicalize_dtype = _np_dtypes.canonicalize_dtype

__all__ = _TNP_NAMES + ['is_allow_float64', 'set_allow_float64',
                        'default_float_type', 'canonicalize_dtype']
