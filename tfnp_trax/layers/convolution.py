"""Convolution layers: Conv, Conv1d, CausalConv and CausalDepthwiseConv.

Data is channels last by default (`('NHWC', 'HWIO', 'NHWC')`) and kernels are
`[*window, in_channels, filters]`, as in Trax. Kernels and biases are cast to
the input's dtype, so bfloat16 inputs give bfloat16 outputs.

Integer and boolean inputs: `Conv` and its variants reject them, as Trax does
(its `lax.conv_general_dilated` requires the input and the float32 kernel to
have one dtype, and does no promotion). `CausalDepthwiseConv` multiplies
element-wise, so there JAX's promotion applies: int32 inputs give float32.
"""

from tfnp_trax import fastmath
from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.layers import _conv_layout
from tfnp_trax.layers import _dtypes
from tfnp_trax.layers import base
from tfnp_trax.layers import core
from tfnp_trax.layers import initializers as init

__all__ = ['Conv', 'Conv1d', 'CausalConv', 'CausalDepthwiseConv']

# Why integer inputs are an error (see the module docstring).
_SAME_DTYPE_AS_KERNEL = ('Trax rejects it too: its convolution needs the '
                         "input in the float kernel's dtype.")


class Conv(base.Layer):
  """N-d convolution (cross-correlation) plus an optional bias.

  y[n, o, f] = sum_{k, c} x[n, o * stride + k * dilation, c] w[k, c, f] + b[f]
  with padding added first ('SAME' keeps size / stride per spatial axis,
  'VALID' adds none; explicit (low, high) pairs are also accepted). Inputs
  with more axes than the layout fold the extra leading ones into the batch.

  Example:
    >>> layer = Conv(4, (3, 3), padding='SAME')
    >>> _ = layer.init(shapes.ShapeDtype((2, 8, 8, 3)))
    >>> tuple(layer(jnp.ones((2, 8, 8, 3), dtype=jnp.float32)).shape)
    (2, 8, 8, 4)

  Args:
    filters: number of output channels.
    kernel_size: window size, one int per spatial axis.
    strides: window steps per spatial axis (default 1).
    padding: 'VALID', 'SAME', or (low, high) pairs per spatial axis.
    dimension_numbers: (input, kernel, output) layouts, one letter per axis:
      'N' batch, 'C' channels, 'I'/'O' kernel in/out, others spatial
      (matched by letter; kernel_size follows the kernel's order).
    kernel_initializer: defaults to Glorot normal over the kernel's I and O
      axes.
    bias_initializer: initializer for the bias.
    use_bias: whether to add a bias.
    kernel_dilation: spacing between kernel taps per spatial axis (default
      1); an extension to Trax's signature.
  """

  def __init__(self, filters, kernel_size, strides=None, padding='VALID',
               dimension_numbers=('NHWC', 'HWIO', 'NHWC'),
               kernel_initializer=None,
               bias_initializer=init.RandomNormalInitializer(1e-6),
               use_bias=True, kernel_dilation=None, name=None):
    super().__init__(name=name or 'Conv')
    kernel_size = tuple(kernel_size)
    self._layout = _conv_layout.ConvLayout(self.name, dimension_numbers,
                                           len(kernel_size))
    n = len(kernel_size)
    self._filters = filters
    self._kernel_size = _conv_layout.per_axis(self.name, 'kernel_size',
                                              kernel_size, n)
    self._strides = _conv_layout.per_axis(self.name, 'strides', strides, n)
    self._dilation = _conv_layout.per_axis(self.name, 'kernel_dilation',
                                           kernel_dilation, n)
    self._padding = _conv_layout.check_padding(self.name, padding, n)
    self._bias_initializer = bias_initializer
    self._use_bias = use_bias
    rhs = self._layout.rhs
    self._kernel_initializer = kernel_initializer or (
        init.GlorotNormalInitializer(rhs.index('O'), rhs.index('I')))

  def forward(self, x):
    core.check_float(self.name, x, _SAME_DTYPE_AS_KERNEL)
    w, b = self.weights if self._use_bias else (self.weights, None)

    def conv(xc, wc):
      self._check_window(xc.shape)
      return fastmath.conv(xc, wc, self._strides, self._padding,
                           dilation=self._dilation)
    return self._layout.apply(x, w, b, conv)

  def _check_window(self, canonical_shape):
    spatial = canonical_shape[1:-1]
    pads = (((0, 0),) * len(spatial) if self._padding == 'VALID' else
            self._padding if not isinstance(self._padding, str) else None)
    if pads is None:
      return
    windows = tuple((k - 1) * d + 1
                    for k, d in zip(self._kernel_size, self._dilation))
    if any(size is not None and size + lo + hi < window
           for size, window, (lo, hi) in zip(spatial, windows, pads)):
      raise ValueError(
          f'{self.name}: spatial size {tuple(spatial)} (padded by {pads}) '
          f'is smaller than the dilated kernel window {windows}. Use '
          f"padding='SAME' or a larger input.")

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


