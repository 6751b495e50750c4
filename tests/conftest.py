"""Test setup shared by the whole suite.

TensorFlow's NumPy behaviour is switched on by importing tfnp_trax.fastmath.
Tests that need several logical devices or processes start their own
subprocess (see tests/_subprocess.py), because logical devices must be
configured before TensorFlow initialises and this process has already done so.

Determinism: op determinism is on for every test in this process, and each
test starts from the same Python, NumPy and TensorFlow seeds, so a test gives
the same numbers on every run on one machine, whatever else ran before it
(pytest-xdist workers run test files in varying orders). TensorFlow
does not promise the same numbers on another CPU (its kernels pick SIMD code
paths and thread splits by machine), so tests that assert learning set their
thresholds from the spread over seeds (see tests/rl/actor_critic_test.py).
Subprocesses started by tests do not inherit op determinism.
"""

import os
import random

os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')

import numpy as np  # pylint: disable=g-import-not-at-top
import pytest  # pylint: disable=g-import-not-at-top
import tensorflow as tf  # pylint: disable=g-import-not-at-top

from tfnp_trax import fastmath  # pylint: disable=g-import-not-at-top,unused-import

# With op determinism on, a random op without a seed raises instead of
# drawing from the OS (so does tf.timestamp); the fixture below gives every
# such op a seed. tfnp_trax itself draws with stateless ops and explicit keys.
tf.config.experimental.enable_op_determinism()


@pytest.fixture(autouse=True)
def _same_seeds_for_every_test():
  # Layers draw their default rng seed from Python's `random`; seeding it (and
  # NumPy's and TensorFlow's global seeds) per test makes a test's numbers
  # independent of which tests ran before it in the same worker.
  random.seed(0)
  np.random.seed(0)
  tf.random.set_seed(0)


@pytest.fixture(autouse=True)
def _nondeterministic_ops(request):
  """Turns op determinism off for tests marked `nondeterministic_ops`.

  Some kernels have no deterministic version and raise while determinism is
  on (e.g. MaxPool's gradient under XLA); such a test says so with the
  marker and its reason. TensorFlow's public API can only switch determinism
  on, so the switch back uses its framework module.
  """
  if request.node.get_closest_marker('nondeterministic_ops') is None:
    yield
    return
  from tensorflow.python.framework import config as tf_config  # pylint: disable=g-import-not-at-top,g-direct-tensorflow-import
  tf_config.disable_op_determinism()
  try:
    yield
  finally:
    tf.config.experimental.enable_op_determinism()


@pytest.fixture
def rng():
  return np.random.default_rng(0)
