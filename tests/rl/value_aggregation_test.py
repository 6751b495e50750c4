"""Q-value aggregation and advantage preprocessing vs NumPy."""

import numpy as np
import pytest

from tfnp_trax.rl import value_aggregation as va

Q = np.random.default_rng(0).normal(size=(3, 4)) * 3.0
LOG_PROBS = np.log(np.random.default_rng(1).dirichlet(np.ones(4), size=3))


def np_aggregate(q, aggregate, temperature, sample_all=False):
  if aggregate == 'max':
    return q.max(1)
  if aggregate == 'softmax':
    w = np.exp(q / temperature)
    w /= w.sum(1, keepdims=True)
    return (q * w).sum(1)
  if aggregate == 'logsumexp':
    return np.log(np.mean(np.exp(q / temperature), 1)) * temperature
  if sample_all:
    return (q * np.exp(LOG_PROBS)).sum(1)
  return q.mean(1)


@pytest.mark.parametrize('aggregate', va.AGGREGATES)
@pytest.mark.parametrize('normalization', [None, 'std', 'abs'])
@pytest.mark.parametrize('temperature', [0.5, 2.0])
def test_aggregate_matches_numpy(aggregate, normalization, temperature):
  scale = 1.0
  if normalization == 'std':
    scale = Q.std() + 1e-5
  elif normalization == 'abs':
    scale = np.mean(np.abs(Q - Q.mean())) + 1e-5
  expected = np_aggregate(Q / scale, aggregate, temperature) * scale
  got = va.aggregate_values(Q, aggregate, q_value_normalization=normalization,
                            q_value_temperature=temperature)
  np.testing.assert_allclose(np.asarray(got), expected, rtol=1e-10)


def test_mean_over_all_discrete_actions_weights_by_policy():
  got = va.aggregate_values(Q, 'mean', act_log_probs=LOG_PROBS,
                            sample_all_discrete_actions=True)
  np.testing.assert_allclose(np.asarray(got),
                             np_aggregate(Q, 'mean', 1.0, True), rtol=1e-10)


def test_normalization_leaves_max_and_mean_unchanged():
  for aggregate in ('max', 'mean'):
    np.testing.assert_allclose(
        np.asarray(va.aggregate_values(Q, aggregate,
                                       q_value_normalization='std')),
        np_aggregate(Q, aggregate, 1.0), rtol=1e-10)


@pytest.mark.parametrize('normalization', [False, True])
def test_preprocess_advantages(normalization):
  adv = np.array([1.0, 4.0, -2.0])
  expected = (adv - adv.mean()) / (adv.std() + 1e-3) if normalization \
      else adv
  np.testing.assert_allclose(
      np.asarray(va.preprocess_advantages(adv, normalization, 1e-3)),
      expected)


def test_bad_arguments_are_explained():
  with pytest.raises(ValueError, match=r"aggregate_values: aggregate must be "
                     r"one of \('max', 'softmax', 'logsumexp', 'mean'\), got "
                     r"'median'"):
    va.aggregate_values(Q, 'median')
  with pytest.raises(ValueError, match=r'q_value_normalization must be None, '
                     r'"std" or "abs", got \'l2\''):
    va.aggregate_values(Q, 'max', q_value_normalization='l2')
  with pytest.raises(ValueError, match=r'needs act_log_probs'):
    va.aggregate_values(Q, 'mean', sample_all_discrete_actions=True)
