"""Weights, RandomUniform, ToFloat, LocallyConnected1d, one_hot, Gaussians."""

import math

import numpy as np
import pytest

from tfnp_trax import fastmath
from tfnp_trax import layers as tl
from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.layers import initializers as init
from tests import _layer_testing as lt

_KEY = fastmath.random.get_prng(0)


def test_weights_layer_outputs_its_weights():
  layer = tl.Weights(init.RandomNormalInitializer(1.), shape=(3, 2))
  assert layer.n_in == 0 and layer.n_out == 1 and layer.name == 'Weights_(3, 2)'
  w, _ = layer.init((), rng=_KEY)
  np.testing.assert_array_equal(layer(()), w)
  np.testing.assert_array_equal(w, init.RandomNormalInitializer(1.)((3, 2),
                                                                    _KEY))
  w16, _ = tl.Weights(init.RandomNormalInitializer(), (2,),
                      use_bfloat16=True).init(())
  assert w16.dtype.name == 'bfloat16'


def test_weights_in_a_model_and_gradient():
  # x -> x + w: the Weights layer pushes w onto the data stack.
  model = tl.Serial(tl.Weights(init.RandomNormalInitializer(1.), shape=(3,)),
                    tl.Add())
  assert model.n_in == 1
  x = np.arange(3, dtype=np.float32)
  lt.check_layer(model, x, lambda x, w: x + w[0], modes=('eager', 'xla'))


@pytest.mark.parametrize('mode', lt.MODES)
def test_random_uniform(mode):
  layer = tl.RandomUniform(min_val=-2., max_val=3., shape=(4000,))
  assert layer.n_in == 0 and layer.n_out == 1
  layer.init(())
  y = np.asarray(lt.layer_outputs(layer, (), mode, seed=3))
  again = np.asarray(lt.layer_outputs(layer, (), mode, seed=3))
  other = np.asarray(lt.layer_outputs(layer, (), mode, seed=4))
  assert y.shape == (4000,) and y.dtype == np.float32
  assert y.min() >= -2. and y.max() < 3.
  assert abs(y.mean() - 0.5) < 0.15  # std of the mean: 5 / sqrt(12 * 4000).
  np.testing.assert_array_equal(y, again)
  assert not np.array_equal(y, other)


def test_random_uniform_dtype_and_sync_on_one_device():
  layer = tl.RandomUniform(shape=(2, 3), dtype='bfloat16', sync=True)
  layer.init(())
  y = layer((), rng=_KEY)
  assert y.dtype.name == 'bfloat16' and tuple(y.shape) == (2, 3)


def test_to_float():
  y = tl.ToFloat()(np.array([1, 2], np.int32))
  assert y.dtype.name == 'float32'
  np.testing.assert_array_equal(y, [1., 2.])


def _locally_connected(x, w, padding, use_bias=True):
  """Trax's LocallyConnected1d written as explicit sums (see its docstring)."""
  w, b = (w if use_bias else (w, None))
  length, k = x.shape[-2], w.shape[1]
  h = (k - 1) // 2
  out_len = length - 2 * h if padding == 'VALID' else length
  y = np.zeros(x.shape[:-2] + (out_len, w.shape[-1]))
  for o in range(out_len):
    for i in range(k):
      l = o + 2 * h - i if padding == 'VALID' else o - h + i
      if padding == 'WRAP':
        l %= length
      if 0 <= l < length:
        y[..., o, :] += x[..., l, :] @ w[l, i]
  return y if b is None else y + b


_LC_X = np.random.default_rng(3).normal(size=(2, 6, 3))


@pytest.mark.parametrize('padding', ['VALID', 'SAME', 'WRAP'])
@pytest.mark.parametrize('use_bias', [True, False])
def test_locally_connected_1d_eagerly(padding, use_bias):
  layer = tl.LocallyConnected1d(2, 3, padding=padding, use_bias=use_bias)
  lt.check_layer(
      layer, _LC_X, lambda x, w: _locally_connected(x, w, padding, use_bias),
      modes=('eager',))


