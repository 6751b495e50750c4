"""Every loss and metric returns the number Trax 1.4.1's composition gives.

The references below transcribe, in NumPy float64, how trax/layers/metrics.py
builds each layer: `_CrossEntropy`, `_BinaryCrossEntropy`, `_Accuracy`,
`_WeightedMean`, `_WeightedSequenceMean`, `WeightedSum`,
`_category_cross_entropy` (label smoothing, cutoff), the per-category F-score
loop and the regression losses, composed as Trax composes them. Inputs have
non-uniform weights with zeros in them. The binary cross-entropy quirk (the
batch is reduced before the weights apply) is pinned on both sides.

Deliberate differences from Trax, pinned here too: all-zero weights give 0.0
where Trax gives NaN, and mismatched target shapes raise a ValueError where
Trax would broadcast.
"""

import numpy as np
import pytest

from tests import _layer_testing as lt
from tfnp_trax import layers as tl
from tfnp_trax.fastmath import numpy as jnp

# -- NumPy float64 transcriptions of Trax's pieces ----------------------------


def _f64(x):
  return np.asarray(x, np.float64)


def np_one_hot(targets, n):
  return (np.asarray(targets)[..., None] == np.arange(n)).astype(np.float64)


def np_log_softmax(x):
  x = _f64(x)
  shifted = x - x.max(-1, keepdims=True)
  return shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))


def trax_weighted_mean(values, weights):
  """`_WeightedMean`: weights broadcast; the denominator sums them as given."""
  return np.sum(_f64(values) * _f64(weights)) / np.sum(_f64(weights))


def trax_weighted_sum(values, weights):
  """`WeightedSum`."""
  return np.sum(_f64(values) * _f64(weights))


def trax_accuracy(predictions, targets):
  """`_Accuracy`."""
  return (np.asarray(predictions) == np.asarray(targets)).astype(np.float64)


def trax_weighted_sequence_mean(values, weights):
  """`_WeightedSequenceMean`: 1 - min(1, weighted errors), mean over batch."""
  not_correct = (1.0 - _f64(values)) * _f64(weights)
  per_item = not_correct.sum(axis=tuple(range(1, not_correct.ndim)))
  return np.mean(1.0 - np.minimum(1.0, per_item))


def trax_cross_entropy(log_probs, targets):
  """`_CrossEntropy`: -sum(model_output * one_hot(target))."""
  log_probs = _f64(log_probs)
  return -np.sum(log_probs * np_one_hot(targets, log_probs.shape[-1]), -1)


def trax_category_cross_entropy(logits, targets, label_smoothing=None,
                                cutoff=0.0):
  """`_category_cross_entropy`."""
  n = logits.shape[-1]
  dist = np_one_hot(targets, n)
  if label_smoothing:
    dist = dist * (1.0 - label_smoothing) + label_smoothing / n
  ce = -np.sum(dist * np_log_softmax(logits), -1)
  return np.maximum(ce, cutoff) - cutoff if cutoff > 0.0 else ce


def trax_binary_cross_entropy(probs, targets):
  """`_BinaryCrossEntropy`: batch totals via transposed dot products."""
  p, t = _f64(probs), _f64(targets)
  j = np.dot(t.T, np.log(p)) + np.dot((1 - t).T, np.log(1 - p))
  return -np.squeeze(j) / p.shape[0]


def trax_f_scores(out, targets, beta, start):
  """The loop of `MacroAveragedFScore` / `WeightedFScore`.

  Counts use Python's `sum`, i.e. they reduce axis 0 only.
  """
  predictions = np.argmax(out, -1)
  scores, weights = [], []
  with np.errstate(invalid='ignore', divide='ignore'):
    for k in range(start, out.shape[-1]):
      n_correct = sum((predictions == k) & (targets == k)).astype(np.float64)
      precision = np.nan_to_num(n_correct / sum(predictions == k), nan=0.0)
      n_targets = sum(targets == k).astype(np.float64)
      recall = np.nan_to_num(n_correct / n_targets, nan=0.0)
      f = (beta**2 + 1) * precision * recall / (beta**2 * precision + recall)
      scores.append(np.ravel(np.nan_to_num(f, nan=0.0)))
      weights.append(np.ravel(n_targets))
  return np.concatenate(scores), np.concatenate(weights)


