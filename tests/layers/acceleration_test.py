"""Accelerate, on_cpu and on_accelerator."""

import json

import numpy as np
import pytest

from tfnp_trax import fastmath
from tfnp_trax import layers as tl
from tfnp_trax import shapes
from tfnp_trax.fastmath import numpy as jnp
from tests import _subprocess
from tests import _layer_testing as lt

_KEY = fastmath.random.get_prng(0)


def _mlp():
  return tl.Serial(tl.Dense(4), tl.Relu(), tl.Dense(2))


@pytest.mark.parametrize('jit', [True, False])
def test_output_equals_the_plain_layer(jit, rng):
  layer = _mlp()
  layer.init(shapes.ShapeDtype((6, 3)), rng=_KEY)
  fast = tl.Accelerate(layer, jit=jit)
  assert fast.n_devices == fastmath.local_device_count() == 1
  x = rng.normal(size=(6, 3)).astype(np.float32)
  np.testing.assert_allclose(fast(x), layer(x), rtol=1e-6, atol=1e-6)
  # NumPy int64/float64 inputs enter as 32-bit, as with the plain layer.
  np.testing.assert_allclose(fast(x.astype(np.float64)), layer(x), rtol=1e-6,
                             atol=1e-6)


def test_weights_state_and_rng_are_the_wrapped_layers():
  layer = _mlp()
  fast = tl.Accelerate(layer)
  weights, state = fast.init(shapes.ShapeDtype((2, 3)), rng=_KEY)
  # Same key, same weights as initializing the plain layer; no device axis.
  want, _ = _mlp().init(shapes.ShapeDtype((2, 3)), rng=_KEY)
  for got, ref in zip(fastmath.tree_flatten(weights),
                      fastmath.tree_flatten(want)):
    np.testing.assert_array_equal(got, ref)
  assert fast.weights is not None and len(fast.weights) == 3
  assert state == layer.state
  zeros = fastmath.nested_map(jnp.zeros_like, weights)
  fast.weights = zeros
  np.testing.assert_array_equal(layer(jnp.ones((2, 3))), np.zeros((2, 2)))
  fast.replicate_weights(weights)
  np.testing.assert_array_equal(fast.weights[0][0], weights[0][0])
  assert fast.rng is layer.rng and fast.sublayer is layer
  indented = str(layer).replace('\n', '\n  ')
  assert str(fast) == f'Accelerate[\n  {indented}\n]'


def test_state_updates_reach_the_wrapped_layer(rng):
  layer = tl.BatchNorm(axis=(0,), momentum=0.5)
  fast = tl.Accelerate(layer)
  fast.init(shapes.ShapeDtype((4, 3)))
  plain = tl.BatchNorm(axis=(0,), momentum=0.5)
  plain.init(shapes.ShapeDtype((4, 3)))
  x = rng.normal(size=(4, 3)).astype(np.float32)
  np.testing.assert_allclose(fast(x), plain(x), rtol=1e-5, atol=1e-5)
  for got, want in zip(fastmath.tree_flatten(layer.state),
                       fastmath.tree_flatten(plain.state)):
    np.testing.assert_allclose(got, want, rtol=1e-6)


@pytest.mark.parametrize('mode', lt.MODES)
def test_inside_a_model_and_compiled(mode, rng):
  inner = _mlp()
  model = tl.Serial(tl.Accelerate(inner), tl.Tanh())
  model.init(shapes.ShapeDtype((4, 3)), rng=_KEY)
  x = rng.normal(size=(4, 3)).astype(np.float32)
  want = np.tanh(np.asarray(inner(x)))
  np.testing.assert_allclose(lt.layer_outputs(model, x, mode), want,
                             rtol=1e-5, atol=1e-5)
  assert model.output_signature(shapes.ShapeDtype((4, 3))).shape == (4, 2)


def test_on_cpu_and_on_accelerator_keep_values():
  tree = (jnp.arange(3), {'w': jnp.ones((2,))})
  on_cpu = tl.on_cpu(tree)
  assert 'CPU' in on_cpu[0].device
  np.testing.assert_array_equal(on_cpu[1]['w'], np.ones(2))
  # No accelerator here: on_accelerator returns its input unchanged.
  assert tl.on_accelerator(tree) is tree


_FOUR_CPUS = """
    import json
    import numpy as np
    import distribute
    distribute.split_cpu(4)
    import tensorflow as tf
    from tfnp_trax import fastmath
    from tfnp_trax import layers as tl
    from tfnp_trax import shapes
    from tfnp_trax.fastmath import numpy as jnp

    out = {}
    layer = tl.Serial(tl.Dense(4), tl.Relu(), tl.Dense(2))
    layer.init(shapes.ShapeDtype((8, 3)), rng=fastmath.random.get_prng(0))
    fast = tl.Accelerate(layer)
    x = np.random.RandomState(0).normal(size=(8, 3)).astype(np.float32)
    out['n_devices'] = fast.n_devices
    out['max_diff'] = float(np.max(np.abs(fast(x) - layer(x))))
    # Each row reports the batch size its call saw.
    seen = tl.Fn('BatchSeen', lambda x: jnp.zeros_like(x[:, 0]) + x.shape[0])
    out['seen_8'] = np.asarray(tl.Accelerate(seen)(x)).tolist()
    out['seen_6'] = np.asarray(tl.Accelerate(seen)(x[:6])).tolist()
    out['seen_8_on_2'] = np.asarray(
        tl.Accelerate(seen, n_devices=2)(x)).tolist()
    total = tl.Fn('Total', lambda x: jnp.sum(x))
    out['totals'] = np.asarray(tl.Accelerate(total)(x)).tolist()
    out['row_sums'] = x.reshape(4, 2, 3).sum(axis=(1, 2)).tolist()
    try:
      tl.Accelerate(seen, n_devices=8)(x)
    except ValueError as e:
      out['too_many'] = str(e)
    # Inside a replica the batch is split already: no second split.
    strategy = tf.distribute.MirroredStrategy(
        [d.name for d in tf.config.list_logical_devices('CPU')[:2]])
    nested = tl.Accelerate(seen)
    result = strategy.run(tf.function(lambda: nested(tf.constant(x))))
    out['in_replica'] = np.asarray(
        strategy.experimental_local_results(result)[0]).tolist()
    print('RESULT' + json.dumps(out))
    """


@pytest.fixture(scope='module')
def four_cpu_results():
  text = _subprocess.run_python(_FOUR_CPUS, timeout=240)
  line = [l for l in text.splitlines() if l.startswith('RESULT')][-1]
  return json.loads(line[len('RESULT'):])


def test_four_devices_split_the_batch(four_cpu_results):
  r = four_cpu_results
  assert r['n_devices'] == 4
  assert r['max_diff'] < 1e-5
  assert r['seen_8'] == [2.0] * 8
  assert r['seen_6'] == [2.0] * 6  # Padded to 8: two rows per device.
  assert r['seen_8_on_2'] == [4.0] * 8
  assert r['in_replica'] == [8.0] * 8


def test_four_devices_scalar_outputs_one_per_device(four_cpu_results):
  np.testing.assert_allclose(four_cpu_results['totals'],
                             four_cpu_results['row_sums'], rtol=1e-5)


def test_four_devices_too_many_requested(four_cpu_results):
  assert four_cpu_results['too_many'].startswith(
      'Accelerate: n_devices=8 but this host has only 4 local device(s)')
