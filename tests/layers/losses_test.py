"""Tests for the cross-entropy loss layers."""

import numpy as np
import pytest
import tensorflow as tf

from tfnp_trax import layers as tl
from tests.layers import _metric_harness as h


# -- NumPy float64 references -------------------------------------------------
def np_log_softmax(x):
  x = x.astype(np.float64)
  shifted = x - x.max(-1, keepdims=True)
  return shifted - np.log(np.sum(np.exp(shifted), -1, keepdims=True))


def ref_cross_entropies(logits, targets, label_smoothing=None, cutoff=0.0):
  n = logits.shape[-1]
  p = np.eye(n)[targets]
  if label_smoothing:
    p = p * (1 - label_smoothing) + label_smoothing / n
  ce = -np.sum(p * np_log_softmax(logits), -1)
  return np.maximum(ce, cutoff) - cutoff if cutoff > 0 else ce


def ref_weighted_mean(values, weights):
  w = weights.astype(np.float64)
  return float(np.sum(values * w) / np.sum(w)) if np.sum(w) else 0.0


def ref_binary_entropies(probs, targets):
  probs = probs.astype(np.float64)
  return -(targets * np.log(probs) + (1 - targets) * np.log(1 - probs))


def np_sigmoid(x):
  return 1 / (1 + np.exp(-x.astype(np.float64)))


# -- Values vs references -----------------------------------------------------
@pytest.mark.parametrize('mode', h.MODES)
@pytest.mark.parametrize('label_smoothing', [None, 0.1])
def test_category_cross_entropy(mode, label_smoothing):
  out, targets, _ = h.batch(0)
  got = h.run_layer(tl.CategoryCrossEntropy(label_smoothing=label_smoothing),
                    (out, targets), mode)
  h.assert_close(got, np.mean(ref_cross_entropies(out, targets,
                                                  label_smoothing)))


@pytest.mark.parametrize('mode', h.MODES)
@pytest.mark.parametrize('label_smoothing,cutoff',
                         [(None, 0.0), (0.2, 0.0), (None, 1.5), (0.1, 1.0)])
def test_weighted_category_cross_entropy(mode, label_smoothing, cutoff):
  out, targets, weights = h.batch(1)
  layer = tl.WeightedCategoryCrossEntropy(label_smoothing=label_smoothing,
                                          cutoff=cutoff)
  got = h.run_layer(layer, (out, targets, weights), mode)
  want = ref_weighted_mean(
      ref_cross_entropies(out, targets, label_smoothing, cutoff), weights)
  h.assert_close(got, want)


@pytest.mark.parametrize('mode', h.MODES)
def test_cross_entropy_loss_family(mode):
  out, targets, weights = h.batch(2)
  log_probs = np_log_softmax(out).astype(np.float32)
  per_item = -np.take_along_axis(log_probs.astype(np.float64),
                                 targets[..., None], -1)[..., 0]
  h.assert_close(h.run_layer(tl.CrossEntropyLoss(),
                             (log_probs, targets, weights), mode),
                 ref_weighted_mean(per_item, weights))
  h.assert_close(h.run_layer(tl.CrossEntropyLossWithLogSoftmax(),
                             (out, targets, weights), mode),
                 ref_weighted_mean(ref_cross_entropies(out, targets), weights))
  h.assert_close(h.run_layer(tl.CrossEntropySum(),
                             (log_probs, targets, weights), mode),
                 np.sum(per_item * weights))


@pytest.mark.parametrize('mode', h.MODES)
def test_binary_cross_entropy(mode):
  rng = np.random.default_rng(3)
  logits = rng.normal(scale=3.0, size=(4, 3)).astype(np.float32)
  targets = rng.integers(0, 2, size=(4, 3)).astype(np.float32)
  got = h.run_layer(tl.BinaryCrossEntropy(), (logits, targets), mode)
  h.assert_close(got, np.mean(ref_binary_entropies(np_sigmoid(logits),
                                                   targets)))


