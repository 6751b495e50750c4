"""Real-Trax recordings of relative attention, resampling, rotary and Hourglass.

`tests/testdata/rel_attention/` holds, per case, what Trax 1.4.1 printed for
the layer, its n_in/n_out and weight leaf shapes, and (for most cases) its
inputs, weights and eval-mode outputs (see the README and the generator
there). `build_case` rebuilds the same layer here from the same arguments.
"""

import numpy as np

from tests import _fixtures
from tfnp_trax import fastmath
from tfnp_trax import shapes
from tfnp_trax.fastmath import numpy as jnp

__all__ = ['record', 'inputs', 'outputs', 'weights', 'init_with_trax_weights',
           'assert_structure_matches', 'assert_outputs_match']

_RECORDING = _fixtures.Recording('rel_attention', 'cases.json',
                                 'fixtures.npz')
_arrays = _RECORDING.numbered


def record(name):
  """The JSON record: repr, n_in, n_out, weight_shapes, values."""
  return _RECORDING.records[name]


def inputs(name):
  """The recorded input: one array, or a tuple of them."""
  xs = _arrays(name, 'x')
  return xs[0] if len(xs) == 1 else tuple(xs)


def outputs(name):
  """Trax's eval-mode outputs, as a list of NumPy arrays."""
  return _arrays(name, 'y')


def weights(name):
  return _arrays(name, 'w')


def _init(layer, name):
  layer.init(shapes.signature(inputs(name)), rng=fastmath.random.get_prng(0))
  return layer


def init_with_trax_weights(layer, name):
  """Inits `layer` for the case's inputs and loads Trax's weight leaves."""
  _init(layer, name)
  leaves = [jnp.asarray(w) for w in weights(name)]
  if leaves:
    layer.weights, _ = fastmath.tree_unflatten(leaves, layer.weights)
  return layer


def assert_structure_matches(name, layer):
  """`layer` has Trax's n_in/n_out, weight shapes and printout."""
  want = record(name)
  _init(layer, name)
  got_shapes = [list(w.shape) for w in fastmath.tree_flatten(layer.weights)]
  assert (layer.n_in, layer.n_out) == (want['n_in'], want['n_out'])
  assert got_shapes == want['weight_shapes']
  assert str(layer) == want['repr']


def assert_outputs_match(name, layer, modes=('eager',), atol=2e-6):
  """Given Trax's weights, `layer` gives Trax's outputs in every mode."""
  from tests import _layer_testing as lt  # pylint: disable=g-import-not-at-top
  layer = init_with_trax_weights(layer, name)
  for mode in modes:
    ys, _ = lt.run_layer(layer, inputs(name), mode)
    ys = ys if isinstance(ys, (tuple, list)) else (ys,)
    want = outputs(name)
    assert len(ys) == len(want), (name, mode)
    for got, expected in zip(ys, want):
      got = np.asarray(got)
      assert got.dtype == expected.dtype, (name, mode, got.dtype)
      np.testing.assert_allclose(got.astype(np.float64),
                                 expected.astype(np.float64), rtol=1e-5,
                                 atol=atol, err_msg=f'{name} ({mode})')


