"""LayerNorm, BatchNorm and FilterResponseNorm against NumPy references."""


import numpy as np
import pytest
import tensorflow as tf

from tests import _layer_testing as lt
from tfnp_trax import layers as tl
from tfnp_trax import shapes
from tfnp_trax.fastmath import numpy as jnp


def _layer_norm_ref(x, scale, bias, center=True, epsilon=1e-6):
  if center:
    x = x - x.mean(-1, keepdims=True)
  y = x / np.sqrt((x * x).mean(-1, keepdims=True) + epsilon) * scale
  return y + bias if center else y


def _batch_norm_ref(x, beta, gamma, axis=(0, 1, 2), epsilon=1e-5):
  mean = x.mean(axis, keepdims=True)
  var = ((x - mean) ** 2).mean(axis, keepdims=True)
  return gamma * (x - mean) / np.sqrt(var + epsilon) + beta, mean, var


def _frn_ref(x, gamma, beta, epsilon):
  axes = tuple(range(1, x.ndim - 1))
  nu2 = (x * x).mean(axes, keepdims=True)
  return gamma * x / np.sqrt(nu2 + epsilon) + beta


# -- LayerNorm -------------------------------------------------------------


@pytest.mark.parametrize('mode', lt.MODES)
@pytest.mark.parametrize('center', [True, False])
def test_layer_norm_matches_numpy(center, mode, rng):
  x = lt.random(rng, 2, 3, 5)
  scale, bias = lt.random(rng, 5), lt.random(rng, 5)
  ct = lt.random(rng, 2, 3, 5)
  layer = lt.initialized(tl.LayerNorm(center=center), x)
  y, _, gx, (gs, gb) = lt.forward_and_grads(
      layer, x, (scale, bias), (), ct, mode)
  ref = lambda x, s, b: _layer_norm_ref(x, s, b, center)
  lt.assert_close(y, ref(x, scale, bias))
  want_gx, want_gs, want_gb = lt.numeric_grads(ref, [x, scale, bias], ct)
  lt.assert_close([gx, gs, gb], [want_gx, want_gs, want_gb], atol=1e-4)


def test_layer_norm_keeps_a_bias_weight_without_center():
  layer = tl.LayerNorm(center=False)
  scale, bias = layer.init(shapes.ShapeDtype((2, 4)))[0]
  np.testing.assert_array_equal(scale, np.ones(4))
  np.testing.assert_array_equal(bias, np.zeros(4))


def test_layer_norm_rejects_other_channel_count():
  layer = tl.LayerNorm()
  layer.init(shapes.ShapeDtype((2, 4)))
  with pytest.raises(tl.LayerError, match=r'LayerNorm: input has 5 channels '
                     r'\(last axis, input shape \(2, 5\)\) but the layer was '
                     r'initialized for 4'):
    layer(jnp.ones((2, 5), jnp.float32))


# -- BatchNorm -------------------------------------------------------------


@pytest.mark.parametrize('mode', lt.MODES)
def test_batch_norm_train_matches_numpy(mode, rng):
  x = lt.random(rng, 2, 3, 2, 4) + 3.0
  beta, gamma = lt.random(rng, 4), lt.random(rng, 4)
  ct = lt.random(rng, 2, 3, 2, 4)
  layer = lt.initialized(tl.BatchNorm(), x)
  y, _, gx, (gb, gg) = lt.forward_and_grads(
      layer, x, (beta, gamma), layer.state, ct, mode)
  ref = lambda x, b, g: _batch_norm_ref(x, b, g)[0]
  lt.assert_close(y, ref(x, beta, gamma), atol=1e-4)
  lt.assert_close([gx, gb, gg], lt.numeric_grads(ref, [x, beta, gamma], ct),
                  atol=2e-4)


@pytest.mark.parametrize('mode', lt.MODES)
def test_batch_norm_running_statistics_follow_two_train_steps(mode, rng):
  momentum = 0.9
  layer = tl.BatchNorm(axis=(0,), momentum=momentum)
  xs = [lt.random(rng, 6, 3) * 2.0 + 1.0 for _ in range(2)]
  weights, state = layer.init(shapes.signature(xs[0]))
  step = lt.compile_fn(lambda x, w, s: layer.pure_fn(x, w, s, None), mode)
  run_mean, run_var = np.zeros((1, 3)), np.ones((1, 3))
  for x in xs:
    y, state = step(x, weights, state)
    want_y, mean, var = _batch_norm_ref(x.astype(np.float64), 0.0, 1.0,
                                        axis=(0,))
    run_mean = momentum * run_mean + (1 - momentum) * mean
    run_var = momentum * run_var + (1 - momentum) * var
    lt.assert_close(y, want_y, atol=1e-5)
  lt.assert_close(state[:2], [run_mean, run_var], rtol=1e-5, atol=1e-6)
  assert int(state[2]) == 2
  assert state[2].dtype == tf.int64


