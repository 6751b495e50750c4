"""Tests for the control-flow combinators against NumPy float64 loops."""

import numpy as np
import pytest
import tensorflow as tf

from tests import _layer_testing as lt
from tests.layers._toy_layers import assert_outputs_close
from tests.layers._toy_layers import Counter
from tests.layers._toy_layers import Neg
from tests.layers._toy_layers import Noise
from tests.layers._toy_layers import Scale
from tests.layers._toy_layers import W
from tfnp_trax import fastmath
from tfnp_trax import shapes
from tfnp_trax.fastmath import numpy as jnp
import tfnp_trax.layers as tl


def _x(*shape, seed=0):
  return np.random.default_rng(seed).normal(size=shape).astype(np.float32)


def _init(layer, inputs):
  layer.init(shapes.signature(inputs))
  return layer


# -- Scan ----------------------------------------------------------------------

def _rnn_step():
  """(x, c) -> ((x + c) * w, (x + c) * w): a one-carry recurrent cell."""
  return tl.Serial(tl.Add(), Scale(), tl.Dup())


@pytest.mark.parametrize('mode', lt.MODES)
def test_scan_with_carry_along_axis_1(mode):
  xs, c0 = _x(2, 4, 3), _x(2, 3, seed=1)
  layer = _init(tl.Scan(_rnn_step(), axis=1), (xs, c0))
  assert (layer.n_in, layer.n_out) == (2, 2)
  (ys, carry), _ = lt.run_layer(layer, (xs, c0), mode)
  c, want = c0.astype(np.float64), []
  for t in range(4):
    c = (xs[:, t] + c) * W
    want.append(c)
  assert_outputs_close((ys, carry), (np.stack(want, axis=1), c))


@pytest.mark.parametrize('mode', lt.MODES)
def test_scan_without_carry_uses_a_fresh_rng_per_step(mode):
  zeros = np.zeros((4, 3), np.float32)
  layer = _init(tl.Scan(Noise(), n_carry=0), zeros)
  ys, _ = lt.run_layer(layer, zeros, mode)
  ys = np.asarray(ys)
  assert ys.shape == (4, 3)
  assert len({tuple(row) for row in ys}) == 4


@pytest.mark.parametrize('mode', lt.MODES)
@pytest.mark.parametrize('remat', [False, True])
def test_scan_gradient_wrt_weights(mode, remat):
  # remat (trax/layers/combinators.py Scan, as Chunk uses it) recomputes
  # each step in the backward pass; the gradient is the same.
  xs, c0 = _x(3, 2), _x(2, seed=1)
  layer = _init(tl.Scan(_rnn_step(), remat=remat), (xs, c0))

  def loss(w):
    (ys, _), _ = layer.pure_fn((xs, c0), w, layer.state,
                               fastmath.random.get_prng(0))
    return jnp.sum(ys)

  got = lt.compile_fn(fastmath.grad(loss), mode)(layer.weights)

  def ref(w):  # sum of ys in NumPy float64.
    c, total = c0.astype(np.float64), 0.
    for x in xs:
      c = (x + c) * w
      total += c.sum()
    return total

  w, eps = W[:2], 1e-6
  want = [(ref(w + eps * e) - ref(w - eps * e)) / (2 * eps)
          for e in np.eye(2)]
  np.testing.assert_allclose(got[0][1], want, rtol=1e-4)


def test_scan_splits_carry_from_what_the_layer_returns():
  # Follows trax/layers/combinators.py Scan.forward: the last n_carry
  # outputs are the carry, counted on the returned tuple, not on n_out
  # (this Fn declares n_out=2 and returns three values).
  def f(a, b, carry):
    return a + b, b, carry + 1
  layer = tl.Scan(tl.Fn('ThreeOut', f, n_out=2), axis=1)
  a = np.array([[0, 1, 2], [0, 10, 20]])
  b = np.array([[4, 5, 6], [40, 50, 60]])
  ys_sum, ys_b, carry = layer([a, b, np.array([9000, 8000])])
  np.testing.assert_array_equal(ys_sum, a + b)
  np.testing.assert_array_equal(ys_b, b)
  np.testing.assert_array_equal(carry, [9003, 8003])


