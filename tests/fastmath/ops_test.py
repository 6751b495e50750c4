"""Tests for fastmath's numeric ops against NumPy float64 references."""

import math

import numpy as np
import pytest
import tensorflow as tf

from tests import _layer_testing as lt
from tfnp_trax import fastmath


def _x(*shape, seed=0):
  return np.random.default_rng(seed).normal(size=shape).astype(np.float32)


def _np_logsumexp(x, axis=None, keepdims=False):
  x = np.asarray(x, np.float64)
  m = np.max(x, axis=axis, keepdims=True)
  out = m + np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True))
  return out if keepdims else np.squeeze(out, axis=axis)


@pytest.mark.parametrize('mode', lt.MODES)
@pytest.mark.parametrize('axis,keepdims', [(None, False), (1, False),
                                           (0, True), (-1, True)])
def test_logsumexp(mode, axis, keepdims):
  x = _x(3, 4)
  got = lt.compile_fn(
      lambda a: fastmath.logsumexp(a, axis=axis, keepdims=keepdims), mode)(x)
  np.testing.assert_allclose(got, _np_logsumexp(x, axis, keepdims), rtol=1e-5)


def test_logsumexp_is_stable_for_large_inputs():
  x = np.array([1000., 1000., 990.], np.float32)
  np.testing.assert_allclose(fastmath.logsumexp(x),
                             _np_logsumexp(x), rtol=1e-6)


@pytest.mark.parametrize('mode', lt.MODES)
def test_expit_and_erf(mode):
  x = np.linspace(-4, 4, 17).astype(np.float32)
  expit, erf = lt.compile_fn(
      lambda a: (fastmath.expit(a), fastmath.erf(a)), mode)(x)
  x64 = x.astype(np.float64)
  np.testing.assert_allclose(expit, 1 / (1 + np.exp(-x64)), rtol=1e-6)
  np.testing.assert_allclose(erf, [math.erf(v) for v in x64], atol=1e-6)


@pytest.mark.parametrize('mode', lt.MODES)
@pytest.mark.parametrize('dimension', [-1, 0])
def test_sort_key_val(mode, dimension):
  keys = np.array([[3, 1, 2, 1], [0, 5, 5, 4], [2, 2, 9, 1]], np.int32)
  vals = np.arange(12, dtype=np.float32).reshape(3, 4)
  got_k, got_v = lt.compile_fn(
      lambda k, v: fastmath.sort_key_val(k, v, dimension=dimension),
      mode)(keys, vals)
  order = np.argsort(keys, axis=dimension, kind='stable')
  np.testing.assert_array_equal(got_k, np.take_along_axis(keys, order,
                                                          dimension))
  np.testing.assert_array_equal(got_v, np.take_along_axis(vals, order,
                                                          dimension))


@pytest.mark.parametrize('mode', lt.MODES)
def test_top_k(mode):
  x = _x(3, 6)
  values, indices = lt.compile_fn(lambda a: fastmath.top_k(a, 2), mode)(x)
  want_idx = np.argsort(-x, axis=-1)[:, :2]
  np.testing.assert_array_equal(indices, want_idx)
  np.testing.assert_array_equal(values, np.take_along_axis(x, want_idx, -1))


INDICES = [
    1,
    (slice(None), 2),
    (slice(0, 2), slice(1, None)),
    (1, slice(None, None, 2)),
    (np.array([0, 2]), np.array([1, 3])),
]


def _np_index_op(x, idx, y, kind):
  out = np.array(x, np.float64)
  if kind == 'update':
    out[idx] = y
  else:
    ufunc = {'add': np.add, 'min': np.minimum, 'max': np.maximum}[kind]
    ufunc.at(out, idx, y)
  return out


