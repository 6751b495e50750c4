"""fastmath.linalg vs numpy.linalg."""

import numpy as np
import pytest

from tfnp_trax import fastmath

_RNG = np.random.default_rng(0)
_A = _RNG.normal(size=(2, 3, 3)) + 3 * np.eye(3)
_SPD = _A @ np.swapaxes(_A, -1, -2)


def test_slogdet_matches_numpy():
  sign, logdet = fastmath.linalg.slogdet(_A)
  want_sign, want_logdet = np.linalg.slogdet(_A)
  np.testing.assert_allclose(sign, want_sign)
  np.testing.assert_allclose(logdet, want_logdet, rtol=1e-10)


def _np_solve(a, b):
  if b.ndim in (1, a.ndim - 1):  # Vectors, broadcast over a's batch.
    return np.linalg.solve(a, np.broadcast_to(b, a.shape[:-1])[..., None])[
        ..., 0]
  return np.linalg.solve(a, b)


@pytest.mark.parametrize('b_shape', [(2, 3), (3,), (2, 3, 4), (1, 3, 2)])
def test_solve_vectors_matrices_and_broadcasting(b_shape):
  b = _RNG.normal(size=b_shape)
  np.testing.assert_allclose(fastmath.linalg.solve(_A, b), _np_solve(_A, b),
                             rtol=1e-8)


def test_solve_under_xla():
  solve = fastmath.jit(fastmath.linalg.solve, jit_compile=True)
  for b_shape in [(2, 3), (2, 3, 4)]:
    b = _RNG.normal(size=b_shape)
    np.testing.assert_allclose(solve(_A, b), _np_solve(_A, b), rtol=1e-8)


def test_cholesky_under_xla():
  chol = fastmath.jit(fastmath.linalg.cholesky, jit_compile=True)(_SPD)
  np.testing.assert_allclose(chol, np.linalg.cholesky(_SPD), rtol=1e-8)
