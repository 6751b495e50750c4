"""AssertShape, AssertFunction and the assert_shape decorator."""

import importlib

import numpy as np
import pytest
import tensorflow as tf

from tfnp_trax import fastmath
from tfnp_trax import layers as tl
from tfnp_trax import shapes
from tfnp_trax.fastmath import numpy as jnp
from tests import _layer_testing as lt

# The package exports the decorator under the module's own name.
assert_shape_module = importlib.import_module('tfnp_trax.layers.assert_shape')


def _ones(*shape):
  return jnp.ones(shape, jnp.float32)


@pytest.mark.parametrize('spec,shapes_in', [
    ('ab', [(2, 3)]),
    ('...', [(2, 3, 4)]),
    ('...', [()]),
    ('a...', [(2,)]),
    ('...bd', [(5, 2, 3)]),
    ('b...d', [(2, 7, 7, 3)]),
    ('ab,cd', [(1, 2), (3, 4)]),
    ('ab,b', [(2, 3), (3,)]),
    ('a2b', [(4, 2, 5)]),
    ('...a,...b', [(2, 3, 4), (2, 3, 5)]),
])
@pytest.mark.parametrize('mode', ['eager', 'jit'])
def test_passing_specs_return_inputs_unchanged(spec, shapes_in, mode):
  xs = tuple(_ones(*s) for s in shapes_in)
  layer = tl.AssertShape(spec)
  x = xs[0] if len(xs) == 1 else xs
  y = lt.layer_outputs(layer, x, mode)
  ys = tuple(y) if len(xs) > 1 else (y,)
  assert len(ys) == len(xs)
  for got, want in zip(ys, xs):
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize('spec,shapes_in,message', [
    ('ab,b', [(2, 3), (4,)],
     r"AssertShape: spec 'ab,b': dimension 'b' is 3 in input 0 but 4 in "
     r'input 1 \(inputs \[\(2, 3\), \(4,\)\]\)'),
    ('abc', [(2, 3)],
     r"spec 'abc': input 0 has rank 2 but 'abc' needs rank 3"),
    ('...abc', [(2, 3)],
     r"input 0 has rank 2 but '.abc' needs rank at least 3"),
    ('a3', [(2, 4)], r"dimension '3' must be 3 but is 4 in input 0"),
    ('...a,...b', [(2, 3, 4), (2, 5, 4)],
     r"the dimensions under '...' are \(2, 3\) in input 0 but \(2, 5\) in "
     r'input 1'),
    ('...a,...b', [(2, 3, 4), (3, 4)],
     r"the dimensions under '...' are \(2, 3\) in input 0 but \(3,\) in "
     r'input 1'),
])
def test_failing_specs_name_dimension_and_sizes(spec, shapes_in, message):
  layer = tl.AssertShape(spec, message='see here')
  xs = tuple(_ones(*s) for s in shapes_in)
  with pytest.raises(tl.LayerError, match=message + r'.*see here'):
    layer(xs[0] if len(xs) == 1 else xs)


def test_bad_specs_fail_at_construction():
  # Trax asserts on the characters, so these are AssertionErrors there too.
  with pytest.raises(AssertionError,
                     match=r"spec 'a-b' has characters \['-'\]"):
    tl.AssertShape('a-b')
  # Follows trax/layers/assert_shape_test.py test_double_ellipsis_fail:
  # more than one ellipsis (or a '..' typo) is a LayerError when it runs.
  for spec in ('...a...', 'b..c', 'b......c'):
    layer = tl.AssertShape(spec)
    with pytest.raises(tl.LayerError, match=r'more than one ellipsis'):
      layer(np.ones((2, 3, 4, 5)))
  with pytest.raises(AssertionError, match=r"spec 'ab->a\+' has characters"):
    tl.AssertFunction('ab->a+', tl.Relu())
  with pytest.raises(ValueError, match=r"needs exactly one '->'"):
    tl.assert_shape('ab')
  with pytest.raises(ValueError, match=r"needs exactly one '->'"):
    tl.AssertFunction('a->b->c', tl.Relu())


