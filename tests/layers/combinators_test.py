"""Tests for the data-stack combinators against NumPy float64 references."""

import numpy as np
import pytest
import tensorflow as tf

from tests import _layer_testing as lt
from tests.layers._toy_layers import assert_outputs_close
from tests.layers._toy_layers import Counter
from tests.layers._toy_layers import Neg
from tests.layers._toy_layers import Noise
from tests.layers._toy_layers import Scale
from tests.layers._toy_layers import Square
from tests.layers._toy_layers import W
from tfnp_trax import fastmath
from tfnp_trax import shapes
from tfnp_trax.fastmath import numpy as jnp
import tfnp_trax.layers as tl


def _x(*shape, seed=0):
  return np.random.default_rng(seed).normal(size=shape).astype(np.float32)


A, B, C = _x(2, 3), _x(2, 3, seed=1), _x(2, 3, seed=2)
GATE = np.random.default_rng(3).uniform(size=(2, 3)).astype(np.float32)


# (id, layer factory, inputs, NumPy reference on float64 inputs)
CASES = [
    ('serial', lambda: tl.Serial(Scale(), Square(), tl.Dup(), tl.Add()), A,
     lambda a: 2 * (a * W) ** 2),
    ('serial_stack', lambda: tl.Serial(tl.Dup(), tl.Add(), tl.SubtractTop()),
     (A, B), lambda a, b: b - 2 * a),
    ('serial_nested_lists',
     lambda: tl.Serial([Square(), [Scale(), None]], Neg()),
     A, lambda a: -(a * a) * W),
    ('serial_empty_is_identity', tl.Serial, A, lambda a: a),
    ('parallel', lambda: tl.Parallel(Scale(), None, Neg()), (A, B, C),
     lambda a, b, c: (a * W, b, -c)),
    ('parallel_multi_input', lambda: tl.Parallel(tl.Add(), tl.Dup()),
     (A, B, C), lambda a, b, c: (a + b, c, c)),
    ('parallel_lists', lambda: tl.Parallel([Square(), Neg()], []), (A, B),
     lambda a, b: (-(a * a), b)),
    ('branch', lambda: tl.Branch(Square(), None, tl.Add()), (A, B),
     lambda a, b: (a * a, a, a + b)),
    ('branch_lists', lambda: tl.Branch([Scale(), Neg()], [tl.Dup(), tl.Add()]),
     A, lambda a: (-a * W, 2 * a)),
    ('residual', lambda: tl.Residual(Scale(), tl.Fn('Tanh', jnp.tanh)), A,
     lambda a: a + np.tanh(a * W)),
    ('residual_shortcut', lambda: tl.Residual(Square(), shortcut=Neg()), A,
     lambda a: a * a - a),
    ('select', lambda: tl.Select([0, 0, 1]), (A, B), lambda a, b: (a, a, b)),
    ('select_n_in', lambda: tl.Select([2, 0], n_in=3), (A, B, C),
     lambda a, b, c: (c, a)),
    ('dup', tl.Dup, A, lambda a: (a, a)),
    ('drop', lambda: tl.Serial(tl.Select([0, 1]), tl.Drop()), (A, B),
     lambda a, b: b),
    ('swap', tl.Swap, (A, B), lambda a, b: (b, a)),
    ('add', tl.Add, (A, B), lambda a, b: a + b),
    ('add_broadcast', tl.Add, (A, B[0]), lambda a, b: a + b),
    # trax/layers/combinators.py: SubtractTop is x1 - x0; Gate takes
    # (memory, gate, candidate).
    ('subtract_top', tl.SubtractTop, (A, B), lambda a, b: b - a),
    ('multiply', tl.Multiply, (A, B), lambda a, b: a * b),
    ('gate', tl.Gate, (A, GATE, B), lambda a, g, b: g * a + (1 - g) * b),
    ('concatenate', tl.Concatenate, (A, B),
     lambda a, b: np.concatenate([a, b], -1)),
    ('concatenate_3_axis0', lambda: tl.Concatenate(3, axis=0), (A, B, C),
     lambda a, b, c: np.concatenate([a, b, c], 0)),
    ('split', lambda: tl.Split(3), A,
     lambda a: tuple(np.split(a, 3, axis=-1))),
    ('split_axis0', lambda: tl.Split(2, axis=0), A,
     lambda a: tuple(np.split(a, 2, axis=0))),
    ('flatten_list', tl.FlattenList, ((A, (B, [C])),),
     lambda t: (t[0], t[1][0], t[1][1][0])),
]


def _float64(tree):
  return fastmath.nested_map(lambda a: np.asarray(a, np.float64), tree)


@pytest.mark.parametrize('mode', lt.MODES)
@pytest.mark.parametrize('case', CASES, ids=[c[0] for c in CASES])
def test_combinator_matches_numpy(case, mode):
  _, make, inputs, ref = case
  layer = make()
  layer.init(shapes.signature(inputs))
  y, _ = lt.run_layer(layer, inputs, mode)
  args = _float64(inputs if isinstance(inputs, tuple) else (inputs,))
  assert_outputs_close(y, ref(*args))
  # The layer's own __call__ agrees with pure_fn.
  if mode == 'eager':
    assert_outputs_close(layer(inputs), ref(*args))


