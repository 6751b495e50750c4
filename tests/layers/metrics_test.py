"""Tests for accuracy metrics, classifiers and WeightedSum."""

import numpy as np
import pytest

from tfnp_trax import layers as tl
from tests.layers import _metric_harness as h


# -- NumPy float64 references -------------------------------------------------
def ref_category_accuracy(out, targets):
  return np.mean(np.argmax(out, -1) == targets)


def ref_weighted_accuracy(predictions, targets, weights):
  w = weights.astype(np.float64)
  return float(np.sum((predictions == targets) * w) / np.sum(w)) if np.sum(
      w) else 0.0


def ref_sequence_accuracy(predictions, targets, weights, n_seq_axes):
  """A sequence is right iff every position with nonzero weight is right."""
  ok = (predictions == targets) | (weights == 0)
  flat = ok.reshape(ok.shape[:ok.ndim - n_seq_axes] + (-1,))
  return float(np.mean(np.all(flat, axis=-1)))


def ref_weighted_sequence_mean(predictions, targets, weights):
  """Trax's `_WeightedSequenceMean` after `_Accuracy`, in float64."""
  not_correct = (1.0 - (predictions == targets)) * weights.astype(np.float64)
  per_item = not_correct.sum(axis=tuple(range(1, not_correct.ndim)))
  return float(np.mean(1.0 - np.minimum(1.0, per_item)))


# -- Values vs references -----------------------------------------------------
@pytest.mark.parametrize('mode', h.MODES)
def test_category_accuracy(mode):
  out, targets, _ = h.batch(0)
  h.assert_close(h.run_layer(tl.CategoryAccuracy(), (out, targets), mode),
                 ref_category_accuracy(out, targets))


@pytest.mark.parametrize('mode', h.MODES)
def test_weighted_category_accuracy(mode):
  out, targets, weights = h.batch(1)
  got = h.run_layer(tl.WeightedCategoryAccuracy(), (out, targets, weights),
                    mode)
  h.assert_close(got, ref_weighted_accuracy(np.argmax(out, -1), targets,
                                            weights))


@pytest.mark.parametrize('mode', h.MODES)
def test_masked_sequence_accuracy(mode):
  out, targets, weights = h.batch(2, shape=(3, 2, 4), n_categories=3)
  mask = (weights > 0).astype(np.float32)
  got = h.run_layer(tl.MaskedSequenceAccuracy(), (out, targets, mask), mode)
  h.assert_close(got, ref_sequence_accuracy(np.argmax(out, -1), targets, mask,
                                            n_seq_axes=1))


@pytest.mark.parametrize('mode', h.MODES)
def test_sequence_accuracy(mode):
  out, targets, weights = h.batch(3, shape=(6, 2, 3), n_categories=2)
  got = h.run_layer(tl.SequenceAccuracy(), (out, targets, weights), mode)
  # SequenceAccuracy judges everything after the batch axis as one sequence,
  # with Trax's partial credit for fractional weights.
  h.assert_close(got, ref_weighted_sequence_mean(np.argmax(out, -1), targets,
                                                 weights))


@pytest.mark.parametrize('mode', h.MODES)
def test_accuracy_with_default_arg_max_classifier(mode):
  out, targets, weights = h.batch(4)
  got = h.run_layer(tl.Accuracy(), (out, targets, weights), mode)
  h.assert_close(got, ref_weighted_accuracy(np.argmax(out, -1), targets,
                                            weights))


@pytest.mark.parametrize('mode', h.MODES)
def test_accuracy_with_binary_classifier(mode):
  probs = np.array([0.1, 0.6, 0.5, 0.9, 0.3], np.float32)
  targets = np.array([0, 1, 1, 0, 0], np.int32)
  weights = np.array([1.0, 2.0, 1.0, 0.5, 0.0], np.float32)
  layer = tl.Accuracy(classifier=tl.BinaryClassifier(threshold=0.5))
  # Predictions 0,1,0,1,0 (0.5 is not above the threshold): right at 0 and 1.
  h.assert_close(h.run_layer(layer, (probs, targets, weights), mode),
                 3.0 / 4.5)


def test_classifiers():
  x = np.array([[0.2, 0.9, 0.1], [0.7, 0.3, 0.5]], np.float32)
  np.testing.assert_array_equal(tl.BinaryClassifier()(x),
                                [[0, 1, 0], [1, 0, 0]])
  np.testing.assert_array_equal(tl.BinaryClassifier(threshold=0.25)(x),
                                [[0, 1, 0], [1, 1, 1]])
  np.testing.assert_array_equal(tl.MulticlassClassifier()(x), [1, 0])
  np.testing.assert_array_equal(tl.MulticlassClassifier(axis=0)(x), [1, 0, 1])
  assert np.asarray(tl.MulticlassClassifier()(x)).dtype == np.int32


@pytest.mark.parametrize('mode', h.MODES)
def test_weighted_sum(mode):
  rng = np.random.default_rng(5)
  values = rng.normal(size=(3, 4)).astype(np.float32)
  weights = rng.uniform(size=(3, 4)).astype(np.float32)
  h.assert_close(h.run_layer(tl.WeightedSum(), (values, weights), mode),
                 np.sum(values.astype(np.float64) * weights))


