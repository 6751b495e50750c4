"""rl.advantages against Trax's definitions, written out as float64 loops.

Every reference below follows one estimator of trax/rl/advantages.py (Trax
1.4.1; named in each docstring), transcribed as plain loops over batch and
time. The data have several episodes ending mid-sequence, so dones fall
inside TD-k windows; masks come as [batch, length], as [1, length] (shared
by all rows, as trax/rl/advantages_test.py uses them) and absent. Every
check runs eagerly on NumPy, eagerly on tensors and under tf.function.
"""

import numpy as np
import pytest
import tensorflow as tf

from tfnp_trax.rl import advantages

GAMMA = 0.9
BATCH, LENGTH = 4, 9


def per_step(value, mask):
  """Trax's mask_discount broadcast to [BATCH, LENGTH]: value where on."""
  return np.broadcast_to(np.where(mask, value, 1.0), (BATCH, LENGTH))


def ref_monte_carlo(rewards, returns, values, dones, margin):
  """trax/rl/advantages.py `monte_carlo`: at a done step return := reward
  and value := 0; advantage = return - value; drop `margin` columns."""
  batch, length = rewards.shape
  out = np.zeros((batch, length - margin))
  for b in range(batch):
    for i in range(length - margin):
      ret = rewards[b, i] if dones[b, i] else returns[b, i]
      value = 0.0 if dones[b, i] else values[b, i]
      out[b, i] = ret - value
  return out


def ref_td_k(rewards, values, dones, gammas, k):
  """trax/rl/advantages.py `td_k`: the whole k-step window of discounted
  rewards plus the discounted value k steps on (dones inside the window do
  not cut it), then the target at a done step is overwritten with its
  reward; minus the value."""
  batch, length = rewards.shape
  out = np.zeros((batch, length - k))
  for b in range(batch):
    for i in range(length - k):
      target, discount = 0.0, 1.0
      for j in range(k):
        target += discount * rewards[b, i + j]
        discount *= gammas[b, i + j]
      target += discount * values[b, i + k]
      if dones[b, i]:
        target = rewards[b, i]
      out[b, i] = target - values[b, i]
  return out


def ref_td_k_stopped(rewards, values, dones, gammas, k):
  """Our documented alternative (`stop_at_done=True`): the window ends at
  its first done, with no bootstrap value after it."""
  batch, length = rewards.shape
  out = np.zeros((batch, length - k))
  for b in range(batch):
    for i in range(length - k):
      target, discount, ended = 0.0, 1.0, False
      for j in range(k):
        target += discount * rewards[b, i + j]
        if dones[b, i + j]:
          ended = True
          break
        discount *= gammas[b, i + j]
      if not ended:
        target += discount * values[b, i + k]
      out[b, i] = target - values[b, i]
  return out


def ref_td_lambda(rewards, values, dones, gammas, lambdas, margin):
  """trax/rl/advantages.py `td_lambda`: backwards from G[-1] = V[-1],
  G[i] = r[i] + (1 - d[i]) g[i] ((1 - l[i]) V[i+1] + l[i] G[i+1]);
  advantage = G - V; drop `margin` columns."""
  batch, length = rewards.shape
  returns = np.zeros((batch, length))
  for b in range(batch):
    returns[b, length - 1] = values[b, length - 1]
    for i in reversed(range(length - 1)):
      live = 0.0 if dones[b, i] else 1.0
      returns[b, i] = rewards[b, i] + live * gammas[b, i] * (
          (1 - lambdas[b, i]) * values[b, i + 1] +
          lambdas[b, i] * returns[b, i + 1])
  return (returns - values)[:, :length - margin]


def ref_gae(rewards, values, dones, gammas, lambdas, margin):
  """trax/rl/advantages.py `gae`: backwards from A[-1] = 0,
  delta = r[i] - V[i] + (1 - d[i]) g[i] V[i+1],
  A[i] = delta + (1 - d[i]) g[i] l[i] A[i+1]; drop `margin` columns."""
  batch, length = rewards.shape
  adv = np.zeros((batch, length))
  for b in range(batch):
    for i in reversed(range(length - 1)):
      live = 0.0 if dones[b, i] else 1.0
      delta = rewards[b, i] - values[b, i] + live * gammas[b, i] * values[
          b, i + 1]
      adv[b, i] = delta + live * gammas[b, i] * lambdas[b, i] * adv[b, i + 1]
  return adv[:, :length - margin]