@pytest.mark.parametrize('idx', INDICES)
@pytest.mark.parametrize('kind', ['update', 'add', 'min', 'max'])
def test_index_ops(idx, kind):
  x = _x(3, 4)
  fn = {'update': fastmath.index_update, 'add': fastmath.index_add,
        'min': fastmath.index_min, 'max': fastmath.index_max}[kind]
  got = fn(x, idx, 0.5)
  np.testing.assert_allclose(got, _np_index_op(x, idx, 0.5, kind), rtol=1e-6)


def test_index_add_accumulates_duplicates_and_broadcasts_arrays():
  got = fastmath.index_add(np.zeros(4, np.float32), np.array([0, 0, 3]),
                           np.array([1., 2., 5.], np.float32))
  np.testing.assert_array_equal(got, [3., 0., 0., 5.])
  row = np.arange(4, dtype=np.float32)
  got = fastmath.index_update(np.zeros((2, 4), np.float32), 1, row)
  np.testing.assert_array_equal(got, [[0] * 4, row])


@pytest.mark.parametrize('mode', lt.MODES)
def test_index_update_with_traced_index(mode):
  got = lt.compile_fn(lambda x, i: fastmath.index_update(x, i, 7.),
                      mode)(np.zeros(4, np.float32), np.int32(2))
  np.testing.assert_array_equal(got, [0., 0., 7., 0.])


@pytest.mark.parametrize('mode', lt.MODES)
@pytest.mark.parametrize('start', [(1, 2), (0, 0), (5, -3)])
def test_dynamic_slice(mode, start):
  x = np.arange(20, dtype=np.float32).reshape(4, 5)
  got = lt.compile_fn(
      lambda a, i, j: fastmath.dynamic_slice(a, (i, j), (2, 3)), mode)(
          x, np.int32(start[0]), np.int32(start[1]))
  # Out-of-range starts are clamped so the slice stays inside, as in XLA.
  i = min(max(start[0], 0), 4 - 2)
  j = min(max(start[1], 0), 5 - 3)
  np.testing.assert_array_equal(got, x[i:i + 2, j:j + 3])


@pytest.mark.parametrize('mode', lt.MODES)
@pytest.mark.parametrize('start', [(1, 2), (3, 4)])
def test_dynamic_update_slice(mode, start):
  x = np.zeros((4, 5), np.float32)
  upd = np.arange(1, 7, dtype=np.float32).reshape(2, 3)
  got = lt.compile_fn(
      lambda a, u, i, j: fastmath.dynamic_update_slice(a, u, (i, j)), mode)(
          x, upd, np.int32(start[0]), np.int32(start[1]))
  i, j = min(start[0], 2), min(start[1], 2)
  want = x.copy()
  want[i:i + 2, j:j + 3] = upd
  np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize('mode', lt.MODES)
@pytest.mark.parametrize('axis', [0, 1, -1])
def test_dynamic_slice_in_dim_and_update(mode, axis):
  x = np.arange(60, dtype=np.float32).reshape(3, 4, 5)

  def run(a, start):
    part = fastmath.dynamic_slice_in_dim(a, start, 2, axis=axis)
    back = fastmath.dynamic_update_slice_in_dim(a, -part, start, axis)
    return part, back

  part, back = lt.compile_fn(run, mode)(x, np.int32(1))
  sl = [slice(None)] * 3
  sl[axis] = slice(1, 3)
  np.testing.assert_array_equal(part, x[tuple(sl)])
  want = x.copy()
  want[tuple(sl)] *= -1
  np.testing.assert_array_equal(back, want)


def test_one_hot_cast_like_is_float():
  got = fastmath.one_hot(np.array([0, 2, 1]), 3)
  np.testing.assert_array_equal(got, np.eye(3)[[0, 2, 1]])
  assert got.dtype == tf.float32
  assert fastmath.cast_like(np.array([1, 2]), np.zeros(1, np.float16)
                           ).dtype == tf.float16
  assert fastmath.is_float(np.zeros(1, np.float32))
  assert not fastmath.is_float(np.zeros(1, np.int32))
