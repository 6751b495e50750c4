"""LSTM, GRU and SRU layers against NumPy float64 references."""

import doctest

import numpy as np
import pytest
import tensorflow as tf

from tests.layers import _layer_check as lc
from tfnp_trax import fastmath
from tfnp_trax import layers as tl
from tfnp_trax import shapes
from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.layers import rnn


def _sigmoid(x):
  return 1.0 / (1.0 + np.exp(-x))


def _lstm_cell_ref(x, state, w, b):
  c, h = np.split(state, 2, axis=-1)
  i, j, f, o = np.split(np.concatenate([x, h], -1) @ w + b, 4, axis=-1)
  new_c = c * _sigmoid(f) + _sigmoid(i) * np.tanh(j)
  new_h = np.tanh(new_c) * _sigmoid(o)
  return new_h, np.concatenate([new_c, new_h], -1)


def _gru_cell_ref(x, h, w1, b1, w2, b2):
  u, r = np.split(_sigmoid(np.concatenate([x, h], -1) @ w1 + b1), 2, -1)
  c = np.tanh(np.concatenate([x, r * h], -1) @ w2 + b2)
  new_h = u * h + (1 - u) * c
  return new_h, new_h


def _scan_ref(cell, xs, state, *weights):
  ys = []
  for t in range(xs.shape[1]):
    y, state = cell(xs[:, t], state, *weights)
    ys.append(y)
  return np.stack(ys, axis=1), state


def _sru_ref(x, w, b, activation=lambda c: c):
  r, f, y = np.split(x @ w + b, 3, axis=-1)
  r, f = _sigmoid(r), _sigmoid(f)
  c, cs = np.zeros_like(x[:, 0]), []
  for t in range(x.shape[1]):
    c = f[:, t] * c + (1 - f[:, t]) * y[:, t]
    cs.append(c)
  return activation(np.stack(cs, 1)) * r + x * (1 - r) * np.sqrt(3.0)


def _with_leaves(tree, new_leaves):
  return fastmath.tree_unflatten(list(new_leaves), tree)[0]


# -- Cells -------------------------------------------------------------------


@pytest.mark.parametrize('mode', lc.MODES)
def test_lstm_cell_matches_numpy(mode, rng):
  x, state = lc.random(rng, 2, 3), lc.random(rng, 2, 8)
  w, b = lc.random(rng, 7, 16, scale=0.5), lc.random(rng, 16)
  ct = (lc.random(rng, 2, 4), lc.random(rng, 2, 8))
  layer = lc.init_layer(tl.LSTMCell(4), x, state)
  (h, new_state), _, (gx, gs), (gw, gb) = lc.forward_and_grads(
      layer, (x, state), (w, b), (), ct, mode)
  lc.assert_close([h, new_state], _lstm_cell_ref(x, state, w, b))
  want = lc.numeric_grads(_lstm_cell_ref, [x, state, w, b], ct)
  lc.assert_close([gx, gs, gw, gb], want, atol=1e-4)


def test_lstm_cell_init_shapes_and_forget_bias():
  layer = tl.LSTMCell(4, forget_bias=2.5)
  (w, b), _ = layer.init((shapes.ShapeDtype((2, 3)),
                          shapes.ShapeDtype((2, 8))))
  assert tuple(w.shape) == (7, 16) and tuple(b.shape) == (16,)
  # The bias initializer has stddev 1e-6, so every entry sits at forget_bias.
  np.testing.assert_allclose(b, np.full(16, 2.5), atol=1e-4)


def test_lstm_cell_rejects_wrong_state_depth():
  # The cell is named 'LSTMCell', as in Trax (trax/layers/rnn.py).
  with pytest.raises(tl.LayerError, match=r'LSTMCell: state last dim 4 '
                     r'must be 2 \* n_units = 8 \(state shape \(2, 4\)\)'):
    tl.LSTMCell(4).init((shapes.ShapeDtype((2, 3)),
                         shapes.ShapeDtype((2, 4))))


