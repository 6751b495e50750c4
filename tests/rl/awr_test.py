"""AWR weights and losses against NumPy float64 references."""

import numpy as np
import pytest
import tensorflow as tf

from tests import _layer_testing as lt
from tfnp_trax import fastmath
from tfnp_trax.rl import awr


def make_inputs(seed=0):
  rng = np.random.default_rng(seed)
  log_probs = rng.normal(size=(4, 3)) - 1.0
  advantages = rng.normal(size=(4, 3)) * 2.0  # Some exp(a) exceed w_max.
  old_log_probs = rng.normal(size=(4, 3)) - 1.0
  mask = np.ones((4, 3))
  mask[0, 2] = mask[3, 1] = 0.0
  return log_probs, advantages, old_log_probs, mask


def np_awr(lp, adv, mask, beta, w_max):
  w = np.minimum(np.exp(adv / beta), w_max)
  return -np.sum(lp * w * mask) / np.sum(mask)


@pytest.mark.parametrize('mode', lt.MODES)
def test_awr_loss_matches_numpy(mode):
  lp, adv, olp, mask = make_inputs()
  assert (np.exp(adv / 0.5) > 5.0).any() and (np.exp(adv / 0.5) < 5.0).any()
  layer = awr.AWRLoss(beta=0.5, w_max=5.0)
  got = lt.run_layer(layer, tuple(tf.constant(x, tf.float32)
                                  for x in (lp, adv, olp, mask)), mode)[0]
  np.testing.assert_allclose(float(got), np_awr(lp, adv, mask, 0.5, 5.0),
                             rtol=1e-5)


def test_awr_loss_gradient_is_minus_weights():
  lp, adv, olp, mask = make_inputs(1)
  got = fastmath.grad(lambda x: awr.awr_loss(x, adv, olp, mask, 1.0, 3.0))(
      tf.constant(lp, tf.float64))
  expected = -np.minimum(np.exp(adv), 3.0) * mask / mask.sum()
  np.testing.assert_allclose(np.asarray(got), expected, rtol=1e-10)


@pytest.mark.parametrize('reweight', [False, True])
@pytest.mark.parametrize('sampled_all_discrete', [False, True])
def test_sampling_awr_loss_matches_numpy(reweight, sampled_all_discrete):
  lp, adv, olp, mask = make_inputs(2)
  m = mask.copy()
  if reweight:
    m = m * np.exp(lp - olp)
  if sampled_all_discrete:
    m = m * np.exp(olp)
  layer = awr.SamplingAWRLoss(beta=1.0, w_max=4.0, reweight=reweight,
                              sampled_all_discrete=sampled_all_discrete)
  got = layer((lp, adv, olp, mask))
  np.testing.assert_allclose(float(got), np_awr(lp, adv, m, 1.0, 4.0),
                             rtol=1e-6)


@pytest.mark.parametrize('q', [0, 10, 37.5, 50, 90, 100])
def test_percentile_matches_numpy(q):
  x = np.random.default_rng(3).normal(size=(5, 7))
  np.testing.assert_allclose(float(awr.percentile(x, q)),
                             np.percentile(x, q), rtol=1e-10)


def test_threshold_weights_and_loss():
  lp, adv, olp, mask = make_inputs(4)
  thresholds = [(50, 1.0, None), (90, 2.0, 0.5)]
  expected_w = (1.0 * (adv >= np.percentile(adv, 50)) +
                2.0 * (adv >= max(np.percentile(adv, 90), 0.5)))
  np.testing.assert_allclose(
      np.asarray(awr.awr_weights(adv, 1.0, thresholds)), expected_w)
  got = awr.AWRLoss(w_max=1.5, thresholds=thresholds)((lp, adv, olp, mask))
  expected = -np.sum(lp * np.minimum(expected_w, 1.5) * mask) / mask.sum()
  # Layers take float64 inputs as float32 (as JAX does without x64).
  np.testing.assert_allclose(float(got), expected, rtol=1e-6)


@pytest.mark.parametrize('normalization', [False, True])
def test_calculate_weights(normalization):
  adv = np.array([[1.0, -2.0], [0.5, 3.0]])
  norm = (adv - adv.mean()) / (adv.std() + 1e-5) if normalization else adv
  got = awr.calculate_weights(adv, np.exp, normalization, 1e-5)
  np.testing.assert_allclose(np.asarray(got), np.exp(norm), rtol=1e-10)
  with pytest.raises(ValueError, match=r'calculate_weights: weight_fn '
                     r'changed the shape from \(2, 2\) to \(\)'):
    awr.calculate_weights(adv, np.sum, normalization)


def test_awr_metrics():
  _, adv, _, _ = make_inputs(5)
  metrics = awr.awr_metrics(beta=2.0)
  stack = (np.zeros((4, 3)), adv)
  w = np.exp(adv / 2.0)
  for name, fn in [('mean', np.mean), ('std', np.std), ('min', np.min),
                   ('max', np.max)]:
    np.testing.assert_allclose(float(metrics[f'awr_weight_{name}'](stack)),
                               fn(w), rtol=1e-6)


def test_mismatched_shapes_are_explained():
  lp, adv, olp, mask = make_inputs()
  with pytest.raises(ValueError, match=r'AWRLoss: log_probs.shape \(4, 3\) '
                     r'does not match mask.shape \(4, 2\)'):
    awr.awr_loss(lp, adv, olp, mask[:, :2])
