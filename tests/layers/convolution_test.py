"""Conv, Conv1d, CausalConv, CausalDepthwiseConv vs NumPy loop references."""

import numpy as np
import pytest
import tensorflow as tf

from tfnp_trax import layers as tl
from tests import _layer_testing as lt
from tests.layers import _np_conv

_RNG = np.random.default_rng(0)
_X2 = _RNG.normal(size=(2, 5, 6, 2))
_X1 = _RNG.normal(size=(2, 7, 2))


def _conv_ref(strides=(1, 1), padding='VALID', dilation=(1, 1), bias=True):
  """Reference for a channels-last Conv with the given arguments."""
  def ref(x, w):
    kernel, b = (w if bias else (w, 0.))
    if padding == 'SAME':
      windows = [(k - 1) * d + 1 for k, d in zip(kernel.shape[:-2], dilation)]
      pads = _np_conv.same_pads(x.shape[1:-1], windows, strides)
    elif padding == 'VALID':
      pads = [(0, 0)] * len(strides)
    else:
      pads = padding
    return _np_conv.conv(x, kernel, strides, pads, dilation) + b
  return ref


def _nchw_ref(x, w):
  kernel, b = w
  y = _np_conv.conv(x.transpose(0, 2, 3, 1), kernel.transpose(2, 3, 1, 0),
                    (1, 1), [(0, 0)] * 2, (1, 1))
  return y.transpose(0, 3, 1, 2) + b


def _folded_ref(x, w):
  y = _conv_ref()(x.reshape((-1,) + x.shape[2:]), w)
  return y.reshape(x.shape[:2] + y.shape[1:])


def _causal_ref(dilation):
  def ref(x, w):
    pad = (w[0].shape[0] - 1) * dilation
    xp = np.pad(x, [(0, 0), (pad, 0), (0, 0)])
    return _np_conv.conv(xp, w[0], (1,), [(0, 0)], (dilation,)) + w[1]
  return ref


def _depthwise_ref(x, w):
  y = np.zeros_like(x)
  for t in range(x.shape[1]):
    for i in range(w.shape[0]):
      if t - i >= 0:
        y[:, t] += x[:, t - i] * w[i]
  return y


_CASES = {
    'valid': (lambda: tl.Conv(3, (3, 3)), _X2, _conv_ref()),
    'same_strided': (lambda: tl.Conv(3, (2, 3), strides=(2, 1),
                                     padding='SAME'), _X2,
                     _conv_ref((2, 1), 'SAME')),
    'dilated': (lambda: tl.Conv(2, (3, 3), padding='SAME',
                                kernel_dilation=(2, 1)), _X2,
                _conv_ref(padding='SAME', dilation=(2, 1))),
    'strided_and_dilated': (lambda: tl.Conv(2, (2, 3), strides=(2, 2),
                                            padding='SAME',
                                            kernel_dilation=(2, 2)), _X2,
                            _conv_ref((2, 2), 'SAME', (2, 2))),
    'explicit_padding': (lambda: tl.Conv(2, (2, 2),
                                         padding=((1, 0), (2, 1))), _X2,
                         _conv_ref(padding=((1, 0), (2, 1)))),
    'no_bias': (lambda: tl.Conv(2, (3, 2), use_bias=False), _X2,
                _conv_ref(bias=False)),
    'nchw': (lambda: tl.Conv(3, (2, 3), dimension_numbers=(
        'NCHW', 'OIHW', 'NCHW')), _X2.transpose(0, 3, 1, 2), _nchw_ref),
    'conv1d': (lambda: tl.Conv1d(3, 3, stride=2, padding='SAME'), _X1,
               _conv_ref((2,), 'SAME', (1,))),
    'conv3d': (lambda: tl.Conv(2, (2, 2, 2), dimension_numbers=(
        'NDHWC', 'DHWIO', 'NDHWC')), _RNG.normal(size=(1, 3, 4, 3, 2)),
               _conv_ref((1, 1, 1), 'VALID', (1, 1, 1))),
    'folded_batch': (lambda: tl.Conv(2, (2, 2)), _X2.reshape(1, 2, 5, 6, 2),
                     _folded_ref),
    'causal': (lambda: tl.CausalConv(3, 3), _X1, _causal_ref(1)),
    'causal_dilated': (lambda: tl.CausalConv(2, 2, dilation=2), _X1,
                       _causal_ref(2)),
    'causal_depthwise': (tl.CausalDepthwiseConv, _X1, _depthwise_ref),
}


@pytest.mark.parametrize('name', sorted(_CASES))
def test_conv_matches_numpy_eagerly(name):
  make, x, ref = _CASES[name]
  lt.check_layer(make(), x, ref, modes=('eager',))


def test_convs_match_numpy_compiled():
  lt.check_parallel([(make(), x, ref) for make, x, ref in _CASES.values()])


@pytest.mark.parametrize('name', sorted(_CASES))
def test_conv_keeps_bfloat16(name):
  make, x, _ = _CASES[name]
  lt.check_bfloat16(make(), x, rtol=0.05, atol=0.1, modes=('eager',))


def test_convs_keep_bfloat16_under_xla():
  layer = tl.Serial(tl.Conv(3, (3, 3), padding='SAME'), tl.Conv(2, (2, 2)))
  lt.check_bfloat16(layer, _X2, atol=0.1, modes=('jit', 'xla'))


