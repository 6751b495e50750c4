"""Tests for the fastmath ops Trax exposes beyond jnp: map, nested_zip, ...

Numbers are checked against NumPy float64 or by hand; the tree utilities'
expected structures were recorded from Trax 1.4.1.
"""

import collections

import numpy as np
import pytest
import tensorflow as tf

from tests import _layer_testing as lt
from tests import _multi_device
from tfnp_trax import fastmath
from tfnp_trax.fastmath import numpy as jnp

_Pair = collections.namedtuple('_Pair', 'a b')


def _x(*shape, seed=0):
  return np.random.default_rng(seed).normal(size=shape).astype(np.float32)


@pytest.mark.parametrize('mode', lt.MODES)
def test_sigmoid_is_expit(mode):
  x = _x(3, 4) * 4
  got = lt.compile_fn(fastmath.sigmoid, mode)(x)
  want = 1.0 / (1.0 + np.exp(-x.astype(np.float64)))
  np.testing.assert_allclose(got, want, rtol=1e-6)
  assert fastmath.sigmoid is fastmath.expit


def test_lt():
  np.testing.assert_array_equal(
      fastmath.lt(jnp.array([1., 2., 3.]), jnp.array([2., 2., 2.])),
      [True, False, False])
  assert fastmath.lt(1, 2) is True
  np.testing.assert_array_equal(fastmath.lt(jnp.arange(3), 1),
                                [True, False, False])


@pytest.mark.parametrize('mode', lt.MODES)
def test_map_over_an_array(mode):
  x = _x(4, 3)
  got = lt.compile_fn(
      lambda xs: fastmath.map(lambda row: jnp.sum(row * row), xs), mode)(x)
  np.testing.assert_allclose(got, (x.astype(np.float64) ** 2).sum(1),
                             rtol=1e-5)


@pytest.mark.parametrize('mode', lt.MODES)
def test_map_over_a_tree_returning_a_tree(mode):
  xs = {'a': _x(3, 2), 'b': np.arange(3, dtype=np.int32)}

  def f(x):
    return jnp.max(x['a']), x['b'] * 2

  got_max, got_b = lt.compile_fn(lambda t: fastmath.map(f, t), mode)(xs)
  np.testing.assert_allclose(got_max, xs['a'].max(axis=1))
  np.testing.assert_array_equal(got_b, [0, 2, 4])


def test_remat_keeps_values_and_gradients():
  def f(x):
    return jnp.sum(jnp.sin(x) * x)

  x = _x(5).astype(np.float64)
  g = fastmath.remat(f, prevent_cse=False)
  np.testing.assert_allclose(g(x), np.sum(np.sin(x) * x), rtol=1e-12)
  np.testing.assert_allclose(fastmath.grad(g)(x),
                             np.cos(x) * x + np.sin(x), rtol=1e-12)


def test_disable_jit_runs_compiled_functions_eagerly():
  calls = []

  def f(x):
    calls.append(1)  # Python runs once per trace, or once per eager call.
    return x + 1

  compiled = fastmath.jit(f)
  compiled(jnp.ones(2))
  compiled(jnp.ones(2))
  assert len(calls) == 1
  try:
    fastmath.disable_jit()
    out = compiled(jnp.ones(2))
    compiled(jnp.ones(2))
    assert len(calls) == 3
    np.testing.assert_array_equal(out, [2., 2.])
  finally:
    tf.config.run_functions_eagerly(False)


def test_is_backend():
  assert fastmath.is_backend(fastmath.Backend.TFNP)
  assert fastmath.is_backend('tensorflow-numpy')
  assert not fastmath.is_backend(fastmath.Backend.JAX)
  assert not fastmath.is_backend(fastmath.Backend.NUMPY)
  assert [b.value for b in fastmath.Backend] == [
      'jax', 'tensorflow-numpy', 'numpy']
  with pytest.raises(ValueError, match="backend 'jax' is not supported"):
    fastmath.set_backend(fastmath.Backend.JAX)


