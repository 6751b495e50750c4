"""Backend selection. tfnp_trax has exactly one backend: TensorFlow NumPy."""

import contextlib
import enum

__all__ = ['Backend', 'backend_name', 'set_backend', 'use_backend']


class Backend(enum.Enum):
  """Trax's backend names; tfnp_trax runs only on TFNP (TensorFlow NumPy).

  JAX and NUMPY exist so Trax code such as `is_backend(Backend.JAX)` runs
  (and answers False); selecting them raises ValueError.
  """
  JAX = 'jax'
  TFNP = 'tensorflow-numpy'
  NUMPY = 'numpy'


_SUPPORTED = Backend.TFNP.value


def _validate(name):
  if isinstance(name, Backend):
    name = name.value
  if name in ('tf', 'tfnp', 'tensorflow', _SUPPORTED):
    return _SUPPORTED
  raise ValueError(
      f'fastmath backend {name!r} is not supported: tfnp_trax runs only on '
      f'{_SUPPORTED!r} (Backend.TFNP). Trax code that selects the "jax" or '
      f'"numpy" backend should drop the call or pass Backend.TFNP.')


def backend_name():
  """Returns the name of the active backend, always 'tensorflow-numpy'."""
  return _SUPPORTED


def set_backend(name):
  """Accepts only the TensorFlow NumPy backend; raises ValueError otherwise."""
  _validate(name)


@contextlib.contextmanager
def use_backend(name):
  """Context manager form of `set_backend`, kept for Trax compatibility."""
  _validate(name)
  yield
