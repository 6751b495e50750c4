"""Scan in predict mode, Cond's outputs and layer exports, as in Trax 1.4.1.

Scan (trax/layers/combinators.py): in 'predict' mode the final carry is kept
in the layer's state, and the next call starts from it rather than from the
carry on the stack; the first call starts from the given carry. So feeding a
sequence in two pieces gives the outputs of one pass over the whole
sequence. Each check compares with a NumPy float64 recurrence and runs
eagerly, under tf.function and under XLA (tests/_layer_testing.py).

Cond (trax/layers/combinators.py) runs its branches through `lax.cond`, so
its outputs are always arrays, even when a branch returns a Python number.
"""

import numpy as np
import pytest
import tensorflow as tf

from tests import _layer_testing as lt
from tfnp_trax import fastmath
from tfnp_trax import shapes
import tfnp_trax.layers as tl

RTOL, ATOL = 2e-5, 2e-6


def _x(*shape, seed=0):
  return np.random.default_rng(seed).normal(size=shape).astype(np.float32)


def _sigmoid(z):
  return 1. / (1. + np.exp(-z))


def _leaves(layer):
  return [np.asarray(w, np.float64)
          for w in fastmath.tree_flatten(layer.weights)]


# -- NumPy float64 recurrences (trax/layers/rnn.py cell formulas) ----------

def lstm_ref(xs, c0, w, b):
  """LSTMCell over axis 1: state [c, h]; [i, j, f, o] = [x, h] @ w + b."""
  n = w.shape[1] // 4
  c, h = c0[:, :n].astype(np.float64), c0[:, n:].astype(np.float64)
  ys = []
  for t in range(xs.shape[1]):
    y = np.concatenate([xs[:, t], h], -1) @ w + b
    i, j, f, o = np.split(y, 4, axis=-1)
    c = c * _sigmoid(f) + _sigmoid(i) * np.tanh(j)
    h = np.tanh(c) * _sigmoid(o)
    ys.append(h)
  return np.stack(ys, 1), np.concatenate([c, h], -1)


def gru_ref(xs, h0, w1, b1, w2, b2):
  """GRUCell over axis 1: [u, r] = sigmoid([x, h] @ w1 + b1); candidate
  tanh([x, r * h] @ w2 + b2); h' = u * h + (1 - u) * candidate."""
  h = h0.astype(np.float64)
  ys = []
  for t in range(xs.shape[1]):
    u, r = np.split(_sigmoid(np.concatenate([xs[:, t], h], -1) @ w1 + b1), 2,
                    axis=-1)
    cand = np.tanh(np.concatenate([xs[:, t], r * h], -1) @ w2 + b2)
    h = u * h + (1 - u) * cand
    ys.append(h)
  return np.stack(ys, 1)


def sru_ref(xs, c0, w, b):
  """SRU (trax/layers/rnn.py): r, f, y = split(x @ w + b); sigmoid gates;
  c = f * c + (1 - f) * y; out = r * c + (1 - r) * x * sqrt(3)."""
  c = c0.astype(np.float64)
  outs = []
  for t in range(xs.shape[1]):
    x = xs[:, t].astype(np.float64)
    r, f, y = np.split(x @ w + b, 3, axis=-1)
    r, f = _sigmoid(r), _sigmoid(f)
    c = f * c + (1 - f) * y
    outs.append(r * c + (1 - r) * x * np.sqrt(3.))
  return np.stack(outs, 1), c


def _close(got, want):
  np.testing.assert_allclose(np.asarray(got, np.float64), want, rtol=RTOL,
                             atol=ATOL)


# -- Scan in predict mode --------------------------------------------------

