"""Convolution, pooling (Trax's `fastmath` form, channels last) and `linear`."""

import itertools

import numpy as onp
import tensorflow as tf

from tfnp_trax.fastmath import transforms

__all__ = ['conv', 'avg_pool', 'max_pool', 'sum_pool', 'layer_norm', 'linear', 'matmul_transposed', 'relu', 'softmax',
           'sparse_softmax_cross_entropy']


def _padding(padding):
  padding = padding.upper() if isinstance(padding, str) else padding
  if padding not in ('SAME', 'VALID') and not isinstance(padding, (list,
                                                                   tuple)):
    raise ValueError(f"padding must be 'SAME', 'VALID' or explicit pairs, got "
                     f'{padding!r}.')
  return padding


def conv(x, kernel, strides, padding, dilation=None, groups=1):
  """N-d convolution, input `[batch, *spatial, in]`, kernel `[*k, in, out]`.

  Args:
    x: input of rank 3, 4 or 5 (1-D, 2-D or 3-D convolution).
    kernel: kernel `[*window, in_channels // groups, out_channels]`.
    strides: per-spatial-dimension strides.
    padding: 'SAME', 'VALID', or a list of (low, high) pairs.
    dilation: per-spatial-dimension dilation rates (default 1).
    groups: feature groups (depthwise when equal to in_channels).

  Returns:
    The convolved tensor, channels last.
  """
  padding = _padding(padding)
  x = tf.convert_to_tensor(x)
  n = x.shape.rank - 2
  dilation = dilation or (1,) * n
  if not isinstance(padding, str):
    pads = [[0, 0]] + [list(p) for p in padding] + [[0, 0]]
    x = tf.pad(x, pads)
    padding = 'VALID'
  kernel = tf.cast(kernel, x.dtype)
  if any(s > 1 for s in strides) and any(d > 1 for d in dilation):
    # TF rejects strides and dilation together; a kernel with explicit holes
    # gives the same result (SAME padding already uses the dilated size).
    kernel = _dilate_kernel(kernel, dilation)
    dilation = (1,) * n
  # An explicit data_format: TF's eager Conv3D gradient fails without one.
  data_format = 'N' + 'DHW'[3 - n:] + 'C' if n <= 3 else None
  if groups == 1:
    return tf.nn.convolution(x, kernel, strides=list(strides), padding=padding,
                             dilations=list(dilation),
                             data_format=data_format)
  # Grouped convolution: split channels, convolve each group, concatenate.
  xs = tf.split(x, groups, axis=-1)
  ks = tf.split(kernel, groups, axis=-1)
  return tf.concat([tf.nn.convolution(xi, ki, strides=list(strides),
                                      padding=padding,
                                      dilations=list(dilation),
                                      data_format=data_format)
                    for xi, ki in zip(xs, ks)], axis=-1)


def _dilate_kernel(kernel, dilation):
  """Inserts `d - 1` zeros between the taps of each spatial kernel axis."""
  for axis, d in enumerate(dilation):
    if d == 1:
      continue
    size = kernel.shape[axis]
    zeros = [tf.zeros_like(kernel)] * (d - 1)
    spread = tf.stack([kernel] + zeros, axis=axis + 1)
    shape = kernel.shape.as_list()
    shape[axis] = size * d
    kernel = tf.reshape(spread, shape)
    kernel = tf.gather(kernel, tf.range((size - 1) * d + 1), axis=axis)
  return kernel


# Integer and boolean inputs. Trax pools with
# `lax.reduce_window(x, init, op, ...)` and a float init value: -inf for max,
# 0. for sum and for the sum under an average. JAX 0.4.30's reduce_window
# first looks for a monoid shortcut: a concrete scalar init equal to the
# identity of `op` (0 for add, the float32 max identity -inf for max) picks
# reduce_window_sum / reduce_window_max on the operand alone. The init
# value's dtype is never compared with the operand's, and the init is a
# Python float, concrete even under jit, so the shortcut is always taken:
#   - max_pool of int32 is int32 (padding never wins: the shortcut pads with
#     the operand dtype's own identity, its minimum) and of bool is bool;
#   - sum_pool of int32 is int32, with integer (wrapping) sums;
#   - avg_pool of int32 divides those int32 sums by int32 window sizes, and
#     JAX's `/` on two int32 arrays is float32 true division;
#   - sum_pool and avg_pool of bool fail: reduce_window_sum requires a
#     number dtype.
# TensorFlow's pooling kernels take floats only, so for these inputs each
# window is reduced from strided slices, one per window offset.


