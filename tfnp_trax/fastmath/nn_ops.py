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
  n = x.shape.rank - 2
  dilation = dilation or (1,) * n
  if not isinstance(padding, str):
    pads = [[0, 0]] + [list(p) for p in padding] + [[0, 0]]
    x = tf.pad(x, pads)
    padding = 'VALID'
  kernel = tf.cast(kernel, x.dtype)
  if groups == 1:
    return tf.nn.convolution(x, kernel, strides=list(strides), padding=padding,
                             dilations=list(dilation))
  # Grouped convolution: split channels, convolve each group, concatenate.
  xs = tf.split(x, groups, axis=-1)
  ks = tf.split(kernel, groups, axis=-1)
  return tf.concat([tf.nn.convolution(xi, ki, strides=list(strides),
                                      padding=padding,
                                      dilations=list(dilation))
                    for xi, ki in zip(xs, ks)], axis=-1)


def _pool(x, pool_size, strides, padding, kind):
  padding = _padding(padding)
  strides = strides or pool_size
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
  padding = _padding(padding)
  strides = strides or pool_size
  ones = tf.ones(list(pool_size) + [1, 1], x.dtype)
  # A depthwise convolution with an all-ones kernel sums each window.
  channels = x.shape[-1]
  kernel = tf.tile(ones, [1] * len(pool_size) + [channels, 1])
  return conv(x, kernel, strides, padding, groups=channels) if len(
      pool_size) != 2 else tf.nn.depthwise_conv2d(
          x, kernel, strides=[1, *strides, 1], padding=padding)