@pytest.mark.parametrize('mode', lt.MODES)
def test_scan_predict_continues_from_the_kept_carry(mode):
  # trax/layers/combinators.py Scan.forward: with mode='predict' and a
  # non-empty kept carry, the stack's carry is replaced by the kept one.
  x1, x2 = _x(2, 3, 4), _x(2, 2, 4, seed=1)
  c0 = _x(2, 6, seed=2)  # A non-zero start: the first call must use it.
  layer = tl.Scan(tl.LSTMCell(3), axis=1, mode='predict')
  layer.init(shapes.signature((x1, c0)))
  w, b = _leaves(layer)
  (y1, c1), state = lt.run_layer(layer, (x1, c0), mode)
  # The second call's stack carry is ignored: the kept one is used.
  ignored = np.full_like(c0, 7.)
  (y2, c2), state = lt.run_layer(layer, (x2, ignored), mode, state=state)
  want_y, want_c = lstm_ref(np.concatenate([x1, x2], 1), c0, w, b)
  _close(np.concatenate([np.asarray(y1), np.asarray(y2)], 1), want_y)
  _close(c2, want_c)
  _close(c1, lstm_ref(x1, c0, w, b)[1])
  # A third call carries on again from the second's final carry.
  (y3, _), _ = lt.run_layer(layer, (x1, ignored), mode, state=state)
  _close(y3, lstm_ref(np.concatenate([x1, x2, x1], 1), c0, w, b)[0][:, 5:])


@pytest.mark.parametrize('mode', lt.MODES)
@pytest.mark.parametrize('scan_mode', ['train', 'eval'])
def test_scan_outside_predict_starts_from_the_given_carry(mode, scan_mode):
  # Trax keeps no carry outside predict mode: each call starts afresh.
  x, c0 = _x(2, 3, 4), _x(2, 6, seed=2)
  layer = tl.Scan(tl.LSTMCell(3), axis=1, mode=scan_mode)
  layer.init(shapes.signature((x, c0)))
  w, b = _leaves(layer)
  _, state = lt.run_layer(layer, (x, c0), mode)
  (y, c), _ = lt.run_layer(layer, (x, c0), mode, state=state)
  want_y, want_c = lstm_ref(x, c0, w, b)
  _close(y, want_y)
  _close(c, want_c)
  assert state[1] == ()  # Trax: the kept part of the state stays ().


def test_scan_predict_state_in_layer_calls():
  # The same through layer calls, which keep the state on the layer.
  x = np.array([[1., 2., 3.], [4., 5., 6.]], np.float32)
  c = np.array([10., 20.], np.float32)
  layer = tl.Scan(tl.Fn('cs', lambda x, c: (x + c, x + c), n_out=2), axis=1,
                  mode='predict')
  layer.init(shapes.signature((x, c)))
  kept = layer.state[1]
  assert len(kept) == 2 and not bool(kept[1])  # Zeros, not yet filled.
  want = [([[11., 13., 16.], [24., 29., 35.]], [16., 35.]),
          ([[17., 19., 22.], [39., 44., 50.]], [22., 50.]),
          ([[23., 25., 28.], [54., 59., 65.]], [28., 65.])]
  for want_y, want_c in want:  # Trax 1.4.1 gives these three results.
    y, carry = layer((x, c))
    _close(y, np.array(want_y))
    _close(carry, np.array(want_c))
  kept = layer.state[1]
  _close(kept[0], np.array([28., 65.]))
  assert bool(kept[1])


def test_scan_predict_accepts_trax_form_of_kept_carry():
  # Trax's state after a call is (sublayer_state, (carry,)): taken as is.
  x = np.array([[1., 2.]], np.float32)
  c = np.array([0.], np.float32)
  layer = tl.Scan(tl.Fn('cs', lambda x, c: (x + c, x + c), n_out=2), axis=1,
                  mode='predict')
  layer.init(shapes.signature((x, c)))
  layer.state = ((), (np.array([100.], np.float32),))
  y, carry = layer((x, c))
  _close(y, np.array([[101., 103.]]))
  _close(carry, np.array([103.]))


def _split_vs_whole(layer, x, split, mode):
  layer.init(shapes.signature(x[:, :split]))
  y1, state = lt.run_layer(layer, x[:, :split], mode)
  y2, _ = lt.run_layer(layer, x[:, split:], mode, state=state)
  return np.concatenate([np.asarray(y1), np.asarray(y2)], 1)


