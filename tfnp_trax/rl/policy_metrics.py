"""Metric layers over a policy batch.

They read the data stack a policy model leaves behind on a policy batch:
`(dist_inputs, actions, advantages, old_log_probs, mask)`.
"""

from tfnp_trax import layers as tl
from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.rl import awr
from tfnp_trax.rl import rl_layers
from tfnp_trax.rl import value_aggregation

__all__ = ['advantage_metrics', 'entropy_metric', 'ppo_metrics',
           'awr_policy_metrics', 'policy_metrics']


def _advantages(preprocess=False, epsilon=1e-5):
  """Layer: the (optionally normalized) advantages from a policy batch."""
  def f(dist_inputs, actions, advantages, old_log_probs, mask):
    del dist_inputs, actions, old_log_probs, mask
    return value_aggregation.preprocess_advantages(
        advantages, preprocess, epsilon)
  return tl.Fn('PolicyInputsToAdvantages', f)


def advantage_metrics():
  """`advantage_mean` and `advantage_std` (before normalization)."""
  def mean(x):
    return jnp.mean(x)

  def std(x):
    return jnp.std(x)
  return {'advantage_mean': tl.Serial(_advantages(), tl.Fn('Mean', mean)),
          'advantage_std': tl.Serial(_advantages(), tl.Fn('Std', std))}


def entropy_metric(distribution):
  """Mean entropy of the current policy over the batch."""
  def f(dist_inputs, actions, advantages, old_log_probs, mask):
    del actions, advantages, old_log_probs, mask
    return jnp.mean(distribution.entropy(dist_inputs))
  return tl.Fn('Entropy', f)


def ppo_metrics(distribution, epsilon):
  """Probability-ratio metrics: clip fraction and approximate KL."""
  def clip_fraction(dist_inputs, actions, advantages, old_log_probs, mask):
    del advantages, mask
    return rl_layers.ClipFraction(dist_inputs, actions, old_log_probs,
                                  distribution.log_prob, epsilon)

  def approx_kl(dist_inputs, actions, advantages, old_log_probs, mask):
    del advantages, mask
    return rl_layers.ApproximateKLDivergence(
        dist_inputs, actions, old_log_probs, distribution.log_prob)
  return {'clip_fraction': tl.Fn('ClipFraction', clip_fraction),
          'approximate_kl_divergence': tl.Fn('ApproximateKLDivergence',
                                             approx_kl)}


def awr_policy_metrics(beta, thresholds=None, advantage_normalization=True,
                       advantage_normalization_epsilon=1e-5):
  """`awr_weight_{mean,std,min,max}` of the weights the loss will use."""
  return awr.awr_metrics(
      beta, thresholds, preprocess_layer=_advantages(
          advantage_normalization, advantage_normalization_epsilon))


def policy_metrics(distribution, extra=None):
  """The common policy metrics plus `extra` ones, as a name -> layer dict."""
  metrics = {'policy_entropy': entropy_metric(distribution)}
  metrics.update(advantage_metrics())
  metrics.update(extra or {})
  return metrics