def test_lstm_cell_rejects_input_depth_other_than_init():
  layer = tl.LSTMCell(4)
  layer.init((shapes.ShapeDtype((2, 3)), shapes.ShapeDtype((2, 8))))
  with pytest.raises(tl.LayerError, match=r'LSTMCell: input last dim 5 does '
                     r'not match the weights, built for inputs of depth 3 '
                     r'\(input shape \(2, 5\), kernel shape \(7, 16\)\)'):
    layer((jnp.ones((2, 5), jnp.float32), jnp.zeros((2, 8), jnp.float32)))


@pytest.mark.parametrize('mode', lc.MODES)
def test_gru_cell_matches_numpy(mode, rng):
  x, h = lc.random(rng, 2, 3), lc.random(rng, 2, 4)
  weights = (lc.random(rng, 7, 8), lc.random(rng, 8), lc.random(rng, 7, 4),
             lc.random(rng, 4))
  ct = (lc.random(rng, 2, 4), lc.random(rng, 2, 4))
  layer = lc.init_layer(tl.GRUCell(4), x, h)
  (y, new_h), _, (gx, gh), gw = lc.forward_and_grads(
      layer, (x, h), weights, (), ct, mode)
  lc.assert_close([y, new_h], _gru_cell_ref(x, h, *weights))
  want = lc.numeric_grads(_gru_cell_ref, [x, h, *weights], ct)
  lc.assert_close([gx, gh, *gw], want, atol=1e-4)


def test_gru_cell_rejects_wrong_state_depth():
  with pytest.raises(tl.LayerError, match=r'GRUCell: state last dim 8 must '
                     r'be n_units = 4'):
    tl.GRUCell(4).init((shapes.ShapeDtype((2, 3)), shapes.ShapeDtype((2, 8))))


# -- Layers over sequences ---------------------------------------------------


@pytest.mark.parametrize('mode', lc.MODES)
def test_lstm_matches_numpy_scan(mode, rng):
  # Input depth 3 differs from n_units 4: the zero state follows n_units.
  x = lc.random(rng, 2, 5, 3)
  ct = lc.random(rng, 2, 5, 4)
  layer = lc.init_layer(tl.LSTM(4), x)
  w, b = lc.random(rng, 7, 16, scale=0.5), lc.random(rng, 16)
  weights = _with_leaves(layer.weights, [w, b])
  y, _, gx, gw = lc.forward_and_grads(layer, x, weights, layer.state, ct,
                                      mode)

  def ref(x, w, b):
    return _scan_ref(_lstm_cell_ref, x, np.zeros((2, 8)), w, b)[0]
  lc.assert_close(y, ref(x, w, b))
  want = lc.numeric_grads(ref, [x, w, b], ct)
  lc.assert_close([gx] + lc.leaves(gw), want, atol=1e-4)


def test_lstm_return_state_and_initial_state(rng):
  x, state = lc.random(rng, 2, 4, 3), lc.random(rng, 2, 6)
  returning = lc.init_layer(tl.LSTM(3, return_state=True), x)
  w, b = lc.leaves(returning.weights)
  y, final = returning(x)
  want_y, want_final = _scan_ref(_lstm_cell_ref, x, np.zeros((2, 6)), w, b)
  lc.assert_close([y, final], [want_y, want_final])

  for return_state in (False, True):
    seeded = tl.LSTM(3, initial_state=True, return_state=return_state)
    assert seeded.n_in == 2 and seeded.n_out == (2 if return_state else 1)
    seeded.init(shapes.signature((x, state)))
    out = seeded((x, state), weights=_with_leaves(seeded.weights, [w, b]))
    want = _scan_ref(_lstm_cell_ref, x, state, w, b)
    lc.assert_close(out, want if return_state else want[0])


@pytest.mark.parametrize('mode', lc.MODES)
def test_gru_matches_numpy_scan(mode, rng):
  x = lc.random(rng, 2, 4, 3)
  ct = lc.random(rng, 2, 4, 2)
  layer = lc.init_layer(tl.GRU(2), x)
  weights = [lc.random(rng, 5, 4), lc.random(rng, 4), lc.random(rng, 5, 2),
             lc.random(rng, 2)]
  y, _, gx, gw = lc.forward_and_grads(
      layer, x, _with_leaves(layer.weights, weights), layer.state, ct, mode)

  def ref(x, *ws):
    return _scan_ref(_gru_cell_ref, x, np.zeros((2, 2)), *ws)[0]
  lc.assert_close(y, ref(x, *weights))
  lc.assert_close([gx] + lc.leaves(gw),
                  lc.numeric_grads(ref, [x, *weights], ct), atol=1e-4)


