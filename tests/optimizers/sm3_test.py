"""SM3 against a NumPy reference, for every momentum type and grafting."""

import numpy as np
import pytest

from tests.optimizers import _harness
from tfnp_trax import optimizers
from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.optimizers import MomentumType


def _cover(accs, shape):
  if len(shape) <= 1:
    return accs[0]
  out = np.full(shape, np.inf)
  for i, a in enumerate(accs):
    others = tuple(j for j in range(len(shape)) if j != i)
    out = np.minimum(out, np.expand_dims(a, axis=others))
  return out


def _project(nu):
  if nu.ndim <= 1:
    return [nu]
  return [nu.max(axis=tuple(j for j in range(nu.ndim) if j != i))
          for i in range(nu.ndim)]


def _precondition(g, nu):
  return np.where(nu > 0, g / (np.sqrt(nu) + 1e-16), 0.0)


def _reference(lr, beta, b2, wd, momentum_type):
  def ref_init(w):
    sizes = [w.shape] if w.ndim <= 1 else [(n,) for n in w.shape]
    return (np.zeros_like(w), [np.zeros(s) for s in sizes],
            [np.zeros(s) for s in sizes])

  def ref_update(step, g, w, state):
    del step
    m, acc, graft = state
    nu = b2 * _cover(acc, w.shape) + (1.0 if b2 == 1 else 1 - b2) * g ** 2
    pg = _precondition(g, nu)
    if b2 != 1:
      nu_graft = _cover(graft, w.shape) + g ** 2
      pg_graft = _precondition(g, nu_graft)
      pg = pg * np.linalg.norm(pg_graft) / (np.linalg.norm(pg) + 1e-16)
      graft = _project(nu_graft)
    pg = pg + wd * w
    u = pg
    if beta > 0:
      if momentum_type == MomentumType.EMA:
        m = beta * m + (1 - beta) * pg
        u = m
      elif momentum_type == MomentumType.HEAVY_BALL:
        m = beta * m + pg
        u = m
      else:
        m = beta * m + pg
        u = beta * m + pg
    return w - lr * u, (m, _project(nu), graft)
  return ref_init, ref_update


@pytest.mark.parametrize('mode', ['eager', 'jit'])
@pytest.mark.parametrize('beta, b2, wd, momentum_type', [
    (0.9, 1.0, 0.0, MomentumType.EMA),  # Trax defaults.
    (0.9, 1.0, 0.0, MomentumType.HEAVY_BALL),
    (0.8, 1.0, 0.01, MomentumType.NESTEROV),
    (0.0, 1.0, 0.0, MomentumType.EMA),
    (0.9, 0.9, 0.01, MomentumType.EMA),  # Averaged moments, grafted.
])
def test_sm3_matches_numpy(beta, b2, wd, momentum_type, mode):
  lr = 0.05
  opt = optimizers.SM3(learning_rate=lr, momentum=beta,
                       second_moment_averaging=b2, weight_decay=wd,
                       momentum_type=momentum_type)
  ref_init, ref_update = _reference(lr, beta, b2, wd, momentum_type)
  _harness.check_against_reference(opt, ref_init, ref_update, mode=mode,
                                   rtol=5e-5, atol=5e-6)


def test_sm3_zero_accumulator_gives_zero_step():
  opt = optimizers.SM3(learning_rate=1.0, momentum=0.0)
  w = jnp.asarray([1.0, 1.0], jnp.float32)
  g = jnp.asarray([0.0, 2.0], jnp.float32)
  new_w, slots = opt.update(0, g, w, opt.init(w), opt.opt_params)
  np.testing.assert_allclose(new_w.numpy(), [1.0, 0.0], atol=1e-6)
  _, accumulators, _ = slots
  np.testing.assert_allclose(accumulators[0].numpy(), [0.0, 4.0])


@pytest.mark.parametrize('kwargs, n_graft, has_momentum', [
    ({}, 0, True),
    ({'momentum': 0.0}, 0, False),
    ({'second_moment_averaging': 0.5}, 3, True),
])
def test_sm3_slots(kwargs, n_graft, has_momentum):
  momentum, accumulators, graft_accumulators = optimizers.SM3(
      **kwargs).init(jnp.zeros((2, 3, 4), jnp.float32))
  assert [tuple(a.shape) for a in accumulators] == [(2,), (3,), (4,)]
  assert isinstance(accumulators, list)
  assert isinstance(graft_accumulators, list)
  assert len(graft_accumulators) == n_graft
  # Without momentum Trax keeps an empty list in the momentum position.
  assert (not isinstance(momentum, list)) == has_momentum


def test_sm3_defaults_follow_trax():
  _harness.assert_opt_params(optimizers.SM3(), {
      'learning_rate': 0.01, 'momentum': 0.9,
      'second_moment_averaging': 1.0, 'weight_decay': 0.0})


def test_sm3_bad_momentum_type():
  with pytest.raises(ValueError, match=r"SM3: momentum_type must be one of "
                     r".*MomentumType.EMA.*got 'ema'"):
    optimizers.SM3(momentum_type='ema')
