"""Tests of the RL objectives against NumPy float64 references."""

import numpy as np
import pytest
import tensorflow as tf

from tests import _layer_testing as lt
from tfnp_trax import fastmath
from tfnp_trax.rl import distributions
from tfnp_trax.rl import rl_layers

EPSILON = 0.2
DIST = distributions.Categorical(3)


def np_log_softmax(x):
  x = x - x.max(axis=-1, keepdims=True)
  return x - np.log(np.exp(x).sum(axis=-1, keepdims=True))


def np_log_prob(dist_inputs, actions):
  log_probs = np_log_softmax(dist_inputs)
  return np.take_along_axis(log_probs, actions[..., None], axis=-1)[..., 0]


def np_advantages(values, returns, dones, rewards, normalize):
  v, r, d, rw = (x[..., 0] for x in (values, returns, dones, rewards))
  r = np.where(d != 0, rw, r)
  v = np.where(d != 0, 0.0, v)
  adv = r - v
  if normalize:
    adv = (adv - adv.mean()) / (adv.std() + 1e-8)
  return adv


def np_ppo(dist_inputs, values, returns, dones, rewards, actions, old_lp,
           normalize):
  adv = np_advantages(values, returns, dones, rewards, normalize)
  ratio = np.exp(np_log_prob(dist_inputs, actions) - old_lp)
  return np.minimum(ratio * adv, np.clip(ratio, 1 - EPSILON, 1 + EPSILON) *
                    adv), ratio, adv


def np_a2c(dist_inputs, values, returns, dones, rewards, actions, mask,
           normalize):
  adv = np_advantages(values, returns, dones, rewards, normalize)
  lp = np_log_prob(dist_inputs, actions)
  return -np.sum(lp * adv * mask) / np.sum(mask)


def make_batch(seed=0, batch=4, time=3, normalize=False):
  """A batch where episodes end mid-slice and ratios leave the clip range.

  Ratios cycle through: far above 1 + eps, far below 1 - eps, and inside
  the range, so for either sign of the advantage the clip is sometimes
  active and the clipped term sometimes the minimum.
  """
  rng = np.random.default_rng(seed)
  dist_inputs = rng.normal(size=(batch, time, 3))
  actions = rng.integers(0, 3, size=(batch, time)).astype(np.int32)
  values = rng.normal(size=(batch, time, 1))
  returns = rng.normal(size=(batch, time, 1)) * 2
  rewards = rng.normal(size=(batch, time, 1))
  dones = np.zeros((batch, time, 1))
  dones[0, 1] = dones[2, 0] = dones[3, 2] = 1.0  # Episodes end mid-batch.
  adv = np_advantages(values, returns, dones, rewards, normalize)
  log_ratio = np.resize([1.0, -1.0, 0.05], (batch, time))
  # Half the steps get the direction in which the clipped term is smaller.
  log_ratio = np.where(np.arange(batch * time).reshape(batch, time) % 2,
                       np.abs(log_ratio) * np.sign(adv), log_ratio)
  old_lp = np_log_prob(dist_inputs, actions) - log_ratio
  mask = np.ones((batch, time))
  mask[1, 2] = 0.0
  return dict(dist_inputs=dist_inputs, values=values, returns=returns,
              dones=dones, rewards=rewards, actions=actions,
              old_log_probs=old_lp, mask=mask)


@pytest.mark.parametrize('mode', lt.MODES)
@pytest.mark.parametrize('normalize', [False, True])
def test_ppo_objective_matches_numpy(mode, normalize):
  b = make_batch(normalize=normalize)
  expected, ratio, adv = np_ppo(
      b['dist_inputs'], b['values'], b['returns'], b['dones'], b['rewards'],
      b['actions'], b['old_log_probs'], normalize)
  # The data exercise both branches of the min: clipping active and not.
  clipped = np.clip(ratio, 1 - EPSILON, 1 + EPSILON) * adv < ratio * adv
  assert clipped.any() and (~clipped).any()
  assert ((ratio > 1 + EPSILON) | (ratio < 1 - EPSILON)).any()

  def f(di, v, r, d, rw, a, olp):
    return rl_layers.PPOObjective(di, v, r, d, rw, a, olp, DIST.log_prob,
                                  EPSILON, normalize)
  got = lt.compile_fn(f, mode)(*(
      tf.constant(b[k], tf.float32) if k != 'actions' else b[k]
      for k in ('dist_inputs', 'values', 'returns', 'dones', 'rewards',
                'actions', 'old_log_probs')))
  np.testing.assert_allclose(np.asarray(got), expected, rtol=1e-4,
                             atol=1e-5)