def test_locally_connected_1d_compiled():
  lt.check_parallel([
      (tl.LocallyConnected1d(2, k, padding=p), _LC_X,
       lambda x, w, p=p: _locally_connected(x, w, p))
      for p in ('VALID', 'SAME', 'WRAP') for k in (1, 3)])


def test_locally_connected_1d_weights_and_bfloat16():
  layer = tl.LocallyConnected1d(4, 3, padding='VALID')
  (w, b), _ = lt.init_layer(layer, np.zeros((2, 7, 5)))
  assert tuple(w.shape) == (7, 3, 5, 4) and tuple(b.shape) == (5, 4)
  # The position axis is left out of the fans: limit sqrt(6 / (3*5 + 3*4)).
  assert np.abs(np.asarray(w)).max() <= math.sqrt(6 / 27)
  lt.check_bfloat16(tl.LocallyConnected1d(4, 3, padding='SAME'), _LC_X)


def test_locally_connected_1d_errors():
  with pytest.raises(ValueError, match=r'LocallyConnected1d: kernel_size '
                     r'must be a positive odd number, got 2'):
    tl.LocallyConnected1d(2, 2)
  with pytest.raises(ValueError, match=r"padding must be one of \('VALID', "
                     r"'SAME', 'WRAP'\), got 'CAUSAL'"):
    tl.LocallyConnected1d(2, 3, padding='CAUSAL')
  layer = tl.LocallyConnected1d(2, 3)
  lt.init_layer(layer, _LC_X)
  with pytest.raises(tl.LayerError, match=r'LocallyConnected1d_2_3: input '
                     r'shape \(2, 5, 3\) must end in \(length, depth\) = '
                     r'\(6, 3\)'):
    layer(np.zeros((2, 5, 3), np.float32))


def test_one_hot():
  x = np.array([[0, 2], [3, -1]], np.int32)
  for mode in lt.MODES:
    y = lt.compile_fn(lambda x: tl.one_hot(x, 3), mode)(x)
    assert y.dtype.name == 'float32'
    np.testing.assert_array_equal(y, [[[1, 0, 0], [0, 0, 1]],
                                      [[0, 0, 0], [0, 0, 0]]])
  assert tl.one_hot(x, 4, dtype=jnp.int32).dtype.name == 'int32'


def _np_log_gaussian(x, mu, sigma):
  d = mu.shape[-1]
  diff = x - mu
  quad = np.einsum('...i,...ij,...j->...', diff, np.linalg.inv(sigma), diff)
  return -0.5 * (d * np.log(2 * np.pi) + np.linalg.slogdet(sigma)[1] + quad)


def test_log_gaussian_pdf():
  rng = np.random.default_rng(4)
  a = rng.normal(size=(2, 3, 3))
  sigma = a @ np.swapaxes(a, -1, -2) + np.eye(3)
  x, mu = rng.normal(size=(2, 3)), rng.normal(size=(2, 3))
  want = _np_log_gaussian(x, mu, sigma)
  for mode in lt.MODES:
    got = lt.compile_fn(tl.log_gaussian_pdf, mode)(
        *lt.to_tensors((x, mu, sigma)))
    np.testing.assert_allclose(got, want, rtol=1e-5)


def test_log_gaussian_diag_pdf_and_gradient():
  rng = np.random.default_rng(5)
  x = rng.normal(size=(4, 1, 3))  # Broadcasts against 2 components.
  mu = rng.normal(size=(4, 2, 3))
  var = rng.uniform(0.5, 2, size=(4, 2, 3))
  want = _np_log_gaussian(x, mu, np.eye(3) * var[..., None])
  x_t, mu_t, var_t = lt.to_tensors((x, mu, var))
  for mode in lt.MODES:
    got = lt.compile_fn(tl.log_gaussian_diag_pdf, mode)(x_t, mu_t, var_t)
    assert tuple(got.shape) == (4, 2)
    np.testing.assert_allclose(got, want, rtol=1e-5)
    g = lt.compile_fn(fastmath.grad(lambda m: jnp.sum(
        tl.log_gaussian_diag_pdf(x_t, m, var_t))), mode)(mu_t)
    np.testing.assert_allclose(g, (x - mu) / var, rtol=1e-4, atol=1e-5)
