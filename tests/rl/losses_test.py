"""Agent loss layers against NumPy float64 references."""

import numpy as np
import pytest
import tensorflow as tf

from tests import _layer_testing as lt
from tfnp_trax import layers as tl
from tfnp_trax.rl import distributions
from tfnp_trax.rl import losses

DIST = distributions.Categorical(2)


def np_lp_and_entropy(logits, actions):
  lp = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
  ent = -np.sum(np.exp(lp) * lp, -1)
  return np.take_along_axis(lp, actions[..., None], -1)[..., 0], ent


def policy_stack(seed=0):
  rng = np.random.default_rng(seed)
  logits = rng.normal(size=(6, 1, 2))
  actions = rng.integers(0, 2, size=(6, 1)).astype(np.int32)
  advantages = rng.normal(size=(6, 1)) * 2
  new_lp, _ = np_lp_and_entropy(logits, actions)
  old_lp = new_lp - np.resize([0.5, -0.5, 0.0], (6, 1))
  mask = np.array([[1.0], [1.0], [0.0], [1.0], [1.0], [1.0]])
  return logits, actions, advantages, old_lp, mask


def norm(a, eps=1e-5):
  return (a - a.mean()) / (a.std() + eps)


@pytest.mark.parametrize('mode', lt.MODES)
@pytest.mark.parametrize('normalization', [False, True])
def test_ppo_loss(mode, normalization):
  logits, actions, adv, old_lp, mask = policy_stack()
  new_lp, ent = np_lp_and_entropy(logits, actions)
  a = norm(adv) if normalization else adv
  ratio = np.exp(new_lp - old_lp)
  obj = np.minimum(ratio * a, np.clip(ratio, 0.8, 1.2) * a)
  expected = -np.sum(obj * mask) / mask.sum() - 0.01 * ent.mean()
  layer = losses.PPOLoss(DIST, 0.2, 0.01, normalization)
  stack = (tf.constant(logits, tf.float32), actions) + tuple(
      tf.constant(x, tf.float32) for x in (adv, old_lp, mask))
  got = lt.run_layer(layer, stack, mode)[0]
  np.testing.assert_allclose(float(got), expected, rtol=1e-5)


def test_a2c_and_awr_policy_losses():
  logits, actions, adv, old_lp, mask = policy_stack(1)
  new_lp, ent = np_lp_and_entropy(logits, actions)
  a = norm(adv)
  expected = -np.sum(new_lp * a * mask) / mask.sum() - 0.05 * ent.mean()
  stack = (logits, actions, adv, old_lp, mask)
  np.testing.assert_allclose(float(losses.A2CLoss(DIST, 0.05)(stack)),
                             expected, rtol=1e-6)
  w = np.minimum(np.exp(a / 0.5), 3.0)
  expected = -np.sum(new_lp * w * mask) / mask.sum()
  np.testing.assert_allclose(
      float(losses.AWRPolicyLoss(DIST, beta=0.5, w_max=3.0)(stack)),
      expected, rtol=1e-6)


def joint_stack(seed=0):
  rng = np.random.default_rng(seed)
  logits, actions, _, old_lp, mask = policy_stack(seed)
  values = rng.normal(size=(6, 1, 1))
  returns = rng.normal(size=(6, 1, 1)) * 2
  dones = np.zeros((6, 1, 1))
  dones[3] = 1.0
  rewards = rng.normal(size=(6, 1, 1))
  return (logits, values, returns, dones, rewards, actions, old_lp, mask)


def test_joint_losses():
  logits, values, returns, dones, rewards, actions, old_lp, mask = \
      joint_stack()
  stack = (logits, values, returns, dones, rewards, actions, old_lp, mask)
  new_lp, ent = np_lp_and_entropy(logits, actions)
  r = np.where(dones[..., 0] != 0, rewards[..., 0], returns[..., 0])
  v = np.where(dones[..., 0] != 0, 0.0, values[..., 0])
  adv = r - v
  a = (adv - adv.mean()) / (adv.std() + 1e-8)
  value_loss = np.mean((returns - values) ** 2)
  ratio = np.exp(new_lp - old_lp)
  ppo = np.minimum(ratio * a, np.clip(ratio, 0.8, 1.2) * a)
  expected = (-np.sum(ppo * mask) / mask.sum() + 0.5 * value_loss -
              0.01 * ent.mean())
  np.testing.assert_allclose(
      float(losses.PPOJointLoss(DIST, 0.2, 0.5, 0.01)(stack)), expected,
      rtol=1e-6)
  a2c = -np.sum(new_lp * a * mask) / mask.sum()
  np.testing.assert_allclose(
      float(losses.A2CJointLoss(DIST, 0.5, 0.01)(stack)),
      a2c + 0.5 * value_loss - 0.01 * ent.mean(), rtol=1e-6)
  awr_adv = norm((returns - values)[..., 0])
  awr = -np.sum(new_lp * np.minimum(np.exp(awr_adv), 20.0) * mask) / \
      mask.sum()
  np.testing.assert_allclose(
      float(losses.AWRJointLoss(DIST, value_loss_coeff=0.5)(stack)),
      awr + 0.5 * value_loss, rtol=1e-6)


def test_value_head_gets_no_policy_gradient():
  """The policy part of a joint loss treats values as constants."""
  stack = joint_stack(1)
  layer = losses.PPOJointLoss(DIST, value_loss_coeff=0.0, entropy_coeff=0.0)

  def f(values):
    return layer((stack[0], values) + stack[2:])
  theoretical, _ = tf.test.compute_gradient(
      f, [tf.constant(stack[1], tf.float64)])
  np.testing.assert_allclose(theoretical[0], 0.0)


def test_policy_loss_shape_mismatch_is_explained():
  logits, actions, adv, old_lp, mask = policy_stack()
  with pytest.raises(tl.LayerError, match=r'PPOLoss: new_log_probs.shape '
                     r'\(6, 1\) does not match advantages.shape \(6,\)'):
    losses.PPOLoss(DIST)((logits, actions, adv[:, 0], old_lp, mask))