# -- Cond ----------------------------------------------------------------------

def _positive():
  return tl.Fn('Positive', lambda c: jnp.sum(c) > 0)


@pytest.mark.parametrize('mode', lt.MODES)
@pytest.mark.parametrize('sign', [1., -1.])
def test_cond_runs_one_branch_on_the_next_inputs(mode, sign):
  x = _x(2, 3)
  pred_in = np.full((2,), sign, np.float32)
  layer = _init(tl.Cond(_positive(), Scale(), Neg()), (pred_in, x))
  assert (layer.n_in, layer.n_out) == (2, 1)
  y, _ = lt.run_layer(layer, (pred_in, x), mode)
  assert_outputs_close(y, x * W if sign > 0 else -x)


@pytest.mark.parametrize('mode', lt.MODES)
def test_cond_default_false_is_identity_and_state_updates_one_branch(mode):
  x = _x(2, 3)
  layer = _init(tl.Cond(_positive(), Counter()), (np.ones(1), x))
  y, state = lt.run_layer(layer, (-np.ones(1, np.float32), x), mode)
  assert_outputs_close(y, x)
  y, state = lt.run_layer(layer, (np.ones(1, np.float32), x), mode,
                          state=state)
  assert_outputs_close(y, x)  # The count was still 0.
  y, state = lt.run_layer(layer, (np.ones(1, np.float32), x), mode,
                          state=state)
  assert_outputs_close(y, x + 1)
  assert int(state[1]) == 2
  both = _init(tl.Cond(_positive(), Counter(), Counter()), (np.ones(1), x))
  _, state = lt.run_layer(both, (-np.ones(1, np.float32), x), mode)
  assert (int(state[1]), int(state[2])) == (0, 1)


def test_cond_takes_a_list_stack_and_unwraps_one_listed_output():
  # Follows trax/layers/combinators.py Cond (inputs_from_stack and
  # outputs_onto_stack): `[x]` is a one-item stack, and a branch's `[y]`
  # is the single output `y`.
  const = lambda v: tl.Fn('Const', lambda: v)  # pylint: disable=g-long-lambda
  layer = tl.Cond(const(True), const([2]), const([5]))
  layer.init(())
  assert np.asarray(layer(())).tolist() == 2
  layer = tl.Cond(const(False), const([2]), const([5]))
  layer.init(())
  assert np.asarray(layer(())).tolist() == 5
  halve = tl.Fn('Halve', lambda x: x / 2.)
  quarter = tl.Fn('Quarter', lambda x: x / 4.)
  layer = tl.Cond(const(True), halve, quarter)
  xs = [np.arange(5).astype(np.float32)]
  layer.init(shapes.signature(xs))
  np.testing.assert_allclose(layer(xs), [0., 0.5, 1., 1.5, 2.])


def test_cond_errors():
  with pytest.raises(ValueError, match=r'Cond: true and false branches must '
                     r'have equal n_in and n_out, got \(2, 1\) and \(1, 1\)'):
    tl.Cond(_positive(), tl.Add(), Scale())
  with pytest.raises(ValueError, match=r'Cond: the condition must have '
                     r'n_out=1, got 2'):
    tl.Cond(tl.Dup(), Scale())


# -- Chunk, BatchLeadingAxes -------------------------------------------------

