"""Tests for distribute.sharding (per-device layouts)."""

import numpy as np
import pytest

from distribute import sharding


def test_shard_batch_splits_rows_in_order():
  x = np.arange(24, dtype=np.float32).reshape(8, 3)
  got = np.asarray(sharding.shard_batch(x, 4))
  np.testing.assert_array_equal(got, x.reshape(4, 2, 3))
  np.testing.assert_array_equal(got[1], x[2:4])


def test_shard_batch_maps_over_nests():
  x = {'a': np.zeros((6, 2)), 'b': (np.ones((6,)),)}
  got = sharding.shard_batch(x, 3)
  assert tuple(got['a'].shape) == (3, 2, 2)
  assert tuple(got['b'][0].shape) == (3, 2)


def test_shard_batch_indivisible_batch_error():
  with pytest.raises(ValueError,
                     match=r'shard_batch: batch size 10 is not divisible by '
                     r'the 4 devices \(leaf shape \(10, 3\)\)\. Use a batch '
                     r'size that is a multiple of 4, e\.g\. 8 or 12\.'):
    sharding.shard_batch(np.zeros((10, 3)), 4)


def test_shard_batch_smaller_than_devices_suggests_one_size():
  with pytest.raises(ValueError, match=r'multiple of 4, e\.g\. 4\.$'):
    sharding.shard_batch(np.zeros((3,)), 4)


def test_shard_batch_scalar_error():
  with pytest.raises(ValueError, match=r'shard_batch: cannot split a scalar'):
    sharding.shard_batch(np.float32(1.0), 2)


@pytest.mark.parametrize('n', [0, -1, 2.0])
def test_bad_n_devices_error(n):
  with pytest.raises(ValueError,
                     match=r'shard_batch: n_devices must be a positive int'):
    sharding.shard_batch(np.zeros((4,)), n)


@pytest.mark.parametrize('pure_np', [False, True])
def test_reshape_by_device(pure_np):
  x = np.arange(12.0).reshape(6, 2)
  got = sharding.reshape_by_device(x, 2, pure_np=pure_np)
  assert isinstance(got, np.ndarray) == pure_np
  np.testing.assert_array_equal(np.asarray(got), x.reshape(2, 3, 2))


def test_reshape_by_device_error_names_function():
  with pytest.raises(ValueError,
                     match=r'reshape_by_device: batch size 5 is not divisible '
                     r'by the 2 devices'):
    sharding.reshape_by_device(np.zeros((5, 1)), 2, pure_np=True)


def test_for_n_devices_replicates():
  x = (np.array([1.0, 2.0], np.float32), np.float32(3.0))
  got = sharding.for_n_devices(x, 3)
  np.testing.assert_array_equal(np.asarray(got[0]),
                                np.tile([[1.0, 2.0]], (3, 1)))
  np.testing.assert_array_equal(np.asarray(got[1]), [3.0, 3.0, 3.0])


def test_for_n_devices_one_device_is_identity():
  x = {'w': np.ones((2, 2))}
  assert sharding.for_n_devices(x, 1) is x
