"""Tests for distribute.mapping.pmap."""

import json

import numpy as np
import pytest
import tensorflow as tf

from distribute import mapping
from tests import _subprocess


def _one():
  return tf.distribute.get_strategy()  # the default, one-replica strategy


def test_one_replica_local_output_is_one_tuple():
  x = np.arange(6, dtype=np.float32).reshape(1, 2, 3)
  got = mapping.pmap(lambda v: v * 2.0, strategy=_one())(x)
  assert isinstance(got, tuple) and len(got) == 1
  np.testing.assert_allclose(got[0], x[0] * 2.0)


def test_one_replica_stack_keeps_leading_axis():
  x = np.arange(6, dtype=np.float32).reshape(1, 2, 3)
  got = mapping.pmap(lambda v: {'y': v + 1.0}, strategy=_one(),
                     out='stack')(x)
  assert tuple(got['y'].shape) == (1, 2, 3)
  np.testing.assert_allclose(got['y'], x + 1.0)


def test_in_axes_none_passes_argument_whole():
  w = np.array([1.0, 2.0, 3.0], np.float32)
  x = np.ones((1, 4, 3), np.float32)
  got = mapping.pmap(lambda w, x: tf.linalg.matvec(x, w), in_axes=(None, 0),
                     strategy=_one())(w, x)
  np.testing.assert_allclose(got[0], np.full((4,), 6.0))


def test_default_strategy_is_scope_strategy():
  strategy = tf.distribute.OneDeviceStrategy('/cpu:0')
  with strategy.scope():
    assert mapping.default_strategy() is strategy


def test_leading_axis_error():
  with pytest.raises(ValueError,
                     match=r'pmap: argument 0 has shape \(8, 3\) but its axis '
                     r'0 must have one entry per replica \(1\)\. Split a batch '
                     r'with shard_batch\(x, 1\), replicate with '
                     r'for_n_devices\(x, 1\), or pass in_axes=None'):
    mapping.pmap(lambda v: v, strategy=_one())(np.zeros((8, 3)))


def test_scalar_argument_error():
  with pytest.raises(ValueError, match=r'pmap: argument 1 has shape \(\)'):
    mapping.pmap(lambda a, b: a, strategy=_one())(np.zeros((1,)), 2.0)


def test_bad_in_axes_errors():
  with pytest.raises(ValueError,
                     match=r'pmap: in_axes entries must be 0 \(split axis 0 '
                     r'over replicas\) or None .*got 1\.'):
    mapping.pmap(lambda v: v, in_axes=1, strategy=_one())(np.zeros((1,)))
  with pytest.raises(ValueError,
                     match=r'pmap: in_axes has 1 entries but the function was '
                     r'called with 2 arguments\.'):
    mapping.pmap(lambda a, b: a, in_axes=(0,), strategy=_one())(
        np.zeros((1,)), np.zeros((1,)))


def test_bad_out_error():
  with pytest.raises(ValueError,
                     match=r"pmap: out must be one of \('local', 'stack', "
                     r"'per_replica'\), got 'list'\."):
    mapping.pmap(lambda v: v, out='list')


_FOUR_CPUS = """
    import json
    import numpy as np
    import distribute
    distribute.split_cpu(4)
    import tensorflow as tf

    x = np.arange(24, dtype=np.float32).reshape(8, 3)
    w = np.array([0.5, -1.0, 2.0], np.float32)

    def step(w, xs):
      y = tf.linalg.matvec(xs, w)
      return {'y': y, 'total': distribute.psum(tf.reduce_sum(y))}

    f = distribute.pmap(step, in_axes=(None, 0))  # default: 4-CPU mirrored
    local = f(w, distribute.shard_batch(x, 4))
    stacked = distribute.pmap(step, in_axes=(None, 0), out='stack')(
        w, distribute.shard_batch(x, 4))
    per_replica = distribute.pmap(step, in_axes=(None, 0),
                                  out='per_replica')(
        w, distribute.shard_batch(x, 4))
    print(json.dumps({
        'n': distribute.default_strategy().num_replicas_in_sync,
        'local': [{k: np.asarray(v).tolist() for k, v in r.items()}
                  for r in local],
        'stack': {k: np.asarray(v).tolist() for k, v in stacked.items()},
        'per_replica_type': type(per_replica['y']).__name__,
        'jax_layout': np.asarray(distribute.pmap(lambda v: v * 2.0)(
            distribute.for_n_devices(np.float32(1.5), 4))[3]).tolist(),
    }))
    """


@pytest.fixture(scope='module')
def four_cpu_results():
  return json.loads(_subprocess.run_python(_FOUR_CPUS, timeout=180))


def test_pmap_on_four_replicas_matches_numpy(four_cpu_results):
  x = np.arange(24, dtype=np.float64).reshape(8, 3)
  y = x @ np.array([0.5, -1.0, 2.0])
  assert four_cpu_results['n'] == 4
  local = four_cpu_results['local']
  assert len(local) == 4
  for r, got in enumerate(local):
    np.testing.assert_allclose(got['y'], y[2 * r:2 * r + 2], rtol=1e-6)
    np.testing.assert_allclose(got['total'], y.sum(), rtol=1e-6)
  np.testing.assert_allclose(four_cpu_results['stack']['y'], y.reshape(4, 2),
                             rtol=1e-6)
  np.testing.assert_allclose(four_cpu_results['stack']['total'],
                             [y.sum()] * 4, rtol=1e-6)


def test_per_replica_output_and_replicated_input(four_cpu_results):
  assert four_cpu_results['per_replica_type'] == 'PerReplica'
  assert four_cpu_results['jax_layout'] == 3.0
