"""Initializers: shapes, dtypes, determinism, fans and sample statistics."""

import math

import numpy as np
import pytest

from tfnp_trax import fastmath
from tfnp_trax.layers import initializers as init

_KEY = fastmath.random.get_prng(0)
_OTHER_KEY = fastmath.random.get_prng(1)

_ALL = {
    'RandomNormal': init.RandomNormalInitializer(),
    'RandomUniform': init.RandomUniformInitializer(),
    'GlorotNormal': init.GlorotNormalInitializer(),
    'GlorotUniform': init.GlorotUniformInitializer(),
    'LeCunNormal': init.LeCunNormalInitializer(),
    'LeCunUniform': init.LeCunUniformInitializer(),
    'KaimingNormal': init.KaimingNormalInitializer(),
    'KaimingUniform': init.KaimingUniformInitializer(),
    'TruncatedNormal': init.ScaledInitializer(-1, -2, 1., 'fan_in',
                                              'truncated_normal'),
    'Orthogonal': init.OrthogonalInitializer(),
    'AtariConv': init.AtariConvInit,
}


@pytest.mark.parametrize('name', sorted(_ALL))
def test_shape_dtype_and_determinism(name):
  f = _ALL[name]
  shape = (3, 2, 5, 7)
  a, b, c = f(shape, _KEY), f(shape, _KEY), f(shape, _OTHER_KEY)
  assert tuple(a.shape) == shape and a.dtype.name == 'float32'
  np.testing.assert_array_equal(a, b)
  assert not np.allclose(a, c)
  assert f(shape, _KEY, dtype='bfloat16').dtype.name == 'bfloat16'


@pytest.mark.parametrize('shape, kwargs, fans', [
    ((3, 3, 16, 32), {}, (144, 288)),
    ((16, 32), {}, (16, 32)),
    ((7,), {}, (7, 7)),
    ((), {}, (1, 1)),
    ((32, 16), {'out_dim': 0, 'in_dim': 1}, (16, 32)),
    ((4, 3, 3, 2), {'out_dim': 0, 'in_dim': 1}, (18, 24)),  # OIHW kernel.
    ((5, 3, 4, 6), {'nonreceptive_dims': [0]}, (12, 18)),
    ((5, 3, 4, 6), {'nonreceptive_dims': 0}, (12, 18)),
])
def test_fans_match_hand_values(shape, kwargs, fans):
  assert init.get_fans(shape, **kwargs) == fans


_BIG = (240, 250)  # 60000 samples: std estimates within ~0.3%.
_FAN_AVG = (240 + 250) / 2


@pytest.mark.parametrize('f, std, lim', [
    (init.RandomNormalInitializer(0.3), 0.3, None),
    (init.RandomUniformInitializer(0.5), 0.5 / math.sqrt(3), 0.5),
    (init.GlorotNormalInitializer(), math.sqrt(1 / _FAN_AVG), None),
    (init.GlorotUniformInitializer(scale=2.), math.sqrt(2 / _FAN_AVG),
     math.sqrt(6 / _FAN_AVG)),
    (init.LeCunNormalInitializer(), math.sqrt(1 / 240), None),
    (init.LeCunUniformInitializer(), math.sqrt(1 / 240), math.sqrt(3 / 240)),
    (init.KaimingNormalInitializer(), math.sqrt(2 / 240), None),
    (init.KaimingNormalInitializer(param=0.5), math.sqrt(2 / 1.25 / 240),
     None),
    (init.KaimingUniformInitializer(), math.sqrt(2 / 240),
     math.sqrt(6 / 240)),
    (init.ScaledInitializer(-1, -2, 3., 'fan_out', 'truncated_normal'),
     math.sqrt(3 / 250), 2 * math.sqrt(3 / 250) / 0.87962566103423978),
    (init.ScaledInitializer(0, 1, 1., 'fan_in', 'normal'),
     math.sqrt(1 / 250), None),
])
def test_statistics_match_formula(f, std, lim):
  x = np.asarray(f(_BIG, _KEY), np.float64)
  assert abs(x.mean()) < 4 * std / math.sqrt(x.size)
  assert x.std() == pytest.approx(std, rel=0.02)
  if lim is not None:
    assert np.abs(x).max() <= lim * (1 + 1e-6)
    assert np.abs(x).max() > 0.98 * lim