def test_dataset_as_numpy():
  ds = tf.data.Dataset.from_tensor_slices(
      {'x': np.arange(6, dtype=np.float32).reshape(3, 2),
       'name': [b'a', b'b', b'c']})
  examples = list(fastmath.dataset_as_numpy(ds, batch_size=2))
  assert len(examples) == 3
  assert examples[2]['name'] == b'c'
  assert isinstance(examples[1]['x'], np.ndarray)
  np.testing.assert_array_equal(examples[1]['x'], [2., 3.])


def test_global_device_count():
  assert fastmath.global_device_count() == fastmath.device_count() >= 1


def test_pmap_on_one_replica():
  f = fastmath.pmap(lambda x, y: x * y + fastmath.psum(x, 'batch'),
                    in_axes=(0, None),
                    strategy=tf.distribute.get_strategy())
  x = _x(1, 3)
  out = f(x, np.float32(2.0))
  assert out.shape == (1, 3)
  np.testing.assert_allclose(out, x * 3, rtol=1e-6)


def test_pmap_stacks_replica_outputs_and_psum_reduces():
  # Logical CPUs must exist before TensorFlow starts: use a new process.
  out = _multi_device.run('''
      import numpy as np
      from tfnp_trax import fastmath
      strategy = tf.distribute.MirroredStrategy(['/cpu:0', '/cpu:1'])
      x = np.array([[1., 2.], [10., 20.]], np.float32)
      f = fastmath.pmap(lambda v: (v * 2, fastmath.psum(v, 'batch')),
                        strategy=strategy)
      doubled, summed = f(x)
      report({'doubled': np.asarray(doubled).tolist(),
              'summed': np.asarray(summed).tolist()})
      ''', n_devices=2, timeout=180, env={'CUDA_VISIBLE_DEVICES': ''})
  assert out['doubled'] == [[2.0, 4.0], [20.0, 40.0]]
  assert out['summed'] == [[11.0, 22.0], [11.0, 22.0]]


@pytest.mark.parametrize('objs,want', [
    ([1, 2, 3], (1, 2, 3)),
    # As in Trax, tuples in the structure come back as lists.
    ([(1, 2), (3, 4)], [(1, 3), (2, 4)]),
    ([[1, (2, 5)], [3, (4, 6)]], [(1, 3), [(2, 4), (5, 6)]]),
    ([{'x': 1, 'y': [2]}, {'x': 3, 'y': [4]}], {'x': (1, 3), 'y': [(2, 4)]}),
    ([_Pair(1, 2), _Pair(3, 4)], _Pair((1, 3), (2, 4))),
])
def test_nested_zip_matches_trax(objs, want):
  got = fastmath.nested_zip(objs)
  assert got == want
  assert type(got) is type(want)


def test_nested_zip_rejects_empty_and_mismatched_input():
  with pytest.raises(ValueError, match='non-empty list or tuple'):
    fastmath.nested_zip([])
  with pytest.raises(ValueError, match='differ in structure'):
    fastmath.nested_zip([1, [2]])


def test_nested_stack_matches_numpy_and_keeps_nones():
  a, b, c, d = _x(2), _x(2, seed=1), _x(1, seed=2), _x(1, seed=3)
  got = fastmath.nested_stack([(a, None, {'k': c}), (b, None, {'k': d})])
  assert isinstance(got, list) and got[1] is None  # Trax: tuples -> lists.
  np.testing.assert_array_equal(got[0], np.stack([a, b]))
  np.testing.assert_array_equal(got[2]['k'], np.stack([c, d]))
  assert isinstance(got[0], np.ndarray)  # NumPy by default, as in Trax.


def test_nested_stack_axis_and_module():
  a, b = _x(2, 3), _x(2, 3, seed=1)
  got = fastmath.nested_stack([_Pair(a, a), _Pair(b, b)], axis=1,
                              np_module=jnp)
  assert isinstance(got, _Pair) and tf.is_tensor(got.a)
  np.testing.assert_array_equal(got.b, np.stack([a, b], axis=1))
