"""RL objectives as pure functions, meant to be wrapped with `tl.Fn`.

Shapes follow Trax's trajectory slices: `dist_inputs` [batch, time, n],
`actions` [batch, time, ...], `old_log_probs` and `mask` [batch, time], and
`values`, `returns`, `dones`, `rewards` [batch, time, 1]. Mismatched shapes
raise a ValueError that names the function and both shapes.
"""

# Layer constructors are CamelCase, as in Trax.
# pylint: disable=invalid-name

from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.rl import _checks

__all__ = ['ValueLoss', 'ExplainedVariance', 'PreferredMove', 'NewLogProbs',
           'EntropyLoss', 'ProbsRatio', 'ApproximateKLDivergence',
           'UnclippedObjective', 'ClippedObjective', 'PPOObjective',
           'A2CObjective', 'ClipFraction', 'normalize']

_NORMALIZATION_EPSILON = 1e-8


def normalize(advantages, epsilon=_NORMALIZATION_EPSILON):
  """`(a - mean(a)) / (std(a) + epsilon)` over all elements."""
  advantages = advantages - jnp.mean(advantages)
  return advantages / (jnp.std(advantages) + epsilon)


def ValueLoss(values, returns, value_loss_coeff):
  """`value_loss_coeff * mean((returns - values)^2)`."""
  _checks.same_shape('ValueLoss', 'values', values, 'returns', returns)
  return jnp.mean((returns - values) ** 2) * value_loss_coeff


def ExplainedVariance(values, returns):
  """`1 - var(returns - values) / var(returns)`: 1 is a perfect fit."""
  _checks.same_shape('ExplainedVariance', 'values', values, 'returns',
                     returns)
  return 1.0 - jnp.var(returns - values) / jnp.var(returns)


def PreferredMove(dist_inputs, sample):
  """Mean of the most likely actions (`sample` at temperature 0)."""
  return jnp.mean(sample(dist_inputs, temperature=0.0))


def NewLogProbs(dist_inputs, actions, log_prob_fun):
  """Log-probabilities of `actions` under the current `dist_inputs`."""
  return log_prob_fun(dist_inputs, actions)


def EntropyLoss(dist_inputs, distribution, coeff):
  """`coeff * mean(entropy)`; subtracted from a loss, it rewards exploring."""
  return jnp.mean(distribution.entropy(dist_inputs)) * coeff


def ProbsRatio(dist_inputs, actions, old_log_probs, log_prob_fun):
  """`pi_new(a) / pi_old(a) = exp(log pi_new(a) - log pi_old(a))`."""
  new_log_probs = NewLogProbs(dist_inputs, actions, log_prob_fun)
  _checks.same_shape('ProbsRatio', 'new_log_probs', new_log_probs,
                     'old_log_probs', old_log_probs,
                     'actions must be [batch, time] for one log-prob each.')
  return jnp.exp(new_log_probs - old_log_probs)


def ApproximateKLDivergence(dist_inputs, actions, old_log_probs,
                            log_prob_fun):
  """`0.5 * mean(log pi_new(a) - log pi_old(a))^2`, as in Trax."""
  new_log_probs = NewLogProbs(dist_inputs, actions, log_prob_fun)
  _checks.same_shape('ApproximateKLDivergence', 'new_log_probs',
                     new_log_probs, 'old_log_probs', old_log_probs)
  return 0.5 * jnp.mean(new_log_probs - old_log_probs) ** 2


def UnclippedObjective(probs_ratio, advantages):
  """`ratio * advantage`, the surrogate objective of policy gradients."""
  _checks.same_shape('UnclippedObjective', 'probs_ratio', probs_ratio,
                     'advantages', advantages)
  return probs_ratio * advantages


