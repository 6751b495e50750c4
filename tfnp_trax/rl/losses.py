"""Loss layers of the actor-critic agents.

Policy losses (separate policy and value networks) read the stack a policy
model leaves on a policy batch: `(dist_inputs, actions, advantages,
old_log_probs, mask)`, all [batch, time] but `dist_inputs`.

Joint losses (one network with policy and value heads) read
`(dist_inputs, values, returns, dones, rewards, actions, old_log_probs,
mask)`, with `values`, `returns`, `dones`, `rewards` [batch, time, 1].
"""

# Layer constructors are CamelCase, as in Trax.
# pylint: disable=invalid-name

from tfnp_trax import layers as tl
from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.fastmath import stop_gradient
from tfnp_trax.rl import _checks
from tfnp_trax.rl import awr
from tfnp_trax.rl import rl_layers
from tfnp_trax.rl import value_aggregation

__all__ = ['PPOLoss', 'A2CLoss', 'AWRPolicyLoss', 'PPOJointLoss',
           'A2CJointLoss', 'AWRJointLoss']


def _masked_mean(x, mask):
  mask = jnp.asarray(mask, dtype=x.dtype)
  return jnp.sum(x * mask) / jnp.sum(mask)


def _policy_inputs(fn_name, distribution, dist_inputs, actions, advantages,
                   old_log_probs, mask, normalization, epsilon):
  """Checks shapes; returns `(new_log_probs, advantages)`."""
  new_log_probs = distribution.log_prob(dist_inputs, actions)
  for name, x in [('advantages', advantages), ('old_log_probs', old_log_probs),
                  ('mask', mask)]:
    _checks.same_shape(fn_name, 'new_log_probs', new_log_probs, name, x,
                       'Policy batches are [batch, time].')
  advantages = value_aggregation.preprocess_advantages(
      advantages, normalization, epsilon)
  return new_log_probs, advantages


def PPOLoss(distribution, epsilon=0.2, entropy_coeff=0.01,
            advantage_normalization=True,
            advantage_normalization_epsilon=1e-5):
  """Clipped PPO policy loss minus an entropy bonus."""
  def f(dist_inputs, actions, advantages, old_log_probs, mask):
    new_log_probs, advantages = _policy_inputs(
        'PPOLoss', distribution, dist_inputs, actions, advantages,
        old_log_probs, mask, advantage_normalization,
        advantage_normalization_epsilon)
    ratio = jnp.exp(new_log_probs - old_log_probs)
    objective = jnp.minimum(
        rl_layers.UnclippedObjective(ratio, advantages),
        rl_layers.ClippedObjective(ratio, advantages, epsilon))
    entropy = rl_layers.EntropyLoss(dist_inputs, distribution, entropy_coeff)
    return -_masked_mean(objective, mask) - entropy
  return tl.Fn('PPOLoss', f)


def A2CLoss(distribution, entropy_coeff=0.01, advantage_normalization=True,
            advantage_normalization_epsilon=1e-5):
  """A2C policy loss `-mean(log pi(a) * advantage)` minus an entropy bonus."""
  def f(dist_inputs, actions, advantages, old_log_probs, mask):
    new_log_probs, advantages = _policy_inputs(
        'A2CLoss', distribution, dist_inputs, actions, advantages,
        old_log_probs, mask, advantage_normalization,
        advantage_normalization_epsilon)
    entropy = rl_layers.EntropyLoss(dist_inputs, distribution, entropy_coeff)
    return -_masked_mean(new_log_probs * advantages, mask) - entropy
  return tl.Fn('A2CLoss', f)


def AWRPolicyLoss(distribution, beta=1.0, w_max=20.0, thresholds=None,
                  advantage_normalization=True,
                  advantage_normalization_epsilon=1e-5):
  """AWR loss on log-probabilities computed from the policy batch."""
  def loss_input(dist_inputs, actions, advantages, old_log_probs, mask):
    new_log_probs, advantages = _policy_inputs(
        'AWRPolicyLoss', distribution, dist_inputs, actions, advantages,
        old_log_probs, mask, advantage_normalization,
        advantage_normalization_epsilon)
    return new_log_probs, advantages, old_log_probs, mask
  return tl.Serial(tl.Fn('LossInput', loss_input, n_out=4),
                   awr.AWRLoss(beta=beta, w_max=w_max, thresholds=thresholds))


def PPOJointLoss(distribution, epsilon=0.2, value_loss_coeff=0.1,
                 entropy_coeff=0.01, normalize_advantages=True):
  """`-mean(PPOObjective) + value loss - entropy bonus` for a joint model."""
  def f(dist_inputs, values, returns, dones, rewards, actions, old_log_probs,
        mask):
    objective = rl_layers.PPOObjective(
        dist_inputs, stop_gradient(values), returns, dones, rewards, actions,
        old_log_probs, log_prob_fun=distribution.log_prob, epsilon=epsilon,
        normalize_advantages=normalize_advantages)
    value_loss = rl_layers.ValueLoss(values, returns, value_loss_coeff)
    entropy = rl_layers.EntropyLoss(dist_inputs, distribution, entropy_coeff)
    return -_masked_mean(objective, mask) + value_loss - entropy
  return tl.Fn('PPOJointLoss', f)


def A2CJointLoss(distribution, value_loss_coeff=0.1, entropy_coeff=0.01,
                 normalize_advantages=True):
  """`A2CObjective + value loss - entropy bonus` for a joint model."""
  def f(dist_inputs, values, returns, dones, rewards, actions, old_log_probs,
        mask):
    del old_log_probs
    objective = rl_layers.A2CObjective(
        dist_inputs, stop_gradient(values), returns, dones, rewards, actions,
        mask, log_prob_fun=distribution.log_prob,
        normalize_advantages=normalize_advantages)
    value_loss = rl_layers.ValueLoss(values, returns, value_loss_coeff)
    entropy = rl_layers.EntropyLoss(dist_inputs, distribution, entropy_coeff)
    return objective + value_loss - entropy
  return tl.Fn('A2CJointLoss', f)


def AWRJointLoss(distribution, beta=1.0, w_max=20.0, thresholds=None,
                 value_loss_coeff=0.1, normalize_advantages=True):
  """AWR loss on `returns - values` plus the value loss, for a joint model."""
  def f(dist_inputs, values, returns, dones, rewards, actions, old_log_probs,
        mask):
    del dones, rewards, old_log_probs
    advantages = jnp.squeeze(returns - stop_gradient(values), axis=-1)
    advantages = value_aggregation.preprocess_advantages(
        advantages, normalize_advantages)
    log_probs = distribution.log_prob(dist_inputs, actions)
    policy_loss = awr.awr_loss(log_probs, advantages,
                               jnp.zeros_like(log_probs), mask, beta, w_max,
                               thresholds)
    return policy_loss + rl_layers.ValueLoss(values, returns, value_loss_coeff)
  return tl.Fn('AWRJointLoss', f)
