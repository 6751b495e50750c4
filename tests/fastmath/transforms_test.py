"""Tests for fastmath's jit, grad, vjp and custom-gradient transforms."""

import collections

import numpy as np
import pytest
import tensorflow as tf

from tests import _layer_testing as lt
from tfnp_trax import fastmath
from tfnp_trax.fastmath import numpy as jnp

Pair = collections.namedtuple('Pair', ['first', 'second'])


def _x(*shape, seed=0):
  return np.random.default_rng(seed).normal(size=shape).astype(np.float32)


# -- jit ---------------------------------------------------------------------

def test_jit_matches_numpy_with_and_without_xla():
  x = _x(3, 4)
  want = np.tanh(x.astype(np.float64)) @ np.ones((4, 2))
  f = lambda a: jnp.matmul(jnp.tanh(a), jnp.ones((4, 2), dtype=jnp.float32))
  for compile_xla in (False, True):
    got = fastmath.jit(f, jit_compile=compile_xla)(x)
    np.testing.assert_allclose(got, want, rtol=1e-5)


def test_jit_compile_true_uses_xla():
  f = fastmath.jit(lambda a: a * 2., jit_compile=True)
  f(np.ones(2, np.float32))
  assert f.experimental_get_compiler_ir(np.ones(2, np.float32))(
      stage='hlo').startswith('HloModule')


@pytest.mark.parametrize('static_argnums', [1, (1,), (1, 2)])
def test_jit_static_argnums(static_argnums):
  traces = []

  def f(x, n, m=3):
    traces.append((n, m))
    return x * n + m

  g = fastmath.jit(f, static_argnums=static_argnums)
  x = np.float32(2.)
  assert float(g(x, 3, 1)) == 7.
  assert float(g(x, 4, 1)) == 9.
  assert float(g(np.float32(5.), 3, 1)) == 16.  # Reuses the (3, 1) trace.
  assert traces == [(3, 1), (4, 1)]


def test_jit_as_decorator_with_static_argnums():
  @fastmath.jit(static_argnums=(0,))
  def power(n, x):
    return x ** n
  np.testing.assert_allclose(power(3, np.float32(2.)), 8.)
  np.testing.assert_allclose(power(2, np.float32(3.)), 9.)


def test_jit_traces_once_for_same_shapes():
  count = [0]

  def f(x, w):
    count[0] += 1  # Runs only while tracing.
    return jnp.sum(x @ w)

  g = fastmath.jit(f)
  for seed in range(3):
    g(_x(2, 3, seed=seed), _x(3, 4, seed=seed + 10))
  assert count[0] == 1


# -- grad / value_and_grad ---------------------------------------------------

def _f(x):
  return jnp.sum(jnp.sin(x) * x)


def _df(x):
  x = np.asarray(x, np.float64)
  return np.cos(x) * x + np.sin(x)


@pytest.mark.parametrize('mode', lt.MODES)
def test_grad_matches_analytic(mode):
  x = _x(2, 3)
  got = lt.compile_fn(fastmath.grad(_f), mode)(x)
  np.testing.assert_allclose(got, _df(x), rtol=1e-5, atol=1e-6)


def test_grad_matches_tf_compute_gradient():
  x = _x(4)
  theoretical, numerical = tf.test.compute_gradient(
      lambda a: fastmath.value_and_grad(_f)(a)[0], [x.astype(np.float64)])
  np.testing.assert_allclose(theoretical[0], numerical[0], atol=1e-6)
  np.testing.assert_allclose(fastmath.grad(_f)(x),
                             np.reshape(theoretical[0], x.shape), rtol=1e-5)


def test_value_and_grad():
  x = _x(3)
  value, g = fastmath.value_and_grad(_f)(x)
  x64 = x.astype(np.float64)
  np.testing.assert_allclose(value, np.sum(np.sin(x64) * x64), rtol=1e-6)
  np.testing.assert_allclose(g, _df(x), rtol=1e-5)


def test_grad_argnums_int_and_tuple():
  a, b, c = _x(3), _x(3, seed=1), _x(3, seed=2)
  f = lambda a, b, c: jnp.sum(a * b * b + c)
  np.testing.assert_allclose(fastmath.grad(f, argnums=1)(a, b, c),
                             2 * a * b, rtol=1e-6)
  ga, gc = fastmath.grad(f, argnums=(0, 2))(a, b, c)
  np.testing.assert_allclose(ga, b * b, rtol=1e-6)
  np.testing.assert_allclose(gc, np.ones(3), rtol=1e-6)


