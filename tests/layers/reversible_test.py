"""Reversible layers: outputs, reversal, and backprop without activations."""

import gc
import weakref

import numpy as np
import pytest
import tensorflow as tf

from tests import _fixtures
from tests import _layer_testing as lt
from tfnp_trax import fastmath
from tfnp_trax import shapes
from tfnp_trax.fastmath import numpy as jnp
import tfnp_trax.layers as tl
from tfnp_trax.layers import _reversible_base


# The same constructors as tests/testdata/reversible/make_fixtures.py.
_CASES = {
    'concat_pair': lambda: tl.ReversibleConcatenatePair(),
    'select_201': lambda: tl.ReversibleSelect([2, 0, 1]),
    'select_tuple': lambda: tl.ReversibleSelect((1, 0), n_in=2),
    'swap': lambda: tl.ReversibleSwap(),
    'reshape': lambda: tl.ReversibleReshape([2, 3], [6]),
    'reshape_tuple_n2': lambda: tl.ReversibleReshape((2, 3), (6,), n_in=2),
    'print_shape': lambda: tl.ReversiblePrintShape(n_in=2, msg='hi'),
    'print_shape1': lambda: tl.ReversiblePrintShape(),
    'half_residual': lambda: tl.ReversibleHalfResidual(tl.Dense(4),
                                                       tl.Relu()),
    'half_residual_named': lambda: tl.ReversibleHalfResidual(tl.Dense(4),
                                                             name='HR'),
    'half_residual_attn': lambda: tl.ReversibleHalfResidual(
        tl.LayerNorm(), attention_layer=tl.Dense(4)),
    'half_residual_2in': lambda: tl.ReversibleHalfResidual(tl.Add()),
    'serial': lambda: tl.ReversibleSerial(
        tl.ReversibleHalfResidual(tl.Dense(4)), tl.ReversibleSwap()),
    'serial_nested': lambda: tl.ReversibleSerial(
        [tl.ReversibleSwap(), [tl.ReversibleHalfResidual(tl.Dense(4))]]),
}


def _rand(*shape, seed=0):
  return np.random.default_rng(seed).normal(size=shape).astype(np.float32)


def _revnet(d=4, n_blocks=2, residual=lambda d: [tl.Dense(d), tl.Relu()]):
  layers = []
  for _ in range(n_blocks):
    layers += [tl.ReversibleHalfResidual(*residual(d)), tl.ReversibleSwap(),
               tl.ReversibleHalfResidual(tl.Dense(d)), tl.ReversibleSwap()]
  return tl.ReversibleSerial(layers)


def _np_revnet(xs, weights):
  """float64 RevNet: per block a += relu(c W + b); swap; a += c W + b; swap."""
  a, c = xs
  dense = [fastmath.tree_leaves(w) for w in weights if fastmath.tree_leaves(w)]
  for i, (w, b) in enumerate(dense):
    h = c @ w + b
    a = a + (np.maximum(h, 0) if i % 2 == 0 else h)
    a, c = c, a
  return a, c


def _grads(layer, x, weights, state, mode, rng=None):
  """Gradients of a fixed nonlinear loss of the outputs wrt (x, weights)."""
  rng = fastmath.random.get_prng(5) if rng is None else rng

  def loss(xx, ww):
    out, _ = layer.pure_fn(xx, ww, state, rng)
    out = out if isinstance(out, tuple) else (out,)
    return sum(jnp.sum(jnp.sin(o) * (i + 1.0)) for i, o in enumerate(out))
  return lt.compile_fn(fastmath.grad(loss, argnums=(0, 1)), mode)(x, weights)


def _plain_backprop(monkeypatch):
  """Makes every reversible layer use ordinary autodiff through forward."""
  monkeypatch.setattr(_reversible_base.ReversibleLayer, 'has_backward',
                      property(lambda self: False))


def _assert_trees_close(got, want, rtol=1e-5, atol=1e-6):
  got, want = fastmath.tree_leaves(got), fastmath.tree_leaves(want)
  assert len(got) == len(want)
  for g, w in zip(got, want):
    np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=rtol,
                               atol=atol)


# -- Names, reprs and stack sizes, as recorded from Trax ------------------

@pytest.mark.parametrize('case', sorted(_CASES))
def test_repr_name_and_stack_sizes_match_trax(case):
  want = _fixtures.json_file('reversible', 'layers.json')[case]
  layer = _CASES[case]()
  assert (repr(layer), layer.name, layer.n_in, layer.n_out) == (
      want['repr'], want['name'], want['n_in'], want['n_out'])


# -- Simple layers: forward against NumPy, and reverse undoes it ----------

def _reverse_roundtrip(layer, x, mode):
  def fwd_rev(xs):
    y, new_state = layer.pure_fn(xs, layer.weights, layer.state,
                                 fastmath.random.get_prng(0))
    return y, layer.reverse(y, layer.weights, layer.state, new_state)
  return lt.compile_fn(fwd_rev, mode)(x)