def ClippedObjective(probs_ratio, advantages, epsilon):
  """`clip(ratio, 1 - epsilon, 1 + epsilon) * advantage`."""
  _checks.same_shape('ClippedObjective', 'probs_ratio', probs_ratio,
                     'advantages', advantages)
  return jnp.clip(probs_ratio, 1 - epsilon, 1 + epsilon) * advantages


def _advantages(fn_name, values, returns, dones, rewards, reference_name,
                reference, normalize_advantages):
  """Squeezes the [batch, time, 1] inputs; returns - values at [b, t]."""
  values = _checks.squeeze_last(fn_name, 'values', values)
  returns = _checks.squeeze_last(fn_name, 'returns', returns)
  dones = _checks.squeeze_last(fn_name, 'dones', dones)
  rewards = _checks.squeeze_last(fn_name, 'rewards', rewards)
  _checks.same_shape(fn_name, 'rewards', rewards, 'dones', dones)
  _checks.same_shape(fn_name, 'dones', dones, 'values', values)
  _checks.same_shape(fn_name, 'returns', returns, 'values', values)
  _checks.same_shape(fn_name, 'returns', returns, reference_name, reference)
  # Where the episode ended the return is the last reward and the state's
  # value no longer counts as a baseline.
  ended = jnp.not_equal(dones, 0)
  returns = jnp.where(ended, jnp.asarray(rewards, dtype=returns.dtype),
                      returns)
  values = jnp.where(ended, jnp.zeros_like(values), values)
  advantages = returns - values
  return normalize(advantages) if normalize_advantages else advantages


def PPOObjective(dist_inputs, values, returns, dones, rewards, actions,
                 old_log_probs, log_prob_fun, epsilon, normalize_advantages):
  """The clipped PPO objective per step, `min(unclipped, clipped)`.

  Schulman et al., 2017 (https://arxiv.org/abs/1707.06347). Advantages are
  `returns - values`; where `dones` is set they are `rewards - 0`.

  Returns:
    The objective (to maximize), shape [batch, time].
  """
  advantages = _advantages('PPOObjective', values, returns, dones, rewards,
                           'old_log_probs', old_log_probs,
                           normalize_advantages)
  probs_ratio = ProbsRatio(dist_inputs, actions, old_log_probs, log_prob_fun)
  unclipped = UnclippedObjective(probs_ratio, advantages)
  clipped = ClippedObjective(probs_ratio, advantages, epsilon)
  return jnp.minimum(unclipped, clipped)


def A2CObjective(dist_inputs, values, returns, dones, rewards, actions, mask,
                 log_prob_fun, normalize_advantages):
  """The A2C loss `-sum(log pi(a) * advantage * mask) / sum(mask)`.

  Advantages are `returns - values`; where `dones` is set they are
  `rewards - 0`. Returns a scalar (to minimize).
  """
  if dist_inputs.shape[0] != mask.shape[0]:
    raise ValueError(
        f'A2CObjective: dist_inputs.shape {tuple(dist_inputs.shape)} and '
        f'mask.shape {tuple(mask.shape)} must agree on the batch size.')
  advantages = _advantages('A2CObjective', values, returns, dones, rewards,
                           'mask', mask, normalize_advantages)
  new_log_probs = NewLogProbs(dist_inputs, actions, log_prob_fun)
  _checks.same_shape('A2CObjective', 'new_log_probs', new_log_probs, 'mask',
                     mask, 'actions must be [batch, time] for one log-prob '
                     'each.')
  mask = jnp.asarray(mask, dtype=new_log_probs.dtype)
  return -jnp.sum(new_log_probs * advantages * mask) / jnp.sum(mask)


def ClipFraction(dist_inputs, actions, old_log_probs, log_prob_fun, epsilon):
  """Fraction of steps whose probability ratio left [1 - eps, 1 + eps]."""
  probs_ratio = ProbsRatio(dist_inputs, actions, old_log_probs, log_prob_fun)
  return jnp.mean((jnp.abs(probs_ratio - 1) > epsilon).astype(jnp.float32))
