"""Shared checks run over every entry of the conformance registry.

- eager and XLA (`jit_compile=True`) agree (eager and `fastmath.jit` for
  stochastic entries, whose XLA random streams differ);
- a SavedModel loaded where tfnp_trax cannot be imported gives the same
  outputs;
- AsKeras gives the same outputs (and state updates);
- both replicas of a MirroredStrategy give the single-device outputs;
- float outputs follow the input dtype (float32, bfloat16).
"""

import numpy as np
import pytest
import tensorflow as tf

from tests.conformance import _runs
from tests.conformance import _subprocess_checks
from tests.conformance import registry
from tfnp_trax import export
from tfnp_trax import fastmath


@pytest.mark.parametrize('name', registry.entry_names('compile'))
def test_eager_and_xla_agree(name):
  # Graphs without XLA (tf.function) are compared with eager runs by the
  # SavedModel, ONNX and LiteRT checks, which trace every entry too.
  entry = registry.get(name)
  layer = registry.build(entry)
  x = registry.make_inputs(entry)
  eager = _runs.native(entry, layer, x)
  if entry.stochastic:
    # XLA's random streams differ from eager ones; a graph's do not.
    jitted = _runs.native(entry, layer, x, fastmath.jit)
    _runs.assert_trees_close(jitted, eager, entry.tolerance, f'{name} jit')
  else:
    xla = _runs.native(entry, layer, x,
                       lambda f: fastmath.jit(f, jit_compile=True))
    _runs.assert_trees_close(xla, eager, entry.tolerance, f'{name} xla')


@pytest.fixture(scope='module')
def saved_model_results(tmp_path_factory):
  root = str(tmp_path_factory.mktemp('conformance_savedmodels'))
  return _subprocess_checks.saved_model_round_trip(
      root, registry.entry_names('saved_model'))


@pytest.mark.parametrize('name', registry.entry_names('saved_model'))
def test_saved_model_round_trip_without_tfnp_trax(name, saved_model_results):
  native, loaded = saved_model_results[name]
  _runs.assert_trees_close(loaded, native, registry.get(name).tolerance,
                           f'{name} savedmodel')


@pytest.mark.parametrize('name', registry.entry_names('keras'))
def test_as_keras_matches_native(name):
  entry = registry.get(name)
  layer = registry.build(entry)
  x = registry.make_inputs(entry)
  expected, expected_state = _runs.native(entry, layer, x)
  wrapped = export.AsKeras(layer, rng=_runs.KEY)
  keras_x = list(x) if isinstance(x, tuple) else x
  _runs.assert_trees_close(_runs.as_tuple(wrapped(keras_x, training=False)),
                           _runs.as_tuple(expected), entry.tolerance,
                           f'{name} keras')
  if entry.has_state:
    # A training call runs on the second half of the split key and writes
    # the new state into the non-trainable variables.
    key = fastmath.random.split(_runs.KEY, 2)[1]
    _, state = _runs.to_numpy(layer.pure_fn(x, layer.weights, layer.state,
                                            key))
    wrapped(keras_x, training=True)
    n = len(fastmath.tree_flatten(state))
    got = [v.numpy() for v in wrapped.non_trainable_weights][:n]
    _runs.assert_trees_close(got, fastmath.tree_flatten(state),
                             entry.tolerance, f'{name} keras state')


@pytest.fixture(scope='module')
def replica_report():
  return _subprocess_checks.mirrored_replicas(
      registry.entry_names('mirrored'))


@pytest.mark.parametrize('name', registry.entry_names('mirrored'))
def test_replicas_agree_under_mirrored_strategy(name, replica_report):
  assert replica_report[name] <= registry.get(name).tolerance


def _float_entries():
  return [n for n in registry.entry_names('dtype')
          if registry.get(n).follows_dtype]


@pytest.mark.parametrize('dtype', ['float32', 'bfloat16'])
@pytest.mark.parametrize('name', _float_entries())
def test_output_dtype_follows_input_dtype(name, dtype):
  entry = registry.get(name)
  layer = registry.build(entry)
  np_dtype = tf.as_dtype(dtype).as_numpy_dtype

  def cast(a):
    return a.astype(np_dtype) if a.dtype.kind == 'f' else a
  x = fastmath.nested_map(cast, registry.make_inputs(entry))
  y, _ = layer.pure_fn(x, layer.weights, layer.state, _runs.KEY)
  outputs = [tf.convert_to_tensor(a) for a in fastmath.tree_flatten(y)]
  floats = [a for a in outputs if a.dtype.is_floating]
  assert floats, f'{name} has no float outputs; set follows_dtype=False'
  assert [a.dtype.name for a in floats] == [dtype] * len(floats)
  assert all(np.all(np.isfinite(np.asarray(a, np.float32))) for a in floats)


def test_every_public_layer_and_model_is_registered():
  covered = {name for e in registry.ENTRIES for name in e.covers}
  missing = [n for n in registry.public_constructors()
             if n not in covered and n not in registry.NOT_COVERED]
  assert not missing, (f'add registry entries (or NOT_COVERED reasons) for '
                       f'{missing}')