@pytest.mark.parametrize('make,n_in,n_out', [
    (lambda: tl.Serial(tl.Dup(), tl.Add()), 1, 1),
    (lambda: tl.Serial(tl.Add(), tl.Add()), 3, 1),
    (lambda: tl.Serial(tl.Dup(), tl.Dup()), 1, 3),
    (lambda: tl.Serial(tl.Drop(), tl.Drop()), 2, 0),
    (tl.Serial, 1, 1),
    (lambda: tl.Parallel(tl.Dup(), tl.Add(), None), 4, 4),
    (lambda: tl.Branch(tl.Dup(), tl.Add()), 2, 3),
    (lambda: tl.Branch(None, tl.Gate()), 3, 2),
    (lambda: tl.Residual(tl.Dup(), tl.Add()), 1, 1),
    (lambda: tl.Select([0, 0, 1]), 2, 3),
    (lambda: tl.Select([2], n_in=3), 3, 1),
    (tl.Dup, 1, 2), (tl.Drop, 1, 0), (tl.Swap, 2, 2), (tl.Add, 2, 1),
    (tl.SubtractTop, 2, 1), (tl.Multiply, 2, 1), (tl.Gate, 3, 1),
    (lambda: tl.Concatenate(4), 4, 1), (lambda: tl.Split(3), 1, 3),
    (tl.FlattenList, 1, 1),
])
def test_n_in_n_out(make, n_in, n_out):
  layer = make()
  assert (layer.n_in, layer.n_out) == (n_in, n_out)


def test_branch_of_one_layer_is_that_layer():
  dup = tl.Dup()
  assert tl.Branch(dup) is dup


def test_constructor_errors():
  with pytest.raises(TypeError, match=r'Expected a Layer or a list of '
                     r'layers, got function.*tl.Relu\(\) not tl.Relu'):
    tl.Serial(tl.Relu)
  with pytest.raises(ValueError, match=r'Select: index 2 is out of range '
                     r'for n_in=2'):
    tl.Select([2], n_in=2)
  with pytest.raises(ValueError, match=r'Concatenate: n_items must be at '
                     r'least 2, got 1'):
    tl.Concatenate(1)


def test_serial_wrong_number_of_inputs():
  model = tl.Serial(tl.Add(), tl.Add())
  with pytest.raises(tl.LayerError, match=r'Serial: expects 3 inputs \(a '
                     r'tuple of 3 arrays\) but got 2'):
    model.init((shapes.signature(A), shapes.signature(B)))
  model.init((shapes.signature(A),) * 3)
  with pytest.raises(tl.LayerError, match=r'Serial: expects 3 inputs \(a '
                     r'tuple of 3 arrays\) but got 1.*Pass the inputs as a '
                     r'tuple'):
    model(A)


def test_binary_shape_errors():
  with pytest.raises(tl.LayerError, match=r'Add: input shapes \(2, 3\) and '
                     r'\(2, 4\) do not broadcast together'):
    tl.Add()((A, np.zeros((2, 4), np.float32)))
  with pytest.raises(tl.LayerError, match=r'Split: axis -1 has size 3, which '
                     r'does not divide into 2 equal parts'):
    tl.Split(2)(A)


# -- Weight sharing, rng splitting, state threading -------------------------

@pytest.mark.parametrize('mode', lt.MODES)
def test_shared_layer_shares_weights_and_sums_gradients(mode):
  shared = Scale()
  model = tl.Serial(shared, tl.Fn('Tanh', jnp.tanh), shared)
  weights, _ = model.init(shapes.signature(A))
  assert weights[2] == tl.base.GET_WEIGHTS_FROM_CACHE
  ct = B

  def loss(w):
    y, _ = model.pure_fn(A, w, model.state, fastmath.random.get_prng(0))
    return jnp.sum(y * ct), y

  (_, y), grads = lt.compile_fn(
      fastmath.value_and_grad(loss, has_aux=True), mode)(model.weights)
  a, c = A.astype(np.float64), ct.astype(np.float64)
  t = np.tanh(a * W)
  np.testing.assert_allclose(y, t * W, rtol=1e-5)
  # d/dw of sum(ct * tanh(a w) w), summed over both uses of w.
  want = np.sum(c * t + c * W * (1 - t ** 2) * a, axis=0)
  np.testing.assert_allclose(grads[0], want, rtol=1e-5)
  assert not fastmath.tree_leaves(grads[2])


def test_setting_shared_weights_changes_both_uses():
  shared = Scale()
  model = tl.Serial(shared, shared)
  model.init(shapes.signature(A))
  new_w = np.full(3, 2., np.float32)
  model.weights = (new_w, model.weights[1])
  np.testing.assert_allclose(model(A), 4 * A, rtol=1e-6)


def _noise(key, shape):
  return np.asarray(fastmath.random.uniform(key, shape), np.float64)