# -- Hand-checked edge cases --------------------------------------------------
@pytest.mark.parametrize('mode', h.MODES)
def test_all_zero_weights_give_documented_values(mode):
  out, targets, weights = h.batch(6)
  zeros = np.zeros_like(weights)
  for layer, want in [(tl.WeightedCategoryAccuracy(), 0.0),
                      (tl.Accuracy(), 0.0),
                      (tl.WeightedSum(), 0.0),
                      # Fully masked sequences count as correct.
                      (tl.MaskedSequenceAccuracy(), 1.0),
                      (tl.SequenceAccuracy(), 1.0)]:
    inputs = (out, targets, zeros) if layer.n_in == 3 else (out[..., 0],
                                                            zeros)
    h.assert_close(h.run_layer(layer, inputs, mode), want)


def test_fractional_weights_weight_accuracy():
  out = np.eye(3, dtype=np.float32)          # predicts 0, 1, 2
  targets = np.array([0, 2, 2], np.int32)    # right, wrong, right
  weights = np.array([0.25, 3.0, 0.75], np.float32)
  got = tl.WeightedCategoryAccuracy()((out, targets, weights))
  h.assert_close(got, 1.0 / 4.0)


def test_sequence_accuracy_ignores_wrong_positions_with_zero_weight():
  out = np.eye(2, dtype=np.float32)[np.array([[0, 1, 1], [1, 1, 0]])]
  targets = np.array([[0, 1, 0], [1, 1, 0]], np.int32)
  weights = np.array([[1, 1, 0], [1, 0.5, 1]], np.float32)
  # Row 0 is wrong only where its weight is 0; row 1 is right everywhere.
  h.assert_close(tl.SequenceAccuracy()((out, targets, weights)), 1.0)
  h.assert_close(tl.MaskedSequenceAccuracy()((out, targets, weights)), 1.0)
  weights[0, 2] = 0.1
  # MaskedSequenceAccuracy: any nonzero weight makes the position count.
  h.assert_close(tl.MaskedSequenceAccuracy()((out, targets, weights)), 0.5)
  # SequenceAccuracy (Trax's _WeightedSequenceMean): row 0 loses only its
  # weighted error 0.1, so (0.9 + 1.0) / 2.
  h.assert_close(tl.SequenceAccuracy()((out, targets, weights)), 0.95)
  weights[0, 2] = 3.0  # Errors are capped at 1 per row.
  h.assert_close(tl.SequenceAccuracy()((out, targets, weights)), 0.5)


# -- Bad input ----------------------------------------------------------------
def test_targets_shape_must_fit_model_output():
  out, targets, weights = h.batch(7)
  h.assert_layer_value_error(
      tl.CategoryAccuracy(), (out, targets[:, :2]),
      r'CategoryAccuracy: targets shape \(4, 2\) does not fit model_output '
      r'shape \(4, 3, 5\): expected targets of shape \(4, 3\)')
  h.assert_layer_value_error(
      tl.WeightedCategoryAccuracy(), (out, np.eye(5)[targets], weights),
      r'WeightedCategoryAccuracy: targets shape \(4, 3, 5\).*If the targets '
      r'are one-hot, pass jnp.argmax\(targets, axis=-1\)')


def test_weights_must_broadcast_against_targets():
  out, targets, weights = h.batch(8)
  h.assert_layer_value_error(
      tl.WeightedCategoryAccuracy(), (out, targets, weights[:, 0]),
      r'WeightedCategoryAccuracy: weights shape \(4,\) does not broadcast '
      r'against targets shape \(4, 3\).*'
      r'jnp.broadcast_to\(weights\[:, None\], \(4, 3\)\)')
  h.assert_layer_value_error(
      tl.MaskedSequenceAccuracy(), (out, targets, weights.T),
      r'MaskedSequenceAccuracy: weights shape \(3, 4\) does not broadcast '
      r'against targets shape \(4, 3\)')
  h.assert_layer_value_error(
      tl.WeightedSum(), (weights, weights[:2]),
      r'WeightedSum: weights shape \(2, 3\) does not broadcast against '
      r'values shape \(4, 3\)')


def test_weights_broadcast_as_in_trax():
  out, targets, weights = h.batch(8)
  values = weights + 1.0
  # A leading size-1 axis changes nothing.
  h.assert_close(tl.WeightedSum()((values, weights[None])),
                 np.sum(values.astype(np.float64) * weights))
  # Row weights of shape (4, 1): the numerator broadcasts over the 3
  # positions but the denominator sums only the 4 row weights.
  rows = weights[:, :1] + 0.5
  correct = (np.argmax(out, -1) == targets)
  want = np.sum(correct * rows.astype(np.float64)) / np.sum(rows)
  h.assert_close(tl.WeightedCategoryAccuracy()((out, targets, rows)), want)
  h.assert_close(tl.Accuracy()((out, targets, rows)), want)


def test_classifier_metrics_check_predictions_against_targets():
  out, targets, weights = h.batch(9)
  h.assert_layer_value_error(
      tl.Accuracy(), (out, targets[:, :1], weights[:, :1]),
      r'_Accuracy: targets shape \(4, 1\) does not match predictions shape '
      r'\(4, 3\)')
  h.assert_layer_value_error(
      tl.SequenceAccuracy(), (out, targets, weights[:2]),
      r'_WeightedSequenceMean: weights shape \(2, 3\) does not broadcast '
      r'against values shape \(4, 3\)')