@pytest.mark.parametrize('mode', lt.MODES)
def test_lstm_predict_in_pieces(mode):
  # trax/layers/rnn.py LSTM: zero state, Scan(LSTMCell, mode=mode). Input
  # depth equals n_units, where Trax's own LSTM works.
  x = _x(2, 5, 3)
  layer = tl.LSTM(3, mode='predict')
  got = _split_vs_whole(layer, x, 2, mode)
  w, b = _leaves(layer)
  _close(got, lstm_ref(x, np.zeros((2, 6)), w, b)[0])


@pytest.mark.parametrize('mode', lt.MODES)
def test_gru_predict_in_pieces(mode):
  x = _x(2, 5, 3)
  layer = tl.GRU(3, mode='predict')
  got = _split_vs_whole(layer, x, 3, mode)
  _close(got, gru_ref(x, np.zeros((2, 3)), *_leaves(layer)))


@pytest.mark.parametrize('mode', lt.MODES)
def test_sru_predict_in_pieces(mode):
  x = _x(2, 5, 3)
  layer = tl.SRU(3, mode='predict')
  got = _split_vs_whole(layer, x, 1, mode)
  _close(got, sru_ref(x, np.zeros((2, 3)), *_leaves(layer))[0])


def test_scan_predict_state_has_fixed_structure_for_tf_function():
  # The kept carry exists from init on, so one traced function serves every
  # call (Trax's JAX retraces when () becomes the carry).
  x = _x(2, 1, 3)
  layer = tl.LSTM(3, mode='predict')
  layer.init(shapes.signature(x))
  traces = []

  @tf.function
  def step(x, weights, state):
    traces.append(1)
    return layer.pure_fn(x, weights, state, fastmath.random.get_prng(0))

  state = layer.state
  ys = []
  for t in range(3):
    y, state = step(x, layer.weights, state)
    ys.append(np.asarray(y))
  assert len(traces) == 1
  w, b = _leaves(layer)
  _close(np.concatenate(ys, 1),
         lstm_ref(np.concatenate([x] * 3, 1), np.zeros((2, 6)), w, b)[0])


# -- Cond returns arrays -------------------------------------------------

def _positive():
  return tl.Fn('c', lambda x: x > 0)


COND_CASES = [
    # (id, true, false, pred, y, want value, want dtype) -- trax/layers/
    # combinators.py Cond; Trax 1.4.1 returns an array in every case.
    ('int_true', lambda: tl.Fn('one', lambda y: 1),
     lambda: tl.Fn('two', lambda y: 2), 3., np.float32(7.), 1, tf.int32),
    ('int_false', lambda: tl.Fn('one', lambda y: 1),
     lambda: tl.Fn('two', lambda y: 2), -3., np.float32(7.), 2, tf.int32),
    ('float_true', lambda: tl.Fn('half', lambda y: 0.5),
     lambda: tl.Fn('ident', lambda y: y), 3., np.float32(7.), 0.5,
     tf.float32),
    ('float_false', lambda: tl.Fn('half', lambda y: 0.5),
     lambda: tl.Fn('ident', lambda y: y), -3., np.float32(7.), 7.,
     tf.float32),
    ('const_vs_identity_true', lambda: tl.Fn('seven', lambda y: 7),
     lambda: None, 3., np.int32(7), 7, tf.int32),
    ('const_vs_identity_false', lambda: tl.Fn('seven', lambda y: 7),
     lambda: None, -3., np.int32(7), 7, tf.int32),
    ('bool', lambda: tl.Fn('yes', lambda y: True),
     lambda: tl.Fn('no', lambda y: False), -3., np.float32(7.), False,
     tf.bool),
]


@pytest.mark.parametrize('mode', lt.MODES)
@pytest.mark.parametrize('true,false,pred,y,want,dtype',
                         [c[1:] for c in COND_CASES],
                         ids=[c[0] for c in COND_CASES])
