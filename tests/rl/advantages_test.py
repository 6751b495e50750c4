"""Advantage estimators against hand-written scalar loops."""

import numpy as np
import pytest

from tfnp_trax.rl import advantages

GAMMA, LAMBDA = 0.9, 0.7


def make_inputs(seed=0, batch=3, length=7, masked=False):
  rng = np.random.default_rng(seed)
  rewards = rng.normal(size=(batch, length))
  values = rng.normal(size=(batch, length))
  dones = np.zeros((batch, length), bool)
  dones[0, 2] = dones[1, 4] = dones[2, 0] = dones[2, 5] = True
  mask = np.ones((batch, length))
  if masked:
    mask[0, 1] = mask[1, 3] = mask[2, 2] = 0
  returns = rng.normal(size=(batch, length))
  return rewards, returns, values, dones, mask


def ref_gae(rewards, values, dones, mask, margin):
  batch, length = rewards.shape
  out = np.zeros((batch, length - margin))
  for b in range(batch):
    acc = 0.0
    for i in reversed(range(length - 1)):
      g = GAMMA if mask[b, i] else 1.0
      lam = LAMBDA if mask[b, i] else 1.0
      live = 0.0 if dones[b, i] else 1.0
      delta = rewards[b, i] + live * g * values[b, i + 1] - values[b, i]
      acc = delta + live * g * lam * acc
      if i < length - margin:
        out[b, i] = acc
  return out


def ref_lambda_return_from_n_step(rewards, values, dones, margin):
  """lambda-returns as the weighted mix of n-step returns (no mask)."""
  batch, length = rewards.shape
  out = np.zeros((batch, length - margin))
  for b in range(batch):
    for i in range(length - margin):
      horizon = length - 1 - i

      def n_step(n):
        total, discount = 0.0, 1.0
        for j in range(n):
          total += discount * rewards[b, i + j]
          if dones[b, i + j]:
            return total
          discount *= GAMMA
        return total + discount * values[b, i + n]
      mix = sum((1 - LAMBDA) * LAMBDA ** (n - 1) * n_step(n)
                for n in range(1, horizon))
      mix += LAMBDA ** (horizon - 1) * n_step(horizon)
      out[b, i] = mix - values[b, i]
  return out


def ref_td_k(rewards, values, dones, mask, k, stop_at_done):
  """Trax's TD-k (whole window, target = reward at a done step); with
  `stop_at_done` the window ends at its first done instead."""
  batch, length = rewards.shape
  out = np.zeros((batch, length - k))
  for b in range(batch):
    for i in range(length - k):
      total, discount, ended = 0.0, 1.0, False
      for j in range(k):
        total += discount * rewards[b, i + j]
        if stop_at_done and dones[b, i + j]:
          ended = True
          break
        discount *= GAMMA if mask[b, i + j] else 1.0
      if not ended:
        total += discount * values[b, i + k]
      if dones[b, i]:
        total = rewards[b, i]
      out[b, i] = total - values[b, i]
  return out


@pytest.mark.parametrize('masked', [False, True])
@pytest.mark.parametrize('margin', [1, 3])
def test_gae_matches_loop(masked, margin):
  r, ret, v, d, m = make_inputs(masked=masked)
  got = advantages.gae(GAMMA, margin, LAMBDA)(r, ret, v, d, m)
  np.testing.assert_allclose(got, ref_gae(r, v, d, m, margin), rtol=1e-12)


@pytest.mark.parametrize('margin', [1, 2])
def test_td_lambda_is_a_mix_of_n_step_returns(margin):
  r, ret, v, d, _ = make_inputs(seed=1)
  got = advantages.td_lambda(GAMMA, margin, LAMBDA)(r, ret, v, d)
  np.testing.assert_allclose(
      got, ref_lambda_return_from_n_step(r, v, d, margin), rtol=1e-10)


@pytest.mark.parametrize('masked', [False, True])
def test_td_lambda_equals_gae(masked):
  r, ret, v, d, m = make_inputs(seed=2, masked=masked)
  np.testing.assert_allclose(
      advantages.td_lambda(GAMMA, 1, LAMBDA)(r, ret, v, d, m),
      advantages.gae(GAMMA, 1, LAMBDA)(r, ret, v, d, m), rtol=1e-10)


