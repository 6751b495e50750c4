"""Momentum (plain and Nesterov) against NumPy references."""

import numpy as np
import pytest

from tests.optimizers import _harness
from tfnp_trax import optimizers


@pytest.mark.parametrize('mode', ['eager', 'jit'])
@pytest.mark.parametrize('nesterov', [True, False])
def test_momentum_matches_numpy(nesterov, mode):
  lr, mass, wd = 0.1, 0.8, 0.01

  def ref_update(step, g, w, v):
    del step
    v = mass * v + g
    u = mass * v + g if nesterov else v
    return (1 - wd) * w - lr * u, v

  opt = optimizers.Momentum(learning_rate=lr, mass=mass,
                            weight_decay_rate=wd, nesterov=nesterov)
  _harness.check_against_reference(opt, np.zeros_like, ref_update, mode=mode)


def test_momentum_defaults_follow_trax():
  _harness.assert_opt_params(optimizers.Momentum(), {
      'learning_rate': 0.01, 'mass': 0.9, 'weight_decay_rate': 1e-5})
