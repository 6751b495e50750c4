"""Distributions against NumPy float64 formulas; sampling statistics."""

import gymnasium as gym
import numpy as np
import pytest
import tensorflow as tf

from tests import _layer_testing as lt
from tfnp_trax import fastmath
from tfnp_trax.rl import distributions


def np_log_softmax(x):
  x = x - x.max(axis=-1, keepdims=True)
  return x - np.log(np.exp(x).sum(axis=-1, keepdims=True))


def softplus(x):
  return np.log1p(np.exp(x))


@pytest.mark.parametrize('mode', lt.MODES)
def test_categorical_log_prob_and_entropy(mode):
  rng = np.random.default_rng(0)
  logits = rng.normal(size=(4, 2, 5))
  actions = rng.integers(0, 5, size=(4, 2)).astype(np.int32)
  dist = distributions.Categorical(5)
  log_probs = np_log_softmax(logits)
  f = lt.compile_fn(lambda x, a: (dist.log_prob(x, a), dist.entropy(x)),
                    mode)
  lp, ent = f(tf.constant(logits, tf.float32), actions)
  np.testing.assert_allclose(
      np.asarray(lp),
      np.take_along_axis(log_probs, actions[..., None], -1)[..., 0],
      rtol=1e-5)
  np.testing.assert_allclose(
      np.asarray(ent), -np.sum(np.exp(log_probs) * log_probs, -1), rtol=1e-5)


def test_categorical_with_shape_sums_over_sample_dims():
  rng = np.random.default_rng(1)
  dist = distributions.Categorical(3, shape=(2,))
  assert dist.n_inputs == 6
  logits = rng.normal(size=(4, 6))
  actions = rng.integers(0, 3, size=(4, 2))
  per = np_log_softmax(logits.reshape(4, 2, 3))
  expected = np.take_along_axis(per, actions[..., None], -1)[..., 0].sum(-1)
  np.testing.assert_allclose(np.asarray(dist.log_prob(logits, actions)),
                             expected, rtol=1e-6)
  assert dist.sample(logits, key=fastmath.random.get_prng(0)).shape == (4, 2)


def test_categorical_sampling_frequencies_and_temperature():
  dist = distributions.Categorical(3)
  logits = np.log(np.array([[0.2, 0.5, 0.3]] * 20000, np.float32))
  key = fastmath.random.get_prng(3)
  samples = np.asarray(dist.sample(logits, key=key))
  np.testing.assert_allclose(np.bincount(samples, minlength=3) / 20000,
                             [0.2, 0.5, 0.3], atol=0.015)
  # Same key, same samples; temperature 2 flattens towards p^(1/2).
  np.testing.assert_array_equal(samples, np.asarray(dist.sample(logits,
                                                                key=key)))
  hot = np.asarray(dist.sample(logits, temperature=2.0, key=key))
  p = np.sqrt([0.2, 0.5, 0.3])
  np.testing.assert_allclose(np.bincount(hot, minlength=3) / 20000,
                             p / p.sum(), atol=0.015)
  np.testing.assert_array_equal(
      np.asarray(dist.sample(logits[:2], temperature=0.0)), [1, 1])


@pytest.mark.parametrize('learn_std', [None, 'shared', 'per-dimension',
                                       'separate'])
def test_gaussian_log_prob_entropy_and_std(learn_std):
  rng = np.random.default_rng(2)
  dist = distributions.Gaussian(shape=(2,), std=0.5, learn_std=learn_std)
  n_std = {None: 0, 'shared': 1, 'per-dimension': 2, 'separate': 2}[
      learn_std]
  assert dist.n_inputs == 2 + n_std
  inputs = rng.normal(size=(3, 2 + n_std))
  point = rng.normal(size=(3, 2))
  mean = inputs[:, :2]
  std = (np.full_like(mean, 0.5) if learn_std is None else
         np.broadcast_to(softplus(inputs[:, 2:] + 0.5), mean.shape))
  expected = np.sum(-(point - mean) ** 2 / (2 * std ** 2) - np.log(std) -
                    0.5 * np.log(2 * np.pi), -1)
  np.testing.assert_allclose(np.asarray(dist.log_prob(inputs, point)),
                             expected, rtol=1e-6)
  np.testing.assert_allclose(
      np.asarray(dist.entropy(inputs)),
      np.sum(0.5 * np.log(2 * np.pi * np.e * std ** 2), -1), rtol=1e-6)


def test_gaussian_log_prob_gradient_wrt_inputs():
  dist = distributions.Gaussian(shape=(3,), std=2.0)
  mean = np.array([[0.1, -0.3, 0.7]])
  point = np.array([[1.0, 0.0, -1.0]])
  got = fastmath.grad(lambda m: fastmath.numpy.sum(dist.log_prob(m, point)))(
      tf.constant(mean, tf.float64))
  np.testing.assert_allclose(np.asarray(got), (point - mean) / 4.0,
                             rtol=1e-10)