@pytest.mark.parametrize('mode', ['eval', 'predict'])
def test_batch_norm_eval_uses_frozen_running_statistics(mode, rng):
  layer = tl.BatchNorm(axis=(0, 1), mode=mode)
  x = lt.random(rng, 2, 3, 4)
  (beta, gamma), _ = layer.init(shapes.signature(x))
  mean, var = lt.random(rng, 1, 1, 4), np.abs(lt.random(rng, 1, 1, 4)) + 0.5
  state = (jnp.asarray(mean), jnp.asarray(var), jnp.asarray(7, jnp.int64))
  beta, gamma = lt.random(rng, 4), lt.random(rng, 4)
  y, new_state = layer.pure_fn(x, (beta, gamma), state, None)
  want = gamma * (x - mean) / np.sqrt(var + 1e-5) + beta
  lt.assert_close(y, want, atol=1e-5)
  lt.assert_close(new_state[:2], [mean, var], rtol=0, atol=0)
  assert int(new_state[2]) == 7


@pytest.mark.parametrize('center,scale', [(False, True), (True, False),
                                          (False, False)])
def test_batch_norm_center_and_scale_switch_weights(center, scale, rng):
  x = lt.random(rng, 5, 3)
  layer = tl.BatchNorm(axis=0, center=center, scale=scale)
  (beta, gamma), _ = layer.init(shapes.signature(x))
  assert (beta == ()) != center and (gamma == ()) != scale
  b = lt.random(rng, 3) if center else ()
  g = lt.random(rng, 3) if scale else ()
  y, _ = layer.pure_fn(x, (b, g), layer.state, None)
  want = _batch_norm_ref(x.astype(np.float64), b if center else 0.0,
                         g if scale else 1.0, axis=(0,))[0]
  lt.assert_close(y, want, atol=1e-5)


def test_batch_norm_bfloat16_keeps_dtype_and_float32_statistics(rng):
  x32 = lt.random(rng, 4, 2, 2, 3) + 10.0
  x = tf.cast(x32, tf.bfloat16)
  xr = tf.cast(x, tf.float64).numpy()  # The values the layer really sees.
  layer = tl.BatchNorm()
  layer.init(shapes.signature(x))
  y = layer(x)
  assert y.dtype == tf.bfloat16
  running_mean, running_var, _ = layer.state
  assert running_mean.dtype == tf.float32 and running_var.dtype == tf.float32
  want_y, mean, var = _batch_norm_ref(xr, 0.0, 1.0)
  # A bfloat16 mean of values near 10 would be off by about 0.03.
  lt.assert_close(running_mean, 0.001 * mean, rtol=1e-5, atol=0)
  lt.assert_close(running_var, 0.999 + 0.001 * var, rtol=1e-6)
  lt.assert_close(y, want_y, rtol=0, atol=0.04)


def test_batch_norm_rejects_other_channel_count():
  layer = tl.BatchNorm()
  layer.init(shapes.ShapeDtype((2, 3, 3, 4)))
  with pytest.raises(tl.LayerError, match=r'BatchNorm: input shape '
                     r'\(2, 3, 3, 5\) does not match the shape the layer was '
                     r'initialized for: rank 4 with sizes \[4\]'):
    layer(jnp.ones((2, 3, 3, 5), jnp.float32))
  with pytest.raises(tl.LayerError, match=r'BatchNorm: input shape \(2, 4\) '
                     r'does not match'):
    layer(jnp.ones((2, 4), jnp.float32))


def test_batch_norm_names_axes_outside_the_input():
  with pytest.raises(tl.LayerError, match=r'BatchNorm: axis \(0, 1, 2\) has '
                     r'\[2\] outside an input of rank 2 \(shape \(8, 4\)\)'
                     r'.*for \[batch, features\] pass axis=\(0,\)'):
    tl.BatchNorm().init(shapes.ShapeDtype((8, 4)))
  with pytest.raises(tl.LayerError, match=r'axis \(0, -3\) has \[-3\]'):
    tl.BatchNorm(axis=(0, -3)).init(shapes.ShapeDtype((8, 4)))
  with pytest.raises(tl.LayerError, match=r'BatchNorm: axis \(0, -2\) '
                     r'repeats an axis of an input of rank 2 '
                     r'\(it is \(0, 0\)'):
    tl.BatchNorm(axis=(0, -2)).init(shapes.ShapeDtype((8, 4)))