def test_cond_returns_arrays(mode, true, false, pred, y, want, dtype):
  layer = tl.Cond(_positive(), true(), false())
  inputs = (np.float32(pred), y)
  layer.init(shapes.signature(inputs))
  out, _ = lt.run_layer(layer, inputs, mode)
  assert isinstance(out, tf.Tensor), type(out)
  assert out.dtype == dtype and tuple(out.shape) == ()
  assert out.numpy().item() == want
  out = layer(inputs)  # Through a layer call too.
  assert isinstance(out, tf.Tensor) and out.dtype == dtype


@pytest.mark.parametrize('mode', lt.MODES)
def test_cond_several_outputs_are_arrays(mode):
  def pair():
    return tl.Fn('pair', lambda y: (1, 2.5), n_out=2)
  layer = tl.Cond(_positive(), pair(), pair())
  inputs = (np.float32(1.), np.float32(0.))
  layer.init(shapes.signature(inputs))
  (a, b), _ = lt.run_layer(layer, inputs, mode)
  assert isinstance(a, tf.Tensor) and isinstance(b, tf.Tensor)
  assert (a.dtype, b.dtype) == (tf.int32, tf.float32)
  assert (int(a), float(b)) == (1, 2.5)


def test_cond_default_false_takes_one_input():
  # trax/layers/combinators.py Cond: the default false branch is Serial()
  # (one input), so a true branch with two inputs is rejected.
  two = tl.Fn('dbl', lambda a, b: (2 * a, 2 * b), n_out=2)
  with pytest.raises(ValueError, match=r'must have equal n_in and n_out, got '
                     r'\(2, 2\) and \(1, 1\)\. .*false=Select\(\[0, 1\]\)'):
    tl.Cond(_positive(), two)
  layer = tl.Cond(_positive(), two, tl.Select([0, 1]))
  assert (layer.n_in, layer.n_out) == (3, 2)


@pytest.mark.parametrize('make,inputs,want', [
    # trax/layers/combinators.py: SubtractTop is `x1 - x0`; Gate takes
    # (memory, gate, candidate) and gives gate * memory + (1 - gate) * cand.
    (tl.SubtractTop, ([1.], [10.]), [9.]),
    (tl.Gate, ([2.], [.25], [10.]), [8.]),
    (lambda: tl.Serial(tl.Dup(), tl.Add(), tl.SubtractTop()), ([1.], [10.]),
     [8.]),
])
def test_subtract_top_and_gate_argument_order(make, inputs, want):
  inputs = tuple(np.array(x, np.float32) for x in inputs)
  _close(make()(inputs), np.array(want))


# -- Exports from tfnp_trax.layers (trax/layers/__init__.py imports base *) -

def test_cache_markers_are_exported_as_in_trax():
  # trax/layers/base.py.
  assert tl.GET_WEIGHTS_FROM_CACHE == {'__marker_for_cached_weights_': ()}
  assert tl.GET_STATE_FROM_CACHE == {'__marker_for_cached_state_': ()}
  assert {'to_list', 'GET_WEIGHTS_FROM_CACHE',
          'GET_STATE_FROM_CACHE'} <= set(tl.__all__)


@pytest.mark.parametrize('outputs,want', [
    # trax/layers/base.py to_list: .tolist() of one output or of each.
    (lambda: tf.constant([1, 2]), [1, 2]),
    (lambda: tf.constant([[1.5], [2.5]]), [[1.5], [2.5]]),
    (lambda: (tf.constant([1, 2]), tf.constant([[3]])), [[1, 2], [[3]]]),
    (lambda: [np.array([True]), tf.constant(4)], [[True], 4]),
])
def test_to_list(outputs, want):
  assert tl.to_list(outputs()) == want


def test_to_list_of_layer_outputs():
  layer = tl.Fn('Split2', lambda x: (x[:1], x[1:]), n_out=2)
  assert tl.to_list(layer(np.array([1, 2, 3], np.int32))) == [[1], [2, 3]]
