"""Runs functions and layers eagerly, under `fastmath.jit`, or under XLA.

Tests parametrize over `MODES` so that each numeric check holds in all three
execution modes.
"""

import numpy as np

from tfnp_trax import fastmath

MODES = ('eager', 'jit', 'xla')


def compile_fn(f, mode):
  """`f` itself, or `f` compiled by `fastmath.jit` (with XLA for 'xla')."""
  if mode == 'eager':
    return f
  return fastmath.jit(f, jit_compile=(mode == 'xla'))


def run_layer(layer, x, mode, weights=None, state=None, rng=None):
  """Runs `layer.pure_fn` in `mode`; returns `(outputs, new_state)`."""
  weights = layer.weights if weights is None else weights
  state = layer.state if state is None else state
  rng = fastmath.random.get_prng(0) if rng is None else rng

  def apply(xs, w, s, r):
    return layer.pure_fn(xs, w, s, r)
  return compile_fn(apply, mode)(x, weights, state, rng)


def to_numpy(tree):
  """Converts every array leaf of `tree` to a NumPy array."""
  return fastmath.nested_map(np.asarray, tree)