@pytest.mark.parametrize('mode', lt.MODES)
def test_serial_and_parallel_split_rngs(mode):
  zeros = np.zeros((2, 3), np.float32)
  key = fastmath.random.get_prng(5)
  serial = tl.Serial(Noise(), tl.Dup(), Noise())
  serial.init(shapes.signature(zeros))
  (first, second), _ = lt.run_layer(serial, zeros, mode, rng=key)
  # Serial gives sublayer i the key split(rng, n)[i], in every mode.
  if mode != 'xla':
    keys = fastmath.random.split(key, 3)
    np.testing.assert_allclose(second, _noise(keys[0], (2, 3)), rtol=1e-6)
    np.testing.assert_allclose(first, _noise(keys[0], (2, 3)) +
                               _noise(keys[2], (2, 3)), rtol=1e-6)
  parallel = tl.Parallel(Noise(), Noise())
  parallel.init((shapes.signature(zeros),) * 2)
  run = lt.compile_fn(
      lambda r: parallel.pure_fn((zeros, zeros), parallel.weights,
                                 parallel.state, r)[0], mode)
  u, v = run(key)
  assert not np.allclose(u, v)
  np.testing.assert_array_equal(run(key)[0], u)
  assert not np.allclose(run(fastmath.random.get_prng(6))[0], u)


def test_dropout_masks_differ_per_branch():
  ones = np.ones((4, 50), np.float32)
  model = tl.Branch(tl.Dropout(0.5), tl.Dropout(0.5))
  model.init(shapes.signature(ones))
  a, b = model(ones)
  assert set(np.unique(a)) <= {0., 2.}
  assert not np.array_equal(a, b)


@pytest.mark.parametrize('mode', lt.MODES)
def test_state_is_threaded(mode):
  model = tl.Serial(Counter(), tl.Dup(), tl.Parallel(Counter(), None),
                    tl.Branch(Counter(), None))
  model.init(shapes.signature(A))
  state = model.state
  for step in range(2):
    outputs, state = lt.run_layer(model, A, mode, state=state)
    # With every count at `step`: (A + 3 step, A + 2 step, A + step).
    assert_outputs_close(outputs, [A + 3 * step, A + 2 * step, A + step])
  counts = [int(s) for s in fastmath.tree_leaves(state)]
  assert counts == [2, 2, 2]
  model(A)  # __call__ keeps the new state on the model.
  assert [int(s) for s in fastmath.tree_leaves(model.state)] == [1, 1, 1]


def test_uses_rng_follows_the_sublayers():
  assert not tl.Dense(3).uses_rng
  assert not tl.Relu().uses_rng
  assert not tl.LayerNorm().uses_rng
  assert not tl.Dropout(0.0).uses_rng
  assert not tl.Dropout(0.5, mode='eval').uses_rng
  assert tl.Dropout(0.5).uses_rng
  assert not tl.Serial(tl.Dense(3), tl.Relu(),
                       tl.Branch(tl.Dense(2), None)).uses_rng
  assert tl.Serial(tl.Dense(3), tl.Parallel(None, tl.Dropout(0.5))).uses_rng

  class Noisy(tl.Layer):  # A layer that says nothing is assumed to use it.

    def forward(self, x):
      return x + fastmath.random.uniform(self.rng, x.shape)
  assert Noisy().uses_rng and tl.Serial(tl.Dense(3), Noisy()).uses_rng

  class OwnForward(tl.Serial):

    def forward(self, xs):
      return super().forward(xs)
  assert OwnForward(tl.Dense(3)).uses_rng  # Its forward is not Serial's.


def _random_ops(model, x):
  model.init(shapes.signature(x), rng=fastmath.random.get_prng(0))
  traced = tf.function(
      lambda x, w, s, r: model.pure_fn(x, w, s, r)[0], autograph=False)
  graph = traced.get_concrete_function(
      x, model.weights, model.state, fastmath.random.get_prng(1)).graph
  return [op.type for op in graph.get_operations() if 'Random' in op.type]


def test_keys_are_split_only_for_sublayers_that_use_them():
  x = np.ones((2, 4), np.float32)
  deterministic = tl.Serial(tl.Dense(4), tl.Relu(), tl.Dense(4),
                            tl.Dropout(0.0), tl.LayerNorm())
  assert not _random_ops(deterministic, x)
  assert _random_ops(tl.Serial(tl.Dense(4), tl.Dropout(0.5)), x)


def test_a_sublayer_that_uses_rng_gets_the_same_key_as_before():
  # Serial(Dense, Dropout) still splits its key two ways; the Dropout gets
  # the second key, as it always has.
  x = np.ones((3, 8), np.float32)
  model = tl.Serial(tl.Dense(8), tl.Dropout(0.5))
  model.init(shapes.signature(x), rng=fastmath.random.get_prng(0))
  rng = fastmath.random.get_prng(7)
  got, _ = model.pure_fn(x, model.weights, model.state, rng)
  dense, dropout = model.sublayers
  h, _ = dense.pure_fn(x, model.weights[0], model.state[0], None)
  key = fastmath.random.split(rng, 2)[1]
  want, _ = dropout.pure_fn(h, model.weights[1], model.state[1], key)
  np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