@pytest.mark.parametrize('mode', lc.MODES)
@pytest.mark.parametrize('tanh', [False, True])
def test_sru_matches_numpy(tanh, mode, rng):
  x = lc.random(rng, 2, 4, 3)
  ct = lc.random(rng, 2, 4, 3)
  layer = lc.init_layer(tl.SRU(3, activation=tl.Tanh() if tanh else None), x)
  w, b = lc.random(rng, 3, 9), lc.random(rng, 9)
  y, _, gx, gw = lc.forward_and_grads(
      layer, x, _with_leaves(layer.weights, [w, b]), layer.state, ct, mode)
  ref = lambda x, w, b: _sru_ref(x, w, b, np.tanh if tanh else (lambda c: c))
  lc.assert_close(y, ref(x, w, b))
  lc.assert_close([gx] + lc.leaves(gw), lc.numeric_grads(ref, [x, w, b], ct),
                  atol=1e-4)


def test_sru_rejects_input_depth_other_than_n_units():
  with pytest.raises(tl.LayerError, match=r'SRU_4: input depth 3 must equal '
                     r'n_units=4 for the highway connection \(input shape '
                     r'\(2, 5, 3\)\)'):
    tl.SRU(4).init(shapes.ShapeDtype((2, 5, 3)))


@pytest.mark.parametrize('make,name', [(tl.LSTM, 'LSTM_4'), (tl.GRU, 'GRU_4'),
                                       (tl.SRU, 'SRU_4')])
def test_recurrent_layers_reject_rank_2_input(make, name):
  with pytest.raises(tl.LayerError, match=rf'{name}: expects input of rank 3 '
                     r'\(batch, length, depth\), got shape \(2, 4\)'):
    make(4).init(shapes.ShapeDtype((2, 4)))


def test_make_zero_state_follows_trax():
  x = jnp.ones((2, 5, 3), tf.bfloat16)
  zeros = tl.MakeZeroState(depth_multiplier=2)(x)
  assert tuple(zeros.shape) == (2, 6) and zeros.dtype == tf.bfloat16
  np.testing.assert_array_equal(tf.cast(zeros, tf.float32), np.zeros((2, 6)))


@pytest.mark.parametrize('make,mode', [
    (lambda: tl.LSTM(4), 'xla'), (lambda: tl.GRU(4), 'eager'),
    (lambda: tl.SRU(3), 'eager'),
    (lambda: tl.LSTM(4, return_state=True), 'eager')])
def test_recurrent_layers_keep_bfloat16(make, mode, rng):
  x = tf.cast(lc.random(rng, 2, 3, 3), tf.bfloat16)
  layer = make()
  weights, state = layer.init(shapes.signature(x))
  run = lc.compile_fn(lambda x, w, s: layer.pure_fn(x, w, s, None)[0], mode)
  outs = run(x, weights, state)
  for out in (outs if isinstance(outs, tuple) else (outs,)):
    assert out.dtype == tf.bfloat16
  # The same weights on the float32 values give nearly the same result.
  want = layer.pure_fn(tf.cast(x, tf.float32), weights, state, None)[0]
  lc.assert_close(outs, want, rtol=0, atol=5e-2)


@pytest.mark.parametrize('make', [lambda: tl.LSTMCell(4),
                                  lambda: tl.GRUCell(4)])
def test_cells_keep_bfloat16(make, rng):
  layer = make()
  depth = 8 if isinstance(layer, tl.LSTMCell) else 4
  x = tf.cast(lc.random(rng, 2, 3), tf.bfloat16)
  state = tf.cast(lc.random(rng, 2, depth), tf.bfloat16)
  layer.init(shapes.signature((x, state)))
  y, new_state = layer((x, state))
  assert y.dtype == tf.bfloat16 and new_state.dtype == tf.bfloat16


def test_docstring_examples():
  result = doctest.testmod(rnn, optionflags=doctest.ELLIPSIS)
  assert result.attempted > 0 and result.failed == 0