# -- Inputs -------------------------------------------------------------------

def _category_batch(seed=0, shape=(3, 4), n_categories=5):
  rng = np.random.default_rng(seed)
  logits = rng.normal(size=shape + (n_categories,)).astype(np.float32)
  targets = rng.integers(0, n_categories, size=shape).astype(np.int32)
  weights = rng.uniform(0.2, 3.0, size=shape).astype(np.float32)
  weights.flat[::3] = 0.0  # Non-uniform, with zeros.
  return logits, targets, weights


def _regression_batch(seed=1):
  rng = np.random.default_rng(seed)
  y = rng.normal(scale=2.0, size=(3, 4)).astype(np.float32)
  t = rng.normal(size=(3, 4)).astype(np.float32)
  w = rng.uniform(0.2, 3.0, size=(3, 4)).astype(np.float32)
  w[0, 1] = w[2, 3] = 0.0
  return y, t, w


def _binary_batch(seed=2, shape=(8,)):
  rng = np.random.default_rng(seed)
  probs = rng.uniform(0.05, 0.95, size=shape).astype(np.float32)
  targets = rng.integers(0, 2, size=shape).astype(np.float32)
  weights = rng.uniform(0.0, 2.0, size=shape).astype(np.float32)
  weights.flat[1] = 0.0
  return probs, targets, weights


