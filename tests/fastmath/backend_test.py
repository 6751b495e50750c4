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
