"""MaxPool, SumPool and AvgPool vs NumPy window loops."""

import numpy as np
import pytest

from tfnp_trax import layers as tl
from tests import _layer_testing as lt
from tests.layers import _np_conv

# A shuffled grid: distinct values 0.05 apart keep max-pool gradients away
# from ties, so finite differences are exact.
_X2 = (np.random.default_rng(0).permutation(2 * 5 * 6 * 3) * 0.05).reshape(
    2, 5, 6, 3) - 4.
_X1 = _X2[:, :, 0]
_X3 = _X2[:1, :, :4].reshape(1, 5, 2, 2, 3)

_LAYERS = {'max': tl.MaxPool, 'sum': tl.SumPool, 'avg': tl.AvgPool}


def _case(kind, x, pool_size, strides, padding):
  layer = _LAYERS[kind](pool_size, strides, padding)
  full_strides = strides or (1,) * len(pool_size)
  return (layer, x, lambda x, w: _np_conv.pool(x, pool_size, full_strides,
                                               padding, kind))


_SETTINGS = [
    (_X2, (2, 2), None, 'VALID'),
    (_X2, (2, 3), (2, 2), 'SAME'),
    (_X2, (3, 3), (2, 1), 'VALID'),
    (_X1, (3,), (2,), 'SAME'),
    (_X3, (2, 2, 1), None, 'SAME'),
]
_ALL = [(kind,) + s for kind in sorted(_LAYERS) for s in _SETTINGS]


@pytest.mark.parametrize('kind, x, pool_size, strides, padding', _ALL)
def test_pool_matches_numpy_eagerly(kind, x, pool_size, strides, padding):
  lt.check_layer(*_case(kind, x, pool_size, strides, padding),
                 modes=('eager',))


@pytest.mark.nondeterministic_ops(
    'MaxPool gradient ops have no deterministic XLA implementation')
def test_pools_match_numpy_compiled():
  lt.check_parallel([_case(*c) for c in _ALL])


def test_default_strides_are_one_as_in_trax():
  y = tl.MaxPool()(_X2.astype(np.float32))
  assert tuple(y.shape) == (2, 4, 5, 3)


def test_avg_pool_same_padding_averages_only_real_cells():
  x = np.arange(1, 5, dtype=np.float32).reshape(1, 4, 1)  # [1, 2, 3, 4]
  # Windows of 3 at stride 1 with one padded cell at each end.
  y = tl.AvgPool((3,), padding='SAME')(x)
  np.testing.assert_allclose(np.asarray(y)[0, :, 0], [1.5, 2., 3., 3.5])
  y = tl.SumPool((3,), padding='SAME')(x)
  np.testing.assert_allclose(np.asarray(y)[0, :, 0], [3., 6., 9., 7.])


def test_names():
  assert tl.MaxPool().name == 'MaxPool(2,2)'
  assert tl.AvgPool((3,)).name == 'AvgPool(3,)'
  assert tl.SumPool((1, 2, 3)).name == 'SumPool(1,2,3)'


@pytest.mark.parametrize('kind', sorted(_LAYERS))
def test_pools_keep_bfloat16(kind):
  lt.check_bfloat16(_LAYERS[kind]((2, 2), None, 'SAME'), _X2 / 4,
                    modes=('eager', 'xla'))


def test_pool_errors():
  with pytest.raises(ValueError, match=r"MaxPool\(2,2\): padding must be "
                     r"'SAME' or 'VALID', got 'FULL'"):
    tl.MaxPool(padding='FULL')
  with pytest.raises(ValueError, match=r'AvgPool\(2,2\): strides must be 2 '
                     r'positive ints .* got \(1,\)'):
    tl.AvgPool(strides=(1,))
  with pytest.raises(tl.LayerError, match=r'SumPool\(2,2\): pool_size \(2, '
                     r'2\) needs inputs of rank 4 \(batch, 2 spatial axes, '
                     r'channels\), got shape \(2, 5, 3\)'):
    tl.SumPool()(_X1.astype(np.float32))
  with pytest.raises(tl.LayerError, match=r"MaxPool\(6,1\): with 'VALID' "
                     r'padding the spatial size \(5, 6\) must be at least the '
                     r'pool size \(6, 1\)'):
    tl.MaxPool((6, 1))(_X2.astype(np.float32))