@pytest.mark.parametrize('stop_at_done', [False, True])
@pytest.mark.parametrize('masked', [False, True])
@pytest.mark.parametrize('k', [1, 2, 4])
def test_td_k_matches_loop(masked, k, stop_at_done):
  r, ret, v, d, m = make_inputs(seed=3, masked=masked)
  got = advantages.td_k(GAMMA, k, stop_at_done=stop_at_done)(r, ret, v, d, m)
  np.testing.assert_allclose(got, ref_td_k(r, v, d, m, k, stop_at_done),
                             rtol=1e-12)


def test_td_k_variants_differ_only_when_an_episode_ends_inside_a_window():
  r, ret, v, d, m = make_inputs(seed=3)
  trax_way = advantages.td_k(GAMMA, 3)(r, ret, v, d, m)
  stopped = advantages.td_k(GAMMA, 3, stop_at_done=True)(r, ret, v, d, m)
  differs = ~np.isclose(trax_way, stopped, rtol=1e-12, atol=0.0)
  inside = np.zeros_like(differs)
  for i in range(differs.shape[1]):
    inside[:, i] = d[:, i + 1:i + 3].any(axis=1) & ~d[:, i]
  np.testing.assert_array_equal(differs, inside)
  np.testing.assert_allclose(advantages.td_k(GAMMA, 1)(r, ret, v, d, m),
                             advantages.td_k(GAMMA, 1, stop_at_done=True)(
                                 r, ret, v, d, m), rtol=1e-12)


def test_monte_carlo_zeroes_values_where_done():
  r, ret, v, d, _ = make_inputs(seed=4)
  got = advantages.monte_carlo(GAMMA, 2)(r, ret, v, d)
  expected = np.zeros((3, 5))
  for b in range(3):
    for i in range(5):
      expected[b, i] = r[b, i] if d[b, i] else ret[b, i] - v[b, i]
  np.testing.assert_allclose(got, expected, rtol=1e-12)


def test_discounted_returns_and_mask_discount():
  r = np.array([[1.0, 2.0, 3.0]])
  gammas = np.array([[0.5, 0.0, 0.5]])
  np.testing.assert_allclose(advantages.discounted_returns(r, gammas),
                             [[1 + 0.5 * 2, 2.0, 3.0]])
  np.testing.assert_allclose(
      advantages.mask_discount(0.9, np.array([1, 0, 1])), [0.9, 1.0, 0.9])


def test_monte_carlo_writes_into_numpy_inputs_as_trax_does():
  # trax/rl/advantages.py, monte_carlo: `returns[dones] = rewards[dones]`
  # and `values[dones] = 0` change the caller's arrays; the other
  # estimators leave every input as it was.
  r, ret, v, d, m = make_inputs(seed=5)
  assert d.any() and (~d).any()
  want_ret, want_v = np.where(d, r, ret), np.where(d, 0.0, v)
  copies = [x.copy() for x in (r, d)]
  advantages.monte_carlo(GAMMA, 1)(r, ret, v, d)
  np.testing.assert_array_equal(ret, want_ret)
  np.testing.assert_array_equal(v, want_v)
  for before, after in zip(copies, (r, d)):
    np.testing.assert_array_equal(before, after)
  r, ret, v, d, m = make_inputs(seed=6)
  copies = [x.copy() for x in (r, ret, v, d, m)]
  for estimator in (advantages.td_k, advantages.td_lambda, advantages.gae):
    estimator(GAMMA, 1)(r, ret, v, d, m)
    for before, after in zip(copies, (r, ret, v, d, m)):
      np.testing.assert_array_equal(before, after)


def test_bad_shapes_and_margins_are_explained():
  r, ret, v, d, _ = make_inputs()
  with pytest.raises(ValueError, match=r'gae: values.shape \(3, 6\) does '
                     r'not match rewards.shape \(3, 7\)'):
    advantages.gae(GAMMA, 1)(r, ret, v[:, :6], d)
  with pytest.raises(ValueError, match=r'td_k: margin 0 must be in \[1, 7\]'):
    advantages.td_k(GAMMA, 0)(r, ret, v, d)
