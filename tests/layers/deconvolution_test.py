"""ConvTranspose vs a NumPy scatter-form reference."""

import math

import numpy as np
import pytest

from tfnp_trax import layers as tl
from tests import _layer_testing as lt
from tests.layers import _np_conv

_RNG = np.random.default_rng(1)
_X = _RNG.normal(size=(2, 3, 2, 2))


def _pads(k, s, padding):
  """XLA's conv_transpose padding of the stride-dilated input, one axis."""
  if padding == 'SAME':
    total = k + s - 2
    low = k - 1 if s > k - 1 else math.ceil(total / 2)
  else:
    total = k + s - 2 + max(k - s, 0)
    low = k - 1
  return low, total - low


def _ref(strides, padding='VALID', dilation=None):
  def ref(x, w):
    kernel, b = w
    dil = dilation or (1,) * len(strides)
    windows = [(k - 1) * d + 1 for k, d in zip(kernel.shape[:-2], dil)]
    pads = (padding if not isinstance(padding, str) else
            [_pads(k, s, padding) for k, s in zip(windows, strides)])
    return _np_conv.conv_transpose(x, kernel, strides, pads, dil) + b
  return ref


_CASES = {
    'valid': (lambda: tl.ConvTranspose(3, (3, 3), strides=(2, 2)), _X,
              _ref((2, 2))),
    'same': (lambda: tl.ConvTranspose(2, (2, 3), strides=(2, 1),
                                      padding='SAME'), _X,
             _ref((2, 1), 'SAME')),
    'dilated': (lambda: tl.ConvTranspose(2, (2, 2), strides=(1, 2),
                                         rhs_dilation=(2, 1)), _X,
                _ref((1, 2), dilation=(2, 1))),
    'explicit_padding': (lambda: tl.ConvTranspose(
        2, (3, 2), strides=(2, 2), padding=((1, 1), (0, 2))), _X,
                         _ref((2, 2), ((1, 1), (0, 2)))),
    '1d': (lambda: tl.ConvTranspose(2, (3,), strides=(3,), dimension_numbers=(
        'NWC', 'WIO', 'NWC')), _X[:, :, 0], _ref((3,))),
}


@pytest.mark.parametrize('name', sorted(_CASES))
def test_conv_transpose_matches_numpy_eagerly(name):
  make, x, ref = _CASES[name]
  lt.check_layer(make(), x, ref, modes=('eager',))


def test_conv_transposes_match_numpy_compiled():
  lt.check_parallel([(make(), x, ref) for make, x, ref in _CASES.values()])


@pytest.mark.parametrize('padding, strides, kernel, want', [
    ('SAME', (2, 3), (3, 2), (6, 6)),          # n * s
    ('VALID', (2, 3), (3, 2), (7, 6)),         # n * s + max(k - s, 0)
    ('VALID', (1, 1), (3, 2), (5, 3)),
])
def test_conv_transpose_output_sizes(padding, strides, kernel, want):
  layer = tl.ConvTranspose(1, kernel, strides=strides, padding=padding)
  lt.init_layer(layer, _X)
  assert tuple(layer(_X.astype(np.float32)).shape) == (2,) + want + (1,)


def test_conv_transpose_weights_initializers_and_bfloat16():
  (w, b), _ = lt.init_layer(tl.ConvTranspose(4, (3, 2)), _X)
  assert tuple(w.shape) == (3, 2, 2, 4) and tuple(b.shape) == (4,)
  ones = lambda shape, rng: np.ones(shape, np.float32)  # pylint: disable=unnecessary-lambda-assignment
  for kwargs in ({'kernel_initialzer': ones}, {'kernel_initializer': ones}):
    (w, _), _ = lt.init_layer(tl.ConvTranspose(2, (2, 2), **kwargs), _X)
    np.testing.assert_array_equal(w, np.ones((2, 2, 2, 2)))
  w, _ = lt.init_layer(tl.ConvTranspose(2, (2, 2), use_bias=False), _X)
  assert tuple(w.shape) == (2, 2, 2, 2)
  lt.check_bfloat16(tl.ConvTranspose(3, (2, 2), strides=(2, 2)), _X,
                    atol=0.1)


def test_conv_transpose_errors():
  with pytest.raises(ValueError, match=r'ConvTranspose: pass '
                     r'kernel_initializer or its Trax spelling '
                     r'kernel_initialzer, not both'):
    tl.ConvTranspose(2, (2, 2), kernel_initialzer=np.ones,
                     kernel_initializer=np.ones)
  with pytest.raises(ValueError, match=r"ConvTranspose: padding must be "
                     r"'SAME', 'VALID'.* got 'full'"):
    tl.ConvTranspose(2, (2, 2), padding='full')
  layer = tl.ConvTranspose(2, (2, 2))
  lt.init_layer(layer, _X)
  with pytest.raises(tl.LayerError, match=r'ConvTranspose: input has 3 '
                     r'channels .* but the kernel expects 2'):
    layer(np.zeros((1, 3, 3, 3), np.float32))