def test_batch_norm_rejects_unknown_mode():
  with pytest.raises(ValueError, match=r"BatchNorm: mode must be one of "
                     r"\('train', 'eval', 'predict', 'collect'\), "
                     r"got 'test'"):
    tl.BatchNorm(mode='test')


# -- FilterResponseNorm ------------------------------------------------------


@pytest.mark.parametrize('mode', lt.MODES)
def test_filter_response_norm_matches_numpy(mode, rng):
  x = lt.random(rng, 2, 3, 2, 4)
  gamma, beta = lt.random(rng, 4), lt.random(rng, 4)
  ct = lt.random(rng, 2, 3, 2, 4)
  layer = lt.initialized(tl.FilterResponseNorm(), x)
  y, _, gx, (gg, gb, ge) = lt.forward_and_grads(
      layer, x, (gamma, beta, ()), (), ct, mode)
  assert ge == ()
  ref = lambda x, g, b: _frn_ref(x, g, b, 1e-6)
  lt.assert_close(y, ref(x, gamma, beta), atol=1e-5)
  lt.assert_close([gx, gg, gb], lt.numeric_grads(ref, [x, gamma, beta], ct),
                  atol=2e-4)


@pytest.mark.parametrize('mode', lt.MODES)
def test_filter_response_norm_negative_learnt_epsilon_uses_abs(mode, rng):
  # Small inputs so that epsilon changes the output visibly.
  x = lt.random(rng, 2, 4, 3, scale=0.3)
  gamma, beta = lt.random(rng, 3), lt.random(rng, 3)
  ct = lt.random(rng, 2, 4, 3)
  layer = tl.FilterResponseNorm(learn_epsilon=True, init_epsilon=1e-3)
  (_, _, (eps_l,)), _ = layer.init(shapes.signature(x))
  np.testing.assert_allclose(eps_l, 1e-4)
  weights = (gamma, beta, (np.float32(-0.5),))
  y, _, gx, (gg, gb, (ge,)) = lt.forward_and_grads(
      layer, x, weights, (), ct, mode)
  ref = lambda x, g, b, e: _frn_ref(x, g, b, 1e-3 + np.abs(e))
  lt.assert_close(y, ref(x, gamma, beta, -0.5), atol=1e-5)
  assert not np.allclose(y, ref(x, gamma, beta, 0.0), atol=1e-2)
  want = lt.numeric_grads(ref, [x, gamma, beta, np.float64(-0.5)], ct)
  lt.assert_close([gx, gg, gb, ge], want, atol=2e-4)


def test_filter_response_norm_bfloat16_keeps_dtype(rng):
  x = tf.cast(lt.random(rng, 2, 3, 3, 4), tf.bfloat16)
  layer = tl.FilterResponseNorm(learn_epsilon=True)
  layer.init(shapes.signature(x))
  y = layer(x)
  assert y.dtype == tf.bfloat16
  want = _frn_ref(tf.cast(x, tf.float64).numpy(), 1.0, 0.0, 1e-6 + 1e-4)
  lt.assert_close(y, want, rtol=1e-2, atol=1e-2)


def test_filter_response_norm_rejects_other_channel_count():
  layer = tl.FilterResponseNorm()
  layer.init(shapes.ShapeDtype((2, 3, 3, 4)))
  with pytest.raises(tl.LayerError, match=r'FilterResponseNorm: input has 5 '
                     r'channels \(last axis, input shape \(2, 3, 3, 5\)\) but '
                     r'the layer was initialized for 4 \(gamma size\)'):
    layer(jnp.ones((2, 3, 3, 5), jnp.float32))


def test_filter_response_norm_rejects_non_positive_epsilon():
  with pytest.raises(ValueError, match=r'FilterResponseNorm: init_epsilon '
                     r'and init_learnt_epsilon must be positive, got 0.0'):
    tl.FilterResponseNorm(init_epsilon=0.0)


@pytest.mark.parametrize('make', [tl.LayerNorm, tl.BatchNorm,
                                  tl.FilterResponseNorm])
def test_normalization_bfloat16_in_bfloat16_out_under_xla(make, rng):
  x = tf.cast(lt.random(rng, 2, 2, 2, 3), tf.bfloat16)
  layer = make()
  weights, state = layer.init(shapes.signature(x))
  run = lt.compile_fn(lambda x, w, s: layer.pure_fn(x, w, s, None), 'xla')
  y, _ = run(x, weights, state)
  assert y.dtype == tf.bfloat16
