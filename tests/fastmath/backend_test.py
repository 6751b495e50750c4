"""Tests for fastmath's backend selection (TensorFlow NumPy only)."""

import pytest

from tfnp_trax import fastmath

_UNSUPPORTED = (r"fastmath backend '{}' is not supported: tfnp_trax runs only "
                r"on 'tensorflow-numpy' \(Backend.TFNP\)\. Trax code that "
                r'selects the "jax" or "numpy" backend should drop the call '
                r'or pass Backend.TFNP\.')


def test_backend_name():
  assert fastmath.backend_name() == 'tensorflow-numpy'
  assert fastmath.Backend.TFNP.value == 'tensorflow-numpy'


@pytest.mark.parametrize('name', [fastmath.Backend.TFNP, 'tensorflow-numpy',
                                  'tfnp', 'tf', 'tensorflow'])
def test_supported_names(name):
  fastmath.set_backend(name)
  with fastmath.use_backend(name):
    assert fastmath.backend_name() == 'tensorflow-numpy'
  assert fastmath.backend_name() == 'tensorflow-numpy'


@pytest.mark.parametrize('name', ['jax', 'numpy'])
def test_unsupported_backend_raises(name):
  with pytest.raises(ValueError, match=_UNSUPPORTED.format(name)):
    with fastmath.use_backend(name):
      pass
  with pytest.raises(ValueError, match=_UNSUPPORTED.format(name)):
    fastmath.set_backend(name)


def test_use_backend_keeps_numpy_64bit_dtypes_as_trax_tfnp():
  # Follows Trax's TF-NumPy backend (trax/layers/normalization_test.py
  # test_forward_dtype 'tf64'): inside use_backend(TFNP), float64 data stays
  # float64; outside, as on Trax's default JAX backend, it becomes float32.
  import numpy as np  # pylint: disable=g-import-not-at-top
  from tfnp_trax import layers as tl  # pylint: disable=g-import-not-at-top
  x = np.ones((2, 3), np.float64)
  assert tl.Relu()(x).dtype == np.float32
  assert tl.Relu()(np.arange(3)).dtype == np.int32
  with fastmath.use_backend(fastmath.Backend.TFNP):
    assert fastmath.backend.keeps_64bit_inputs()
    assert tl.Relu()(x).dtype == np.float64
    assert tl.Relu()(np.arange(3)).dtype == np.int64
  assert not fastmath.backend.keeps_64bit_inputs()
  assert tl.Relu()(x).dtype == np.float32
  with pytest.raises(ValueError):
    with fastmath.use_backend('jax'):
      pass
  assert not fastmath.backend.keeps_64bit_inputs()
