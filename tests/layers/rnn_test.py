"""LSTM, GRU and SRU layers and cells against NumPy float64 references."""


import numpy as np
import pytest
import tensorflow as tf

from tests import _layer_testing as lt
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


@pytest.mark.parametrize('mode', lt.MODES)
def test_lstm_cell_matches_numpy(mode, rng):
  x, state = lt.random(rng, 2, 3), lt.random(rng, 2, 8)
  w, b = lt.random(rng, 7, 16, scale=0.5), lt.random(rng, 16)
  ct = (lt.random(rng, 2, 4), lt.random(rng, 2, 8))
  layer = lt.initialized(tl.LSTMCell(4), x, state)
  (h, new_state), _, (gx, gs), (gw, gb) = lt.forward_and_grads(
      layer, (x, state), (w, b), (), ct, mode)
  lt.assert_close([h, new_state], _lstm_cell_ref(x, state, w, b))
  want = lt.numeric_grads(_lstm_cell_ref, [x, state, w, b], ct)
  lt.assert_close([gx, gs, gw, gb], want, atol=1e-4)


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


@pytest.mark.parametrize('mode', lt.MODES)
def test_gru_cell_matches_numpy(mode, rng):
  x, h = lt.random(rng, 2, 3), lt.random(rng, 2, 4)
  weights = (lt.random(rng, 7, 8), lt.random(rng, 8), lt.random(rng, 7, 4),
             lt.random(rng, 4))
  ct = (lt.random(rng, 2, 4), lt.random(rng, 2, 4))
  layer = lt.initialized(tl.GRUCell(4), x, h)
  (y, new_h), _, (gx, gh), gw = lt.forward_and_grads(
      layer, (x, h), weights, (), ct, mode)
  lt.assert_close([y, new_h], _gru_cell_ref(x, h, *weights))
  want = lt.numeric_grads(_gru_cell_ref, [x, h, *weights], ct)
  lt.assert_close([gx, gh, *gw], want, atol=1e-4)


def test_gru_cell_rejects_wrong_state_depth():
  with pytest.raises(tl.LayerError, match=r'GRUCell: state last dim 8 must '
                     r'be n_units = 4'):
    tl.GRUCell(4).init((shapes.ShapeDtype((2, 3)), shapes.ShapeDtype((2, 8))))


# -- Layers over sequences ---------------------------------------------------


@pytest.mark.parametrize('mode', lt.MODES)
def test_lstm_matches_numpy_scan(mode, rng):
  # Input depth 3 differs from n_units 4: the zero state follows n_units.
  x = lt.random(rng, 2, 5, 3)
  ct = lt.random(rng, 2, 5, 4)
  layer = lt.initialized(tl.LSTM(4), x)
  w, b = lt.random(rng, 7, 16, scale=0.5), lt.random(rng, 16)
  weights = _with_leaves(layer.weights, [w, b])
  y, _, gx, gw = lt.forward_and_grads(layer, x, weights, layer.state, ct,
                                      mode)

  def ref(x, w, b):
    return _scan_ref(_lstm_cell_ref, x, np.zeros((2, 8)), w, b)[0]
  lt.assert_close(y, ref(x, w, b))
  want = lt.numeric_grads(ref, [x, w, b], ct)
  lt.assert_close([gx] + lt.leaves(gw), want, atol=1e-4)


def test_lstm_return_state_and_initial_state(rng):
  x, state = lt.random(rng, 2, 4, 3), lt.random(rng, 2, 6)
  returning = lt.initialized(tl.LSTM(3, return_state=True), x)
  w, b = lt.leaves(returning.weights)
  y, final = returning(x)
  want_y, want_final = _scan_ref(_lstm_cell_ref, x, np.zeros((2, 6)), w, b)
  lt.assert_close([y, final], [want_y, want_final])

  for return_state in (False, True):
    seeded = tl.LSTM(3, initial_state=True, return_state=return_state)
    assert seeded.n_in == 2 and seeded.n_out == (2 if return_state else 1)
    seeded.init(shapes.signature((x, state)))
    out = seeded((x, state), weights=_with_leaves(seeded.weights, [w, b]))
    want = _scan_ref(_lstm_cell_ref, x, state, w, b)
    lt.assert_close(out, want if return_state else want[0])


