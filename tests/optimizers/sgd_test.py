"""SGD against its NumPy equation."""

import pytest

from tests.optimizers import _harness
from tfnp_trax import optimizers


@pytest.mark.parametrize('mode', ['eager', 'jit'])
def test_sgd_matches_numpy(mode):
  lr = 0.1

  def ref_update(step, g, w, state):
    del step
    return w - lr * g, state

  _harness.check_against_reference(optimizers.SGD(learning_rate=lr),
                                   lambda w: None, ref_update, mode=mode)


def test_sgd_defaults_follow_trax():
  _harness.assert_opt_params(optimizers.SGD(), {'learning_rate': 0.01})