def test_assert_function_checks_inputs_against_outputs():
  ok = tl.AssertFunction('bd,bd->bd', tl.Add())
  np.testing.assert_array_equal(ok((_ones(2, 3), _ones(2, 3))),
                                2 * np.ones((2, 3)))
  assert ok.n_in == 2 and ok.n_out == 1
  # As in Trax, the unnamed checks print as '' ('_in2_out2' with 2 tensors).
  assert str(ok) == 'Serial_in2[\n  _in2_out2\n  Add_in2\n]'
  wrong = tl.AssertFunction('bd->bd', tl.Fn('Widen', lambda x: jnp.concatenate(
      [x, x], axis=-1)))
  with pytest.raises(tl.LayerError,
                     match=r"AssertShape: spec 'bd->bd' \(around layer "
                     r"Widen\): dimension 'd' is 3 in input 0 but 6 in "
                     r'output 0 \(inputs \[\(2, 3\)\], outputs \[\(2, 6\)\]\)'
                     r'\. Defined at .*assert_shape_test\.py'):
    wrong(_ones(2, 3))


def test_names_and_printing_follow_trax():
  # Unnamed, as in Trax: a one-tensor check prints as '' and is left out.
  assert str(tl.AssertShape('ab')) == ''
  assert str(tl.AssertShape('ab,c')) == '_in2_out2'
  # Dense, not Relu: Relu() itself comes wrapped in checks (Serial[Relu]).
  assert str(tl.Serial(tl.AssertShape('a'), tl.Dense(2))) == (
      'Serial[\n  Dense_2\n]')
  assert str(tl.Serial(tl.AssertShape('a', visible_layer=True),
                       tl.Dense(2))) == 'Serial[\n  AssertShape\n  Dense_2\n]'
  # As in Trax, checked constructors print with their wrapper.
  assert str(tl.Relu()) == 'Serial[\n  Relu\n]'
  assert str(tl.AttentionQKV(4)).startswith('Serial_in4_out2[\n  _in4_out4\n')


@tl.assert_shape('bl->bld')
def _TinyLM(vocab_size, d_model):  # pylint: disable=invalid-name
  return tl.Serial(tl.Embedding(vocab_size, d_model), tl.Dense(d_model))


@tl.assert_shape('bld->bld')
def _FeedForward(d_ff, d_out):  # pylint: disable=invalid-name
  # A residual block's body: d_out must equal the input's width.
  return tl.Serial(tl.Dense(d_ff), tl.Relu(), tl.Dense(d_out))


def test_decorator_on_model_functions():
  model = _TinyLM(10, 4)
  model.init(shapes.ShapeDtype((2, 5), jnp.int32))
  assert tuple(model(np.zeros((2, 5), np.int32)).shape) == (2, 5, 4)
  assert _TinyLM.__name__ == '_TinyLM'
  block = _FeedForward(8, 3)
  block.init(shapes.ShapeDtype((2, 5, 3)))
  for mode in lt.MODES:
    y = lt.layer_outputs(block, _ones(2, 5, 3), mode)
    assert tuple(y.shape) == (2, 5, 3)


def test_decorator_catches_a_wrong_width_eagerly_and_under_jit():
  sig = shapes.ShapeDtype((2, 5, 3))
  with pytest.raises(tl.LayerError,
                     match=r"AssertShape: spec 'bld->bld' \(around layer "
                     r"Serial\): dimension 'd' is 3 in input 0 but 4 in "
                     r"output 0 \(inputs \[\(2, 5, 3\)\], outputs "
                     r"\[\(2, 5, 4\)\]\)\. Defined at "
                     r".*assert_shape_test\.py"):
    _FeedForward(8, 4).init(sig)
  # Weights made without the checks reach forward, eagerly and compiled.
  wide = _FeedForward(8, 4)
  inner = tl.Serial(tl.Dense(8), tl.Relu(), tl.Dense(4))
  wide.weights = ((), inner.init(sig)[0], ())
  for mode in lt.MODES:
    with pytest.raises(tl.LayerError, match=r"dimension 'd' is 3 in input 0 "
                       r'but 4 in output 0'):
      lt.layer_outputs(wide, _ones(2, 5, 3), mode)


