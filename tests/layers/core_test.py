"""Core layers (Dense, Embedding, Dropout, reshaping/reducing Fns) vs NumPy."""

import numpy as np
import pytest

from tfnp_trax import fastmath
from tfnp_trax import layers as tl
from tfnp_trax import shapes
from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.layers import initializers as init
from tests import _layer_testing as lt

_X = np.random.default_rng(0).normal(size=(2, 3, 4))


def _dense(x, w):
  return x @ w[0] + w[1]


def test_dense_matches_numpy():
  lt.check_layer(tl.Dense(5), _X, _dense)


def test_dense_without_bias():
  w = lt.check_layer(tl.Dense(5, use_bias=False), _X, lambda x, w: x @ w)
  assert tuple(w.shape) == (4, 5)


def test_dense_initializer_options():
  layer = tl.Dense(3, kernel_initializer=lambda shape, rng: jnp.ones(
      shape, dtype=jnp.float32), bias_initializer=init.RandomUniformInitializer(
          0.1))
  (w, b), _ = lt.init_layer(layer, _X)
  np.testing.assert_array_equal(w, np.ones((4, 3)))
  assert np.abs(np.asarray(b)).max() <= 0.1 and b.shape == (3,)


def test_dense_use_bfloat16_and_bfloat16_inputs():
  layer = tl.Dense(5, use_bfloat16=True)
  (w, b), _ = lt.init_layer(layer, _X)
  assert w.dtype.name == 'bfloat16' and b.dtype.name == 'bfloat16'
  lt.check_bfloat16(tl.Dense(5), _X)


@pytest.mark.parametrize('shape, dtype, kwargs', [
    ((4, 3), np.float32, {}),
    ((2, 5, 3), np.float32, {'use_bias': False}),
    ((4, 3), jnp.bfloat16, {}),
    ((4, 3), np.float16, {'use_bfloat16': True}),
    ((4, 3), np.int32, {}),  # Not floating: the general path.
])
def test_dense_output_signature_matches_running_it(shape, dtype, kwargs,
                                                    monkeypatch):
  """A floating input's output signature comes from the shapes, with no
  matmul run during init (fastmath.linear is made to fail); it equals the
  signature of the layer's actual output."""
  sig = shapes.ShapeDtype(shape, dtype)
  x = np.ones(shape, np.float32).astype(dtype)
  layer = tl.Dense(6, **kwargs)
  layer.init(sig, rng=fastmath.random.get_prng(0))
  want = shapes.signature(layer(x))
  floating = np.dtype(dtype).kind == 'f' or dtype is jnp.bfloat16
  if floating:
    def no_matmul(*args, **kw):
      raise AssertionError('Dense ran a matmul to find its output signature')
    monkeypatch.setattr(fastmath, 'linear', no_matmul)
  got = layer.output_signature(sig)
  assert got == want and tuple(got.shape) == shape[:-1] + (6,)
  serial = tl.Serial(tl.Dense(6, **kwargs), tl.Dense(2, **kwargs))
  serial.init(sig, rng=fastmath.random.get_prng(0))
  assert serial.output_signature(sig) == shapes.ShapeDtype(
      shape[:-1] + (2,), want.dtype)


def test_dense_errors():
  layer = tl.Dense(5)
  lt.init_layer(layer, _X)
  with pytest.raises(tl.LayerError, match=r'Dense_5: input last dim 6 does '
                     r'not match weights in_dim 4 \(input shape \(2, 6\)'):
    layer(np.ones((2, 6), np.float32))
  # Integer inputs promote as in Trax (see tests/trax_semantics); strings
  # and complex numbers are still rejected, naming the layer.
  assert layer(np.ones((2, 4), np.int32)).dtype.name == 'float32'
  with pytest.raises(tl.LayerError, match=r'Dense_5: expects a floating-point, '
                     r'integer or boolean input, got dtype complex64'):
    layer(np.ones((2, 4), np.complex64))
  with pytest.raises(ValueError, match=r'Dense: n_units must be a positive '
                     r'int, got 0'):
    tl.Dense(0)


_IDS = np.array([[0, 3, 9], [-4, 12, 5]], np.int32)  # -4 and 12 lie outside.


def _embed(ids, table):
  return table[np.clip(ids, 0, table.shape[0] - 1)]


