"""Advantage Weighted Regression: weights, losses and weight metrics.

Peng et al., 2019 (https://arxiv.org/abs/1910.00177): the policy regresses
onto the actions taken, each weighted by `min(exp(advantage / beta), w_max)`.
With `thresholds`, the weights come instead from advantage percentiles.
"""

# Layer constructors are CamelCase, as in Trax.
# pylint: disable=invalid-name

import math

from tfnp_trax import fastmath
from tfnp_trax import layers as tl
from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.rl import _checks

__all__ = ['awr_weights', 'awr_loss', 'AWRLoss', 'SamplingAWRLoss',
           'awr_metrics', 'awr_weight_stat', 'calculate_weights',
           'percentile']


def percentile(x, q):
  """The q-th percentile of all elements, interpolated as NumPy's default."""
  flat = jnp.sort(jnp.reshape(x, (-1,)))
  n = int(flat.shape[0])
  position = (n - 1) * float(q) / 100.0
  lower, upper = int(math.floor(position)), int(math.ceil(position))
  frac = position - lower
  return flat[lower] + (flat[upper] - flat[lower]) * frac


def _weighted_percentiles(x, thresholds):
  """Sum over `(p, weight, minimum)` of `weight * (x >= max(pct_p, min))`."""
  total = jnp.zeros_like(x)
  for (q, weight, minimum) in thresholds:
    threshold = percentile(x, q)
    if minimum is not None:
      threshold = jnp.maximum(threshold, minimum)
    total = total + weight * (x >= threshold).astype(x.dtype)
  return total


def awr_weights(advantages, beta, thresholds=None):
  """`exp(advantages / beta)`, or percentile weights if `thresholds`.

  Example:
    >>> float(awr_weights(jnp.array([0.0, 2.0], dtype=jnp.float32), 2.0)[1])
    2.7182817459106445
  """
  if thresholds:
    return _weighted_percentiles(advantages, thresholds)
  return jnp.exp(advantages / beta)


def _check_inputs(fn_name, log_probs, advantages, old_log_probs, mask):
  _checks.same_shape(fn_name, 'log_probs', log_probs, 'advantages',
                     advantages)
  _checks.same_shape(fn_name, 'log_probs', log_probs, 'old_log_probs',
                     old_log_probs)
  _checks.same_shape(fn_name, 'log_probs', log_probs, 'mask', mask)


def awr_loss(log_probs, advantages, old_log_probs, mask, beta=1.0,
             w_max=20.0, thresholds=None):
  """`-sum(log_probs * min(w(advantages), w_max) * mask) / sum(mask)`."""
  _check_inputs('AWRLoss', log_probs, advantages, old_log_probs, mask)
  weights = jnp.minimum(awr_weights(advantages, beta, thresholds), w_max)
  weights = fastmath.stop_gradient(weights)
  mask = jnp.asarray(mask, dtype=log_probs.dtype)
  return -jnp.sum(log_probs * weights * mask) / jnp.sum(mask)


def AWRLoss(beta=1.0, w_max=20.0, thresholds=None):
  """Layer `(log_probs, advantages, old_log_probs, mask) -> awr_loss`."""
  def f(log_probs, advantages, old_log_probs, mask):
    return awr_loss(log_probs, advantages, old_log_probs, mask, beta, w_max,
                    thresholds)
  return tl.Fn('AWRLoss', f)


def SamplingAWRLoss(beta=1.0, w_max=20.0, thresholds=None, reweight=False,
                    sampled_all_discrete=False):
  """AWR loss over actions sampled from the policy to estimate Q-values.

  With `reweight`, each sample is reweighted by the ratio of its new to its
  old probability; with `sampled_all_discrete`, every discrete action was
  taken once and is weighted by its old probability.
  """
  def f(log_probs, advantages, old_log_probs, mask):
    _check_inputs('SamplingAWRLoss', log_probs, advantages, old_log_probs,
                  mask)
    mask = jnp.asarray(mask, dtype=log_probs.dtype)
    if reweight:
      mask = mask * jnp.exp(fastmath.stop_gradient(log_probs) - old_log_probs)
    if sampled_all_discrete:
      mask = mask * jnp.exp(old_log_probs)
    weights = jnp.minimum(awr_weights(advantages, beta, thresholds), w_max)
    weights = fastmath.stop_gradient(weights)
    return -jnp.sum(log_probs * weights * mask) / jnp.sum(mask)
  return tl.Fn('SamplingAWRLoss', f)


def awr_weight_stat(stat_name, stat_fn, beta, thresholds=None,
                    preprocess_layer=None):
  """Layer: `stat_fn` of the AWR weights of the selected advantages."""
  # Without a preprocess layer the advantages are the second input.
  preprocess = tl.Select([1]) if preprocess_layer is None else \
      preprocess_layer
  return tl.Serial(
      preprocess,
      tl.Fn('AWRWeight' + stat_name.capitalize(),
            lambda x: stat_fn(awr_weights(x, beta, thresholds))))


def awr_metrics(beta, thresholds=None, preprocess_layer=None):
  """`awr_weight_{mean,std,min,max}` metric layers."""
  return {f'awr_weight_{name}': awr_weight_stat(name, fn, beta, thresholds,
                                                preprocess_layer)
          for name, fn in [('mean', jnp.mean), ('std', jnp.std),
                           ('min', jnp.min), ('max', jnp.max)]}


def calculate_weights(advantages, weight_fn=(lambda x: x),
                      advantage_normalization=True,
                      advantage_normalization_epsilon=1e-5):
  """Advantage-based weights for a policy's log loss.

  With `advantage_normalization` the advantages are first shifted to mean 0
  and divided by `std + epsilon`; then `weight_fn` maps them to weights
  (identity for A2C, `exp(a / beta)` for AWR, `1` for behavioral cloning).
  """
  if advantage_normalization:
    advantages = advantages - jnp.mean(advantages)
    advantages = advantages / (jnp.std(advantages) +
                               advantage_normalization_epsilon)
  weights = weight_fn(advantages)
  if tuple(weights.shape) != tuple(advantages.shape):
    raise ValueError(
        f'calculate_weights: weight_fn changed the shape from '
        f'{tuple(advantages.shape)} to {tuple(weights.shape)}; it must act '
        f'elementwise.')
  return weights
