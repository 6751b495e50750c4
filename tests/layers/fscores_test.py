"""Tests for MacroAveragedFScore and WeightedFScore."""

import numpy as np
import pytest
from sklearn import metrics as skm
import tensorflow as tf

from tfnp_trax import layers as tl
from tests.layers import _metric_harness as h


def ref_f_scores(predictions, targets, n_categories, beta):
  """Trax's per-category loop in float64: counts are Python sums over axis 0.

  Returns F-scores and target counts of shape (n_categories,) + the shape
  of one batch item, so multi-position targets score every position apart.
  """
  def non_nan(x):
    return np.where(np.isnan(x), 0.0, x)
  scores, supports = [], []
  with np.errstate(invalid='ignore', divide='ignore'):
    for k in range(n_categories):
      n_correct = sum((predictions == k) & (targets == k)).astype(np.float64)
      precision = non_nan(n_correct / sum(predictions == k))
      n_targets = sum(targets == k).astype(np.float64)
      recall = non_nan(n_correct / n_targets)
      scores.append(non_nan((beta**2 + 1) * precision * recall /
                            (beta**2 * precision + recall)))
      supports.append(n_targets)
  return np.array(scores, np.float64), np.array(supports, np.float64)


def ref_macro(out, targets, beta=1.0, start=0):
  scores, _ = ref_f_scores(np.argmax(out, -1), targets, out.shape[-1], beta)
  return np.mean(scores[start:])


def ref_weighted(out, targets, beta=1.0, start=0):
  scores, support = ref_f_scores(np.argmax(out, -1), targets, out.shape[-1],
                                 beta)
  scores, support = scores[start:], support[start:]
  return np.sum(scores * support) / support.sum() if support.sum() else 0.0


@pytest.mark.parametrize('mode', h.MODES)
@pytest.mark.parametrize('shape', [(12,), (6, 3)])
@pytest.mark.parametrize('beta,start', [(1.0, 0), (2.0, 0), (0.5, 1)])
def test_match_reference(mode, shape, beta, start):
  # (6, 3) targets: Trax scores each of the 3 positions separately.
  out, targets, _ = h.batch(0, shape=shape, n_categories=4)
  macro = tl.MacroAveragedFScore(beta=beta, initial_category_index=start)
  weighted = tl.WeightedFScore(beta=beta, initial_category_index=start)
  h.assert_close(h.run_layer(macro, (out, targets), mode),
                 ref_macro(out, targets, beta, start))
  h.assert_close(h.run_layer(weighted, (out, targets), mode),
                 ref_weighted(out, targets, beta, start))


def test_agree_with_scikit_learn():
  out, targets, _ = h.batch(1, shape=(40,), n_categories=5)
  predictions = np.argmax(out, -1)
  for average, layer in [('macro', tl.MacroAveragedFScore()),
                         ('weighted', tl.WeightedFScore())]:
    want = skm.fbeta_score(targets, predictions, beta=1.0, average=average,
                           labels=range(5), zero_division=0)
    h.assert_close(layer((out, targets)), want)


def test_category_never_predicted_or_never_a_target():
  out = np.eye(4, dtype=np.float32)[np.array([0, 0, 1, 1, 3])]
  targets = np.array([0, 1, 1, 1, 0], np.int32)
  # Category 0: p=1/2, r=1/2, F=1/2. Category 1: p=1, r=2/3, F=4/5.
  # Category 2: never predicted nor a target, F=0. Category 3: predicted
  # once, never a target: p=0, r=0, F=0.
  h.assert_close(tl.MacroAveragedFScore()((out, targets)),
                 (0.5 + 0.8) / 4)
  h.assert_close(tl.WeightedFScore()((out, targets)),
                 (2 * 0.5 + 3 * 0.8) / 5)
  # Skipping category 0 leaves 1, 2, 3.
  h.assert_close(tl.MacroAveragedFScore(initial_category_index=1)(
      (out, targets)), 0.8 / 3)


def test_weighted_f_score_without_scored_targets_is_zero():
  out = np.eye(3, dtype=np.float32)[np.array([1, 2, 0])]
  targets = np.zeros(3, np.int32)  # Only category 0, which is skipped.
  h.assert_close(tl.WeightedFScore(initial_category_index=1)((out, targets)),
                 0.0)


@pytest.mark.parametrize('make,ref', [(tl.MacroAveragedFScore, ref_macro),
                                      (tl.WeightedFScore, ref_weighted)])
def test_xla_graph_and_traces_do_not_grow_with_categories(make, ref):
  traces = []

  def graph_size(n_categories):
    layer = make()

    def f(out, targets):
      traces.append(n_categories)
      return layer((out, targets))
    compiled = tf.function(f, jit_compile=True)
    out, targets, _ = h.batch(2, shape=(8,), n_categories=n_categories)
    for _ in range(3):  # Repeated calls reuse the one trace.
      h.assert_close(compiled(out, targets), ref(out, targets))
    concrete = compiled.get_concrete_function(out, targets)
    return len(concrete.graph.get_operations())

  # A per-category Python loop would add ops (and work) per category.
  assert graph_size(3) == graph_size(40)
  assert traces == [3, 40]


def test_bad_arguments():
  with pytest.raises(ValueError, match=r'MacroAveragedFScore: '
                     r'initial_category_index must be an int >= 0, got -1'):
    tl.MacroAveragedFScore(initial_category_index=-1)
  out, targets, _ = h.batch(3, shape=(4,), n_categories=3)
  h.assert_layer_value_error(
      tl.WeightedFScore(initial_category_index=3), (out, targets),
      r'WeightedFScore: initial_category_index 3 leaves no category to score; '
      r'model_output has 3 categories')
  h.assert_layer_value_error(
      tl.MacroAveragedFScore(), (out, targets[:2]),
      r'MacroAveragedFScore: targets shape \(2,\) does not fit model_output '
      r'shape \(4, 3\)')