def make_data(seed=0):
  rng = np.random.default_rng(seed)
  rewards = rng.normal(size=(BATCH, LENGTH))
  values = rng.normal(size=(BATCH, LENGTH))
  returns = rng.normal(size=(BATCH, LENGTH))
  dones = np.zeros((BATCH, LENGTH), bool)
  # Several episodes end mid-sequence; row 3 never ends.
  for b, ends in enumerate([(2, 5), (1, 3, 7), (0, 4, 8), ()]):
    dones[b, list(ends)] = True
  return rewards, returns, values, dones


MASKS = {
    'no_mask': None,
    'full_mask': np.array([[1, 0, 1, 1, 0, 1, 1, 1, 0],
                           [1, 1, 1, 0, 1, 1, 0, 1, 1],
                           [0, 1, 1, 1, 1, 0, 1, 1, 1],
                           [1, 1, 0, 1, 1, 1, 1, 0, 1]], bool),
    'row_mask': np.array([[1, 1, 0, 1, 0, 1, 1, 0, 1]], bool),  # [1, T]
}

MODES = ('numpy', 'tensor', 'tf_function')


def run(estimator, mode, rewards, returns, values, dones, mask):
  """The estimator on NumPy, on eager tensors, or inside tf.function."""
  if mode == 'numpy':
    out = estimator(rewards, returns, values, dones, mask)
    assert isinstance(out, np.ndarray)
    return out
  args = [tf.constant(x) for x in (rewards, returns, values, dones)]
  mask = None if mask is None else tf.constant(mask)
  if mode == 'tf_function':
    fn = tf.function(lambda r, ret, v, d, m: estimator(r, ret, v, d, m))
    out = fn(*args, mask)
  else:
    out = estimator(*args, mask)
  assert isinstance(out, tf.Tensor)
  return np.asarray(out)


def mask_or_ones(mask):
  return np.ones((1, LENGTH), bool) if mask is None else mask


