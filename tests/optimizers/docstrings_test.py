"""Runs the `Example:` sections of the optimizer docstrings."""

import doctest

import pytest

from tfnp_trax import optimizers

_MODULES = [optimizers, optimizers.base, optimizers.sgd, optimizers.momentum,
            optimizers.rms_prop, optimizers.adam, optimizers.adafactor,
            optimizers.sm3]


@pytest.mark.parametrize('module', _MODULES, ids=lambda m: m.__name__)
def test_docstring_examples(module):
  result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
  assert result.attempted > 0
  assert result.failed == 0
