"""Policy metric layers on a policy batch, against NumPy."""

import numpy as np

from tfnp_trax.rl import distributions
from tfnp_trax.rl import policy_metrics

DIST = distributions.Categorical(2)


def make_stack():
  rng = np.random.default_rng(0)
  logits = rng.normal(size=(6, 1, 2))
  actions = rng.integers(0, 2, size=(6, 1)).astype(np.int32)
  advantages = rng.normal(size=(6, 1)) * 3 + 1
  old_log_probs = rng.normal(size=(6, 1)) - 0.7
  return (logits, actions, advantages, old_log_probs, np.ones((6, 1)))


def np_log_probs(logits, actions):
  lp = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
  return np.take_along_axis(lp, actions[..., None], -1)[..., 0], lp


def test_common_metrics():
  stack = make_stack()
  metrics = policy_metrics.policy_metrics(DIST)
  _, lp = np_log_probs(stack[0], stack[1])
  expected = {
      'policy_entropy': np.mean(-np.sum(np.exp(lp) * lp, -1)),
      'advantage_mean': stack[2].mean(), 'advantage_std': stack[2].std()}
  for name, value in expected.items():
    np.testing.assert_allclose(float(metrics[name](stack)), value, rtol=1e-6)


def test_ppo_metrics():
  stack = make_stack()
  new_lp, _ = np_log_probs(stack[0], stack[1])
  ratio = np.exp(new_lp - stack[3])
  metrics = policy_metrics.ppo_metrics(DIST, 0.2)
  np.testing.assert_allclose(float(metrics['clip_fraction'](stack)),
                             np.mean(np.abs(ratio - 1) > 0.2))
  np.testing.assert_allclose(
      float(metrics['approximate_kl_divergence'](stack)),
      0.5 * np.mean(new_lp - stack[3]) ** 2, rtol=1e-6)


def test_awr_metrics_use_normalized_advantages():
  stack = make_stack()
  adv = stack[2]
  norm = (adv - adv.mean()) / (adv.std() + 1e-5)
  metrics = policy_metrics.awr_policy_metrics(beta=0.5)
  np.testing.assert_allclose(float(metrics['awr_weight_max'](stack)),
                             np.exp(norm / 0.5).max(), rtol=1e-6)
  raw = policy_metrics.awr_policy_metrics(beta=0.5,
                                          advantage_normalization=False)
  np.testing.assert_allclose(float(raw['awr_weight_mean'](stack)),
                             np.exp(adv / 0.5).mean(), rtol=1e-6)