def _cases():
  """(id, layer factory, inputs, float64 reference) for every metric."""
  logits, targets, weights = _category_batch()
  log_probs = np_log_softmax(logits).astype(np.float32)
  preds = np.argmax(logits, -1)
  y, t, w = _regression_batch()
  probs, bits, bin_w = _binary_batch()
  flat_logits, flat_targets, _ = _category_batch(3, shape=(12,),
                                                 n_categories=4)
  seq_logits, seq_targets, _ = _category_batch(4, shape=(6, 3),
                                               n_categories=3)
  ce = trax_category_cross_entropy
  diff = _f64(y) - _f64(t)
  smooth = np.where(np.abs(diff) < 1, 0.5 * diff**2, np.abs(diff) - 0.5)
  cases = [
      ('CategoryAccuracy', tl.CategoryAccuracy, (logits, targets),
       np.mean(preds == targets)),
      ('WeightedCategoryAccuracy', tl.WeightedCategoryAccuracy,
       (logits, targets, weights),
       trax_weighted_mean(preds == targets, weights)),
      ('Accuracy', tl.Accuracy, (logits, targets, weights),
       trax_weighted_mean(trax_accuracy(preds, targets), weights)),
      ('SequenceAccuracy', tl.SequenceAccuracy, (logits, targets, weights),
       trax_weighted_sequence_mean(trax_accuracy(preds, targets), weights)),
      ('MaskedSequenceAccuracy', tl.MaskedSequenceAccuracy,
       (logits, targets, weights),
       np.mean(np.all((preds == targets) | (weights == 0), axis=-1))),
      ('CategoryCrossEntropy', tl.CategoryCrossEntropy, (logits, targets),
       np.mean(ce(logits, targets))),
      ('CategoryCrossEntropy_smoothed',
       lambda: tl.CategoryCrossEntropy(label_smoothing=0.1),
       (logits, targets), np.mean(ce(logits, targets, 0.1))),
      ('WeightedCategoryCrossEntropy', tl.WeightedCategoryCrossEntropy,
       (logits, targets, weights),
       trax_weighted_mean(ce(logits, targets), weights)),
      ('WeightedCategoryCrossEntropy_smoothed_cutoff',
       lambda: tl.WeightedCategoryCrossEntropy(label_smoothing=0.2,
                                               cutoff=1.0),
       (logits, targets, weights),
       trax_weighted_mean(ce(logits, targets, 0.2, 1.0), weights)),
      ('CrossEntropyLoss', tl.CrossEntropyLoss, (log_probs, targets, weights),
       trax_weighted_mean(trax_cross_entropy(log_probs, targets), weights)),
      ('CrossEntropyLossWithLogSoftmax', tl.CrossEntropyLossWithLogSoftmax,
       (logits, targets, weights),
       trax_weighted_mean(trax_cross_entropy(np_log_softmax(logits),
                                             targets), weights)),
      ('CrossEntropySum', tl.CrossEntropySum, (log_probs, targets, weights),
       trax_weighted_sum(trax_cross_entropy(log_probs, targets), weights)),
      ('BinaryCrossEntropy', tl.BinaryCrossEntropy,
       (np.log(probs / (1 - probs)), bits),
       np.mean(-(bits * np.log(_f64(probs)) +
                 (1 - bits) * np.log(1 - _f64(probs))))),
      ('BinaryCrossEntropyLoss', tl.BinaryCrossEntropyLoss,
       (probs, bits, bin_w),
       trax_weighted_mean(trax_binary_cross_entropy(probs, bits), bin_w)),
      ('BinaryCrossEntropySum', tl.BinaryCrossEntropySum,
       (probs, bits, bin_w),
       trax_weighted_sum(trax_binary_cross_entropy(probs, bits), bin_w)),
      ('L2Loss', tl.L2Loss, (y, t, w),
       np.sum(_f64(w) * diff**2) / np.sum(_f64(w))),
      ('SmoothL1Loss', tl.SmoothL1Loss, (y, t, w),
       np.sum(_f64(w) * smooth) / np.sum(_f64(w))),
      ('WeightedSum', tl.WeightedSum, (y, w), trax_weighted_sum(y, w)),
  ]
  for beta, start in [(1.0, 0), (2.0, 0), (0.5, 1)]:
    for label, out, tgt in [('flat', flat_logits, flat_targets),
                            ('per_position', seq_logits, seq_targets)]:
      scores, support = trax_f_scores(out, tgt, beta, start)
      kwargs = dict(beta=beta, initial_category_index=start)
      cases.append((f'MacroAveragedFScore_{label}_{beta}_{start}',
                    lambda kw=kwargs: tl.MacroAveragedFScore(**kw),
                    (out, tgt), np.mean(scores)))
      cases.append((f'WeightedFScore_{label}_{beta}_{start}',
                    lambda kw=kwargs: tl.WeightedFScore(**kw),
                    (out, tgt), np.average(scores, weights=support)))
  return cases


_CASES = _cases()
_BY_ID = {c[0]: c for c in _CASES}


def _run(layer, inputs, mode):
  inputs = tuple(jnp.asarray(x) for x in inputs)
  fn = lt.compile_fn(lambda *xs: layer(xs), mode)
  return np.asarray(fn(*inputs))


@pytest.mark.parametrize('case_id', sorted(_BY_ID))
def test_matches_trax_composition_eagerly(case_id):
  _, make, inputs, want = _BY_ID[case_id]
  got = _run(make(), inputs, 'eager')
  assert got.shape == () and got.dtype == np.float32
  np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-6)


_COMPILED = ['Accuracy', 'SequenceAccuracy', 'WeightedCategoryCrossEntropy_'
             'smoothed_cutoff', 'CrossEntropyLoss', 'BinaryCrossEntropyLoss',
             'BinaryCrossEntropySum', 'L2Loss',
             'MacroAveragedFScore_per_position_1.0_0',
             'WeightedFScore_per_position_0.5_1']


