"""Tests for distribute.averaging.mean_or_pmean."""

import json

import numpy as np
import pytest

from distribute import averaging
from tests import _subprocess

_X = np.arange(24, dtype=np.float32).reshape(4, 2, 3) ** 1.5


@pytest.mark.parametrize('axis', [None, 0, 1, (1, 2)])
def test_one_device_is_plain_mean(axis):
  np.testing.assert_allclose(averaging.mean_or_pmean(1, _X, axis=axis),
                             np.mean(_X.astype(np.float64), axis=axis),
                             rtol=1e-6)


@pytest.mark.parametrize('axis', [None, 0])
def test_stacked_array_outside_replicas(axis):
  np.testing.assert_allclose(averaging.mean_or_pmean(4, _X, axis=axis),
                             np.mean(_X.astype(np.float64), axis=axis),
                             rtol=1e-6)


def test_nest_of_arrays():
  got = averaging.mean_or_pmean(4, {'a': _X, 'b': (_X * 2,)})
  np.testing.assert_allclose(got['b'][0], 2 * _X.astype(np.float64).mean(),
                             rtol=1e-6)


def test_bad_axis_error():
  with pytest.raises(ValueError,
                     match=r'mean_or_pmean: axis must be None or 0 when '
                     r'n_devices > 1 \(axis 0 is the device axis\), got '
                     r'axis=1 with n_devices=4\.'):
    averaging.mean_or_pmean(4, _X, axis=1)


_FOUR_CPUS = """
    import json
    import numpy as np
    import distribute
    distribute.split_cpu(4)
    import tensorflow as tf
    from distribute.averaging import mean_or_pmean

    s = distribute.get_strategy('mirrored')
    x = np.arange(24, dtype=np.float32).reshape(4, 2, 3) ** 1.5
    dist = s.experimental_distribute_values_from_function(
        lambda ctx: tf.constant(x[ctx.replica_id_in_sync_group]))

    @tf.function
    def in_replicas(v):
      return s.run(lambda t: (mean_or_pmean(4, t), mean_or_pmean(4, t, 0)),
                   args=(v,))

    out = {'replica': [[np.asarray(t).tolist() for t in
                        (s.experimental_local_results(a)[i],
                         s.experimental_local_results(b)[i])]
                       for a, b in [in_replicas(dist)] for i in range(4)]}
    with s.scope():
      out['scope'] = [np.asarray(mean_or_pmean(4, dist)).tolist(),
                      np.asarray(mean_or_pmean(4, dist, axis=0)).tolist()]
    for label, call in [
        ('mismatch', lambda: s.run(lambda t: mean_or_pmean(2, t),
                                   args=(dist,))),
        ('outside', lambda: mean_or_pmean(4, dist))]:
      try:
        call()
      except ValueError as e:
        out[label] = str(e)
    print(json.dumps(out))
    """


@pytest.fixture(scope='module')
def four_cpu_results():
  return json.loads(_subprocess.run_python(_FOUR_CPUS, timeout=180))


def test_inside_replicas_equals_mean_over_full_data(four_cpu_results):
  full = _X.astype(np.float64)
  for mean_all, mean_dev in four_cpu_results['replica']:
    np.testing.assert_allclose(mean_all, full.mean(), rtol=1e-6)
    np.testing.assert_allclose(mean_dev, full.mean(0), rtol=1e-6)


def test_distributed_value_in_scope(four_cpu_results):
  mean_all, mean_dev = four_cpu_results['scope']
  np.testing.assert_allclose(mean_all, _X.astype(np.float64).mean(),
                             rtol=1e-6)
  np.testing.assert_allclose(mean_dev, _X.astype(np.float64).mean(0),
                             rtol=1e-6)


def test_replica_count_mismatch_error(four_cpu_results):
  assert four_cpu_results['mismatch'] == (
      'mean_or_pmean: n_devices=2 but the current strategy runs 4 replicas. '
      'Pass n_devices=4.')


def test_distributed_value_outside_scope_error(four_cpu_results):
  assert four_cpu_results['outside'].startswith(
      'mean_or_pmean: got a distributed value outside its strategy. Call it '
      'inside `with strategy.scope():`')