def test_unknown_sizes_under_tf_function_are_not_checked():
  layer = tl.AssertShape('ab,b')

  @tf.function(input_signature=[tf.TensorSpec([None, 3]),
                                tf.TensorSpec([None])])
  def run(x, v):
    return layer((x, v))
  x, v = run(_ones(2, 3), _ones(3))
  assert tuple(x.shape) == (2, 3)
  # The batch size is unknown while tracing, so the mismatch passes here.
  run(_ones(2, 3), _ones(5))
  with pytest.raises(tl.LayerError, match=r"dimension 'b' is 3 in input 0 "
                     r'but 5 in input 1'):
    layer((_ones(2, 3), _ones(5)))


def test_decorated_layer_class_checks_forward():
  @tl.assert_shape('...a->...a')
  class Twice(tl.Layer):

    def forward(self, x):
      return jnp.concatenate([x, x], axis=0)

  @tl.assert_shape('...a->...')
  class Sum(tl.Layer):

    def forward(self, x):
      return jnp.sum(x, axis=-1)

  assert tuple(Sum()(_ones(2, 3)).shape) == (2,)
  with pytest.raises(tl.LayerError,
                     match=r"AssertShape: spec '...a->...a' \(in layer "
                     r"Twice\): the dimensions under '...' are \(2,\) in "
                     r'input 0 but \(4,\) in output 0'):
    Twice()(_ones(2, 3))


def _outline(tree):
  return fastmath.nested_map(lambda w: tuple(w.shape), tree)


def test_checked_constructors_have_trax_weight_and_state_trees():
  # Outlines recorded from Trax 1.4.1: each checked constructor adds a
  # (check, layer, check) level.
  relu = tl.Relu()
  relu.init(shapes.ShapeDtype((2, 3)))
  assert relu.weights == ((), (), ()) and relu.state == ((), (), ())
  attn = tl.Attention(8, n_heads=2)
  attn.init((shapes.ShapeDtype((2, 4, 8)),
             shapes.ShapeDtype((2, 1, 1, 4), jnp.bool_)))
  dense = ((8, 8), (8,))
  assert _outline(attn.weights) == (
      (), ((), ((), ((dense, dense, dense), (), dense), ())), ())
  assert _outline(attn.state) == (
      (), ((), ((), (((), (), ()), (), ()), ())), ())
  causal = tl.CausalAttention(8, n_heads=2, max_inference_length=16,
                              mode='predict')
  causal.init(shapes.ShapeDtype((2, 1, 8)))
  heads = ((), ((), (), ()))
  assert _outline(causal.state) == ((), ((), (
      ((), (heads, heads, heads)),
      ((4, 16, 4), (4, 16, 4), ()), ((), (), ()), ()), ()), ())


def test_checks_add_no_ops_to_a_traced_graph():
  # Trax's plain Serial would split the rng three ways here.
  x = _ones(2, 3, 4)

  def n_ops(layer):
    model = tl.Serial(tl.Dense(4), layer, tl.Dense(2))
    model.init(shapes.signature(x))
    f = tf.function(lambda x, w, s, r: model.pure_fn(x, w, s, r)[0],
                    autograph=False)
    graph = f.get_concrete_function(x, model.weights, model.state,
                                    model.rng).graph
    return len(graph.get_operations())

  relu = tl.Relu()
  assert n_ops(relu) == n_ops(relu.sublayers[1])
  split = tl.SplitIntoHeads(2, merged_batch_and_head=False)
  merge = tl.MergeHeads(2, merged_batch_and_head=False)
  assert n_ops(tl.Serial(split, merge)) == n_ops(
      tl.Serial(split.sublayers[1], merge.sublayers[1]))