@pytest.mark.parametrize('mode', ['jit', 'xla'])
@pytest.mark.parametrize('case_id', _COMPILED)
def test_matches_trax_composition_compiled(case_id, mode):
  _, make, inputs, want = _BY_ID[case_id]
  got = _run(make(), inputs, mode)
  assert got.dtype == np.float32
  np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-6)


# -- The binary cross-entropy quirk -------------------------------------------

def test_binary_cross_entropy_loss_quirk_on_a_random_batch():
  probs, bits, weights = _binary_batch(seed=343, shape=(16,))
  got = float(tl.BinaryCrossEntropyLoss()((probs, bits, weights)))
  per_item = -(bits * np.log(_f64(probs)) + (1 - bits) * np.log(1 - probs))
  trax = trax_weighted_mean(trax_binary_cross_entropy(probs, bits), weights)
  item_weighted = np.sum(per_item * weights) / np.sum(_f64(weights))
  # Trax's number: the unweighted batch mean (weights cancel out) ...
  np.testing.assert_allclose(got, trax, rtol=2e-6)
  np.testing.assert_allclose(got, per_item.mean(), rtol=2e-6)
  # ... which is not the per-item weighted mean (here 1.5% apart).
  assert abs(got / item_weighted - 1) == pytest.approx(0.0153, abs=2e-4)


def test_binary_cross_entropy_loss_by_hand():
  probs = np.array([0.5, 0.8], np.float32)
  targets = np.array([1.0, 0.0], np.float32)
  weights = np.array([1.0, 3.0], np.float32)
  # Per item: -log 0.5 = log 2 and -log(1 - 0.8) = log 5. Trax's batch mean
  # is log(10) / 2; the weights multiply it and divide it away again.
  got = float(tl.BinaryCrossEntropyLoss()((probs, targets, weights)))
  np.testing.assert_allclose(got, np.log(10.0) / 2, rtol=1e-6)
  # A per-item weighted mean would be (log 2 + 3 log 5) / 4 ~ 1.380.
  assert got == pytest.approx(1.1513, abs=1e-4)
  assert got != pytest.approx((np.log(2) + 3 * np.log(5)) / 4, rel=1e-2)
  # BinaryCrossEntropySum: the batch mean times the sum of the weights.
  np.testing.assert_allclose(
      float(tl.BinaryCrossEntropySum()((probs, targets, weights))),
      4 * np.log(10.0) / 2, rtol=1e-6)


def test_binary_cross_entropy_loss_on_columns_and_square_batches():
  # (batch, 1): still one scalar batch mean.
  probs, bits, weights = _binary_batch(seed=5, shape=(6, 1))
  got = float(tl.BinaryCrossEntropyLoss()((probs, bits, weights)))
  np.testing.assert_allclose(got, trax_weighted_mean(
      trax_binary_cross_entropy(probs, bits), weights), rtol=2e-6)
  # (n, n): Trax's (n, n) matrix of cross terms meets the weights.
  probs, bits, weights = _binary_batch(seed=6, shape=(3, 3))
  got = float(tl.BinaryCrossEntropyLoss()((probs, bits, weights)))
  np.testing.assert_allclose(got, trax_weighted_mean(
      trax_binary_cross_entropy(probs, bits), weights), rtol=2e-6)
  # (batch, n) with batch != n does not broadcast in Trax either.
  probs, bits, weights = _binary_batch(seed=7, shape=(4, 3))
  with pytest.raises(tl.LayerError, match='does not broadcast'):
    tl.BinaryCrossEntropyLoss()((probs, bits, weights))


# -- Weights broadcast as in Trax ---------------------------------------------

