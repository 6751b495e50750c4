"""Tests for fastmath.shared_functions: one trace, many calls."""

import numpy as np
import pytest
import tensorflow as tf

from tfnp_trax.fastmath import shared_functions


def _dense_tanh_np(x, ws):
  for w in ws:
    x = np.tanh(x @ w)
  return x


def _data(n_layers, seed=0):
  rng = np.random.default_rng(seed)
  x = rng.normal(size=(3, 4))
  ws = [rng.normal(size=(4, 4)) * 0.5 for _ in range(n_layers)]
  return x, ws


def _counting_body(counter):
  def body(x, w):
    counter.append(1)
    return tf.tanh(tf.matmul(x, w))
  return body


def test_eager_calls_the_function_each_time():
  shared = shared_functions.SharedFunctions()
  traces = []
  x, ws = _data(3)
  out = tf.constant(x, tf.float32)
  for w in ws:
    out = shared.call('layer', _counting_body(traces), out,
                      tf.constant(w, tf.float32))
  assert len(traces) == 3
  np.testing.assert_allclose(out.numpy(), _dense_tanh_np(x, ws), rtol=1e-5)


@pytest.mark.parametrize('jit_compile', [False, True])
def test_traced_once_called_per_use(jit_compile):
  shared = shared_functions.SharedFunctions()
  traces = []
  x, ws = _data(5)

  @tf.function(autograph=False, jit_compile=jit_compile)
  def stack(x, ws):
    for w in ws:
      x = shared.call('layer', _counting_body(traces), x, w)
    return x
  args = (tf.constant(x), [tf.constant(w) for w in ws])
  got = stack(*args)
  assert len(traces) == 1
  np.testing.assert_allclose(got.numpy(), _dense_tanh_np(x, ws), rtol=1e-12)
  graph = stack.get_concrete_function(*args).graph
  calls = [op for op in graph.get_operations()
           if op.type in ('PartitionedCall', 'StatefulPartitionedCall')]
  assert len(calls) == 5
  # The callee is marked so that Grappler does not inline it back.
  (fdef,) = [f for f in graph.as_graph_def().library.function
             if f.signature.name == calls[0].get_attr('f').name]
  assert fdef.attr['_noinline'].b


def test_python_values_and_shapes_are_part_of_the_key():
  shared = shared_functions.SharedFunctions()
  traces = []

  def body(x, scale, extra):
    traces.append((scale, extra))
    return x * scale, (None, scale, extra, ())

  @tf.function(autograph=False)
  def run(x, y):
    a, aux_a = shared.call('f', body, x, 2.0, 'a')
    b, aux_b = shared.call('f', body, x, 2.0, 'a')  # Reuses the first.
    c, aux_c = shared.call('f', body, x, 3.0, 'a')  # Another scale.
    d, _ = shared.call('f', body, y, 2.0, 'a')  # Another shape.
    return a, b, c, d, aux_a, aux_b, aux_c

  x = tf.constant([1.0, 2.0])
  y = tf.constant([[1.0], [4.0], [5.0]])
  a, b, c, d, aux_a, aux_b, aux_c = run(x, y)
  assert traces == [(2.0, 'a'), (3.0, 'a'), (2.0, 'a')]
  np.testing.assert_allclose(a.numpy(), [2.0, 4.0])
  np.testing.assert_allclose(b.numpy(), [2.0, 4.0])
  np.testing.assert_allclose(c.numpy(), [3.0, 6.0])
  np.testing.assert_allclose(d.numpy(), [[2.0], [8.0], [10.0]])
  # Python leaves of the result come back as Python values.
  assert aux_a == aux_b == (None, 2.0, 'a', ())
  assert aux_c == (None, 3.0, 'a', ())