def test_wrapped_layer_draws_the_unwrapped_random_numbers():
  dropout = tl.Dropout(rate=0.5)
  checked = tl.AssertFunction('...->...', dropout)
  checked.init(shapes.ShapeDtype((4, 8)))
  x = _ones(4, 8)
  for mode in lt.MODES:
    bare = lt.layer_outputs(dropout, x, mode, seed=3)
    wrapped = lt.layer_outputs(checked, x, mode, seed=3)
    np.testing.assert_array_equal(wrapped, bare)


def test_shared_checked_layer_and_nested_failures():
  relu = tl.Relu()
  model = tl.Serial(tl.Dense(3), relu, tl.Dense(3), relu)
  model.init(shapes.ShapeDtype((2, 3)))
  x = jnp.asarray(np.linspace(-1, 1, 6).reshape(2, 3), jnp.float32)
  for mode in lt.MODES:
    y = lt.layer_outputs(model, x, mode)
    (w1, b1), _, (w2, b2), _ = lt.to_numpy64(model.weights)
    want = np.maximum(np.maximum(np.asarray(x) @ w1 + b1, 0) @ w2 + b2, 0)
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-6)
  # A failing check deep inside a model is reported as at the top level.
  sig = shapes.ShapeDtype((2, 5, 3))
  wide = _FeedForward(8, 4)
  inner = tl.Serial(tl.Dense(8), tl.Relu(), tl.Dense(4))
  outer = tl.Serial(tl.Dense(3), wide)
  outer.weights = (tl.Dense(3).init(sig)[0], ((), inner.init(sig)[0], ()))
  for mode in lt.MODES:
    with pytest.raises(tl.LayerError, match=r"AssertShape: spec 'bld->bld' "
                       r"\(around layer Serial\): dimension 'd' is 3 in input "
                       r'0 but 4 in output 0'):
      lt.layer_outputs(outer, _ones(2, 5, 3), mode)


def test_a_list_of_layers_is_spliced_into_the_serial_as_in_trax():
  # Trax 1.4.1 prints this and nests the weights ((), emb, (), dense, ()).
  model = tl.AssertFunction('...->...d', [
      tl.Embedding(5, 4), tl.Dropout(0.5, mode='eval'), tl.Dense(4)])
  assert str(model) == ('Serial[\n  Embedding_5_4\n  Dropout\n  Dense_4\n]')
  assert (model.n_in, model.n_out) == (1, 1)
  tokens = jnp.asarray(np.array([[1, 4, 0]], np.int32))
  model.init(shapes.signature(tokens))
  _, table, _, (w, b), _ = lt.to_numpy64(model.weights)
  assert len(model.weights) == 5 and model.weights[0] == ()
  for mode in lt.MODES:
    y = lt.layer_outputs(model, tokens, mode)
    want = table[np.asarray(tokens)] @ w + b
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-6, err_msg=mode)
  bad = tl.AssertFunction('...->...3', [tl.Embedding(5, 4)])
  with pytest.raises(tl.LayerError, match=r"AssertShape: spec '\.\.\.->\.\.\.3' "
                     r"\(around layer Serial\): dimension '3' must be 3 but "
                     r'is 4 in output 0'):
    bad.init(shapes.signature(tokens))


def test_called_directly_returns_the_very_objects_given():
  # Follows trax/layers/assert_shape.py AssertShape.forward: it returns its
  # inputs, so `layer(x)` is `x` itself, NumPy arrays included.
  x = [np.ones((10, 5, 10)), np.zeros((5, 10))]
  y = tl.AssertShape('aba,ba')(x)
  assert y is x
  v = np.ones((3,))
  assert tl.AssertShape('a')(v) is v
  with pytest.raises(tl.LayerError):
    tl.AssertShape('aa')(np.ones((2, 3)))