def test_binary_cross_entropy_is_finite_for_large_logits():
  logits = np.array([60.0, -60.0, 60.0, -60.0], np.float32)
  targets = np.array([1.0, 0.0, 0.0, 1.0], np.float32)
  # Confident right answers cost ~e^-60; confident wrong ones cost 60 each.
  h.assert_close(tl.BinaryCrossEntropy()((logits, targets)), 30.0)


def ref_trax_binary_cross_entropy_loss(probs, targets, weights):
  """Trax's Serial(_BinaryCrossEntropy, _WeightedMean) in float64."""
  p, t = probs.astype(np.float64), targets.astype(np.float64)
  j = np.dot(t.T, np.log(p)) + np.dot((1 - t).T, np.log(1 - p))
  j = -np.squeeze(j) / p.shape[0]
  w = weights.astype(np.float64)
  return float(np.sum(j * w) / np.sum(w))


@pytest.mark.parametrize('mode', h.MODES)
@pytest.mark.parametrize('shape', [(6,), (6, 1), (3, 3)])
def test_binary_cross_entropy_loss(mode, shape):
  rng = np.random.default_rng(4)
  probs = rng.uniform(0.05, 0.95, size=shape).astype(np.float32)
  targets = rng.integers(0, 2, size=shape).astype(np.float32)
  weights = rng.uniform(size=shape).astype(np.float32)
  got = h.run_layer(tl.BinaryCrossEntropyLoss(), (probs, targets, weights),
                    mode)
  h.assert_close(got, ref_trax_binary_cross_entropy_loss(probs, targets,
                                                         weights))
  if len(shape) == 1 or shape[-1] == 1:
    # Trax reduces the batch before weighting: the unweighted batch mean.
    h.assert_close(got, np.mean(ref_binary_entropies(probs, targets)))


# -- Hand-checked edge cases --------------------------------------------------
def test_label_smoothing_by_hand():
  # Uniform logits over 4 classes: q_i = 1/4, so -sum(p log q) = log 4 for
  # any target distribution p, smoothed or not.
  out = np.zeros((1, 4), np.float32)
  for eps in (None, 0.3, 1.0):
    h.assert_close(tl.CategoryCrossEntropy(eps)((out, np.array([2]))),
                   np.log(4.0))
  # Logits log([1, 3]): q = [1/4, 3/4]; target 1 with eps=0.5 gives
  # p = [1/4, 3/4], so the cross-entropy is the entropy of q.
  out = np.log(np.array([[1.0, 3.0]], np.float32))
  want = -(0.25 * np.log(0.25) + 0.75 * np.log(0.75))
  h.assert_close(tl.CategoryCrossEntropy(0.5)((out, np.array([1]))), want)


def test_cutoff_by_hand():
  # q = [1/4, 3/4]: the loss is log(4/3) ~ 0.288 for target 1, log 4 ~ 1.386
  # for target 0. A cutoff of 0.5 zeroes the first and lowers the second.
  out = np.log(np.array([[1.0, 3.0], [1.0, 3.0]], np.float32))
  targets = np.array([1, 0])
  weights = np.array([1.0, 1.0], np.float32)
  layer = tl.WeightedCategoryCrossEntropy(cutoff=0.5)
  h.assert_close(layer((out, targets, weights)), (np.log(4.0) - 0.5) / 2)


@pytest.mark.parametrize('mode', h.MODES)
def test_all_zero_weights_give_zero(mode):
  out, targets, weights = h.batch(5)
  zeros = np.zeros_like(weights)
  for layer in (tl.WeightedCategoryCrossEntropy(), tl.CrossEntropyLoss(),
                tl.CrossEntropyLossWithLogSoftmax(), tl.CrossEntropySum()):
    h.assert_close(h.run_layer(layer, (out, targets, zeros), mode), 0.0)
  probs = np.full((12,), 0.5, np.float32)
  h.assert_close(h.run_layer(tl.BinaryCrossEntropyLoss(),
                             (probs, probs, zeros.ravel()), mode), 0.0)