def test_embedding_matches_numpy_and_clips_ids():
  table = lt.check_layer(tl.Embedding(10, 4), _IDS, _embed)
  assert tuple(table.shape) == (10, 4)
  out = np.asarray(tl.Embedding(10, 4)(_IDS, weights=table))
  np.testing.assert_array_equal(out[1, 0], np.asarray(table)[0])
  np.testing.assert_array_equal(out[1, 1], np.asarray(table)[9])


def test_embedding_use_bfloat16_returns_float32():
  layer = tl.Embedding(10, 4, use_bfloat16=True)
  table, _ = lt.init_layer(layer, _IDS)
  assert table.dtype.name == 'bfloat16'
  for mode in lt.MODES:
    assert lt.layer_outputs(layer, _IDS, mode).dtype.name == 'float32'


def test_embedding_default_init_is_uniform_fan_out():
  table, _ = lt.init_layer(tl.Embedding(300, 64), _IDS)
  lim = np.sqrt(3 / 64)
  assert np.abs(np.asarray(table)).max() <= lim
  assert np.abs(np.asarray(table)).max() > 0.98 * lim


def test_embedding_rejects_float_ids():
  layer = tl.Embedding(10, 4)
  lt.init_layer(layer, _IDS)
  with pytest.raises(tl.LayerError, match=r'Embedding_10_4: expects integer '
                     r'ids, got dtype float32 with shape \(2,\)'):
    layer(np.ones((2,), np.float32))


def _dropout_run(layer, x, mode='eager', seed=1):
  return np.asarray(lt.layer_outputs(layer, x, mode, seed=seed), np.float64)


@pytest.mark.parametrize('mode', lt.MODES)
def test_dropout_train_statistics(mode):
  x = np.random.default_rng(1).uniform(1, 2, size=(50, 40))
  layer = tl.Dropout(rate=0.3)
  lt.init_layer(layer, x)
  y = _dropout_run(layer, x, mode)
  kept = y != 0
  # Kept entries are scaled by 1 / (1 - rate); the rest are zero.
  np.testing.assert_allclose(y[kept], x[kept] / 0.7, rtol=1e-6)
  assert abs(1 - kept.mean() - 0.3) < 0.03  # 2000 draws: std ~0.01.


def test_dropout_is_deterministic_per_rng():
  x = np.ones((20, 20), np.float32)
  layer = tl.Dropout(rate=0.5)
  lt.init_layer(layer, x)
  np.testing.assert_array_equal(_dropout_run(layer, x, seed=3),
                                _dropout_run(layer, x, seed=3))
  assert not np.array_equal(_dropout_run(layer, x, seed=3),
                            _dropout_run(layer, x, seed=4))


def test_dropout_shared_axes():
  x = np.ones((6, 30), np.float32)
  layer = tl.Dropout(rate=0.5, shared_axes=[0])
  lt.init_layer(layer, x)
  y = _dropout_run(layer, x)
  np.testing.assert_array_equal(y, np.broadcast_to(y[:1], y.shape))
  assert 0 < (y[0] == 0).sum() < 30


@pytest.mark.parametrize('mode', ['eval', 'predict'])
def test_dropout_is_identity_outside_training(mode):
  x = np.arange(12, dtype=np.float32).reshape(3, 4)
  layer = tl.Dropout(rate=0.9, mode=mode)
  lt.init_layer(layer, x)
  np.testing.assert_array_equal(_dropout_run(layer, x), x)


def test_dropout_state_holds_rate_and_can_override_it():
  x = np.ones((40, 50), np.float32)
  layer = tl.Dropout(rate=0.2)
  _, state = lt.init_layer(layer, x)
  assert state.dtype.name == 'float32'
  assert float(state) == pytest.approx(0.2)
  y, _ = layer.pure_fn(x, (), {'Dropout': 0.9}, fastmath.random.get_prng(0))
  assert abs((np.asarray(y) == 0).mean() - 0.9) < 0.03


def test_dropout_gradient_is_the_mask():
  x = np.random.default_rng(2).uniform(1, 2, size=(8, 9)).astype(np.float32)
  layer = tl.Dropout(rate=0.4)
  lt.init_layer(layer, x)
  key = fastmath.random.get_prng(5)

  def loss(x):
    return jnp.sum(layer.pure_fn(x, (), layer.state, key)[0])
  for mode in lt.MODES:
    g = np.asarray(lt.compile_fn(fastmath.grad(loss), mode)(x))
    y = _dropout_run(layer, x, seed=5) if mode == 'eager' else None
    if y is not None:
      np.testing.assert_allclose(g, y / x, rtol=1e-6)
    assert np.all(np.isclose(g, 0) | np.isclose(g, 1 / 0.6))


