"""Tests for fastmath.random: functional keys on TF's stateless RNG."""

import numpy as np
import pytest
import tensorflow as tf

from tfnp_trax import fastmath
from tfnp_trax.fastmath import numpy as jnp

random = fastmath.random

SAMPLERS = {
    'uniform': lambda k: random.uniform(k, (5,)),
    'uniform_range': lambda k: random.uniform(k, (5,), minval=-3., maxval=2.),
    'normal': lambda k: random.normal(k, (5,)),
    'truncated_normal': lambda k: random.truncated_normal(k, shape=(5,)),
    'bernoulli': lambda k: random.bernoulli(k, 0.3, (5,)),
    'randint': lambda k: random.randint(k, (5,), 0, 100),
    'categorical': lambda k: random.categorical(k, jnp.zeros((5, 7))),
    'permutation': lambda k: random.permutation(k, 6),
    'split': lambda k: random.split(k, 3),
    'fold_in': lambda k: random.fold_in(k, 7),
}


def test_get_prng_gives_int32_pair():
  key = random.get_prng(0)
  assert key.dtype == tf.int32 and tuple(key.shape) == (2,)
  np.testing.assert_array_equal(random.get_prng(5), random.get_prng(5))
  assert not np.array_equal(random.get_prng(5), random.get_prng(6))
  # Large seeds keep their high bits instead of overflowing.
  assert not np.array_equal(random.get_prng(2**40), random.get_prng(0))


@pytest.mark.parametrize('name', sorted(SAMPLERS))
def test_same_key_same_numbers_eager_and_tf_function(name):
  sample = SAMPLERS[name]
  key = random.get_prng(3)
  eager = np.asarray(sample(key))
  np.testing.assert_array_equal(eager, np.asarray(sample(key)))
  graph = fastmath.jit(sample, jit_compile=False)
  graph_out = np.asarray(graph(key))
  np.testing.assert_array_equal(graph_out, np.asarray(graph(key)))
  # Without XLA, tf.function runs the same stateless kernels as eager.
  np.testing.assert_array_equal(graph_out, eager)


@pytest.mark.parametrize('name', ['uniform', 'normal', 'categorical'])
def test_xla_stream_is_deterministic_on_its_own(name):
  compiled = fastmath.jit(SAMPLERS[name], jit_compile=True)
  key = random.get_prng(4)
  np.testing.assert_array_equal(compiled(key), compiled(key))


def test_different_keys_give_different_numbers():
  a = random.uniform(random.get_prng(0), (8,))
  b = random.uniform(random.get_prng(1), (8,))
  assert not np.allclose(a, b)


def test_split_gives_distinct_keys():
  key = random.get_prng(0)
  keys = np.asarray(random.split(key, 4))
  assert keys.shape == (4, 2) and keys.dtype == np.int32
  rows = {tuple(k) for k in keys} | {tuple(np.asarray(key))}
  assert len(rows) == 5
  np.testing.assert_array_equal(random.split(key), random.split(key, 2))


def test_fold_in_gives_distinct_keys():
  key = random.get_prng(0)
  folded = {tuple(np.asarray(random.fold_in(key, i))) for i in range(5)}
  assert len(folded) == 5
  assert tuple(np.asarray(key)) not in folded
  np.testing.assert_array_equal(random.fold_in(key, 2),
                                random.fold_in(key, 2))


def test_int64_and_numpy_keys_are_converted():
  key32 = np.array([1, 2], np.int32)
  want = random.uniform(key32, (4,))
  np.testing.assert_array_equal(random.uniform(np.array([1, 2], np.int64),
                                               (4,)), want)
  np.testing.assert_array_equal(
      random.uniform(tf.constant([1, 2], tf.int64), (4,)), want)
  assert random.check_key(np.array([1, 2], np.int64)).dtype == tf.int32


def test_bad_key_shape_error():
  keys = random.split(random.get_prng(0), 3)
  with pytest.raises(ValueError, match=r'fastmath.random.uniform: keys must '
                     r'have shape \[2\], got shape \(3, 2\).*keys\[0\]'):
    random.uniform(keys, (2,))


def test_bad_key_dtype_error():
  with pytest.raises(TypeError, match=r'fastmath.random.normal: keys must be '
                     r'int32 .*got dtype float32.*get_prng'):
    random.normal(np.array([1., 2.], np.float32), (2,))


def test_uniform_statistics():
  x = np.asarray(random.uniform(random.get_prng(0), (10000,)), np.float64)
  assert x.min() >= 0. and x.max() < 1.
  # The standard error of the mean is 0.29 / 100; allow about 7 of them.
  assert abs(x.mean() - 0.5) < 0.02
  assert abs(x.std() - np.sqrt(1 / 12)) < 0.01
  y = np.asarray(random.uniform(random.get_prng(1), (10000,), minval=-3.,
                                maxval=2.), np.float64)
  assert y.min() >= -3. and y.max() < 2.
  assert abs(y.mean() + 0.5) < 0.1


def test_normal_statistics():
  x = np.asarray(random.normal(random.get_prng(0), (10000,)), np.float64)
  assert abs(x.mean()) < 0.05
  assert abs(x.std() - 1.0) < 0.05
  t = np.asarray(random.truncated_normal(random.get_prng(0), shape=(10000,)))
  assert t.min() >= -2. and t.max() <= 2.


def test_bernoulli_and_randint_statistics():
  b = np.asarray(random.bernoulli(random.get_prng(0), 0.3, (10000,)))
  assert b.dtype == np.bool_ and abs(b.mean() - 0.3) < 0.02
  r = np.asarray(random.randint(random.get_prng(0), (10000,), 2, 7))
  assert r.dtype == np.int32
  assert set(np.unique(r)) == {2, 3, 4, 5, 6}
  counts = np.bincount(r - 2) / r.size
  np.testing.assert_allclose(counts, 0.2, atol=0.02)


def _softmax(logits):
  e = np.exp(logits - logits.max())
  return e / e.sum()


def test_categorical_frequencies_match_softmax():
  logits = np.array([0.5, -1.0, 2.0, 0.0], np.float32)
  samples = np.asarray(random.categorical(random.get_prng(0), logits,
                                          shape=(10000,)))
  assert samples.shape == (10000,) and samples.dtype == np.int32
  freq = np.bincount(samples, minlength=4) / samples.size
  np.testing.assert_allclose(freq, _softmax(logits.astype(np.float64)),
                             atol=0.02)


def test_categorical_batched_logits_and_axis():
  logits = np.array([[5.0, -5.0, -5.0], [-5.0, -5.0, 5.0]], np.float32)
  key = random.get_prng(1)
  np.testing.assert_array_equal(random.categorical(key, logits), [0, 2])
  np.testing.assert_array_equal(random.categorical(key, logits.T, axis=0),
                                [0, 2])
  many = np.asarray(random.categorical(key, logits, shape=(500, 2)))
  assert many.shape == (500, 2)
  assert (many[:, 0] == 0).mean() > 0.99 and (many[:, 1] == 2).mean() > 0.99


def test_permutation_is_a_permutation():
  p = np.asarray(random.permutation(random.get_prng(0), 10))
  assert sorted(p.tolist()) == list(range(10))


@pytest.mark.parametrize('dtype', [jnp.float32, jnp.bfloat16, jnp.float64])
def test_float_dtypes(dtype):
  key = random.get_prng(0)
  assert random.uniform(key, (3,), dtype=dtype).dtype == dtype
  assert random.normal(key, (3,), dtype=dtype).dtype == dtype