def test_gaussian_sampling_statistics():
  dist = distributions.Gaussian(shape=(1,), std=0.5)
  inputs = np.full((20000, 1), 3.0, np.float32)
  x = np.asarray(dist.sample(inputs, key=fastmath.random.get_prng(0)))
  assert x.shape == (20000, 1)
  assert abs(x.mean() - 3.0) < 0.02 and abs(x.std() - 0.5) < 0.02
  cold = np.asarray(dist.sample(inputs, temperature=0.1,
                                key=fastmath.random.get_prng(0)))
  assert abs(cold.std() - 0.05) < 0.005
  np.testing.assert_array_equal(
      np.asarray(dist.sample(inputs[:2], temperature=0.0)), inputs[:2])


def test_create_distribution_for_spaces():
  cat = distributions.create_distribution(gym.spaces.Discrete(4))
  assert isinstance(cat, distributions.Categorical) and cat.n_inputs == 4
  gauss = distributions.create_distribution(gym.spaces.Box(-1, 1, (3,)))
  assert isinstance(gauss, distributions.Gaussian) and gauss.n_inputs == 3
  multi = distributions.create_distribution(gym.spaces.MultiDiscrete([3, 3]))
  assert multi.n_inputs == 6


def test_unsupported_space_names_the_space():
  with pytest.raises(TypeError, match=r'create_distribution: the space '
                     r'Text\(.*\) of type gymnasium\.spaces\.text\.Text is '
                     r'not supported'):
    distributions.create_distribution(gym.spaces.Text(5))
  with pytest.raises(TypeError, match=r'MultiDiscrete'):
    distributions.create_distribution(gym.spaces.MultiDiscrete([2, 3]))


def test_bad_inputs_are_explained():
  dist = distributions.Categorical(3)
  with pytest.raises(ValueError, match=r'Categorical: expected 3 '
                     r'distribution parameters on the last axis, got 4'):
    dist.log_prob(np.zeros((2, 4)), np.zeros((2,), np.int32))
  with pytest.raises(ValueError, match=r'Categorical.sample: sampling with '
                     r'temperature > 0 inside a traced function needs a key'):
    tf.function(lambda x: dist.sample(x))(np.zeros((2, 3), np.float32))
  with pytest.raises(ValueError, match=r'learn_std must be None, "shared" '
                     r'or "per-dimension", got \'both\''):
    distributions.Gaussian(learn_std='both')


def test_log_loss_layer():
  dist = distributions.Categorical(2)
  logits = np.array([[0.0, np.log(3.0)]], np.float32)
  loss = distributions.LogLoss(dist)((logits, np.array([1]),
                                      np.array([2.0], np.float32)))
  np.testing.assert_allclose(float(loss), -2.0 * np.log(0.75), rtol=1e-6)


def test_sampling_without_a_key_uses_numpy_global_generator():
  # Follows trax/rl/distributions.py sample (tl.logsoftmax_sample and
  # np.random.normal): no key means NumPy's global generator, so a seed
  # repeats the draw and statistics follow the distribution.
  cat = distributions.Categorical(3)
  logits = np.log(np.array([[0.2, 0.3, 0.5]] * 4000, np.float32))
  np.random.seed(1)
  first = np.asarray(cat.sample(logits))
  np.random.seed(1)
  np.testing.assert_array_equal(np.asarray(cat.sample(logits)), first)
  assert first.shape == (4000,) and first.dtype == np.int32
  freq = np.bincount(first, minlength=3) / 4000.0
  np.testing.assert_allclose(freq, [0.2, 0.3, 0.5], atol=0.03)  # ~4 sigma
  # NumPy inputs take a host-only path; tensors give the same draws.
  np.random.seed(1)
  np.testing.assert_array_equal(
      np.asarray(cat.sample(tf.constant(logits))), first)
  np.testing.assert_array_equal(
      np.asarray(cat.sample(logits[:3], temperature=0.0)), [2, 2, 2])
  with pytest.raises(ValueError, match='expected 3 distribution parameters'):
    cat.sample(np.zeros((2, 4), np.float32))
  gauss = distributions.Gaussian(shape=(2,), std=0.5)
  means = np.tile(np.array([[1.0, -2.0]], np.float32), (4000, 1))
  point = np.asarray(gauss.sample(means))
  assert point.shape == (4000, 2)
  np.testing.assert_allclose(point.mean(axis=0), [1.0, -2.0], atol=0.04)
  np.testing.assert_allclose(point.std(axis=0), [0.5, 0.5], atol=0.03)


def test_gin_configures_the_distribution_create_distribution_builds():
  # Follows trax/rl/distributions.py: Gaussian is @gin.configurable on
  # import, so a binding reaches create_distribution's Gaussian.
  import gin  # pylint: disable=g-import-not-at-top
  gin.clear_config()
  try:
    gin.parse_config('Gaussian.learn_std = "shared"')
    box = gym.spaces.Box(low=-1.0, high=1.0, shape=(4, 5))
    assert distributions.create_distribution(box).n_inputs == 21
  finally:
    gin.clear_config()
  assert distributions.create_distribution(box).n_inputs == 20
