"""Real-Trax recordings of configurable Transformers and Reformers.

`tests/testdata/reformer/` holds, per case, what Trax 1.4.1 printed for the
model, its weight leaf shapes and, for some cases, its weights, inputs and
eval-mode outputs (see the README and generator there). These helpers load
a case and build tfnp_trax's model with Trax's weights.
"""

import numpy as np

from tests import _fixtures
from tfnp_trax import fastmath
from tfnp_trax import shapes
from tfnp_trax.fastmath import numpy as jnp

__all__ = ['record', 'inputs', 'outputs', 'init_with_trax_weights',
           'weight_shapes']

_RECORDING = _fixtures.Recording('reformer', 'models.json', 'models.npz')
_arrays = _RECORDING.numbered


def record(name):
  """The JSON record: repr, n_in, n_out, weight_shapes, values."""
  return _RECORDING.records[name]


def inputs(name):
  """The model input: one array, or a tuple of them."""
  xs = [jnp.asarray(x) for x in _arrays(name, 'x')]
  return xs[0] if len(xs) == 1 else tuple(xs)


def outputs(name):
  """Trax's eval-mode outputs, as a list of float64 NumPy arrays."""
  return [y.astype(np.float64) for y in _arrays(name, 'y')]


def weight_shapes(model):
  return [list(w.shape) for w in fastmath.tree_flatten(model.weights)]


def init_with_trax_weights(model, name):
  """Inits `model` for the case's inputs and loads Trax's weight leaves."""
  model.init(shapes.signature(inputs(name)),
             rng=fastmath.random.get_prng(0))
  leaves = [jnp.asarray(w) for w in _arrays(name, 'w')]
  model.weights, _ = fastmath.tree_unflatten(leaves, model.weights)
  return model


def assert_structure_matches(name, model):
  """`model` has Trax's n_in/n_out, weight shapes and repr for case `name`."""
  want = record(name)
  model.init(shapes.signature(inputs(name)), rng=fastmath.random.get_prng(0))
  assert (model.n_in, model.n_out) == (want['n_in'], want['n_out'])
  assert weight_shapes(model) == want['weight_shapes']
  assert str(model) == want['repr']


def assert_outputs_match(name, model, modes=('eager',)):
  """Given Trax's weights, `model` gives Trax's outputs in every mode."""
  from tests import _layer_testing as lt  # pylint: disable=g-import-not-at-top
  model = init_with_trax_weights(model, name)
  for mode in modes:
    ys, _ = lt.run_layer(model, inputs(name), mode)
    ys = ys if isinstance(ys, tuple) else (ys,)
    for got, want in zip(ys, outputs(name)):
      np.testing.assert_allclose(np.asarray(got, np.float64), want,
                                 rtol=1e-5, atol=1e-5, err_msg=mode)