def test_each_outer_trace_traces_afresh():
  # Cached per graph: global settings read while tracing (e.g. the compute
  # precision) can differ between two outer traces.
  shared = shared_functions.SharedFunctions()
  traces = []
  body = _counting_body(traces)
  x, ws = _data(2)

  def stack(x, ws):
    for w in ws:
      x = shared.call('layer', body, x, w)
    return x
  args = (tf.constant(x), [tf.constant(w) for w in ws])
  tf.function(stack, autograph=False)(*args)
  tf.function(stack, autograph=False)(*args)
  assert len(traces) == 2


def test_unhashable_python_leaf_calls_directly():
  shared = shared_functions.SharedFunctions()
  traces = []

  class Unhashable:
    __hash__ = None

    def __init__(self, n):
      self.n = n

  def body(x, unhashable):
    traces.append(1)
    return x + unhashable.n

  @tf.function(autograph=False)
  def run(x):
    return [shared.call('f', body, x, Unhashable(2)) for _ in range(3)]
  out = run(tf.constant(1.0))
  assert len(traces) == 3  # Inlined each time, no shared trace.
  assert [float(t) for t in out] == [3.0, 3.0, 3.0]


def test_gradients_flow_through_shared_calls():
  shared = shared_functions.SharedFunctions()
  x, ws = _data(3, seed=1)

  @tf.function(autograph=False)
  def grads(x, ws):
    with tf.GradientTape() as tape:
      tape.watch(ws)
      out = x
      for w in ws:
        out = shared.call('layer', lambda x, w: tf.tanh(x @ w), out, w)
      loss = tf.reduce_sum(out)
    return tape.gradient(loss, ws)

  got = grads(tf.constant(x), [tf.constant(w) for w in ws])

  def loss_np(flat):
    split = [flat[i * 16:(i + 1) * 16].reshape(4, 4) for i in range(3)]
    return _dense_tanh_np(x, split).sum()
  flat = np.concatenate([w.ravel() for w in ws])
  eps = 1e-6
  numeric = np.array([
      (loss_np(flat + eps * e) - loss_np(flat - eps * e)) / (2 * eps)
      for e in np.eye(flat.size)])
  np.testing.assert_allclose(
      np.concatenate([g.numpy().ravel() for g in got]), numeric, rtol=1e-6,
      atol=1e-8)


def test_each_device_scope_traces_its_own_copy():
  shared = shared_functions.SharedFunctions()
  traces = []
  x, ws = _data(2)

  @tf.function(autograph=False)
  def run(x, ws):
    outs = []
    for device in ('/CPU:0', '/CPU:0', None):
      with tf.device(device):
        outs.append(shared.call('layer', _counting_body(traces), x, ws[0]))
    return outs
  outs = run(tf.constant(x), [tf.constant(w) for w in ws])
  assert len(traces) == 2  # '/CPU:0' once, the unscoped call once.
  for out in outs:
    np.testing.assert_allclose(out.numpy(), _dense_tanh_np(x, ws[:1]),
                               rtol=1e-12)


def test_inlined_adds_each_call_to_the_graph_itself():
  shared = shared_functions.SharedFunctions()
  traces = []
  x, ws = _data(3)

  @tf.function(autograph=False)
  def stack(x, ws):
    with shared_functions.inlined():
      for w in ws:
        x = shared.call('layer', _counting_body(traces), x, w)
    return x
  args = (tf.constant(x), [tf.constant(w) for w in ws])
  np.testing.assert_allclose(stack(*args).numpy(), _dense_tanh_np(x, ws),
                             rtol=1e-12)
  assert len(traces) == 3  # Each call traced in place.
  graph = stack.get_concrete_function(*args).graph
  assert not [op for op in graph.get_operations() if 'Call' in op.type]
  assert [op.type for op in graph.get_operations()].count('Tanh') == 3
  # Outside the context the calls are shared again.
  sharing = tf.function(lambda x, ws: [shared.call(
      'layer', _counting_body(traces), x, w) for w in ws][-1],
                        autograph=False)
  sharing(*args)
  assert len(traces) == 4