@pytest.mark.parametrize('mode', MODES)
@pytest.mark.parametrize('mask_name', sorted(MASKS))
@pytest.mark.parametrize('margin', [1, 2, 3])
def test_monte_carlo(margin, mask_name, mode):
  rewards, returns, values, dones = make_data(1)
  got = run(advantages.monte_carlo(GAMMA, margin), mode, rewards, returns,
            values, dones, MASKS[mask_name])
  np.testing.assert_allclose(
      got, ref_monte_carlo(rewards, returns, values, dones, margin),
      rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize('mode', MODES)
@pytest.mark.parametrize('mask_name', sorted(MASKS))
@pytest.mark.parametrize('margin', [1, 2, 3])
def test_td_k(margin, mask_name, mode):
  rewards, returns, values, dones = make_data(2)
  mask = MASKS[mask_name]
  gammas = per_step(GAMMA, mask_or_ones(mask))
  got = run(advantages.td_k(GAMMA, margin), mode, rewards, returns, values,
            dones, mask)
  assert got.shape == (BATCH, LENGTH - margin)
  np.testing.assert_allclose(
      got, ref_td_k(rewards, values, dones, gammas, margin), rtol=1e-12,
      atol=1e-12)
  stopped = run(advantages.td_k(GAMMA, margin, stop_at_done=True), mode,
                rewards, returns, values, dones, mask)
  np.testing.assert_allclose(
      stopped, ref_td_k_stopped(rewards, values, dones, gammas, margin),
      rtol=1e-12, atol=1e-12)


def test_td_k_differs_from_stopping_when_episodes_end_inside_windows():
  # The data have dones inside 3-step windows: Trax's sum leaks rewards of
  # the next episode and a value past the end into those advantages.
  rewards, returns, values, dones = make_data(2)
  trax_way = advantages.td_k(GAMMA, 3)(rewards, returns, values, dones)
  stopped = advantages.td_k(GAMMA, 3, stop_at_done=True)(
      rewards, returns, values, dones)
  assert not np.allclose(trax_way, stopped)


@pytest.mark.parametrize('mode', MODES)
@pytest.mark.parametrize('mask_name', sorted(MASKS))
@pytest.mark.parametrize('margin', [1, 2, 3])
@pytest.mark.parametrize('lambda_', [0.0, 0.5, 0.95, 1.0])
def test_td_lambda_and_gae(lambda_, margin, mask_name, mode):
  rewards, returns, values, dones = make_data(3)
  mask = MASKS[mask_name]
  gammas = per_step(GAMMA, mask_or_ones(mask))
  lambdas = per_step(lambda_, mask_or_ones(mask))
  want_td = ref_td_lambda(rewards, values, dones, gammas, lambdas, margin)
  want_gae = ref_gae(rewards, values, dones, gammas, lambdas, margin)
  got_td = run(advantages.td_lambda(GAMMA, margin, lambda_=lambda_), mode,
               rewards, returns, values, dones, mask)
  got_gae = run(advantages.gae(GAMMA, margin, lambda_=lambda_), mode,
                rewards, returns, values, dones, mask)
  np.testing.assert_allclose(got_td, want_td, rtol=1e-12, atol=1e-12)
  np.testing.assert_allclose(got_gae, want_gae, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize('factory', [advantages.monte_carlo, advantages.td_k,
                                     advantages.td_lambda, advantages.gae])
def test_row_mask_equals_the_same_mask_on_every_row(factory):
  rewards, returns, values, dones = make_data(4)
  row = MASKS['row_mask']
  estimator = factory(GAMMA, 2)
  np.testing.assert_allclose(
      estimator(rewards, returns, values, dones, row),
      estimator(rewards, returns, values, dones,
                np.repeat(row, BATCH, axis=0)), rtol=1e-12)


# A tiny case by hand: B=1, T=4, gamma=0.5; the episode ends at step 2.
R = np.array([[1.0, 2.0, 3.0, 4.0]])
V = np.array([[4.0, 2.0, 8.0, 6.0]])
D = np.array([[False, False, True, False]])
G = np.array([[2.75, 3.5, 3.0, 4.0]])  # Returns, restarting after step 2.


@pytest.mark.parametrize('mode', MODES)
@pytest.mark.parametrize('name,estimator,mask,expected', [
    # trax/rl/advantages.py monte_carlo: [G0 - V0, G1 - V1, r2 - 0].
    ('monte_carlo', advantages.monte_carlo(0.5, 1), None,
     [[-1.25, 1.5, 3.0]]),
    # td_k, k=1: r_i + 0.5 V_{i+1} - V_i, and r2 - V2 at the done.
    ('td_k_1', advantages.td_k(0.5, 1), None, [[-2.0, 4.0, -5.0]]),
    # td_k, k=2: A0 = 1 + 0.5*2 + 0.25*8 - 4; A1 = 2 + 0.5*3 + 0.25*6 - 2
    # (the done at step 2 is inside A1's window and does not cut it).
    ('td_k_2', advantages.td_k(0.5, 2), None, [[0.0, 3.0]]),
    # ... stopping at the done instead: A1 = 2 + 0.5*3 - 2.
    ('td_k_2_stop', advantages.td_k(0.5, 2, stop_at_done=True), None,
     [[0.0, 1.5]]),
    # Step 1 not discounted: A0 = 1 + 0.5*2 + 0.5*1*8 - 4;
    # A1 = 2 + 1*3 + 1*0.5*6 - 2.
    ('td_k_2_masked', advantages.td_k(0.5, 2),
     np.array([[1, 0, 1, 1]], bool), [[2.0, 6.0]]),
    # td_lambda, lambda 0.5: G3 = 6, G2 = 3 (done), G1 = 2 + 0.5 * (0.5*8
    # + 0.5*3) = 4.75, G0 = 1 + 0.5 * (0.5*2 + 0.5*4.75) = 2.6875.
    ('td_lambda', advantages.td_lambda(0.5, 1, lambda_=0.5), None,
     [[-1.3125, 2.75, -5.0]]),
    # gae gives the same numbers.
    ('gae', advantages.gae(0.5, 1, lambda_=0.5), None,
     [[-1.3125, 2.75, -5.0]]),
])
def test_hand_computed(name, estimator, mask, expected, mode):
  del name
  # Copies: monte_carlo writes into NumPy inputs, as Trax's does.
  got = run(estimator, mode, R.copy(), G.copy(), V.copy(), D, mask)
  np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize('factory', [advantages.monte_carlo, advantages.td_k,
                                     advantages.td_lambda, advantages.gae])
def test_shapes_and_done_targets_as_in_trax_tests(factory):
  # After trax/rl/advantages_test.py: the length shrinks by the margin, and
  # at a done step values + advantages is the reward.
  rewards = np.array([[1, 1, 1]], np.float32)
  returns = np.array([[3, 2, 1]], np.float32)
  values = np.array([[2, 2, 2]], np.float32)
  mask = np.ones_like(rewards)
  last_done = np.array([[False, False, True]])
  for margin, length in [(1, 2), (2, 1)]:
    out = factory(gamma=1, margin=margin)(rewards, returns, values,
                                          last_done, mask)
    assert out.shape == (1, length)
    assert out.dtype == np.float32
  mid_done = np.array([[False, True, False]])
  values = np.array([[2, 2, 2]], np.float32)
  returns = np.array([[3, 2, 1]], np.float32)
  adv = factory(gamma=0.9, margin=1)(rewards, returns, values, mid_done,
                                     mask)
  if factory is advantages.monte_carlo:
    # Trax's monte_carlo zeroes the caller's values at done steps in place
    # (and so does ours), so values + advantages is the reward there too.
    np.testing.assert_allclose(values, [[2, 0, 2]])
  else:
    np.testing.assert_allclose(values, [[2, 2, 2]])
  np.testing.assert_allclose((values[:, :-1] + adv)[0, 1], rewards[0, 1])


@pytest.mark.parametrize('factory', [advantages.monte_carlo, advantages.td_k,
                                     advantages.td_lambda, advantages.gae])
def test_future_return_vanishes_exactly_where_discount_mask_is_on(factory):
  # After trax/rl/advantages_test.py, with gamma = 0.
  rewards = np.array([[1, 2, 3, 4]], np.float32)
  values = np.array([[5, 6, 7, 8]], np.float32)
  dones = np.zeros_like(rewards, bool)
  mask = np.array([[1, 0, 1, 0]], bool)
  returns = advantages.discounted_returns(
      rewards, advantages.mask_discount(0.0, mask))
  adv = factory(gamma=0.0, margin=1)(rewards, returns, values, dones, mask)
  target = (values[:, :-1] + adv)[0]
  on = mask[0, :-1]
  np.testing.assert_allclose(target[on], rewards[0, :-1][on])
  assert not np.allclose(target[~on], rewards[0, :-1][~on])


def test_helpers():
  mask = np.array([[1, 0, 1]])
  np.testing.assert_allclose(advantages.mask_discount(0.9, mask),
                             [[0.9, 1.0, 0.9]])
  np.testing.assert_allclose(
      advantages.discounted_returns(np.array([[1.0, 2.0, 3.0]]),
                                    np.array([[0.5, 0.0, 0.5]])),
      [[2.0, 2.0, 3.0]])
  # A [1, T] discount row applies to every row of the batch.
  np.testing.assert_allclose(
      advantages.discounted_returns(np.ones((2, 2)), np.array([[0.5, 0.5]])),
      [[1.5, 1.0], [1.5, 1.0]])
  graph = tf.function(advantages.discounted_returns)
  np.testing.assert_allclose(
      graph(tf.constant([[1.0, 2.0, 3.0]], tf.float64),
            tf.constant([[0.5, 0.0, 0.5]], tf.float64)), [[2.0, 2.0, 3.0]])
  assert advantages.common_args == ['gamma', 'margin']


def test_bad_discount_mask_is_explained():
  rewards, returns, values, dones = make_data()
  with pytest.raises(ValueError, match=r'gae: discount_mask.shape \(2, 9\) '
                     r'does not broadcast to rewards.shape \(4, 9\)'):
    advantages.gae(GAMMA, 1)(rewards, returns, values, dones,
                             np.ones((2, LENGTH)))