@pytest.mark.parametrize('mode', lt.MODES)
def test_gru_matches_numpy_scan(mode, rng):
  x = lt.random(rng, 2, 4, 3)
  ct = lt.random(rng, 2, 4, 2)
  layer = lt.initialized(tl.GRU(2), x)
  weights = [lt.random(rng, 5, 4), lt.random(rng, 4), lt.random(rng, 5, 2),
             lt.random(rng, 2)]
  y, _, gx, gw = lt.forward_and_grads(
      layer, x, _with_leaves(layer.weights, weights), layer.state, ct, mode)

  def ref(x, *ws):
    return _scan_ref(_gru_cell_ref, x, np.zeros((2, 2)), *ws)[0]
  lt.assert_close(y, ref(x, *weights))
  lt.assert_close([gx] + lt.leaves(gw),
                  lt.numeric_grads(ref, [x, *weights], ct), atol=1e-4)


@pytest.mark.parametrize('mode', lt.MODES)
@pytest.mark.parametrize('tanh', [False, True])
def test_sru_matches_numpy(tanh, mode, rng):
  x = lt.random(rng, 2, 4, 3)
  ct = lt.random(rng, 2, 4, 3)
  layer = lt.initialized(tl.SRU(3, activation=tl.Tanh() if tanh else None), x)
  w, b = lt.random(rng, 3, 9), lt.random(rng, 9)
  y, _, gx, gw = lt.forward_and_grads(
      layer, x, _with_leaves(layer.weights, [w, b]), layer.state, ct, mode)
  ref = lambda x, w, b: _sru_ref(x, w, b, np.tanh if tanh else (lambda c: c))
  lt.assert_close(y, ref(x, w, b))
  lt.assert_close([gx] + lt.leaves(gw), lt.numeric_grads(ref, [x, w, b], ct),
                  atol=1e-4)


def _sru_scan_ref(xs, fs, c):
  """ScanSRUCell in float64: c_t = f_t * c_{t-1} + xs_t, xs = x' * (1 - f)."""
  cs = []
  for t in range(xs.shape[1]):
    c = fs[:, t] * c + xs[:, t]
    cs.append(c)
  return np.stack(cs, 1), c


@pytest.mark.parametrize('mode', lt.MODES)
def test_inner_sru_cell_matches_numpy(mode, rng):
  x, f, c = lt.random(rng, 2, 3), _sigmoid(lt.random(rng, 2, 3)), \
      lt.random(rng, 2, 3)
  f = f.astype(np.float32)
  ct = (lt.random(rng, 2, 3), lt.random(rng, 2, 3))
  layer = lt.initialized(tl.InnerSRUCell(), x, f, c)
  assert (layer.name, layer.n_in, layer.n_out) == ('InnerSRUCell', 3, 2)
  (y, new_c), _, grads, _ = lt.forward_and_grads(
      layer, (x, f, c), layer.weights, layer.state, ct, mode)

  def ref(x, f, c):
    new = f * c + x
    return new, new
  lt.assert_close([y, new_c], ref(x, f, c))
  lt.assert_close(list(grads), lt.numeric_grads(ref, [x, f, c], ct),
                  atol=1e-4)


def test_inner_sru_cell_rejects_mismatched_shapes():
  with pytest.raises(tl.LayerError, match=r'InnerSRUCell: expects inputs of '
                     r'one shape \(batch, depth\), got x \* \(1 - f\) '
                     r'\(2, 3\), f \(2, 3\), c \(2, 4\)'):
    tl.InnerSRUCell()((jnp.ones((2, 3), jnp.float32),
                       jnp.ones((2, 3), jnp.float32),
                       jnp.ones((2, 4), jnp.float32)))


@pytest.mark.parametrize('mode', lt.MODES)
def test_scan_sru_cell_matches_numpy_recurrence(mode, rng):
  # The two scanned inputs as SRU makes them: x' * (1 - f) and f in (0, 1);
  # a non-zero c_0 checks that the carry is used.
  f = _sigmoid(lt.random(rng, 2, 5, 3)).astype(np.float32)
  xs = (lt.random(rng, 2, 5, 3) * (1 - f)).astype(np.float32)
  c0 = lt.random(rng, 2, 3)
  ct = (lt.random(rng, 2, 5, 3), lt.random(rng, 2, 3))
  layer = lt.initialized(tl.ScanSRUCell(mode='train'), xs, f, c0)
  assert (layer.n_in, layer.n_out) == (3, 2)
  (cs, c_last), _, grads, _ = lt.forward_and_grads(
      layer, (xs, f, c0), layer.weights, layer.state, ct, mode)
  lt.assert_close([cs, c_last], _sru_scan_ref(xs, f, c0))
  lt.assert_close(list(grads), lt.numeric_grads(_sru_scan_ref, [xs, f, c0],
                                                ct), atol=1e-4)