def test_row_weights_broadcast_with_trax_denominator():
  logits, targets, weights = _category_batch(8)
  rows = weights[:, :1] + 0.5                     # shape (3, 1)
  preds = np.argmax(logits, -1)
  log_probs = np_log_softmax(logits).astype(np.float32)
  for layer, values in [
      (tl.WeightedCategoryAccuracy(), preds == targets),
      (tl.Accuracy(), trax_accuracy(preds, targets)),
      (tl.WeightedCategoryCrossEntropy(),
       trax_category_cross_entropy(logits, targets)),
      (tl.CrossEntropyLossWithLogSoftmax(),
       trax_cross_entropy(log_probs, targets))]:
    got = float(layer((logits, targets, rows)))
    # Numerator over the broadcast (3, 4) product, denominator over the 3
    # row weights: 4 times a weighted mean, exactly Trax's number.
    np.testing.assert_allclose(got, trax_weighted_mean(values, rows),
                               rtol=2e-6)
  # A scalar weight: sum(values * w) / w, the plain sum.
  got = float(tl.CrossEntropyLoss()((log_probs, targets, np.float32(2.0))))
  np.testing.assert_allclose(
      got, trax_cross_entropy(log_probs, targets).sum(), rtol=2e-6)


def test_masked_and_sequence_accuracy_with_broadcast_weights():
  logits, targets, weights = _category_batch(9, shape=(4, 3),
                                             n_categories=2)
  preds = np.argmax(logits, -1)
  mask = np.array([[1.0], [0.0], [1.0], [0.5]], np.float32)   # per row
  got = float(tl.MaskedSequenceAccuracy()((logits, targets, mask)))
  np.testing.assert_allclose(
      got, np.mean(np.all((preds == targets) | (mask == 0), -1)), rtol=1e-6)
  got = float(tl.SequenceAccuracy()((logits, targets, mask)))
  np.testing.assert_allclose(
      got, trax_weighted_sequence_mean(trax_accuracy(preds, targets), mask),
      rtol=1e-6)


# -- Hand-computed tiny cases --------------------------------------------------

def test_tiny_cases_by_hand():
  out = np.eye(3, dtype=np.float32)                  # predicts 0, 1, 2
  targets = np.array([0, 2, 2], np.int32)            # right, wrong, right
  weights = np.array([1.0, 5.0, 2.0], np.float32)
  assert float(tl.WeightedCategoryAccuracy()((out, targets, weights))) == (
      pytest.approx(3.0 / 8.0))
  assert float(tl.Accuracy()((out, targets, weights))) == (
      pytest.approx(3.0 / 8.0))
  assert float(tl.CategoryAccuracy()((out, targets))) == pytest.approx(2 / 3)
  # SequenceAccuracy's partial credit: row 0 has one error of weight 0.25,
  # row 1 two errors of weight 0.75 each (capped at 1).
  seq_out = np.eye(2, dtype=np.float32)[np.array([[0, 1], [1, 0]])]
  seq_targets = np.array([[1, 1], [0, 1]], np.int32)
  seq_w = np.array([[0.25, 1.0], [0.75, 0.75]], np.float32)
  assert float(tl.SequenceAccuracy()((seq_out, seq_targets, seq_w))) == (
      pytest.approx((0.75 + 0.0) / 2))
  assert float(tl.MaskedSequenceAccuracy()(
      (seq_out, seq_targets, seq_w))) == 0.0
  # Uniform logits over 4 classes: every cross-entropy is log 4, with or
  # without smoothing; the cutoff 1.0 removes 1.0 from it.
  logits = np.zeros((2, 4), np.float32)
  for layer in (tl.CategoryCrossEntropy(), tl.CategoryCrossEntropy(0.3)):
    assert float(layer((logits, np.array([1, 3])))) == (
        pytest.approx(np.log(4.0)))
  assert float(tl.WeightedCategoryCrossEntropy(cutoff=1.0)(
      (logits, np.array([1, 3]), np.array([1.0, 0.0], np.float32)))) == (
          pytest.approx(np.log(4.0) - 1.0))