def test_ppo_objective_dones_use_rewards_and_zero_values():
  b = make_batch()
  obj = rl_layers.PPOObjective(
      b['dist_inputs'], b['values'], b['returns'], b['dones'], b['rewards'],
      b['actions'], b['old_log_probs'], DIST.log_prob, EPSILON, False)
  ratio = np.exp(np_log_prob(b['dist_inputs'], b['actions']) -
                 b['old_log_probs'])
  # At the step where episode 0 ended, the advantage is its reward.
  adv = b['rewards'][0, 1, 0]
  r = ratio[0, 1]
  expected = min(r * adv, np.clip(r, 0.8, 1.2) * adv)
  np.testing.assert_allclose(float(obj[0, 1]), expected, rtol=1e-6)


@pytest.mark.parametrize('mode', lt.MODES)
@pytest.mark.parametrize('normalize', [False, True])
def test_a2c_objective_matches_numpy(mode, normalize):
  b = make_batch(seed=1)
  expected = np_a2c(b['dist_inputs'], b['values'], b['returns'], b['dones'],
                    b['rewards'], b['actions'], b['mask'], normalize)

  def f(di, v, r, d, rw, a, m):
    return rl_layers.A2CObjective(di, v, r, d, rw, a, m, DIST.log_prob,
                                  normalize)
  got = lt.compile_fn(f, mode)(*(
      tf.constant(b[k], tf.float32) if k != 'actions' else b[k]
      for k in ('dist_inputs', 'values', 'returns', 'dones', 'rewards',
                'actions', 'mask')))
  np.testing.assert_allclose(float(got), expected, rtol=1e-4, atol=1e-6)


def test_ppo_gradient_wrt_dist_inputs_matches_analytic():
  b = make_batch(seed=2)
  _, ratio, adv = np_ppo(
      b['dist_inputs'], b['values'], b['returns'], b['dones'], b['rewards'],
      b['actions'], b['old_log_probs'], False)
  # d min(r A, clip(r) A) / d logits: r A (onehot - softmax) where the
  # unclipped term is the minimum or the clip is inactive; 0 otherwise.
  probs = np.exp(np_log_softmax(b['dist_inputs']))
  onehot = np.eye(3)[b['actions']]
  clip_active = (ratio > 1 + EPSILON) | (ratio < 1 - EPSILON)
  uses_clipped = np.clip(ratio, 0.8, 1.2) * adv < ratio * adv
  live = ~(clip_active & uses_clipped)
  assert live.any() and (~live).any()
  expected = (live * ratio * adv)[..., None] * (onehot - probs)

  def total(di):
    return fastmath.numpy.sum(rl_layers.PPOObjective(
        di, b['values'], b['returns'], b['dones'], b['rewards'],
        b['actions'], b['old_log_probs'], DIST.log_prob, EPSILON, False))
  got = fastmath.grad(total)(tf.constant(b['dist_inputs'], tf.float64))
  np.testing.assert_allclose(np.asarray(got), expected, rtol=1e-6,
                             atol=1e-9)


def test_a2c_gradient_wrt_dist_inputs_compute_gradient():
  b = make_batch(seed=3)
  adv = np_advantages(b['values'], b['returns'], b['dones'], b['rewards'],
                      True)
  probs = np.exp(np_log_softmax(b['dist_inputs']))
  onehot = np.eye(3)[b['actions']]
  expected = -((adv * b['mask'])[..., None] * (onehot - probs)) / np.sum(
      b['mask'])

  def f(di):
    return rl_layers.A2CObjective(di, b['values'], b['returns'], b['dones'],
                                  b['rewards'], b['actions'], b['mask'],
                                  DIST.log_prob, True)
  theoretical, numerical = tf.test.compute_gradient(
      f, [tf.constant(b['dist_inputs'], tf.float64)])
  np.testing.assert_allclose(theoretical[0].reshape(expected.shape),
                             expected, rtol=1e-6, atol=1e-9)
  np.testing.assert_allclose(numerical[0].reshape(expected.shape), expected,
                             rtol=1e-4, atol=1e-6)


