"""Tests for distribute.collectives (psum, pmean, pmax, all_gather)."""

import json

import numpy as np
import pytest
import tensorflow as tf

from distribute import collectives
from tests import _subprocess


@pytest.mark.parametrize('op', [collectives.psum, collectives.pmean,
                                collectives.pmax, collectives.all_gather])
def test_identity_outside_multi_replica_context(op):
  x = {'a': tf.constant([1.0, -2.0]), 'b': tf.constant(3)}
  assert op(x) is x
  assert collectives.num_replicas() == 1
  assert collectives.multi_replica_context() is None


# Replica r holds x_r = base * (r + 1) + r, so the expected values are easy to
# write in NumPy from the same formula.
_FOUR_CPUS = """
    import json
    import numpy as np
    import distribute
    distribute.split_cpu(4)
    import tensorflow as tf
    from distribute import collectives as c

    s = distribute.get_strategy('mirrored')
    base = np.array([[1.0, -2.0, 0.5], [3.0, 0.0, -1.0]], np.float32)

    def value(ctx):
      r = ctx.replica_id_in_sync_group
      return {'x': tf.constant(base) * (r + 1) + r,
              'i': tf.constant([r, 10 - r], tf.int32)}

    def per_replica(v):
      r = tf.distribute.get_replica_context().replica_id_in_sync_group
      return {'n': tf.constant(c.num_replicas()) + 0 * r,
              'psum': c.psum(v['x']), 'pmean': c.pmean(v['x']),
              'pmax': c.pmax(v['x']), 'pmax_int': c.pmax(v['i']),
              'gather': c.all_gather(v['x']),
              'gather1': c.all_gather(v['x'], axis=1),
              'nest': c.psum({'a': v['x'], 'b': (v['x'] * 2,)})}

    out = {}
    for mode in ('eager', 'function'):
      run = lambda v: s.run(per_replica, args=(v,))
      if mode == 'function':
        run = tf.function(run)
      res = run(s.experimental_distribute_values_from_function(value))
      out[mode] = [
          tf.nest.map_structure(lambda t: np.asarray(t).tolist(),
                                tf.nest.map_structure(
                                    lambda v, i=i: s.experimental_local_results(v)[i],
                                    res))
          for i in range(4)]
    print(json.dumps(out))
    """


@pytest.fixture(scope='module')
def four_cpu_results():
  return json.loads(_subprocess.run_python(_FOUR_CPUS, timeout=180))


@pytest.mark.parametrize('mode', ['eager', 'function'])
def test_collectives_match_numpy_on_four_replicas(four_cpu_results, mode):
  base = np.array([[1.0, -2.0, 0.5], [3.0, 0.0, -1.0]], np.float64)
  xs = np.stack([base * (r + 1) + r for r in range(4)])
  ints = np.array([[r, 10 - r] for r in range(4)])
  for got in four_cpu_results[mode]:
    assert got['n'] == 4
    np.testing.assert_allclose(got['psum'], xs.sum(0), rtol=1e-6)
    np.testing.assert_allclose(got['pmean'], xs.mean(0), rtol=1e-6)
    np.testing.assert_allclose(got['pmax'], xs.max(0), rtol=1e-6)
    np.testing.assert_array_equal(got['pmax_int'], ints.max(0))
    np.testing.assert_allclose(got['gather'], np.concatenate(xs, 0))
    np.testing.assert_allclose(got['gather1'], np.concatenate(xs, 1))
    np.testing.assert_allclose(got['nest']['a'], xs.sum(0), rtol=1e-6)
    np.testing.assert_allclose(got['nest']['b'][0], 2 * xs.sum(0), rtol=1e-6)