def test_f_scores_count_each_position_apart_by_hand():
  # Two items of two positions, two categories. Position 0: predictions
  # [0, 1], targets [0, 0]; position 1: predictions [1, 1], targets [1, 0].
  out = np.eye(2, dtype=np.float32)[np.array([[0, 1], [1, 1]])]
  targets = np.array([[0, 1], [0, 0]], np.int32)
  # Position 0: F(cat 0) = 2 * 1 * 0.5 / 1.5 = 2/3, F(cat 1) = 0.
  # Position 1: F(cat 0) = 0 (never predicted), F(cat 1) = 2 * 0.5 * 1 / 1.5.
  want = (2 / 3 + 0 + 0 + 2 / 3) / 4
  assert float(tl.MacroAveragedFScore()((out, targets))) == (
      pytest.approx(want))
  # Weighted by the target counts per (position, category): 2, 0, 1, 1.
  assert float(tl.WeightedFScore()((out, targets))) == (
      pytest.approx((2 * 2 / 3 + 1 * 0 + 1 * 2 / 3) / 4))
  # Flattening the positions (not Trax) would give 0.5 here instead.
  assert float(tl.MacroAveragedFScore()((out, targets))) != (
      pytest.approx(0.5))


# -- Zero weights -------------------------------------------------------------

def test_zero_weight_items_do_not_count():
  logits, targets, weights = _category_batch(10)
  changed = logits.copy()
  changed[weights == 0] = -changed[weights == 0]  # Only zero-weight items.
  for layer in (tl.WeightedCategoryAccuracy(), tl.Accuracy(),
                tl.WeightedCategoryCrossEntropy(), tl.MaskedSequenceAccuracy(),
                tl.SequenceAccuracy(), tl.CrossEntropyLossWithLogSoftmax()):
    np.testing.assert_allclose(float(layer((changed, targets, weights))),
                               float(layer((logits, targets, weights))),
                               rtol=1e-6)


@pytest.mark.parametrize('mode', lt.MODES)
def test_all_zero_weights_give_zero_not_nan(mode):
  # A deliberate difference: Trax divides 0 by 0 here and returns NaN.
  logits, targets, weights = _category_batch(11)
  zeros = np.zeros_like(weights)
  log_probs = np_log_softmax(logits).astype(np.float32)
  probs, bits, bin_w = _binary_batch()
  for layer, inputs in [
      (tl.WeightedCategoryAccuracy(), (logits, targets, zeros)),
      (tl.Accuracy(), (logits, targets, zeros)),
      (tl.WeightedCategoryCrossEntropy(), (logits, targets, zeros)),
      (tl.CrossEntropyLoss(), (log_probs, targets, zeros)),
      (tl.BinaryCrossEntropyLoss(), (probs, bits, np.zeros_like(bin_w))),
      (tl.L2Loss(), (log_probs[..., 0], log_probs[..., 1], zeros))]:
    assert _run(layer, inputs, mode) == 0.0


# -- Names, reprs and dtypes --------------------------------------------------

_REPRS = {
    'Accuracy': 'Accuracy_in3',
    'SequenceAccuracy': 'SequenceAccuracy_in3',
    'CrossEntropyLoss': 'CrossEntropyLoss_in3',
    'CrossEntropyLossWithLogSoftmax': 'CrossEntropyLossWithLogSoftmax_in3',
    'CrossEntropySum': 'CrossEntropySum_in3',
    'BinaryCrossEntropyLoss': 'BinaryCrossEntropyLoss_in3',
    'BinaryCrossEntropySum': 'BinaryCrossEntropySum_in3',
    'BinaryCrossEntropy': 'BinaryCrossEntropy_in2',
    'CategoryCrossEntropy': 'CategoryCrossEntropy_in2',
    'WeightedCategoryCrossEntropy': 'WeightedCategoryCrossEntropy_in3',
    'CategoryAccuracy': 'CategoryAccuracy_in2',
    'WeightedCategoryAccuracy': 'WeightedCategoryAccuracy_in3',
    'MaskedSequenceAccuracy': 'MaskedSequenceAccuracy_in3',
    'L2Loss': 'L2Loss_in3',
    'SmoothL1Loss': 'SmoothL1Loss_in3',
    'MacroAveragedFScore': 'MacroAveragedFScore_in2',
    'WeightedFScore': 'WeightedFScore_in2',
    'WeightedSum': 'WeightedSum_in2',
}


