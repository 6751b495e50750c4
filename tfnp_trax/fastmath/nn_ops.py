"""Convolution and pooling in Trax's `fastmath` form (channels last)."""

import tensorflow as tf

__all__ = ['conv', 'avg_pool', 'max_pool', 'sum_pool']


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


def _pool(x, pool_size, strides, padding, kind):
  padding = _padding(padding)
  # As in Trax, windows move by one step along each axis by default.
  strides = strides or (1,) * len(pool_size)
  return tf.nn.pool(x, window_shape=list(pool_size), pooling_type=kind,
                    strides=list(strides), padding=padding)


def max_pool(x, pool_size, strides=None, padding='VALID'):
  """Max pooling over the spatial axes of a channels-last input."""
  return _pool(x, pool_size, strides, padding, 'MAX')


def avg_pool(x, pool_size, strides=None, padding='VALID'):
  """Average pooling; with SAME padding, border windows average fewer cells."""
  return _pool(x, pool_size, strides, padding, 'AVG')


def sum_pool(x, pool_size, strides=None, padding='VALID'):
  """Sum pooling: window sums (average pool times the window size)."""
  x = tf.convert_to_tensor(x)
  padding = _padding(padding)
  strides = strides or (1,) * len(pool_size)  # As in _pool.
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