def test_scan_sru_cell_prints_as_trax():
  # trax/layers/rnn.py: a Scan over InnerSRUCell, in every mode.
  for mode in ('train', 'eval', 'predict'):
    assert str(tl.ScanSRUCell(mode)) == (
        'Scan_in3_out2[\n  InnerSRUCell_in3_out2\n]')
  assert str(tl.InnerSRUCell()) == 'InnerSRUCell_in3_out2'


@pytest.mark.parametrize('mode', lt.MODES)
def test_scan_sru_cell_predict_continues_from_kept_c(mode, rng):
  f = _sigmoid(lt.random(rng, 2, 5, 3)).astype(np.float32)
  xs = lt.random(rng, 2, 5, 3)
  c0 = lt.random(rng, 2, 3)
  layer = lt.initialized(tl.ScanSRUCell(mode='predict'), xs[:, :2], f[:, :2],
                         c0)
  run = lt.compile_fn(
      lambda x, s: layer.pure_fn(x, layer.weights, s, None), mode)
  (cs1, _), state = run((xs[:, :2], f[:, :2], c0), layer.state)
  # The second call's carry on the stack is ignored: the kept one is used.
  (cs2, c_last), _ = run((xs[:, 2:], f[:, 2:], np.zeros_like(c0)), state)
  want_cs, want_last = _sru_scan_ref(xs, f, c0)
  lt.assert_close([np.concatenate([cs1, cs2], 1), c_last],
                  [want_cs, want_last])


class _FixedMask:
  """Stands in for Trax Terraformer's portal: get_layer() pushes a mask."""

  def __init__(self, mask):
    self._mask = mask

  def get_layer(self):
    mask = self._mask
    return tl.Fn('PortalMask', lambda: jnp.asarray(mask))


def _masked_scan_ref(mask, xs, fs, c):
  """Trax's masked SRU recurrence: steps where the mask is 0 keep c."""
  length = xs.shape[1]
  full = np.ones(xs.shape[:2])
  if length > 1:
    start = min(1, length - mask.shape[1])  # Clamped, as dynamic updates are.
    full[:, start:start + mask.shape[1]] = mask != 0
  cs = []
  for t in range(length):
    m = full[:, t:t + 1]
    c = (fs[:, t] * c + xs[:, t]) * m + (1 - m) * c
    cs.append(c)
  return np.stack(cs, 1), c


@pytest.mark.parametrize('mode', lt.MODES)
@pytest.mark.parametrize('batch,mask', [
    (2, [[1, 0, 1], [0, 0, 1]]),         # From step 1 on.
    (1, [[0, 1, 1, 0]]),                 # Full length: from step 0.
])
def test_scan_sru_cell_with_mask_matches_numpy(batch, mask, mode, rng):
  mask = np.asarray(mask, np.float32)
  f = _sigmoid(lt.random(rng, batch, 4, 3)).astype(np.float32)
  xs, c0 = lt.random(rng, batch, 4, 3), lt.random(rng, batch, 3)
  layer = tl.ScanSRUCell('predict', monkey_patched_mask=_FixedMask(mask))
  assert str(layer) == (
      'Serial_in3_out2[\n  PortalMask_in0\n  update_mask_in2_out2\n'
      '  Scan_in4_out2[\n    MaskedInnerSRUCell_in4_out2\n  ]\n]')
  lt.initialized(layer, xs, f, c0)
  (cs, c_last), _ = lt.compile_fn(
      lambda x: layer.pure_fn(x, layer.weights, layer.state, None),
      mode)((xs, f, c0))
  lt.assert_close([cs, c_last], _masked_scan_ref(mask, xs, f, c0))