@pytest.mark.parametrize('mode', lt.MODES)
def test_simple_layers_forward_and_reverse(mode):
  x, y, z = _rand(2, 6), _rand(2, 6, seed=1), _rand(2, 6, seed=2)
  cases = [
      (tl.ReversibleConcatenatePair(), (x, y),
       (np.concatenate([x, y], -1),) * 2),
      (tl.ReversibleSelect([2, 0, 1]), (x, y, z), (z, x, y)),
      (tl.ReversibleSwap(), (x, y), (y, x)),
      (tl.ReversibleReshape([2, 6], [4, 3]), x, x.reshape(4, 3)),
      (tl.ReversibleReshape([2], [1, 2], n_in=2), (x, y),
       (x[None], y[None])),
  ]
  for layer, inputs, want in cases:
    layer.init(shapes.signature(inputs))
    out, back = _reverse_roundtrip(layer, inputs, mode)
    _assert_trees_close(out, want, rtol=0, atol=0)
    _assert_trees_close(back, inputs, rtol=0, atol=0)


def test_print_shape_prints_and_passes_through(capsys):
  x = (np.ones((2, 3), np.float32), np.ones((4,), np.int32))
  layer = tl.ReversiblePrintShape(n_in=2, msg='here')
  out = layer(x)
  assert capsys.readouterr().out == (
      'PrintShape: here: [(2, 3)[float32], (4,)[int32]]\n')
  _assert_trees_close(layer.reverse(out), x, rtol=0, atol=0)
  tl.ReversiblePrintShape(msg='one')(np.ones((5, 2), np.float32))
  assert capsys.readouterr().out == 'PrintShape: one: [(5, 2)[float32]]\n'


# -- ReversibleHalfResidual and ReversibleSerial against NumPy ------------

def test_revnet_forward_and_gradients_match_numpy():
  xs = (_rand(3, 4), _rand(3, 4, seed=1))
  lt.check_layer(_revnet(n_blocks=1), xs, _np_revnet, grad_rtol=1e-4,
                 grad_atol=1e-4)


