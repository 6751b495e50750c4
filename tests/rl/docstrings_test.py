"""Runs the examples in the rl docstrings."""

import doctest

import pytest

from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.rl import _spaces
from tfnp_trax.rl import advantages
from tfnp_trax.rl import awr
from tfnp_trax.rl import distributions
from tfnp_trax.rl import value_aggregation


@pytest.mark.parametrize('module', [_spaces, advantages, awr, distributions,
                                    value_aggregation])
def test_docstring_examples(module):
  results = doctest.testmod(module, extraglobs={'jnp': jnp})
  assert results.failed == 0 and results.attempted > 0
