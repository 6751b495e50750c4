"""Test setup shared by the whole suite.

TensorFlow's NumPy behaviour is switched on by importing tfnp_trax.fastmath.
Tests that need several logical devices or processes start their own
subprocess (see tests/_subprocess.py), because logical devices must be
configured before TensorFlow initialises and this process has already done so.
"""

import os

os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')

import numpy as np  # pylint: disable=g-import-not-at-top
import pytest  # pylint: disable=g-import-not-at-top

from tfnp_trax import fastmath  # pylint: disable=g-import-not-at-top,unused-import


@pytest.fixture
def rng():
  return np.random.default_rng(0)