@pytest.mark.parametrize('mode', lt.MODES)
def test_reverse_of_forward_is_the_input(mode):
  xs = (_rand(3, 4), _rand(3, 4, seed=1))
  model = _revnet(n_blocks=3)
  model.init(shapes.signature(xs), rng=fastmath.random.get_prng(0))
  out, back = _reverse_roundtrip(model, xs, mode)
  assert not np.allclose(np.asarray(out[0]), xs[0])  # The layer did work.
  _assert_trees_close(back, xs, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize('mode', lt.MODES)
def test_gradients_equal_ordinary_backprop(mode, monkeypatch):
  xs = (_rand(3, 4), _rand(3, 4, seed=1))
  model = _revnet(n_blocks=3)
  model.init(shapes.signature(xs), rng=fastmath.random.get_prng(0))
  w, s = model.weights, model.state
  got = _grads(model, xs, w, s, mode)
  _plain_backprop(monkeypatch)
  want = _grads(model, xs, w, s, mode)
  _assert_trees_close(got, want)


@pytest.mark.parametrize('mode', ('eager', 'jit'))
def test_dropout_rngs_are_the_same_when_recomputing(mode, monkeypatch):
  # The backward pass reruns Dropout; it must draw the forward pass's mask.
  xs = (_rand(4, 8), _rand(4, 8, seed=1))
  model = _revnet(d=8, n_blocks=2, residual=lambda d: [
      tl.Dense(d), tl.Dropout(0.5, mode='train')])
  model.init(shapes.signature(xs), rng=fastmath.random.get_prng(0))
  w, s = model.weights, model.state
  got = _grads(model, xs, w, s, mode)
  _plain_backprop(monkeypatch)
  want = _grads(model, xs, w, s, mode)
  # Gradients reach ~30 here; reconstruction rounds at that scale. A wrong
  # mask would be off by O(1).
  _assert_trees_close(got, want, atol=5e-5)


def test_multi_input_residual_and_attention_layer_gradients(monkeypatch):
  # A 3-input half residual (the context gets a gradient from both the
  # pass-through and the residual) and one with an attention layer, whose
  # forward_and_or_backward must see the forward pass's new state.
  calls = []

  class Attn(tl.Layer):

    def __init__(self):
      super().__init__(n_in=2, n_out=1)

    def forward(self, xs):
      return jnp.tanh(xs[0]) * xs[1]

    def forward_and_or_backward(self, inputs, weights, state, rng,
                                output_grad=None, compute_output=True,
                                update_state=True):
      calls.append((state, compute_output, update_state))
      out, vjp_fn = fastmath.vjp(
          lambda x: self.pure_fn(x, weights, state, rng)[0], inputs)
      return out, None, vjp_fn(output_grad)[0], ()

  x = tuple(_rand(2, 3, seed=i) for i in range(3))
  model = tl.ReversibleSerial(
      tl.ReversibleHalfResidual(tl.Add(), tl.Dense(3)),
      tl.ReversibleSelect([1, 2, 0]),
      tl.ReversibleHalfResidual(tl.Dense(3), tl.Dup(),
                                attention_layer=Attn()),
      tl.ReversibleSelect([2, 0, 1]))
  model.init(shapes.signature(x), rng=fastmath.random.get_prng(1))
  w, s = model.weights, model.state
  got = _grads(model, x, w, s, 'eager')
  assert calls == [((), True, False)]
  _plain_backprop(monkeypatch)
  _assert_trees_close(got, _grads(model, x, w, s, 'eager'))


def test_reverse_and_grad_matches_vjp():
  xs = (_rand(3, 4), _rand(3, 4, seed=1))
  model = _revnet(n_blocks=2)
  model.init(shapes.signature(xs), rng=fastmath.random.get_prng(0))
  rng = fastmath.random.get_prng(2)
  w, s = model.weights, model.state
  out, new_state = model.pure_fn(xs, w, s, rng)
  ct = (_rand(3, 4, seed=3), _rand(3, 4, seed=4))
  back, (x_ct, w_ct) = model.reverse_and_grad(out, ct, w, s, new_state,
                                              rng=rng)
  _, vjp_fn = fastmath.vjp(lambda x, ww: model.pure_fn(x, ww, s, rng)[0],
                           xs, w)
  _assert_trees_close(back, xs, atol=1e-5)
  _assert_trees_close((x_ct, w_ct), vjp_fn(ct))


# -- Backprop recomputes instead of storing --------------------------------

def _spy_revnet(seen):
  def spy(x):
    seen.append(x)
    return x

  def block():
    return [tl.ReversibleHalfResidual(tl.Fn('Spy', spy), tl.Dense(4)),
            tl.ReversibleSwap()]
  return tl.ReversibleSerial(block() + block() + block())


@pytest.mark.parametrize('reversible_backward', [True, False])
def test_backprop_recomputes_and_keeps_no_activations(reversible_backward,
                                                      monkeypatch):
  seen = []
  model = _spy_revnet(seen)
  xs = (_rand(3, 4), _rand(3, 4, seed=1))
  model.init(shapes.signature(xs), rng=fastmath.random.get_prng(0))
  if not reversible_backward:
    _plain_backprop(monkeypatch)
  w = fastmath.nested_map(tf.convert_to_tensor, model.weights)
  seen.clear()
  with tf.GradientTape() as tape:
    tape.watch(fastmath.tree_leaves(w))
    out, _ = model.pure_fn(xs, w, model.state, fastmath.random.get_prng(1))
    loss = jnp.sum(out[0]) + jnp.sum(out[1])
  # The third half residual's input came out of the second: an activation
  # inside the stack that ordinary backprop keeps for the Dense gradient.
  inner = weakref.ref(seen[2])
  n_forward = len(seen)
  seen.clear()
  gc.collect()
  assert (inner() is None) == reversible_backward
  tape.gradient(loss, fastmath.tree_leaves(w))
  # The reversible backward reruns each residual once more.
  assert len(seen) == (n_forward if reversible_backward else 0)


# -- Bad input --------------------------------------------------------------

def test_serial_rejects_a_non_reversible_layer():
  with pytest.raises(ValueError, match=r'ReversibleSerial: sub-layer 1 '
                     r'\(Dense_3\) is not reversible'):
    tl.ReversibleSerial(tl.ReversibleSwap(), tl.Dense(3))


def test_select_must_keep_every_input():
  with pytest.raises(ValueError, match=r'ReversibleSelect\[0,2\]: to be '
                     r'reversible, every input index in range\(3\) must '
                     r'appear in indices \[0, 2\]; missing \[1\]'):
    tl.ReversibleSelect([0, 2])


def test_concatenate_pair_needs_equal_halves():
  layer = tl.ReversibleConcatenatePair()
  with pytest.raises(tl.LayerError, match='ReversibleConcatenatePair: the '
                     'two inputs must have the same last dimension to be '
                     'split back apart in reverse, got 3 and 5'):
    layer((_rand(2, 3), _rand(2, 5)))
  odd = jnp.asarray(_rand(2, 7))
  with pytest.raises(ValueError, match='ReversibleConcatenatePair: reverse '
                     'splits the last dimension into two equal halves, but '
                     'it is odd: 7'):
    layer.reverse((odd, odd))


def test_half_residual_must_keep_the_accumulator_shape():
  layer = tl.ReversibleHalfResidual(tl.Dense(6))
  x = (_rand(2, 4), _rand(2, 4))
  with pytest.raises(tl.LayerError, match=r'ReversibleHalfResidual: the '
                     r'residual \(shape \(2, 6\)\) must have the shape of the '
                     r'accumulator \(the first input, shape \(2, 4\)\)'):
    layer.init(shapes.signature(x))
    layer(x)


def test_traced_backward_starts_each_layer_after_its_gradient():
  # Traced, every tensor a layer's backward receives (its output, weights,
  # forward state and rng) must wait for that layer's incoming gradient;
  # otherwise the graph runs the work that needs only weights/state/rng
  # (e.g. LSH sort orders from stored buckets) for all layers at the start
  # and keeps every result alive until the backward reaches it.
  seen = []

  class Recorder(tl.ReversibleLayer):

    def __init__(self):
      super().__init__(n_in=2, n_out=2)

    def forward(self, xs):
      return xs[0] * self.weights[0], xs[1] + self.state

    def reverse(self, output, weights=(), state=(), new_state=(), rng=None):
      return output[0] / weights[0], output[1] - state

    def init_weights_and_state(self, input_signature):
      self.weights = (jnp.full((4,), 2.0, jnp.float32),)
      self.state = jnp.ones((4,), jnp.float32)

    def reverse_and_grad(self, output, grad, weights=(), state=(),
                         new_state=(), rng=None):
      seen.append((output, grad, weights, state, new_state, rng))
      return super().reverse_and_grad(output, grad, weights, state,
                                      new_state, rng)

  model = tl.ReversibleSerial(Recorder(), tl.ReversibleSwap(), Recorder())
  xs = (_rand(3, 4), _rand(3, 4, seed=1))
  model.init(shapes.signature(xs), rng=fastmath.random.get_prng(0))
  w, s = model.weights, model.state
  outputs, new_state = model.pure_fn(xs, w, s, fastmath.random.get_prng(1))
  grad = (jnp.ones((3, 4), jnp.float32), jnp.full((3, 4), 2.0, jnp.float32))

  def backward(outputs, grad, w, s, new_state):
    return model.reverse_and_grad(outputs, grad, w, s, new_state,
                                  rng=fastmath.random.get_prng(1))
  traced = tf.function(backward, autograph=False)
  graph = traced.get_concrete_function(outputs, grad, w, s, new_state).graph
  # The two Recorders are structurally equal: one trace of their backward.
  assert len(seen) == 1
  calls = [op for op in graph.get_operations()
           if op.type in ('PartitionedCall', 'StatefulPartitionedCall')]
  assert len(calls) == 3  # Recorder, ReversibleSwap, Recorder.
  for call in calls:
    producers = {t.op.name for t in call.inputs}
    gated = [t for t in call.inputs
             if t.op.type == 'Identity' and t.op.control_inputs]
    assert gated, call
    for t in gated:
      # Gated on tensors this same call receives: its incoming gradient.
      waits_on = {c.name for c in t.op.control_inputs}
      assert waits_on and waits_on <= producers, (call, t)
  # The gating changes no values: traced equals eager.
  seen.clear()
  want = backward(outputs, grad, w, s, new_state)
  got = traced(outputs, grad, w, s, new_state)
  _assert_trees_close(got, want, rtol=1e-6, atol=1e-6)


def _identical_blocks(n):
  layers = []
  for _ in range(n):
    layers += [tl.ReversibleHalfResidual(tl.Dense(4), tl.Relu()),
               tl.ReversibleSwap()]
  return tl.ReversibleSerial(*layers)


def _traced_grads(n):
  model = _identical_blocks(n)
  xs = (_rand(3, 4), _rand(3, 4, seed=1))
  model.init(shapes.signature(xs), rng=fastmath.random.get_prng(0))
  w, s = model.weights, model.state

  def grads(w):
    def loss(w):
      y, _ = model.pure_fn(xs, w, s, fastmath.random.get_prng(1))
      return jnp.sum(y[0] * y[0]) + jnp.sum(y[1])
    return fastmath.grad(loss)(w)
  traced = tf.function(grads, autograph=False)
  graph = traced.get_concrete_function(w).graph
  return (graph, traced(w), grads(w))


def test_traced_program_does_not_grow_per_identical_block():
  # Each distinct sublayer's forward and backward is traced once and called
  # per block, so a deep stack costs a call op per block, not a copy of it.
  graph2, _, _ = _traced_grads(2)
  graph8, got, want = _traced_grads(8)
  functions2 = len(graph2.as_graph_def().library.function)
  functions8 = len(graph8.as_graph_def().library.function)
  assert functions8 == functions2
  per_block = (len(graph8.get_operations()) -
               len(graph2.get_operations())) / 6
  assert per_block < 60, per_block
  _assert_trees_close(got, want, rtol=1e-5, atol=1e-6)
