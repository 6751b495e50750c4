"""Tests for fastmath.conv, the pooling ops and linear against NumPy."""

import numpy as np
import pytest

from tests import _layer_testing as lt
import tensorflow as tf

from tfnp_trax import fastmath


def _x(*shape, seed=0):
  return np.random.default_rng(seed).normal(size=shape).astype(np.float32)


def _pads(spatial, window, strides, dilation, padding):
  """(low, high) pads per spatial axis, with XLA's SAME rule."""
  if not isinstance(padding, str):
    return [tuple(p) for p in padding]
  pads = []
  for size, k, s, d in zip(spatial, window, strides, dilation):
    eff = (k - 1) * d + 1
    if padding == 'VALID':
      pads.append((0, 0))
      continue
    out = -(-size // s)
    total = max((out - 1) * s + eff - size, 0)
    pads.append((total // 2, total - total // 2))
  return pads


def _windows(x, window, strides, dilation, pads, fill):
  """Yields (out_index, patch[N, *window, C]) over all output positions."""
  xp = np.pad(x, [(0, 0)] + pads + [(0, 0)], constant_values=fill)
  out_shape = [(xp.shape[i + 1] - ((k - 1) * d + 1)) // s + 1
               for i, (k, s, d) in enumerate(zip(window, strides, dilation))]
  for pos in np.ndindex(*out_shape):
    sl = tuple(slice(p * s, p * s + (k - 1) * d + 1, d)
               for p, k, s, d in zip(pos, window, strides, dilation))
    yield pos, out_shape, xp[(slice(None),) + sl]


def np_conv(x, kernel, strides, padding, dilation=None, groups=1):
  """Channels-last N-d convolution in float64 with explicit loops."""
  x, kernel = np.asarray(x, np.float64), np.asarray(kernel, np.float64)
  window = kernel.shape[:-2]
  dilation = dilation or (1,) * len(window)
  pads = _pads(x.shape[1:-1], window, strides, dilation, padding)
  out = None
  c_in, c_out = x.shape[-1] // groups, kernel.shape[-1] // groups
  for pos, out_shape, patch in _windows(x, window, strides, dilation, pads, 0):
    if out is None:
      out = np.zeros([x.shape[0]] + out_shape + [kernel.shape[-1]])
    for g in range(groups):
      p = patch[..., g * c_in:(g + 1) * c_in].reshape(x.shape[0], -1)
      k = kernel[..., g * c_out:(g + 1) * c_out].reshape(-1, c_out)
      out[(slice(None),) + pos + (slice(g * c_out, (g + 1) * c_out),)] = p @ k
  return out


CONV_CASES = [
    # (x shape, kernel shape, strides, padding, dilation, groups)
    ((2, 5, 6, 3), (3, 2, 3, 4), (1, 1), 'VALID', None, 1),
    ((2, 5, 6, 3), (3, 2, 3, 4), (1, 1), 'SAME', None, 1),
    ((1, 7, 6, 2), (3, 3, 2, 3), (2, 1), 'SAME', None, 1),
    ((1, 7, 6, 2), (2, 3, 2, 3), (2, 3), 'VALID', None, 1),
    ((1, 7, 7, 2), (3, 2, 2, 3), (1, 1), 'SAME', (2, 1), 1),
    ((1, 7, 7, 2), (2, 2, 2, 3), (1, 1), 'VALID', (2, 3), 1),
    ((1, 9, 8, 2), (3, 2, 2, 3), (2, 3), 'SAME', (2, 2), 1),
    ((1, 9, 8, 2), (2, 2, 2, 3), (2, 1), 'VALID', (3, 2), 1),
    ((1, 6, 5, 2), (3, 3, 2, 2), (1, 1), [(1, 0), (2, 1)], None, 1),
    ((2, 5, 5, 4), (3, 3, 2, 6), (1, 1), 'SAME', None, 2),
    ((2, 9, 3), (3, 3, 5), (2,), 'SAME', None, 1),
    ((2, 9, 3), (2, 3, 5), (1,), 'VALID', (3,), 1),
]


@pytest.mark.parametrize('case', CONV_CASES,
                         ids=[f'conv{i}' for i in range(len(CONV_CASES))])
def test_conv_matches_numpy(case):
  xs, ks, strides, padding, dilation, groups = case
  x, k = _x(*xs), _x(*ks, seed=1)
  got = fastmath.conv(x, k, strides, padding, dilation, groups=groups)
  want = np_conv(x, k, strides, padding, dilation, groups)
  assert tuple(got.shape) == want.shape
  np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize('mode', ['jit', 'xla'])
def test_conv_compiled(mode):
  x, k = _x(2, 6, 5, 3), _x(3, 3, 3, 2, seed=1)
  got = lt.compile_fn(
      lambda a, b: fastmath.conv(a, b, (2, 1), 'SAME', (1, 1)), mode)(x, k)
  np.testing.assert_allclose(got, np_conv(x, k, (2, 1), 'SAME'), rtol=1e-4,
                             atol=1e-5)


def test_conv_bad_padding():
  with pytest.raises(ValueError, match=r"padding must be 'SAME', 'VALID' or "
                     r"explicit pairs, got 'FULL'"):
    fastmath.conv(_x(1, 4, 4, 1), _x(2, 2, 1, 1), (1, 1), 'FULL')


def np_pool(x, window, strides, padding, kind):
  x = np.asarray(x, np.float64)
  ones = (1,) * len(window)
  strides = strides or ones  # Trax's default: windows move by one step.
  pads = _pads(x.shape[1:-1], window, strides, ones, padding)
  fill = -np.inf if kind == 'max' else 0.
  valid = np.ones(x.shape[:-1] + (1,))
  counts = [p for _, _, p in _windows(valid, window, strides, ones, pads, 0)]
  out = []
  for i, (_, out_shape, patch) in enumerate(
      _windows(x, window, strides, ones, pads, fill)):
    axes = tuple(range(1, 1 + len(window)))
    if kind == 'max':
      out.append(patch.max(axis=axes))
    elif kind == 'sum':
      out.append(patch.sum(axis=axes))
    else:  # Average over the cells inside the input only.
      out.append(patch.sum(axis=axes) / counts[i].sum(axis=axes))
  return np.stack(out, 1).reshape([x.shape[0]] + out_shape + [x.shape[-1]])


POOL_CASES = [
    # (x shape, window, strides, padding)
    ((2, 6, 6, 3), (2, 2), None, 'VALID'),
    ((2, 5, 7, 3), (3, 2), (1, 1), 'SAME'),
    ((1, 7, 6, 2), (3, 3), (2, 2), 'SAME'),
    ((1, 7, 6, 2), (2, 3), (2, 1), 'VALID'),
    ((2, 9, 3), (3,), (2,), 'SAME'),
    ((2, 9, 3), (2,), None, 'VALID'),
]


@pytest.mark.parametrize('kind', ['max', 'avg', 'sum'])
@pytest.mark.parametrize('case', POOL_CASES,
                         ids=[f'pool{i}' for i in range(len(POOL_CASES))])
def test_pools_match_numpy(kind, case):
  xs, window, strides, padding = case
  x = _x(*xs)
  fn = {'max': fastmath.max_pool, 'avg': fastmath.avg_pool,
        'sum': fastmath.sum_pool}[kind]
  got = fn(x, window, strides, padding)
  want = np_pool(x, window, strides, padding, kind)
  assert tuple(got.shape) == want.shape
  np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize('mode', ['jit', 'xla'])
@pytest.mark.parametrize('kind', ['max', 'avg', 'sum'])
def test_pools_compiled(mode, kind):
  x = _x(2, 5, 6, 2)
  fn = {'max': fastmath.max_pool, 'avg': fastmath.avg_pool,
        'sum': fastmath.sum_pool}[kind]
  got = lt.compile_fn(lambda a: fn(a, (2, 3), (1, 2), 'SAME'), mode)(x)
  np.testing.assert_allclose(got, np_pool(x, (2, 3), (1, 2), 'SAME', kind),
                             rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize('shape', [(5,), (4, 5), (2, 3, 5), (2, 1, 3, 5)])
@pytest.mark.parametrize('use_bias', [True, False])
def test_linear_matches_numpy_with_gradients(shape, use_bias):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  x, w, b = _x(*shape), _x(5, 3, seed=1), _x(3, seed=2)
  bias = b if use_bias else None
  want = x.astype(np.float64) @ w.astype(np.float64) + (b if use_bias else 0)
  for fn in (fastmath.linear, tf.function(fastmath.linear),
             tf.function(fastmath.linear, jit_compile=True)):
    got = fn(x, w, bias)
    assert tuple(got.shape) == shape[:-1] + (3,)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
  # d/dw sum(y * c) = x^T c over the flattened leading axes; d/db = sum c.
  c = _x(*(shape[:-1] + (3,)), seed=3)
  tw, tb = tf.constant(w), tf.constant(b)
  with tf.GradientTape() as tape:
    tape.watch([tw, tb])
    loss = tf.reduce_sum(fastmath.linear(x, tw, tb if use_bias else None) * c)
  gw, gb = tape.gradient(loss, [tw, tb])
  x2, c2 = x.reshape(-1, 5).astype(np.float64), c.reshape(-1, 3)
  np.testing.assert_allclose(gw, x2.T @ c2, rtol=1e-5, atol=1e-5)
  if use_bias:
    np.testing.assert_allclose(gb, c2.sum(0), rtol=1e-5, atol=1e-5)
  else:
    assert gb is None


def test_linear_unknown_leading_dims():
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  fn = tf.function(fastmath.linear, input_signature=[
      tf.TensorSpec([None, None, 5]), tf.TensorSpec([5, 3]),
      tf.TensorSpec([3])])
  x, w, b = _x(2, 4, 5), _x(5, 3, seed=1), _x(3, seed=2)
  np.testing.assert_allclose(fn(x, w, b), x @ w + b, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize('dtype', ['float32', 'bfloat16'])
def test_sparse_softmax_cross_entropy_matches_one_hot_form(dtype):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  logits = _x(2, 3, 5)
  # Out-of-range targets have no one-hot entry: loss 0, gradient 0.
  targets = np.array([[0, 4, 5], [-1, 2, 1]], np.int32)
  lp = logits.astype(np.float64)
  lp = lp - np.log(np.exp(lp).sum(-1, keepdims=True))
  one_hot = (targets[..., None] == np.arange(5)).astype(np.float64)
  want = -(lp * one_hot).sum(-1)
  want_grad = np.exp(lp) * one_hot.sum(-1, keepdims=True) - one_hot
  tol = 1e-5 if dtype == 'float32' else 2e-2
  for fn in (fastmath.sparse_softmax_cross_entropy,
             tf.function(fastmath.sparse_softmax_cross_entropy),
             tf.function(fastmath.sparse_softmax_cross_entropy,
                         jit_compile=True)):
    x = tf.cast(tf.constant(logits), dtype)
    with tf.GradientTape() as tape:
      tape.watch(x)
      ce = fn(x, targets)
      total = tf.reduce_sum(tf.cast(ce, tf.float32))
    grad = tape.gradient(total, x)
    assert ce.dtype == x.dtype
    np.testing.assert_allclose(tf.cast(ce, tf.float32), want, rtol=tol,
                               atol=tol)
    np.testing.assert_allclose(tf.cast(grad, tf.float32), want_grad,
                               rtol=tol, atol=tol)


@pytest.mark.parametrize('dtype', ['float32', 'float64', 'bfloat16', 'int32',
                                   'uint32'])
def test_relu_is_traxs_where_in_every_dtype(dtype):
  values = np.array([-3, -1, 0, 2, 5], np.float64)
  if dtype == 'uint32':
    values = np.abs(values)
  x = tf.cast(tf.constant(values), dtype)
  got = fastmath.relu(x)
  assert got.dtype == x.dtype
  np.testing.assert_array_equal(
      tf.cast(got, tf.float64).numpy(), np.where(values <= 0, 0.0, values))


def test_relu_gradient_is_one_above_zero_and_zero_elsewhere():
  # Trax's where(x <= 0, 0, x): the gradient at exactly 0 is 0.
  x = tf.constant([-2.0, -0.0, 0.0, 1e-30, 3.0])
  with tf.GradientTape() as tape:
    tape.watch(x)
    y = fastmath.relu(x)
  g = tape.gradient(y, x, output_gradients=tf.constant([5.0] * 5))
  np.testing.assert_array_equal(g.numpy(), [0.0, 0.0, 0.0, 5.0, 5.0])
  assert np.isnan(fastmath.relu(tf.constant([np.nan])).numpy()[0])


def _softmax_np(x, axis):
  x = np.asarray(x, np.float64)
  e = np.exp(x - x.max(axis=axis, keepdims=True))
  return e / e.sum(axis=axis, keepdims=True)


@pytest.mark.parametrize('axis', [-1, 1])
def test_softmax_matches_exp_of_x_minus_logsumexp(axis):
  x = np.random.default_rng(0).normal(size=(2, 5, 7)) * 4
  x[0, 0] = -1e9  # A fully masked row: uniform, as Trax's form gives.
  got = fastmath.softmax(tf.constant(x, tf.float32), axis=axis)
  assert got.dtype == tf.float32
  np.testing.assert_allclose(got.numpy(), _softmax_np(x, axis), rtol=1e-5,
                             atol=1e-7)
  assert fastmath.softmax(tf.constant([1, 2, 3])).dtype == tf.float32


def test_softmax_gradient_matches_the_analytic_jacobian():
  x = np.random.default_rng(1).normal(size=(6,))
  g = np.random.default_rng(2).normal(size=(6,))
  xt = tf.constant(x)
  with tf.GradientTape() as tape:
    tape.watch(xt)
    y = fastmath.softmax(xt)
  got = tape.gradient(y, xt, output_gradients=tf.constant(g)).numpy()
  s = _softmax_np(x, -1)
  jacobian = np.diag(s) - np.outer(s, s)
  np.testing.assert_allclose(got, jacobian.T @ g, rtol=1e-10)


def test_matmul_transposed_is_a_times_b_transposed_with_broadcasting():
  r = np.random.default_rng(3)
  a, b = r.normal(size=(2, 3, 4, 5)), r.normal(size=(1, 3, 6, 5))
  got = fastmath.matmul_transposed(tf.constant(a), tf.constant(b))
  np.testing.assert_allclose(got.numpy(), a @ np.swapaxes(b, -1, -2),
                             rtol=1e-12)
  with pytest.raises(ValueError, match='float32 and float64; cast one'):
    fastmath.matmul_transposed(tf.constant(a, tf.float32), tf.constant(b))


def _layer_norm_np(x, scale, bias, eps, center):
  x = np.asarray(x, np.float64)
  if center:
    x = x - x.mean(-1, keepdims=True)
  y = x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * scale
  return y + bias if center else y


@pytest.mark.parametrize('center', [True, False])
def test_layer_norm_values_and_gradients_match_numpy(center):
  r = np.random.default_rng(4)
  x = r.normal(size=(2, 3, 5)) * 3 + 1
  scale, bias = r.normal(size=5), r.normal(size=5)
  ct = r.normal(size=(2, 3, 5))
  args = [tf.constant(a) for a in (x, scale, bias)]
  with tf.GradientTape() as tape:
    tape.watch(args)
    y = fastmath.layer_norm(*args, 1e-3, center)
  grads = tape.gradient(y, args, output_gradients=tf.constant(ct))
  np.testing.assert_allclose(y.numpy(),
                             _layer_norm_np(x, scale, bias, 1e-3, center),
                             rtol=1e-10)

  def loss(a, which):
    values = [x, scale, bias]
    values[which] = a
    return (_layer_norm_np(*values, 1e-3, center) * ct).sum()
  for which, value in enumerate((x, scale, bias)):
    numeric = np.zeros_like(value)
    for i in np.ndindex(value.shape):
      e = np.zeros_like(value)
      e[i] = 1e-6
      numeric[i] = (loss(value + e, which) - loss(value - e, which)) / 2e-6
    np.testing.assert_allclose(grads[which].numpy(), numeric, rtol=1e-6,
                               atol=1e-8)


def _layer_norm_grads_np(x, scale, ct, center):
  """Analytic float64 gradients of sum(layer_norm(x) * ct)."""
  d = x.shape[-1]
  xc = x - x.mean(-1, keepdims=True) if center else x
  inv = 1 / np.sqrt((xc * xc).mean(-1, keepdims=True) + 1e-3)
  xhat = xc * inv
  gx = ct * scale
  proj = xhat * (gx * xhat).sum(-1, keepdims=True) / d
  if center:
    proj += gx.sum(-1, keepdims=True) / d
  lead = tuple(range(x.ndim - 1))
  return inv * (gx - proj), (ct * xhat).sum(lead), ct.sum(lead)


@pytest.mark.parametrize('center', [True, False])
@pytest.mark.parametrize('d', [32, 256])
def test_layer_norm_under_xla_matches_numpy_with_row_means_as_products(
    center, d):
  """Under XLA a last axis of 64 or more takes its means as products with a
  constant column (MatMul ops in the traced graph); values and gradients
  match float64 NumPy either way."""
  r = np.random.default_rng(5)
  x = (r.normal(size=(4, 6, d)) * 3 + 1).astype(np.float32)
  scale = r.normal(size=d).astype(np.float32)
  bias = r.normal(size=d).astype(np.float32)
  ct = r.normal(size=(4, 6, d)).astype(np.float32)

  @tf.function(jit_compile=True)
  def fwd_bwd(x, scale, bias):
    with tf.GradientTape() as tape:
      tape.watch([x, scale, bias])
      y = fastmath.layer_norm(x, scale, bias, 1e-3, center)
    return (y,) + tuple(tape.gradient(y, [x, scale, bias],
                                      output_gradients=tf.constant(ct)))
  args = [tf.constant(a) for a in (x, scale, bias)]
  y, gx, gs, gb = fwd_bwd(*args)
  x64, s64, c64 = (np.float64(a) for a in (x, scale, ct))
  np.testing.assert_allclose(
      y.numpy(), _layer_norm_np(x64, s64, np.float64(bias), 1e-3, center),
      rtol=2e-5, atol=2e-5)
  want_gx, want_gs, want_gb = _layer_norm_grads_np(x64, s64, c64, center)
  np.testing.assert_allclose(gx.numpy(), want_gx, rtol=1e-4, atol=1e-4)
  np.testing.assert_allclose(gs.numpy(), want_gs, rtol=1e-4, atol=1e-4)
  if center:
    np.testing.assert_allclose(gb.numpy(), want_gb, rtol=1e-4, atol=1e-4)
  ops = {op.type for op in fwd_bwd.get_concrete_function(
      *args).graph.get_operations()}
  assert ('MatMul' in ops) == (d >= 64)
  # Without XLA the same call keeps reduce_mean.
  plain = tf.function(fwd_bwd.python_function)
  ops = {op.type for op in plain.get_concrete_function(
      *args).graph.get_operations()}
  assert 'MatMul' not in ops and 'Mean' in ops
