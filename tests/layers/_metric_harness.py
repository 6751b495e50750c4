"""Shared helpers for the metric and loss tests: run modes and error checks."""

import numpy as np
import pytest

from tfnp_trax import fastmath
from tfnp_trax import layers as tl

MODES = ('eager', 'jit', 'xla')


def run_layer(layer, inputs, mode):
  """Runs `layer` on the tuple `inputs` eagerly, under jit or under XLA."""
  inputs = tuple(inputs)
  if mode == 'eager':
    out = layer(inputs if len(inputs) > 1 else inputs[0])
  else:
    fn = fastmath.jit(lambda *xs: layer(xs if len(xs) > 1 else xs[0]),
                      jit_compile=(mode == 'xla'))
    out = fn(*inputs)
  return np.asarray(out)


def assert_close(got, want, rtol=1e-5, atol=1e-6):
  assert np.all(np.isfinite(got)), got
  np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


def assert_layer_value_error(layer, inputs, match):
  """The layer raises a LayerError carrying a ValueError matching `match`."""
  with pytest.raises(tl.LayerError, match=match) as info:
    layer(tuple(inputs))
  assert isinstance(info.value.__cause__, ValueError)
  return info.value


def batch(seed=0, shape=(4, 3), n_categories=5, zero_fraction=0.3):
  """Float32 logits, int32 targets and float32 weights (some zero)."""
  rng = np.random.default_rng(seed)
  out = rng.normal(size=shape + (n_categories,)).astype(np.float32)
  targets = rng.integers(0, n_categories, size=shape).astype(np.int32)
  weights = rng.uniform(0.5, 2.0, size=shape).astype(np.float32)
  weights[rng.random(shape) < zero_fraction] = 0.0
  return out, targets, weights
