"""Backend selection. tfnp_trax has exactly one backend: TensorFlow NumPy."""

import contextlib
import enum

__all__ = ['Backend', 'backend_name', 'keeps_64bit_inputs', 'set_backend',
           'use_backend']


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


# Depth of `use_backend` blocks open now. Inside one, NumPy data keeps its
# 64-bit dtypes as on Trax's TF-NumPy backend; outside, the default backend
# behaves as Trax's default JAX one (64-bit types off).
_EXPLICIT_TFNP_DEPTH = 0


def keeps_64bit_inputs():
  """Whether NumPy inputs keep int64/float64 (inside `use_backend`).

  Trax's TF-NumPy backend keeps NumPy's 64-bit dtypes, while its default
  JAX backend narrows them to 32 bits. tfnp_trax behaves as the JAX one by
  default and as the TF-NumPy one inside an explicit
  `use_backend(Backend.TFNP)` block, which is scoped, unlike `set_backend`
  (which would change every later computation of the process).
  """
  return _EXPLICIT_TFNP_DEPTH > 0


@contextlib.contextmanager
def use_backend(name):
  """Runs the block on TF NumPy, keeping NumPy's 64-bit input dtypes.

  Args:
    name: a `Backend` or its name; only TF NumPy is accepted.

  Raises:
    ValueError: for any backend other than TF NumPy.
  """
  global _EXPLICIT_TFNP_DEPTH
  _validate(name)
  _EXPLICIT_TFNP_DEPTH += 1
  try:
    yield
  finally:
    _EXPLICIT_TFNP_DEPTH -= 1
