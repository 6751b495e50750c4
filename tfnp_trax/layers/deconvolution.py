"""Transposed convolution (fractionally strided convolution): ConvTranspose."""

import math

from tfnp_trax import fastmath
from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.layers import _conv_layout
from tfnp_trax.layers import base
from tfnp_trax.layers import core
from tfnp_trax.layers import initializers as init

__all__ = ['ConvTranspose']


def _transpose_padding(k, s, padding):
  """(low, high) padding of the stride-dilated input for one axis."""
  if padding == 'SAME':
    total = k + s - 2
    low = k - 1 if s > k - 1 else math.ceil(total / 2)
  else:  # 'VALID'
    total = k + s - 2 + max(k - s, 0)
    low = k - 1
  return low, total - low


def _dilate(x, axis, s):
  """Inserts s - 1 zeros between neighbours along `axis`."""
  if s == 1:
    return x
  n = x.shape[axis]
  spread = jnp.stack([x] + [jnp.zeros_like(x)] * (s - 1), axis=axis + 1)
  shape = list(x.shape)
  shape[axis] = n * s
  spread = jnp.reshape(spread, shape)
  index = tuple(slice(0, (n - 1) * s + 1) if i == axis else slice(None)
                for i in range(x.ndim))
  return spread[index]


class ConvTranspose(base.Layer):
  """Transposed convolution, as XLA's `conv_transpose` (kernel not flipped).

  The input is spread out by `strides` (s - 1 zeros between neighbours),
  padded and cross-correlated with the kernel `[*window, in, filters]` at
  stride 1. 'SAME' gives spatial size n * s; 'VALID' gives
  n * s + max(k - s, 0) (k the dilated window); explicit (low, high) pairs
  pad the spread input directly.

  Example:
    >>> layer = ConvTranspose(4, (3, 3), strides=(2, 2), padding='SAME')
    >>> _ = layer.init(shapes.ShapeDtype((1, 5, 5, 3)))
    >>> tuple(layer(jnp.ones((1, 5, 5, 3), dtype=jnp.float32)).shape)
    (1, 10, 10, 4)

  Args:
    filters: number of output channels.
    kernel_size: window size per spatial axis.
    strides: upsampling factor per spatial axis (default 1).
    padding: 'VALID', 'SAME' or (low, high) pairs per spatial axis.
    rhs_dilation: kernel dilation per spatial axis (default 1).
    dimension_numbers: (input, kernel, output) layouts, as for `Conv`.
    kernel_initialzer: kernel initializer (Trax's spelling; defaults to
      Glorot normal). `kernel_initializer=` is accepted too.
    bias_initializer: initializer for the bias.
    kernel_initializer: the correctly spelled alias of `kernel_initialzer`.
    use_bias: whether to add a bias (an extension to Trax's signature).
  """

  def __init__(self, filters, kernel_size, strides=None, padding='VALID',
               rhs_dilation=None, dimension_numbers=('NHWC', 'HWIO', 'NHWC'),
               kernel_initialzer=None,
               bias_initializer=init.RandomNormalInitializer(1e-6),
               kernel_initializer=None, use_bias=True):
    super().__init__(name='ConvTranspose')
    if kernel_initialzer is not None and kernel_initializer is not None:
      raise ValueError('ConvTranspose: pass kernel_initializer or its Trax '
                       'spelling kernel_initialzer, not both.')
    kernel_size = tuple(kernel_size)
    n = len(kernel_size)
    self._layout = _conv_layout.ConvLayout(self.name, dimension_numbers, n)
    self._filters = filters
    self._kernel_size = _conv_layout.per_axis(self.name, 'kernel_size',
                                              kernel_size, n)
    self._strides = _conv_layout.per_axis(self.name, 'strides', strides, n)
    self._dilation = _conv_layout.per_axis(self.name, 'rhs_dilation',
                                           rhs_dilation, n)
    self._padding = _conv_layout.check_padding(self.name, padding, n)
    self._bias_initializer = bias_initializer
    self._use_bias = use_bias
    rhs = self._layout.rhs
    self._kernel_initializer = (
        kernel_initialzer or kernel_initializer or
        init.GlorotNormalInitializer(rhs.index('O'), rhs.index('I')))

  def forward(self, x):
    # As in Trax, whose lax.conv_transpose requires the input in the float
    # kernel's dtype: integer inputs are rejected, not promoted.
    core.check_float(self.name, x, 'Trax rejects it too: its convolution '
                     "needs the input in the float kernel's dtype.")
    w, b = self.weights if self._use_bias else (self.weights, None)
    if isinstance(self._padding, str):
      pads = tuple(_transpose_padding((k - 1) * d + 1, s, self._padding)
                   for k, d, s in zip(self._kernel_size, self._dilation,
                                      self._strides))
    else:
      pads = self._padding

    def conv_transpose(xc, wc):
      for axis, s in enumerate(self._strides, start=1):
        xc = _dilate(xc, axis, s)
      return fastmath.conv(xc, wc, (1,) * len(pads), pads,
                           dilation=self._dilation)
    return self._layout.apply(x, w, b, conv_transpose)

  def init_weights_and_state(self, input_signature):
    kernel_shape = self._layout.kernel_shape(
        input_signature.shape, self._filters, self._kernel_size)
    rng_w, rng_b = fastmath.random.split(self.rng, 2)
    w = self._kernel_initializer(kernel_shape, rng_w)
    if self._use_bias:
      b = self._bias_initializer(self._layout.bias_shape(self._filters), rng_b)
      self.weights = (w, b)
    else:
      self.weights = w
