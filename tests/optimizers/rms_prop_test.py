"""RMSProp against a NumPy reference."""

import numpy as np
import pytest

from tests.optimizers import _harness
from tfnp_trax import optimizers


@pytest.mark.parametrize('mode', ['eager', 'jit'])
def test_rms_prop_matches_numpy(mode):
  lr, gamma, eps = 0.01, 0.8, 1e-8

  def ref_update(step, g, w, avg):
    del step
    avg = gamma * avg + (1 - gamma) * g ** 2
    return w - lr * g / (np.sqrt(avg) + eps), avg

  opt = optimizers.RMSProp(learning_rate=lr, gamma=gamma, eps=eps)
  # The running average starts at ones.
  _harness.check_against_reference(opt, np.ones_like, ref_update, mode=mode)


def test_rms_prop_defaults_follow_trax():
  _harness.assert_opt_params(optimizers.RMSProp(), {
      'learning_rate': 0.001, 'gamma': 0.9, 'eps': 1e-8})