def test_gradient_of_weighted_cross_entropy():
  out, targets, weights = h.batch(6)
  layer = tl.WeightedCategoryCrossEntropy()
  x = tf.constant(out)
  with tf.GradientTape() as tape:
    tape.watch(x)
    loss = layer((x, targets, weights))
  grad = tape.gradient(loss, x).numpy()
  # d/dlogits of w_i * ce_i / sum(w) = w_i * (softmax - one_hot) / sum(w).
  probs = np.exp(np_log_softmax(out))
  want = (weights[..., None] * (probs - np.eye(5)[targets]) /
          weights.astype(np.float64).sum())
  h.assert_close(grad, want)
  with tf.GradientTape() as tape:
    tape.watch(x)
    loss = layer((x, targets, np.zeros_like(weights)))
  np.testing.assert_array_equal(tape.gradient(loss, x).numpy(), 0.0)


def test_bfloat16_logits_are_computed_in_float32():
  out, targets, weights = h.batch(8)
  logits = tf.cast(out, tf.bfloat16)
  got = tl.WeightedCategoryCrossEntropy()((logits, targets, weights))
  assert got.dtype == tf.float32
  rounded = tf.cast(logits, tf.float32).numpy()
  h.assert_close(got, ref_weighted_mean(ref_cross_entropies(rounded, targets),
                                        weights))


# -- Bad input ----------------------------------------------------------------
@pytest.mark.parametrize('make', [tl.CategoryCrossEntropy,
                                  tl.WeightedCategoryCrossEntropy])
def test_label_smoothing_out_of_range(make):
  # As in Trax, the layer builds and the range is checked when it runs.
  layer = make(label_smoothing=1.5)
  out, targets, weights = h.batch(7)
  inputs = (out, targets, weights)[:layer.n_in]
  h.assert_layer_value_error(
      layer, inputs, r'CrossEntropy: label_smoothing must be between 0 and 1 '
      r'\(or None\), got 1.5')


def test_cross_entropy_shape_errors():
  out, targets, weights = h.batch(7)
  h.assert_layer_value_error(
      tl.CategoryCrossEntropy(), (out, targets[None]),
      r'CategoryCrossEntropy: targets shape \(1, 4, 3\) does not fit '
      r'model_output shape \(4, 3, 5\)')
  h.assert_layer_value_error(
      tl.WeightedCategoryCrossEntropy(), (out, targets, weights[..., None]),
      r'WeightedCategoryCrossEntropy: weights shape \(4, 3, 1\) does not '
      r'broadcast against targets shape \(4, 3\)')
  h.assert_layer_value_error(
      tl.CrossEntropyLoss(), (out, targets, weights[:, 0]),
      r'_WeightedMean: weights shape \(4,\) does not broadcast against '
      r'values shape \(4, 3\)')
  h.assert_layer_value_error(
      tl.CrossEntropyLoss(), (out, targets[:, :1], weights),
      r'_CrossEntropy: targets shape \(4, 1\) does not fit model_output '
      r'shape \(4, 3, 5\)')
  h.assert_layer_value_error(
      tl.BinaryCrossEntropy(), (out[..., 0], targets[:, :1]),
      r'BinaryCrossEntropy: targets shape \(4, 1\) does not match '
      r'model_output shape \(4, 3\)')


def test_cross_entropy_loss_accepts_float_targets_as_trax():
  # Follows trax/layers/metrics.py _CrossEntropy: core.one_hot compares
  # float targets with each category index, so 2.0 picks category 2 and a
  # fractional target picks none (contributing 0).
  log_probs = np.log(np.array([[0.1, 0.2, 0.7], [0.5, 0.25, 0.25],
                               [0.3, 0.3, 0.4]], np.float32))
  targets = np.array([2., 0., 1.5], np.float32)
  weights = np.ones(3, np.float32)
  got = tl.CrossEntropyLoss()((log_probs, targets, weights))
  want = -(np.log(0.7) + np.log(0.5) + 0.0) / 3
  np.testing.assert_allclose(float(got), want, rtol=1e-6)
  with pytest.raises(Exception, match=r'targets must be integer category'):
    tl.CategoryCrossEntropy()((log_probs, targets))  # Others stay strict.