@pytest.mark.parametrize('mode', lt.MODES)
def test_chunk_threads_state_over_chunks(mode):
  zeros = np.zeros((6, 2), np.float32)
  layer = _init(tl.Chunk(Counter(), 2), zeros)
  y, state = lt.run_layer(layer, zeros, mode)
  want = np.repeat([0., 1., 2.], 2)[:, None] * np.ones((1, 2))
  assert_outputs_close(y, want)
  # Trax's Chunk is Serial(ReshapeToChunks, Scan, ReshapeFromChunks) and a
  # Scan's state is (sublayer_state, kept_carry) (trax/layers/combinators.py).
  assert int(state[1][0]) == 3


@pytest.mark.parametrize('mode', lt.MODES)
def test_chunk_multi_io_and_unchunkable(mode):
  a, b = _x(4, 3), _x(4, 3, seed=1)
  layer = _init(tl.Chunk(tl.Serial(tl.Add(), Scale(), tl.Dup()), 2), (a, b))
  y, _ = lt.run_layer(layer, (a, b), mode)
  assert_outputs_close(y, ((a + b) * W,) * 2)
  odd = _x(5, 3)
  whole = _init(tl.Chunk(Scale(), 2), odd)
  y, _ = lt.run_layer(whole, odd, mode)
  assert_outputs_close(y, odd * W)


def test_chunk_errors_and_zero_size():
  scale = Scale()
  assert tl.Chunk(scale, 0) is scale
  with pytest.raises(ValueError, match=r'Chunk: chunk_size must be >= 0'):
    tl.Chunk(scale, -1)
  # As in Trax, the batch is checked when the shapes are first traced, at
  # init (the check sits in the ReshapeToChunks sublayer).
  with pytest.raises(tl.LayerError, match=r'Chunk: batch size 5 is not a '
                     r'multiple of chunk_size 2'):
    _init(tl.Chunk(Scale(), 2, pass_unchunkable=False), _x(5, 3))


def _center():
  # Depends on the whole batch: shows which axes were folded into it.
  return tl.Fn('Center', lambda x: x - jnp.mean(x, axis=0))


@pytest.mark.parametrize('mode', lt.MODES)
def test_batch_leading_axes(mode):
  x = _x(2, 3, 4)
  layer = _init(tl.BatchLeadingAxes(_center()), x)
  y, _ = lt.run_layer(layer, x, mode)
  flat = x.reshape(6, 4).astype(np.float64)
  assert_outputs_close(y, (flat - flat.mean(0)).reshape(2, 3, 4))
  x4 = _x(2, 3, 4, 5)
  layer = _init(tl.BatchLeadingAxes(_center(), n_last_axes_to_keep=2), x4)
  y, _ = lt.run_layer(layer, x4, mode)
  flat = x4.reshape(6, 4, 5).astype(np.float64)
  assert_outputs_close(y, (flat - flat.mean(0)).reshape(x4.shape))


def test_batch_leading_axes_multiple_inputs():
  a, b = _x(2, 3, 4), _x(2, 3, 4, seed=1)
  layer = _init(tl.BatchLeadingAxes(tl.Serial(tl.Add(), _center())), (a, b))
  assert (layer.n_in, layer.n_out) == (2, 1)
  flat = (a + b).reshape(6, 4).astype(np.float64)
  assert_outputs_close(layer((a, b)), (flat - flat.mean(0)).reshape(a.shape))
  with pytest.raises(ValueError, match=r'BatchLeadingAxes: layer must have '
                     r'n_out=1, got n_out=2'):
    tl.BatchLeadingAxes(tl.Dup())


# -- Bidirectional, SerialWithSideOutputs, Cache -----------------------------

def _cumsum_rnn():
  return tl.Serial(Scale(), tl.Fn('Cumsum', lambda x: jnp.cumsum(x, axis=1)))


@pytest.mark.parametrize('mode', lt.MODES)
def test_bidirectional(mode):
  x = _x(2, 4, 3)
  layer = _init(tl.Bidirectional(_cumsum_rnn()), x)
  y, _ = lt.run_layer(layer, x, mode)
  x64 = x.astype(np.float64)
  fwd = np.cumsum(x64 * W, axis=1)
  bwd = np.flip(np.cumsum(np.flip(x64, 1) * W, axis=1), 1)
  assert_outputs_close(y, np.concatenate([fwd, bwd], -1))