@pytest.mark.parametrize('mode', lt.MODES)
def test_grad_has_aux(mode):
  x = _x(3)
  f = lambda a: (jnp.sum(a ** 3), {'norm': jnp.sum(a * a)})
  vg = fastmath.value_and_grad(f, has_aux=True)
  (value, aux), g = lt.compile_fn(vg, mode)(x)
  x64 = x.astype(np.float64)
  np.testing.assert_allclose(value, np.sum(x64 ** 3), rtol=1e-5)
  np.testing.assert_allclose(aux['norm'], np.sum(x64 ** 2), rtol=1e-5)
  np.testing.assert_allclose(g, 3 * x64 ** 2, rtol=1e-5)
  g2, aux2 = fastmath.grad(f, has_aux=True)(x)
  np.testing.assert_allclose(g2, 3 * x64 ** 2, rtol=1e-5)
  np.testing.assert_allclose(aux2['norm'], np.sum(x64 ** 2), rtol=1e-5)


def test_grad_of_tree_argument():
  w, b, v = _x(3, 2), _x(2, seed=1), _x(2, seed=2)
  tree = {'dense': (w, b), 'empty': (), 'pair': Pair(v, ())}
  x = _x(4, 3, seed=3)

  def loss(t):
    w, b = t['dense']
    return jnp.sum((x @ w + b) * t['pair'].first)

  g = fastmath.grad(loss)(tree)
  assert g['empty'] == () and isinstance(g['pair'], Pair)
  x64 = x.astype(np.float64)
  np.testing.assert_allclose(g['dense'][0], x64.T @ np.tile(v, (4, 1)),
                             rtol=1e-5)
  np.testing.assert_allclose(g['dense'][1], 4 * v, rtol=1e-5)
  np.testing.assert_allclose(g['pair'].first,
                             np.sum(x64 @ w + b, axis=0), rtol=1e-5)


def test_grad_of_unused_argument_is_zero():
  g = fastmath.grad(lambda a, b: jnp.sum(a), argnums=(0, 1))(_x(2), _x(3))
  np.testing.assert_array_equal(g[1], np.zeros(3))


def test_grad_argnums_out_of_range():
  with pytest.raises(ValueError, match=r'grad: argnums \(2,\) refers to '
                     r'positional argument 2.*called with 1'):
    fastmath.grad(_f, argnums=2)(_x(2))


# -- vjp ---------------------------------------------------------------------

@pytest.mark.parametrize('mode', lt.MODES)
def test_vjp(mode):
  x, y = _x(3), _x(3, seed=1)
  ct = _x(3, seed=2)

  def run(x, y, ct):
    out, vjp_fn = fastmath.vjp(lambda a, b: a * jnp.exp(b), x, y)
    return out, vjp_fn(ct)

  out, (gx, gy) = lt.compile_fn(run, mode)(x, y, ct)
  x64, y64, ct64 = (v.astype(np.float64) for v in (x, y, ct))
  np.testing.assert_allclose(out, x64 * np.exp(y64), rtol=1e-5)
  np.testing.assert_allclose(gx, ct64 * np.exp(y64), rtol=1e-5)
  np.testing.assert_allclose(gy, ct64 * x64 * np.exp(y64), rtol=1e-5)


def test_vjp_has_aux_and_tree_primal():
  w = {'a': _x(2), 'b': _x(2, seed=1)}
  out, vjp_fn, aux = fastmath.vjp(
      lambda t: (t['a'] * t['b'], 'aux'), w, has_aux=True)
  assert aux == 'aux'
  (g,) = vjp_fn(np.ones(2, np.float32))
  np.testing.assert_allclose(out, w['a'] * w['b'], rtol=1e-6)
  np.testing.assert_allclose(g['a'], w['b'], rtol=1e-6)
  np.testing.assert_allclose(g['b'], w['a'], rtol=1e-6)


# -- custom gradients ----------------------------------------------------------

def _clip_grad_vjp(x, w):
  # Forward: x * w. Backward: a deliberately non-autodiff rule.
  out = x * w
  return out, lambda ct: (10. * ct, jnp.sum(ct * x) * 0.5)