@pytest.mark.parametrize('name', sorted(_REPRS))
def test_repr(name):
  layer = getattr(tl, name)()
  assert str(layer) == _REPRS[name]
  assert repr(layer) == _REPRS[name]


# Trax's sublayer names, in order, for the metrics it builds as Serial.
_SUBLAYERS = {
    'Accuracy': ['ArgMax', '_Accuracy', '_WeightedMean'],
    'SequenceAccuracy': ['ArgMax', '_Accuracy', '_WeightedSequenceMean'],
    'CrossEntropyLoss': ['_CrossEntropy', '_WeightedMean'],
    'CrossEntropyLossWithLogSoftmax': ['LogSoftmax', '_CrossEntropy',
                                       '_WeightedMean'],
    'CrossEntropySum': ['_CrossEntropy', 'WeightedSum'],
    'BinaryCrossEntropyLoss': ['_BinaryCrossEntropy', '_WeightedMean'],
    'BinaryCrossEntropySum': ['_BinaryCrossEntropy', 'WeightedSum'],
}


@pytest.mark.parametrize('name', sorted(_SUBLAYERS))
def test_serial_metrics_are_built_from_trax_named_sublayers(name):
  layer = getattr(tl, name)()
  assert layer.name == name
  assert [s.name for s in layer.sublayers] == _SUBLAYERS[name]
  assert (layer.n_in, layer.n_out) == (3, 1)


def test_output_dtypes_follow_trax():
  logits, targets, weights = _category_batch(12)
  # Integer targets of any width, float32 or bfloat16 model output: the
  # scalar is float32, as Trax's is.
  for tgt in (targets, targets.astype(np.int64)):
    for out in (logits, jnp.asarray(logits).astype(jnp.bfloat16)):
      for layer in (tl.CategoryAccuracy(), tl.CategoryCrossEntropy(),
                    tl.MacroAveragedFScore(), tl.WeightedFScore()):
        assert np.asarray(layer((out, tgt))).dtype == np.float32
      for layer in (tl.WeightedCategoryAccuracy(), tl.Accuracy(),
                    tl.SequenceAccuracy(), tl.MaskedSequenceAccuracy(),
                    tl.WeightedCategoryCrossEntropy(),
                    tl.CrossEntropyLossWithLogSoftmax()):
        assert np.asarray(layer((out, tgt, weights))).dtype == np.float32
  # The pieces: _Accuracy gives float32 1.0/0.0, ArgMax int32.
  accuracy = tl.Accuracy()
  argmax, per_item = accuracy.sublayers[0], accuracy.sublayers[1]
  predictions = argmax(logits)
  assert np.asarray(predictions).dtype == np.int32
  assert np.asarray(per_item((predictions, targets))).dtype == np.float32
  probs, bits, bin_w = _binary_batch()
  for layer in (tl.BinaryCrossEntropyLoss(), tl.BinaryCrossEntropySum()):
    assert np.asarray(layer((probs, bits.astype(np.int32), bin_w))).dtype == (
        np.float32)


def test_label_smoothing_is_checked_when_the_layer_runs():
  layer = tl.WeightedCategoryCrossEntropy(label_smoothing=1.5)  # Builds.
  logits, targets, weights = _category_batch(13)
  with pytest.raises(tl.LayerError, match='label_smoothing must be between'):
    layer((logits, targets, weights))
  # 0 or None: no smoothing, no check (Trax tests the value's truth).
  np.testing.assert_allclose(
      float(tl.CategoryCrossEntropy(0.0)((logits, targets))),
      float(tl.CategoryCrossEntropy()((logits, targets))))