def test_scan_sru_cell_with_mask_values_recorded_from_trax():
  # Trax 1.4.1, batch 1, mask [[1, 0, 1]] on 4 steps: steps 0 and 2 keep c.
  xs = np.array([[[0.5], [1.0], [2.0], [-1.0]]], np.float32)
  f = np.full((1, 4, 1), 0.5, np.float32)
  c0 = np.array([[4.0]], np.float32)
  layer = tl.ScanSRUCell('predict', monkey_patched_mask=_FixedMask(
      np.array([[1, 0, 1]], np.float32)))
  lt.initialized(layer, xs, f, c0)
  cs, c_last = layer((xs, f, c0))
  # Steps: 0.5*4+0.5=2.5, 0.5*2.5+1=2.25, kept 2.25, 0.5*2.25-1=0.125.
  lt.assert_close([cs, c_last], [[[[2.5], [2.25], [2.25], [0.125]]],
                                 [[0.125]]])


def test_scan_sru_cell_mask_needs_predict_mode():
  with pytest.raises(ValueError, match=r"ScanSRUCell: monkey_patched_mask is "
                     r"only used in mode='predict', got mode='train'"):
    tl.ScanSRUCell('train', monkey_patched_mask=_FixedMask(np.ones((1, 1))))


def test_sru_is_built_from_scan_sru_cell(monkeypatch):
  # As in Trax, SRU looks ScanSRUCell up when built, so swapping the
  # module's ScanSRUCell (as Trax's Terraformer does) changes the SRU.
  assert str(tl.SRU(3).sublayers[5]) == str(tl.ScanSRUCell('train'))
  calls = []

  def spy(mode, monkey_patched_mask=None):
    calls.append(mode)
    return tl.ScanSRUCell(mode, monkey_patched_mask)
  monkeypatch.setattr(rnn, 'ScanSRUCell', spy)
  tl.SRU(3, mode='predict')
  assert calls == ['predict']


@pytest.mark.parametrize('mode', lt.MODES)
def test_sru_with_fixed_weights_matches_float64_loop(mode):
  # Hand-picked weights: r, f and y each read one input unit.
  x = np.array([[[1.0, -2.0], [0.5, 0.0], [-1.0, 3.0]]], np.float32)
  w = np.zeros((2, 6), np.float32)
  w[0, 0], w[1, 1] = 1.0, -1.0    # r
  w[0, 2], w[1, 3] = 0.5, 0.5     # f
  w[0, 4], w[1, 5] = 2.0, 1.0     # y
  b = np.array([0.0, 0.5, -1.0, 1.0, 0.0, 0.25], np.float32)
  layer = lt.initialized(tl.SRU(2), x)
  y, _ = lt.compile_fn(lambda x, ws: layer.pure_fn(x, ws, layer.state, None),
                       mode)(x, _with_leaves(layer.weights, [w, b]))
  xd = x.astype(np.float64)
  c = np.zeros(2)
  want = []
  for t in range(3):
    z = xd[0, t] @ w + b
    r, f, x_prime = _sigmoid(z[:2]), _sigmoid(z[2:4]), z[4:]
    c = f * c + (1 - f) * x_prime
    want.append(r * c + (1 - r) * xd[0, t] * np.sqrt(3.0))
  lt.assert_close(y, np.stack(want)[None])


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
  x = tf.cast(lt.random(rng, 2, 3, 3), tf.bfloat16)
  layer = make()
  weights, state = layer.init(shapes.signature(x))
  run = lt.compile_fn(lambda x, w, s: layer.pure_fn(x, w, s, None)[0], mode)
  outs = run(x, weights, state)
  for out in (outs if isinstance(outs, tuple) else (outs,)):
    assert out.dtype == tf.bfloat16
  # The same weights on the float32 values give nearly the same result.
  want = layer.pure_fn(tf.cast(x, tf.float32), weights, state, None)[0]
  lt.assert_close(outs, want, rtol=0, atol=5e-2)


@pytest.mark.parametrize('make', [lambda: tl.LSTMCell(4),
                                  lambda: tl.GRUCell(4)])
def test_cells_keep_bfloat16(make, rng):
  layer = make()
  depth = 8 if isinstance(layer, tl.LSTMCell) else 4
  x = tf.cast(lt.random(rng, 2, 3), tf.bfloat16)
  state = tf.cast(lt.random(rng, 2, depth), tf.bfloat16)
  layer.init(shapes.signature((x, state)))
  y, new_state = layer((x, state))
  assert y.dtype == tf.bfloat16 and new_state.dtype == tf.bfloat16