@pytest.mark.parametrize('mode', lt.MODES)
def test_custom_grad(mode):
  x = _x(3)
  w = np.float32(2.)
  f = fastmath.custom_grad(_clip_grad_vjp, lambda x, w: x * w)
  loss = lambda x, w: jnp.sum(f(x, w) * jnp.arange(3, dtype=jnp.float32))
  (value, (gx, gw)) = lt.compile_fn(
      fastmath.value_and_grad(loss, argnums=(0, 1)), mode)(x, w)
  ct = np.arange(3.)
  np.testing.assert_allclose(value, np.sum(x * 2. * ct), rtol=1e-5)
  np.testing.assert_allclose(gx, 10. * ct, rtol=1e-6)
  np.testing.assert_allclose(gw, 0.5 * np.sum(ct * x), rtol=1e-5)


def test_custom_grad_with_tree_input_and_output():
  def f_vjp(tree):
    a, b = tree
    out = {'sum': a + b, 'prod': a * b}
    return out, lambda ct: ((ct['sum'] * 0., ct['prod'] * 3.),)
  f = fastmath.custom_grad(f_vjp, None)
  a, b = _x(2), _x(2, seed=1)
  ga, gb = fastmath.grad(lambda t: jnp.sum(f(t)['sum'] + f(t)['prod']))((a, b))
  np.testing.assert_array_equal(ga, np.zeros(2))
  np.testing.assert_allclose(gb, 3. * np.ones(2))


@pytest.mark.parametrize('mode', lt.MODES)
def test_custom_vjp(mode):
  fwd = lambda x: (jnp.sin(x), jnp.cos(x))
  bwd = lambda cos_x, ct: (2. * cos_x * ct,)  # Twice the true gradient.
  f = fastmath.custom_vjp(jnp.sin, fwd, bwd)
  x = _x(4)
  g = lt.compile_fn(fastmath.grad(lambda a: jnp.sum(f(a))), mode)(x)
  np.testing.assert_allclose(g, 2. * np.cos(x.astype(np.float64)), rtol=1e-5)
  np.testing.assert_allclose(f(x), np.sin(x), rtol=1e-6)


def test_custom_vjp_nondiff_argnums_follow_jax():
  def fwd(scale, x):
    return scale * x, x

  def bwd(scale, x, ct):  # Non-differentiable args come first, as in JAX.
    return (scale * ct + x,)

  f = fastmath.custom_vjp(None, fwd, bwd, nondiff_argnums=(0,))
  x = _x(3)
  g = fastmath.grad(lambda a: jnp.sum(f(3., a)))(x)
  np.testing.assert_allclose(g, 3. + x, rtol=1e-6)


@pytest.mark.parametrize('mode', lt.MODES)
def test_stop_gradient(mode):
  x = _x(3)
  f = lambda a: jnp.sum(fastmath.stop_gradient(a) * a)
  g = lt.compile_fn(fastmath.grad(f), mode)(x)
  np.testing.assert_allclose(g, x, rtol=1e-6)
  tree = fastmath.stop_gradient({'a': x, 'b': (x, ())})
  assert tree['b'][1] == ()
  np.testing.assert_array_equal(tree['a'], x)


def test_recompute_grad_matches_the_analytic_values_and_gradients():
  # f(x, {'w': w, 'b': b}) = sum(tanh(x @ w + b)); d/dw = x^T (1 - t^2).
  rng = np.random.RandomState(0)
  x = rng.randn(3, 4).astype(np.float32)
  params = {'w': rng.randn(4, 2).astype(np.float32),
            'b': rng.randn(2).astype(np.float32)}

  def f(x, p):
    return jnp.sum(jnp.tanh(jnp.matmul(x, p['w']) + p['b']))

  t = np.tanh(x.astype(np.float64) @ params['w'] + params['b'])
  value = fastmath.recompute_grad(f)(x, params)
  np.testing.assert_allclose(value, t.sum(), rtol=1e-5)
  grads = fastmath.grad(lambda p: fastmath.recompute_grad(f)(x, p))(params)
  np.testing.assert_allclose(grads['w'], x.T.astype(np.float64) @ (1 - t**2),
                             rtol=1e-4, atol=1e-5)
  np.testing.assert_allclose(grads['b'], (1 - t**2).sum(0), rtol=1e-4,
                             atol=1e-5)


def test_recompute_grad_runs_the_function_again_in_the_backward_pass():
  calls = []

  def f(x):
    calls.append(1)
    return jnp.sum(x * x)

  x = tf.constant([1.0, 2.0])
  with tf.GradientTape() as tape:
    tape.watch(x)
    y = fastmath.recompute_grad(f)(x)
  g = tape.gradient(y, x)
  np.testing.assert_allclose(g, [2.0, 4.0])
  assert len(calls) == 2  # Forward, then again for the gradient.
