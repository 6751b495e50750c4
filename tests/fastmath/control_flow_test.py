"""Tests for fastmath's vmap, scan, fori_loop and cond."""

import numpy as np
import pytest
import tensorflow as tf

from tests import _layer_testing as lt
from tfnp_trax import fastmath
from tfnp_trax.fastmath import numpy as jnp


def _x(*shape, seed=0):
  return np.random.default_rng(seed).normal(size=shape).astype(np.float32)


def _f32(value):
  return jnp.asarray(value, dtype=jnp.float32)


@pytest.mark.parametrize('mode', lt.MODES)
def test_vmap_mapped_and_broadcast_args(mode):
  xs, m = _x(4, 2, 3), _x(3, 5, seed=1)
  f = fastmath.vmap(lambda x, w: jnp.tanh(x) @ w, in_axes=(0, None))
  got = lt.compile_fn(f, mode)(xs, m)
  want = np.einsum('bij,jk->bik', np.tanh(xs.astype(np.float64)), m)
  np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_vmap_tuple_output_and_default_axes():
  xs, ys = _x(3, 2), _x(3, 2, seed=1)
  s, p = fastmath.vmap(lambda x, y: (jnp.sum(x + y), x * y))(xs, ys)
  np.testing.assert_allclose(s, np.sum(xs + ys, axis=1), rtol=1e-6)
  np.testing.assert_allclose(p, xs * ys, rtol=1e-6)


def test_vmap_errors():
  with pytest.raises(ValueError, match=r'vmap: only out_axes=0'):
    fastmath.vmap(lambda x: x, out_axes=1)
  with pytest.raises(ValueError, match=r'vmap: in_axes entries must be 0 or '
                     r'None, got 1'):
    fastmath.vmap(lambda x: x, in_axes=(1,))(_x(2, 2))
  with pytest.raises(ValueError, match=r'vmap: in_axes has 1 entries but the '
                     r'function got 2'):
    fastmath.vmap(lambda x, y: x, in_axes=(0,))(_x(2), _x(2))


def _np_scan(f, carry, xs, reverse=False):
  ys = [None] * len(xs)
  order = range(len(xs) - 1, -1, -1) if reverse else range(len(xs))
  for i in order:
    carry, ys[i] = f(carry, xs[i])
  return carry, np.stack(ys)