def test_bidirectional_copies_have_own_weights():
  x = _x(2, 4, 3)
  layer = _init(tl.Bidirectional(tl.Dense(3)), x)
  flat = [np.asarray(w) for w in fastmath.tree_leaves(layer.weights)]
  kernels = [w for w in flat if w.shape == (3, 3)]
  assert len(kernels) == 2 and not np.allclose(kernels[0], kernels[1])


@pytest.mark.parametrize('mode', lt.MODES)
def test_serial_with_side_outputs(mode):
  x = _x(2, 3)
  first = tl.Fn('First', lambda x: (2. * x, x + 1.), n_out=2)
  second = tl.Fn('Second', lambda x: (x - 1., x * x), n_out=2)
  layer = _init(tl.SerialWithSideOutputs([first, second]), x)
  assert (layer.n_in, layer.n_out) == (1, 3)
  y, _ = lt.run_layer(layer, x, mode)
  x64 = x.astype(np.float64)
  assert_outputs_close(y, (2 * x64 - 1, x64 + 1, (2 * x64) ** 2))


def test_serial_with_side_outputs_per_layer_counts():
  a, b = _x(2, 3), _x(2, 3, seed=1)
  add_sub = tl.Fn('AddSub', lambda a, b: (a + b, a - b), n_out=2)
  keep = tl.Fn('Keep', lambda x: (2. * x, x, -x), n_out=3)
  layer = _init(tl.SerialWithSideOutputs([add_sub, keep],
                                         n_side_outputs=[1, 2]), (a, b))
  assert (layer.n_in, layer.n_out) == (2, 4)
  s = (a + b).astype(np.float64)
  assert_outputs_close(layer((a, b)), (2 * s, a - b, s, -s))


@pytest.mark.parametrize('mode', lt.MODES)
def test_cache_returns_first_outputs(mode):
  x1, x2 = _x(2, 3), _x(2, 3, seed=1)
  layer = _init(tl.Cache(Scale()), x1)
  assert (layer.n_in, layer.n_out) == (1, 1)
  y1, state = lt.run_layer(layer, x1, mode)
  y2, state = lt.run_layer(layer, x2, mode, state=state)
  assert_outputs_close(y1, x1 * W)
  assert_outputs_close(y2, x1 * W)
  assert bool(state[2])


def test_cache_call_keeps_state():
  x1, x2 = _x(2, 3), _x(2, 3, seed=1)
  layer = _init(tl.Cache(Counter()), x1)
  assert_outputs_close(layer(x1), x1)
  assert_outputs_close(layer(x2), x1)
  assert int(layer.state[0]) == 1  # The wrapped layer ran once.


def test_cache_initialized_at_one_shape_fills_at_another_when_traced():
  # Follows trax/layers/combinators.py Cache, whose empty state `()` is
  # filled by the first call at whatever shape it has: a cache initialized
  # for (1, 7, 3) and first called, traced, on (1, 12, 3) keeps static
  # shapes (the branches of the cached/compute choice merge to None dims).
  layer = _init(tl.Cache(Scale()), _x(1, 7, 3))
  x1, x2 = _x(1, 12, 3, seed=1), _x(1, 12, 3, seed=2)
  seen = []

  def run(x, state):
    y, new_state = layer.pure_fn(x, layer.weights, state,
                                 fastmath.random.get_prng(0))
    seen.append(tuple(y.shape))
    return y, new_state
  step = tf.function(run, autograph=False)
  y1, state = step(x1, layer.state)
  y2, state = step(x2, state)
  assert seen == [(1, 12, 3), (1, 12, 3)]  # Traced twice, shapes static.
  assert_outputs_close(y1, x1 * W)
  assert_outputs_close(y2, x1 * W)  # Then the cache answers.