def Conv1d(filters, kernel_size, stride=1, padding='VALID',  # pylint: disable=invalid-name
           kernel_initializer=None,
           bias_initializer=init.RandomNormalInitializer(1e-6),
           use_bias=True):
  """A 1-D `Conv` on `[batch, length, channels]` inputs."""
  return Conv(filters, (kernel_size,), strides=(stride,), padding=padding,
              dimension_numbers=('NWC', 'WIO', 'NWC'),
              kernel_initializer=kernel_initializer,
              bias_initializer=bias_initializer, use_bias=use_bias)


class CausalConv(Conv):
  """1-D convolution over `[batch, time, depth]` where y[t] sees only x[<= t].

  The input is left-padded with (kernel_width - 1) * dilation zeros and then
  convolved with 'VALID' padding, so the output keeps the input's length.

  Example:
    >>> layer = CausalConv(4, kernel_width=3)
    >>> _ = layer.init(shapes.ShapeDtype((2, 5, 3)))
    >>> tuple(layer(jnp.ones((2, 5, 3), dtype=jnp.float32)).shape)
    (2, 5, 4)

  Args:
    filters: number of output channels.
    kernel_width: window length in time steps.
    kernel_initializer: defaults to Glorot normal.
    bias_initializer: initializer for the bias.
    use_bias: whether to add a bias.
    dilation: spacing between taps (an extension to Trax's signature).
  """

  def __init__(self, filters, kernel_width=3, kernel_initializer=None,
               bias_initializer=init.RandomNormalInitializer(1e-6),
               use_bias=True, dilation=1):
    super().__init__(filters, (kernel_width,), strides=None, padding='VALID',
                     dimension_numbers=('NWC', 'WIO', 'NWC'),
                     kernel_initializer=kernel_initializer,
                     bias_initializer=bias_initializer, use_bias=use_bias,
                     kernel_dilation=(dilation,), name='CausalConv')
    self._pad = (kernel_width - 1) * dilation

  def forward(self, x):
    if x.ndim < 3:
      raise ValueError(f'{self.name}: expects inputs (batch, time, depth), '
                       f'got shape {tuple(x.shape)}.')
    pads = [(0, 0)] * (x.ndim - 2) + [(self._pad, 0), (0, 0)]
    return super().forward(jnp.pad(x, pads, mode='constant'))


class CausalDepthwiseConv(base.Layer):
  """Per-channel causal convolution: y[t, d] = sum_i x[t - i, d] w[i, d].

  Input `[..., time, depth]`; weights `w[kernel_size, depth]`; steps before
  the start count as zeros. The output has the input's shape, and a float
  input's dtype; integer inputs give float32, as Trax's `x * w` does.
  """

  def __init__(self, kernel_size=3,
               kernel_initializer=init.GlorotUniformInitializer(),
               use_bfloat16=False):
    super().__init__(n_in=1, n_out=1, name='CausalDepthwiseConv')
    self._kernel_size = kernel_size
    self._kernel_initializer = kernel_initializer
    self._use_bfloat16 = use_bfloat16

  def forward(self, x):
    x = x if hasattr(x, 'dtype') else jnp.asarray(x)
    dtype = core.compute_dtype(self.name, x, self.weights)
    x, w = core.cast_to(x, dtype), core.cast_to(self.weights, dtype)
    if x.ndim < 2 or x.shape[-1] != w.shape[-1]:
      raise ValueError(f'{self.name}: input depth (last axis of shape '
                       f'{tuple(x.shape)}) must be {w.shape[-1]}, as '
                       f'initialized. Re-run init with the new input '
                       f'signature.')
    k = self._kernel_size
    xp = jnp.pad(x, [(0, 0)] * (x.ndim - 2) + [(k - 1, 0), (0, 0)],
                 mode='constant')
    y = x * w[0]
    for i in range(1, k):
      # x shifted i steps later in time; negative ends need no static length.
      y = y + xp[..., k - 1 - i:-i, :] * w[i]
    return y

  def init_weights_and_state(self, input_signature):
    shape_w = (self._kernel_size, input_signature.shape[-1])
    rng_w, _ = fastmath.random.split(self.rng, 2)
    w = self._kernel_initializer(shape_w, rng_w)
    self.weights = w.astype(_dtypes.BFLOAT16) if self._use_bfloat16 else w
