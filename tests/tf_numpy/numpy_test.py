"""`tfnp_trax.tf_numpy.numpy`: Trax's `trax.tf_numpy.numpy`.

Follows trax/tf_numpy/numpy/__init__.py: TensorFlow's NumPy module with its
float64 switch, as Trax's trainer_lib_test uses them.
"""

import numpy as np

from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.tf_numpy import numpy as tf_np


def test_functions_compute_as_numpy():
  x = np.array([[1.0, -2.0], [3.0, 0.5]], np.float32)
  np.testing.assert_allclose(tf_np.sum(tf_np.asarray(x), axis=0), [4.0, -1.5])
  np.testing.assert_allclose(tf_np.exp(x), np.exp(x), rtol=1e-6)
  assert tf_np.arange(4).tolist() == [0, 1, 2, 3]


def test_names_are_tensorflow_numpy_once():
  # The same objects as fastmath's jnp: one NumPy module, one switch-on.
  assert tf_np.sum is jnp.sum and tf_np.ndarray is jnp.ndarray
  assert 'sum' in tf_np.__all__ and 'set_allow_float64' in tf_np.__all__


def test_allow_float64_switch_round_trips():
  old = tf_np.is_allow_float64()
  try:
    tf_np.set_allow_float64(False)
    assert tf_np.is_allow_float64() is False
    # Without float64, it canonicalizes to float32.
    assert np.dtype(tf_np.canonicalize_dtype(np.dtype('float64'))) == np.float32
    # Python floats are float32 either way (tfnp_trax prefers float32).
    assert np.dtype(tf_np.default_float_type()) == np.float32
    tf_np.set_allow_float64(True)
    assert tf_np.is_allow_float64() is True
    assert np.dtype(tf_np.canonicalize_dtype(np.dtype('float64'))) == np.float64
  finally:
    tf_np.set_allow_float64(old)