def test_conv_kernel_variance_counts_receptive_field():
  x = np.asarray(init.LeCunNormalInitializer()((5, 5, 40, 64), _KEY))
  assert x.std() == pytest.approx(math.sqrt(1 / (5 * 5 * 40)), rel=0.03)


def test_nonreceptive_dims_leave_out_axes():
  f = init.GlorotUniformInitializer()
  x = np.asarray(f((50, 3, 40, 60), _KEY, nonreceptive_dims=[0]))
  lim = math.sqrt(6 / (3 * 40 + 3 * 60))
  assert np.abs(x).max() <= lim * (1 + 1e-6)
  assert np.abs(x).max() > 0.99 * lim


@pytest.mark.parametrize('shape', [(6, 4), (4, 6), (2, 3, 4), (5, 5)])
def test_orthogonal(shape):
  q = np.asarray(init.OrthogonalInitializer(stddev=2.)(shape, _KEY),
                 np.float64)
  assert q.shape == shape
  m = q.reshape(-1, shape[-1])
  gram = m.T @ m if m.shape[0] >= m.shape[1] else m @ m.T
  np.testing.assert_allclose(gram, 4 * np.eye(len(gram)), atol=1e-5)


def test_orthogonal_vector_is_unit():
  v = np.asarray(init.OrthogonalInitializer()((5,), _KEY), np.float64)
  assert v.shape == (5,)
  assert np.linalg.norm(v) == pytest.approx(1., abs=1e-6)


def test_atari_conv_init_bounds():
  x = np.asarray(init.AtariConvInit((8, 8, 4, 32), _KEY))
  lim = 1 / math.sqrt(8 * 8 * 4)
  assert np.abs(x).max() <= lim and np.abs(x).max() > 0.98 * lim
  assert x.std() == pytest.approx(lim / math.sqrt(3), rel=0.03)


def test_initializers_work_under_xla():
  f = init.GlorotUniformInitializer()
  g = fastmath.jit(lambda key: f((20, 30), key), jit_compile=True)
  x = np.asarray(g(_KEY))
  assert x.shape == (20, 30) and np.abs(x).max() <= math.sqrt(6 / 25)


def test_initializer_from_file(tmp_path):
  values = np.arange(6, dtype=np.float64).reshape(3, 2) / 10
  path = str(tmp_path / 'w.npy')
  np.save(path, values)
  got = init.InitializerFromFile(path)((3, 2), _KEY)
  assert got.dtype.name == 'float32'
  np.testing.assert_allclose(got, values, rtol=1e-6)
  with pytest.raises(ValueError, match=r'holds shape \(3, 2\), but the '
                     r'weight needs \(2, 3\)'):
    init.InitializerFromFile(path)((2, 3), _KEY)


@pytest.mark.parametrize('kwargs, match', [
    ({'scale': 0.}, r'ScaledInitializer: scale must be positive, got 0.0'),
    ({'mode': 'fan_sum'}, r"mode must be 'fan_in', 'fan_out' or 'fan_avg', "
                          r"got 'fan_sum'"),
    ({'distribution': 'cauchy'}, r"distribution must be 'truncated_normal', "
                                 r"'normal' or 'uniform', got 'cauchy'"),
])
def test_scaled_initializer_errors(kwargs, match):
  args = dict(out_dim=-1, in_dim=-2, scale=1., mode='fan_in',
              distribution='normal')
  args.update(kwargs)
  with pytest.raises(ValueError, match=match):
    init.ScaledInitializer(**args)