def _is_int_or_bool(x):
  return x.dtype.is_integer or x.dtype == tf.bool


def _explicit_pads(spatial, pool_size, strides, padding):
  """Per-axis (low, high) pads as XLA's SAME / VALID define them."""
  if not isinstance(padding, str):
    return [tuple(p) for p in padding]
  if padding == 'VALID':
    return [(0, 0)] * len(pool_size)
  pads = []
  for size, k, s in zip(spatial, pool_size, strides):
    total = max((-(-size // s) - 1) * s + k - size, 0)
    pads.append((total // 2, total - total // 2))
  return pads


def _window_reduce(x, pool_size, strides, padding, combine, fill):
  """Reduces each window of integer or boolean `x` with `combine`."""
  spatial = x.shape[1:-1]
  if None in spatial:
    raise ValueError(f'pooling integer inputs needs static spatial sizes, '
                     f'got shape {tuple(x.shape)}.')
  pads = _explicit_pads(spatial, pool_size, strides, padding)
  if any(p != (0, 0) for p in pads):
    x = tf.pad(x, [(0, 0)] + pads + [(0, 0)], constant_values=fill)
  outs = [(size + lo + hi - k) // s + 1 for size, (lo, hi), k, s in
          zip(spatial, pads, pool_size, strides)]
  result = None
  for offsets in itertools.product(*(range(k) for k in pool_size)):
    index = (slice(None),) + tuple(
        slice(o, o + (n - 1) * s + 1, s)
        for o, n, s in zip(offsets, outs, strides)) + (slice(None),)
    piece = x[index]
    result = piece if result is None else combine(result, piece)
  return result


def _check_number(x, what):
  if x.dtype == tf.bool:
    raise TypeError(f'{what}: the input must have a number dtype, got bool '
                    f'(as in Trax, whose reduce_window_sum rejects it).')


def _int_max_pool(x, pool_size, strides, padding):
  if x.dtype == tf.bool:
    return _window_reduce(x, pool_size, strides, padding, tf.logical_or,
                          False)
  lowest = onp.iinfo(x.dtype.as_numpy_dtype).min
  return _window_reduce(x, pool_size, strides, padding, tf.maximum, lowest)


def _int_sum_pool(x, pool_size, strides, padding):
  return _window_reduce(x, pool_size, strides, padding, tf.add, 0)


def _int_avg_pool(x, pool_size, strides, padding):
  sums = _int_sum_pool(x, pool_size, strides, padding)
  # Window sizes (real cells only) depend on static sizes alone, so they
  # are computed here in NumPy; the division is JAX's int / int -> float32.
  ones = onp.ones((1,) + tuple(x.shape[1:-1]) + (1,), onp.int32)
  counts = _window_reduce(tf.constant(ones), pool_size, strides, padding,
                          tf.add, 0)
  return tf.cast(sums, tf.float32) / tf.cast(counts, tf.float32)


def _pool(x, pool_size, strides, padding, kind):
  x = tf.convert_to_tensor(x)
  padding = _padding(padding)
  # As in Trax, windows move by one step along each axis by default.
  strides = strides or (1,) * len(pool_size)
  if _is_int_or_bool(x):
    if kind == 'MAX':
      return _int_max_pool(x, pool_size, strides, padding)
    _check_number(x, 'avg_pool')
    return _int_avg_pool(x, pool_size, strides, padding)
  return tf.nn.pool(x, window_shape=list(pool_size), pooling_type=kind,
                    strides=list(strides), padding=padding)


def max_pool(x, pool_size, strides=None, padding='VALID'):
  """Max pooling over the spatial axes of a channels-last input.

  Integer and boolean inputs keep their dtype, as in Trax.
  """
  return _pool(x, pool_size, strides, padding, 'MAX')


def avg_pool(x, pool_size, strides=None, padding='VALID'):
  """Average pooling; with SAME padding, border windows average fewer cells.

  Integer inputs give float32 means, as in Trax; boolean inputs are an error.
  """
  return _pool(x, pool_size, strides, padding, 'AVG')


def sum_pool(x, pool_size, strides=None, padding='VALID'):
  """Sum pooling: window sums (average pool times the window size).

  Integer inputs give integer sums of their own dtype, as in Trax; boolean
  inputs are an error.
  """
  x = tf.convert_to_tensor(x)
  padding = _padding(padding)
  strides = strides or (1,) * len(pool_size)  # As in _pool.
  if _is_int_or_bool(x):
    _check_number(x, 'sum_pool')
    return _int_sum_pool(x, pool_size, strides, padding)
  channels = x.shape[-1]
  if (len(pool_size) == 2 and isinstance(padding, str) and
      strides[0] == strides[1]):
    # One fused depthwise op instead of one convolution per channel (the
    # op needs equal strides on both axes).
    kernel = tf.ones(list(pool_size) + [channels, 1], x.dtype)
    return tf.nn.depthwise_conv2d(x, kernel, strides=[1, *strides, 1],
                                  padding=padding)
  # A grouped convolution with one all-ones filter per channel sums each
  # window; kernel layout is [*window, in_channels / groups = 1, channels].
  kernel = tf.ones(list(pool_size) + [1, channels], x.dtype)
  return conv(x, kernel, strides, padding, groups=channels)


def linear(x, w, b=None):
  """`x @ w (+ b)` over the last axis of `x`, in the form TensorFlow runs best.

  Inputs of rank other than 2 are folded into one 2-D MatMul: a batched
  product against a shared `w` would compute the weight gradient as one
  product per leading index followed by a sum, where the folded form needs
  one large product. The bias is added with BiasAdd, which TensorFlow's
  graph optimizer fuses with the MatMul (and a following Relu) into one
  oneDNN kernel, and whose gradient is a single reduction.

  Args:
    x: array `[..., d]`.
    w: array `[d, n]` of x's dtype.
    b: optional array `[n]` of x's dtype.

  Returns:
    Array `[..., n]`.
  """
  x, w = tf.convert_to_tensor(x), tf.convert_to_tensor(w)
  d, n = w.shape[0], w.shape[-1]
  if x.shape.rank == 2:
    y = tf.matmul(x, w)
  else:
    y = tf.matmul(tf.reshape(x, [-1, d]), w)
  if b is not None:
    y = tf.nn.bias_add(y, tf.convert_to_tensor(b))
  if x.shape.rank == 2:
    return y
  lead = x.shape[:-1]
  if lead.is_fully_defined():
    return tf.reshape(y, lead.as_list() + [n])
  return tf.reshape(y, tf.concat([tf.shape(x)[:-1], [n]], 0))


_RELU_DTYPES = frozenset([
    tf.float16, tf.bfloat16, tf.float32, tf.float64, tf.int8, tf.int16,
    tf.int32, tf.int64, tf.uint8, tf.uint16])


def relu(x):
  """`x` where `x > 0`, else 0, in `x`'s dtype (Trax's `Relu`).

  One Relu op where TensorFlow has a kernel for the dtype: the graph
  optimizer fuses it into a preceding MatMul + BiasAdd (see `linear`), its
  gradient is one ReluGrad (the incoming gradient where `x > 0`, else 0, as
  Trax's `where(x <= 0, 0, x)` gives), and bfloat16 needs no float32 round
  trip. Other dtypes take the `where` form.

  Args:
    x: array.

  Returns:
    Array of `x`'s shape and dtype.
  """
  x = tf.convert_to_tensor(x)
  if x.dtype in _RELU_DTYPES:
    return tf.nn.relu(x)
  return tf.where(x <= 0, tf.zeros_like(x), x)


def _last_axis_mean_fn(x):
  """A function taking the mean over the last axis of arrays shaped as `x`.

  Under XLA with a known last size of at least 64 the mean is a product
  with a constant column of `1 / d`: XLA's CPU compiler splits a long
  reduction into a reduce-window kernel and a second reduction, which ran
  a layer norm's forward and backward pass 25% slower than the matrix
  product on a [16, 128, 256] input (see bench/README.md). Elsewhere it is
  `reduce_mean`.
  """
  rank = x.shape.rank
  d = x.shape[-1] if rank else None
  if (rank is None or rank < 2 or d is None or d < 64 or
      not x.dtype.is_floating or not transforms.in_xla()):
    return lambda v: tf.reduce_mean(v, axis=-1, keepdims=True)
  column = tf.fill([d, 1], tf.cast(1.0 / d, x.dtype))

  def mean(v):
    rows = tf.matmul(tf.reshape(v, [-1, d]), column)
    if v.shape.is_fully_defined():
      return tf.reshape(rows, v.shape[:-1].as_list() + [1])
    return tf.reshape(rows, tf.concat([tf.shape(v)[:-1], [1]], 0))
  return mean


def layer_norm(x, scale, bias, epsilon, center=True):
  """`(x - mean) / sqrt(var + epsilon) * scale + bias` over the last axis.

  The mean and the biased variance are taken over the last axis; with
  `center=False` neither the mean is subtracted nor `bias` added. The
  gradient is the closed form of layer normalization's backward pass (a few
  fused reductions), instead of the chain of division, square-root and
  broadcast gradients that autodiff of the forward formula builds.

  Args:
    x: float array `[..., d]` (compute the statistics' dtype before, e.g.
      float32 for bfloat16 inputs).
    scale: array `[d]` of `x`'s dtype.
    bias: array `[d]` of `x`'s dtype (unused when `center` is False).
    epsilon: Python float added to the variance.
    center: whether to subtract the mean and add `bias`.

  Returns:
    Array of `x`'s shape and dtype.
  """
  x = tf.convert_to_tensor(x)
  scale = tf.convert_to_tensor(scale)
  bias = tf.convert_to_tensor(bias)
  lead_axes = list(range(x.shape.rank - 1))
  mean = _last_axis_mean_fn(x)

  @tf.custom_gradient
  def norm(x, scale, bias):
    xc = x - mean(x) if center else x
    inv = tf.math.rsqrt(mean(xc * xc) + epsilon)
    xhat = xc * inv
    y = xhat * scale + bias if center else xhat * scale

    def grad(g):
      g_scale = tf.reduce_sum(g * xhat, axis=lead_axes)
      g_bias = (tf.reduce_sum(g, axis=lead_axes) if center
                else tf.zeros_like(bias))
      gx = g * scale
      proj = xhat * mean(gx * xhat)
      if center:
        proj += mean(gx)
      return inv * (gx - proj), g_scale, g_bias
    return y, grad
  return norm(x, scale, bias)


def softmax(x, axis=-1):
  """`exp(x - logsumexp(x))` along `axis`, as one fused Softmax op.

  Equal to the two-pass form Trax writes up to float rounding, with one
  exponential instead of two and a one-op gradient. Integer inputs compute
  in float32.

  Args:
    x: array.
    axis: the axis to normalize over.

  Returns:
    Array of `x`'s shape (float).
  """
  x = tf.convert_to_tensor(x)
  if not x.dtype.is_floating:
    x = tf.cast(x, tf.float32)
  return tf.nn.softmax(x, axis=axis)


def matmul_transposed(a, b):
  """`a @ swapaxes(b, -1, -2)` without materializing the transpose.

  The batched MatMul reads `b` transposed (`adj_y`), so neither the forward
  pass nor the gradient needs a Transpose op (attention logits `q k^T`).

  Args:
    a: array `[..., n, d]`.
    b: array `[..., m, d]` of `a`'s dtype; leading axes broadcast.

  Returns:
    Array `[..., n, m]`.
  """
  a, b = tf.convert_to_tensor(a), tf.convert_to_tensor(b)
  if a.dtype != b.dtype:
    raise ValueError(f'matmul_transposed: operands have dtypes '
                     f'{a.dtype.name} and {b.dtype.name}; cast one first.')
  return tf.linalg.matmul(a, b, transpose_b=True)


def sparse_softmax_cross_entropy(logits, targets):
  """`-log_softmax(logits)[..., target]` per item, as one fused kernel.

  Equals `-sum(one_hot(targets, n) * log_softmax(logits), -1)`, including its
  value for a target outside `[0, n)` (no one-hot entry, so 0, with zero
  gradient), but runs as TensorFlow's fused kernel, whose gradient is
  `softmax - one_hot` without materialising either term separately.
  Low-precision logits are computed in float32 and the result is cast back.

  Args:
    logits: float array `[..., n]`.
    targets: integer array `logits.shape[:-1]`.

  Returns:
    Array `logits.shape[:-1]` of logits' dtype.
  """
  logits, targets = tf.convert_to_tensor(logits), tf.convert_to_tensor(targets)
  n = logits.shape[-1]
  compute = logits if logits.dtype in (tf.float32, tf.float64) else tf.cast(
      logits, tf.float32)
  if not targets.dtype.is_integer:
    targets = tf.cast(targets, tf.int32)
  clipped = tf.clip_by_value(targets, 0, n - 1)
  ce = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=clipped,
                                                      logits=compute)
  # A target outside [0, n) was moved by the clip: its loss is 0.
  ce = tf.where(tf.equal(targets, clipped), ce, tf.constant(0, ce.dtype))
  return tf.cast(ce, logits.dtype)