@pytest.mark.parametrize('mode', lt.MODES)
@pytest.mark.parametrize('reverse', [False, True])
def test_scan_matches_python_loop(mode, reverse):
  xs = _x(5, 3)
  step = lambda c, x: (0.5 * c + x, c * x)
  got_c, got_ys = lt.compile_fn(
      lambda xs: fastmath.scan(step, _f32(np.ones(3)), xs, reverse=reverse),
      mode)(xs)
  want_c, want_ys = _np_scan(step, np.ones(3), xs.astype(np.float64),
                             reverse=reverse)
  np.testing.assert_allclose(got_c, want_c, rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(got_ys, want_ys, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize('mode', lt.MODES)
def test_scan_tree_carry_and_xs(mode):
  xs = {'a': _x(4, 2), 'b': _x(4, seed=1)}

  def step(carry, x):
    total, count = carry
    total = total + x['a'] * x['b']
    return (total, count + 1), {'t': total, 'neg': -x['b']}

  init = (_f32(np.zeros(2)), jnp.asarray(0, dtype=jnp.int32))
  (total, count), ys = lt.compile_fn(
      lambda xs: fastmath.scan(step, init, xs), mode)(xs)
  prod = xs['a'].astype(np.float64) * xs['b'][:, None]
  np.testing.assert_allclose(total, prod.sum(0), rtol=1e-5)
  assert int(count) == 4
  np.testing.assert_allclose(ys['t'], np.cumsum(prod, 0), rtol=1e-5)
  np.testing.assert_allclose(ys['neg'], -xs['b'])


def test_scan_with_length_and_no_xs():
  carry, ys = fastmath.scan(lambda c, _: (c * 2., c), _f32(1.), None,
                            length=4)
  assert float(carry) == 16.
  np.testing.assert_allclose(ys, [1., 2., 4., 8.])


@pytest.mark.parametrize('mode', lt.MODES)
def test_fori_loop(mode):
  def run(x):
    return fastmath.fori_loop(
        1, 5, lambda i, v: (v[0] * i.astype(jnp.float32), v[1] + x), (
            _f32(1.), _f32(np.zeros(2))))
  prod, total = lt.compile_fn(run, mode)(_x(2))
  assert float(prod) == 24.
  np.testing.assert_allclose(total, 4 * _x(2), rtol=1e-6)


@pytest.mark.parametrize('mode', lt.MODES)
@pytest.mark.parametrize('pred', [True, False])
def test_cond_call_forms(mode, pred):
  x, y = _x(3), _x(3, seed=1)

  def run(p, x, y):
    no_operands = fastmath.cond(p, lambda: _f32(1.), lambda: _f32(2.))
    one = fastmath.cond(p, lambda a: a + 1., lambda a: a - 1., x)
    two = fastmath.cond(p, lambda a, b: a * b, lambda a, b: a - b, x, y)
    old = fastmath.cond(p, x, lambda a: 2. * a, y, lambda b: -b)
    return no_operands, one, two, old

  got = lt.compile_fn(run, mode)(np.bool_(pred), x, y)
  want = ((1., x + 1., x * y, 2. * x) if pred else
          (2., x - 1., x - y, -y))
  for g, w in zip(got, want):
    np.testing.assert_allclose(g, w, rtol=1e-6)


def test_cond_tree_outputs():
  out = fastmath.cond(False, lambda: {'a': _f32(1.), 'b': (_f32(2.),)},
                      lambda: {'a': _f32(3.), 'b': (_f32(4.),)})
  assert float(out['a']) == 3. and float(out['b'][0]) == 4.


def test_cond_bad_call():
  with pytest.raises(TypeError, match=r'cond: with a function as the second '
                     r'argument, the third must be the false function'):
    fastmath.cond(True, lambda: 1., 2.)
  with pytest.raises(TypeError, match=r'cond: expected cond\(pred, true_fun'):
    fastmath.cond(True, 1., lambda x: x)


@pytest.mark.parametrize('mode', lt.MODES)
def test_grad_through_scan(mode):
  xs = _x(4)

  def loss(w, xs):
    carry, ys = fastmath.scan(lambda c, x: (c * w + x, c * x), _f32(1.), xs)
    return carry + jnp.sum(ys)

  w = np.float32(0.7)
  got = lt.compile_fn(fastmath.grad(loss), mode)(w, xs)

  def ref(w):  # The same loss in NumPy float64.
    c, total = 1.0, 0.0
    for x in xs.astype(np.float64):
      c, total = c * w + x, total + c * x
    return c + total

  w64, eps = float(w), 1e-6
  want = (ref(w64 + eps) - ref(w64 - eps)) / (2 * eps)
  np.testing.assert_allclose(got, want, rtol=1e-4)


def test_after_orders_a_traced_graph_and_keeps_values():
  # Eagerly `after` is the identity; traced, the identity waits for deps.
  x = tf.constant([1.0, 2.0])
  assert fastmath.after(x, tf.constant(3.0)) is x

  @tf.function
  def traced(a, b):
    y = fastmath.after({'k': a * 2.0, 'none': None}, [b, None])
    return y['k'], y['none']

  graph = traced.get_concrete_function(
      tf.TensorSpec([2]), tf.TensorSpec([])).graph
  identities = [op for op in graph.get_operations() if op.type == 'Identity'
                and op.control_inputs]
  assert [c.name for op in identities for c in op.control_inputs] == [
      'b']
  got, none = traced(x, tf.constant(5.0))
  np.testing.assert_array_equal(got.numpy(), [2.0, 4.0])
  assert none is None