def test_causal_conv_ignores_the_future():
  layer = tl.CausalConv(2, 3, dilation=2)
  lt.init_layer(layer, _X1)
  x = _X1.astype(np.float32)
  changed = x.copy()
  changed[:, 4:] += 1.
  y, y_changed = np.asarray(layer(x)), np.asarray(layer(changed))
  np.testing.assert_array_equal(y[:, :4], y_changed[:, :4])
  assert not np.allclose(y[:, 4:], y_changed[:, 4:])


@pytest.mark.parametrize('make, x_shape, w_shape, b_shape', [
    (lambda: tl.Conv(4, (3, 2)), (1, 5, 6, 3), (3, 2, 3, 4), (4,)),
    (lambda: tl.Conv(4, (3, 2), dimension_numbers=('NCHW', 'OIHW', 'NCHW')),
     (1, 3, 5, 6), (4, 3, 3, 2), (4, 1, 1)),
    (lambda: tl.Conv1d(5, 2), (1, 6, 3), (2, 3, 5), (5,)),
    (lambda: tl.CausalConv(5), (1, 6, 3), (3, 3, 5), (5,)),
])
def test_weight_shapes(make, x_shape, w_shape, b_shape):
  (w, b), _ = lt.init_layer(make(), np.zeros(x_shape, np.float32))
  assert tuple(w.shape) == w_shape and tuple(b.shape) == b_shape
  # Default bias: Normal(0, 1e-6^2), as in Trax.
  assert np.abs(np.asarray(b)).max() < 1e-5


def test_causal_depthwise_conv_weights():
  layer = tl.CausalDepthwiseConv(kernel_size=4, use_bfloat16=True)
  w, _ = lt.init_layer(layer, _X1)
  assert tuple(w.shape) == (4, 2) and w.dtype.name == 'bfloat16'


def _init_conv(layer, shape):
  lt.init_layer(layer, np.zeros(shape, np.float32))
  return layer


def test_conv_channel_mismatch_names_layer_channels_and_shape():
  layer = _init_conv(tl.Conv(4, (3, 3)), (1, 6, 6, 3))
  with pytest.raises(tl.LayerError, match=r'Conv: input has 5 channels \(axis '
                     r"3 of input shape \(1, 6, 6, 5\), layout 'NHWC'\) but "
                     r'the kernel expects 3'):
    layer(np.zeros((1, 6, 6, 5), np.float32))


def test_conv_rank_mismatch():
  with pytest.raises(tl.LayerError, match=r'Conv: input shape \(2, 7, 2\) has '
                     r"rank 3, but the layout 'NHWC' needs rank 4"):
    _init_conv(tl.Conv(4, (3, 3)), (2, 7, 2))
  with pytest.raises(ValueError, match=r'Conv: kernel_size has 1 spatial dims '
                     r"but the kernel spec 'HWIO' has 2"):
    tl.Conv(4, (3,))


@pytest.mark.parametrize('kwargs, match', [
    ({'padding': 'FULL'}, r"Conv: padding must be 'SAME', 'VALID' or a "
                          r"sequence of \(low, high\) pairs.* got 'FULL'"),
    ({'padding': ((1, 1),)}, r'Conv: padding must be .* \(2 here\), got '
                             r'\(\(1, 1\),\)'),
    ({'strides': (1, 2, 1)}, r'Conv: strides must be 2 positive ints \(one '
                             r'per spatial axis\), got \(1, 2, 1\)'),
    ({'dimension_numbers': ('NHWC', 'HWIO', 'NCHW2')},
     r'Conv: inconsistent dimension_numbers'),
])
def test_conv_argument_errors(kwargs, match):
  with pytest.raises(ValueError, match=match):
    tl.Conv(4, (3, 3), **kwargs)


def test_conv_window_larger_than_input():
  layer = _init_conv(tl.Conv(2, (3, 3)), (1, 2, 5, 1))
  with pytest.raises(tl.LayerError, match=r'Conv: spatial size \(2, 5\) .* '
                     r'smaller than the dilated kernel window \(3, 3\)'):
    layer(np.zeros((1, 2, 5, 1), np.float32))


def test_conv_rejects_integer_inputs():
  layer = _init_conv(tl.Conv(2, (1, 1)), (1, 2, 2, 1))
  with pytest.raises(tl.LayerError, match=r'Conv: expects a floating-point '
                     r'input, got dtype int32'):
    layer(np.zeros((1, 2, 2, 1), np.int32))


def test_causal_convs_reject_wrong_shapes():
  layer = _init_conv(tl.CausalConv(2), (1, 6, 3))
  with pytest.raises(tl.LayerError, match=r'CausalConv: expects inputs '
                     r'\(batch, time, depth\), got shape \(6, 3\)'):
    layer(np.zeros((6, 3), np.float32))
  layer = _init_conv(tl.CausalDepthwiseConv(), (1, 6, 3))
  with pytest.raises(tl.LayerError, match=r'CausalDepthwiseConv: input depth '
                     r'\(last axis of shape \(1, 6, 4\)\) must be 3'):
    layer(np.zeros((1, 6, 4), np.float32))


def test_unknown_batch_size_under_tf_function():
  spec = tf.TensorSpec([None, 5, 6, 2], tf.float32)
  for layer in (tl.Conv(3, (3, 3), padding='SAME'), tl.ConvTranspose(2, (2, 2)),
                tl.CausalDepthwiseConv(), tl.MaxPool(), tl.SumPool((2, 1))):
    lt.init_layer(layer, _X2)
    traced = tf.function(lambda x, layer=layer: layer(x),
                         input_signature=[spec])
    want = np.asarray(layer(_X2.astype(np.float32)))
    np.testing.assert_allclose(traced(_X2.astype(np.float32)), want,
                               rtol=1e-5, atol=1e-5, err_msg=layer.name)