def test_ratio_kl_clip_fraction_and_pieces():
  b = make_batch(seed=4)
  new_lp = np_log_prob(b['dist_inputs'], b['actions'])
  ratio = np.exp(new_lp - b['old_log_probs'])
  args = (b['dist_inputs'], b['actions'], b['old_log_probs'])
  np.testing.assert_allclose(
      np.asarray(rl_layers.NewLogProbs(b['dist_inputs'], b['actions'],
                                       DIST.log_prob)), new_lp, rtol=1e-6)
  np.testing.assert_allclose(
      np.asarray(rl_layers.ProbsRatio(*args, DIST.log_prob)), ratio,
      rtol=1e-6)
  np.testing.assert_allclose(
      float(rl_layers.ApproximateKLDivergence(*args, DIST.log_prob)),
      0.5 * np.mean(new_lp - b['old_log_probs']) ** 2, rtol=1e-6)
  np.testing.assert_allclose(
      float(rl_layers.ClipFraction(*args, DIST.log_prob, EPSILON)),
      np.mean(np.abs(ratio - 1) > EPSILON), rtol=1e-6)
  adv = b['returns'][..., 0]
  np.testing.assert_allclose(
      np.asarray(rl_layers.UnclippedObjective(ratio, adv)), ratio * adv)
  np.testing.assert_allclose(
      np.asarray(rl_layers.ClippedObjective(ratio, adv, EPSILON)),
      np.clip(ratio, 0.8, 1.2) * adv)


def test_value_loss_explained_variance_entropy_preferred_move():
  rng = np.random.default_rng(5)
  values, returns = rng.normal(size=(4, 3, 1)), rng.normal(size=(4, 3, 1))
  np.testing.assert_allclose(
      float(rl_layers.ValueLoss(values, returns, 0.5)),
      0.5 * np.mean((returns - values) ** 2), rtol=1e-6)
  np.testing.assert_allclose(
      float(rl_layers.ExplainedVariance(values, returns)),
      1 - np.var(returns - values) / np.var(returns), rtol=1e-6)
  logits = rng.normal(size=(4, 3))
  p = np.exp(np_log_softmax(logits))
  np.testing.assert_allclose(
      float(rl_layers.EntropyLoss(logits, DIST, 0.1)),
      0.1 * np.mean(-np.sum(p * np.log(p), axis=-1)), rtol=1e-6)
  np.testing.assert_allclose(
      float(rl_layers.PreferredMove(logits, DIST.sample)),
      np.mean(np.argmax(logits, axis=-1)))


def test_normalize_matches_numpy():
  x = np.array([1.0, 2.0, 4.0, 7.0])
  np.testing.assert_allclose(np.asarray(rl_layers.normalize(x)),
                             (x - x.mean()) / (x.std() + 1e-8))


@pytest.mark.parametrize('fn', ['PPOObjective', 'A2CObjective'])
def test_mismatched_shapes_name_function_and_shapes(fn):
  b = make_batch()
  b['returns'] = np.zeros((4, 2, 1))
  last = b['old_log_probs'] if fn == 'PPOObjective' else b['mask']
  args = (b['dist_inputs'], b['values'], b['returns'], b['dones'],
          b['rewards'], b['actions'], last, DIST.log_prob)
  extra = (EPSILON, False) if fn == 'PPOObjective' else (False,)
  with pytest.raises(ValueError, match=fn + r': returns.shape \(4, 2\) '
                     r'does not match values.shape \(4, 3\)'):
    getattr(rl_layers, fn)(*args, *extra)


def test_missing_trailing_axis_is_explained():
  b = make_batch()
  with pytest.raises(ValueError, match=r'PPOObjective: values must have '
                     r'shape \[batch, time, 1\], got \(4, 3\)'):
    rl_layers.PPOObjective(b['dist_inputs'], b['values'][..., 0],
                           b['returns'], b['dones'], b['rewards'],
                           b['actions'], b['old_log_probs'], DIST.log_prob,
                           EPSILON, False)


def test_ratio_shape_mismatch_is_explained():
  b = make_batch()
  with pytest.raises(ValueError, match=r'ProbsRatio: new_log_probs.shape '
                     r'\(4, 3\) does not match old_log_probs.shape \(4,\)'):
    rl_layers.ProbsRatio(b['dist_inputs'], b['actions'],
                         b['old_log_probs'][:, 0], DIST.log_prob)
  with pytest.raises(ValueError, match=r'ClippedObjective: probs_ratio'):
    rl_layers.ClippedObjective(np.ones((2, 3)), np.ones((3, 2)), EPSILON)