def test_dropout_keeps_bfloat16():
  x = np.ones((4, 5), np.float32)
  layer = tl.Dropout(rate=0.5)
  lt.init_layer(layer, x)
  for mode in lt.MODES:
    y = lt.layer_outputs(layer, jnp.asarray(x).astype('bfloat16'), mode)
    assert y.dtype.name == 'bfloat16'
    assert set(np.unique(np.asarray(y.astype('float32')))) <= {0., 2.}


def test_dropout_errors():
  with pytest.raises(ValueError, match=r'Dropout: rate must be in \[0, 1\), '
                     r'got 1.0'):
    tl.Dropout(rate=1.0)
  layer = tl.Dropout(rate=0.5, shared_axes=[3])
  lt.init_layer(layer, _X)
  with pytest.raises(tl.LayerError, match=r'Dropout: shared axis 3 is out of '
                     r'range for an input of shape \(2, 3, 4\)'):
    layer(_X.astype(np.float32))


def _log_softmax(x, axis=-1):
  m = x.max(axis=axis, keepdims=True)
  return x - m - np.log(np.exp(x - m).sum(axis=axis, keepdims=True))


_FNS = {
    'LogSoftmax': (tl.LogSoftmax, _log_softmax),
    'Softmax': (lambda: tl.Softmax(axis=1),
                lambda x: np.exp(_log_softmax(x, axis=1))),
    'LogSumExp': (tl.LogSumExp, lambda x: np.log(
        np.exp(x).sum(-1, keepdims=True))),
    'Mean': (lambda: tl.Mean(axis=1, keepdims=True),
             lambda x: x.mean(1, keepdims=True)),
    'Sum': (tl.Sum, lambda x: np.asarray(x.sum())),
    'Min': (tl.Min, lambda x: x.min(-1)),
    'Max': (lambda: tl.Max(axis=0), lambda x: x.max(0)),
    'Negate': (tl.Negate, lambda x: -x),
    'Flatten_keep1': (tl.Flatten, lambda x: x.reshape(2, -1)),
    'Flatten_keep2': (lambda: tl.Flatten(2), lambda x: x),
}


@pytest.mark.parametrize('name', sorted(_FNS))
def test_weightless_layers_match_numpy_eagerly(name):
  make, ref = _FNS[name]
  layer = make()
  if name == 'Negate':  # As in Trax, it comes wrapped in shape checks.
    assert str(layer) == 'Serial[\n  Negate\n]'
  else:
    assert layer.name == name
  lt.check_layer(layer, _X, lambda x, w: ref(x), modes=('eager',))


def test_weightless_layers_match_numpy_compiled():
  lt.check_parallel([(make(), _X, lambda x, w, ref=ref: ref(x))
                     for make, ref in _FNS.values()])


def test_softmax_keeps_bfloat16():
  lt.check_bfloat16(tl.Softmax(), _X)


def test_argmax_and_stop_gradient():
  assert tl.ArgMax()(_X).dtype.name == 'int32'
  np.testing.assert_array_equal(tl.ArgMax(axis=1)(_X), _X.argmax(1))
  x = jnp.asarray(_X.astype(np.float32))
  g = fastmath.grad(lambda x: jnp.sum(tl.StopGradient()(x) * x))(x)
  np.testing.assert_allclose(g, _X, rtol=1e-6)


def test_flatten_errors():
  with pytest.raises(tl.LayerError, match=r'Flatten: n_axes_to_keep \(3\) '
                     r'must be less than the input rank 3'):
    tl.Flatten(3)(_X)
  assert tl.Flatten(0).output_signature(shapes.signature(_X)).shape == (24,)


def test_init_without_a_signature_for_input_independent_weights():
  # Follows trax/layers/core_test.py EmbeddingTest: `init(None)` works for
  # layers whose weights do not depend on the inputs; a plain shape is
  # still caught.
  layer = tl.Embedding(10, 3)
  weights, _ = layer.init(None)
  assert tuple(weights.shape) == (10, 3)
  y = np.asarray(layer(np.array([2, 3, 2])))
  np.testing.assert_array_equal(y[0], np.asarray(weights)[2])
  np.testing.assert_array_equal(y[0], y[2])
  assert tl.Dropout(rate=0.1, mode='train').init(None)[0] == ()
  with pytest.raises(tl.LayerError, match=r'got the plain shape \(2, 3\)'):
    tl.Relu().init((2, 3))
