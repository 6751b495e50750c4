"""sparsity.py, part 1: the causal attentions with sparse projections.

References: a NumPy float64 causal attention written here over the NumPy
projection references of sparsity_dense_test.py (with finite-difference
gradients, via tests/_layer_testing), and Trax 1.4.1 outputs recorded with
the same weights (tests/testdata/sparsity_part1/), including Trax's own
token-by-token decoding.
"""

import numpy as np
import pytest

from tests import _layer_testing as lt
from tests.layers import _attention_ref as att_ref
from tests.layers.research import sparsity_dense_test as dense
from tfnp_trax import fastmath
from tfnp_trax import layers as tl
from tfnp_trax import shapes
from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.layers.research import sparsity as sp

CASES, ARRAYS = dense.CASES, dense.ARRAYS
leaves = dense.leaves


# -- NumPy reference ---------------------------------------------------------


def causal_heads(q, k, v, n_heads):
  """Multi-head causal dot-product attention of projected q, k, v."""
  out = att_ref.dot_product_attention(
      att_ref.split_heads(q, n_heads), att_ref.split_heads(k, n_heads),
      att_ref.split_heads(v, n_heads), causal=True)
  return att_ref.merge_heads(out)


def configurable_ref(projection, n_leaves, n_heads):
  """Reference of ConfigurableAttention with four `projection`s.

  `projection(x, *leaves)` is the NumPy form of one projection layer, which
  has `n_leaves` weight leaves; the layer's leaves are those of the q, k, v
  and output projections, in that order.
  """
  def ref(x, w):
    ws = leaves(w)
    q, k, v, o = [ws[i * n_leaves:(i + 1) * n_leaves] for i in range(4)]
    y = causal_heads(projection(x, *q), projection(x, *k),
                     projection(x, *v), n_heads)
    return projection(y, *o)
  return ref


def mult_conv_ref(n_heads, sparsity, share_qk, output_layer_type,
                  v_concat_type):
  """Reference of MultiplicativeConvCausalAttention (defaults for the rest)."""
  def ref(x, w):
    ws = leaves(w)
    b, length, d = x.shape
    s = dense.factored_ref(x, *ws[:3])
    n_qk = 2 if share_qk else 4
    qk_ws, v_ws, out_ws = ws[3:3 + n_qk], ws[3 + n_qk:5 + n_qk], ws[5 + n_qk:]
    q = dense.local_conv_ref(s, *qk_ws[:2], sparsity)
    k = q if share_qk else dense.local_conv_ref(s, *qk_ws[2:], sparsity)
    if v_concat_type == 'none':
      v_in = s
    elif v_concat_type == 'original':
      v_in = np.concatenate([s, x], -1)
    else:  # 'fixed': module i of s, then module i of x.
      v_in = np.concatenate([s.reshape(b, length, sparsity, -1),
                             x.reshape(b, length, sparsity, -1)], -1)
      v_in = v_in.reshape(b, length, 2 * d)
    v = dense.local_conv_ref(v_in, *v_ws, sparsity)
    y = causal_heads(q, k, v, n_heads)
    if 'mult' in output_layer_type:
      y, out_ws = dense.factored_ref(y, *out_ws[:3]), out_ws[3:]
    if 'conv' in output_layer_type:
      y = dense.local_conv_ref(y, *out_ws, sparsity)
    return y
  return ref


def _attention_cases():
  """(layer, input, numpy_fn) for each attention; fresh layers, d=4."""
  x = dense.make_x(1, 3, 4)

  def modular(n_modules):
    return lambda x, *w: dense.locally_connected_ref(x, *w, n_modules)

  def conv(n_modules):
    return lambda x, *w: dense.local_conv_ref(x, *w, n_modules)
  return [
      (sp.ModularCausalAttention(4, n_heads=2), x,
       configurable_ref(modular(2), 2, 2)),
      (sp.ModularCausalAttention(4, n_heads=1, sparsity=4, kernel_size=3), x,
       configurable_ref(modular(4), 2, 1)),
      (sp.ConvCausalAttention(4, n_heads=2, kernel_size=3), x,
       configurable_ref(conv(2), 2, 2)),
      (sp.LowRankCausalAttention(4, n_heads=2, lowrank=2), x,
       configurable_ref(dense.lowrank_ref, 4, 2)),
      (sp.MultiplicativeCausalAttention(4, n_heads=2), x,
       configurable_ref(dense.factored_ref, 3, 2)),
      (sp.MultiplicativeModularCausalAttention(4, n_heads=2), x,
       configurable_ref(dense.modular_sparse_ref, 4, 2)),
      (sp.MultiplicativeConvCausalAttention(4, n_heads=2), x,
       mult_conv_ref(2, 2, False, 'none', 'none')),
      (sp.MultiplicativeConvCausalAttention(
          4, n_heads=2, share_qk=True, output_layer_type='multconv',
          v_concat_type='fixed', length_kernel_size=2), x,
       mult_conv_ref(2, 2, True, 'multconv', 'fixed')),
      (sp.MultiplicativeConvCausalAttention(
          4, n_heads=1, sparsity=2, output_layer_type='mult',
          v_concat_type='original'), x,
       mult_conv_ref(1, 2, False, 'mult', 'original')),
  ]


@pytest.mark.parametrize('index', range(len(_attention_cases())))
def test_attentions_match_numpy_eagerly(index):
  layer, x, ref = _attention_cases()[index]
  lt.check_layer(layer, x, ref, modes=('eager',), atol=2e-5)


def test_attentions_match_numpy_compiled():
  # One case per constructor (the shared-QK variant for the conv one): the
  # compile time of the whole set would dominate the file.
  cases = _attention_cases()
  lt.check_parallel([cases[i] for i in (0, 2, 3, 4, 5, 7)],
                    modes=('jit', 'xla'), atol=2e-5)


# -- Against Trax ------------------------------------------------------------

_ATTENTION_FIXTURES = [k for k, c in CASES.items()
                       if 'Attention' in c['ctor']]


@pytest.mark.parametrize('key', _ATTENTION_FIXTURES)
def test_attentions_match_trax(key):
  case = CASES[key]
  layer = dense.make_from_case(case, 'eval' if case.get('predict') else None)
  x = ARRAYS[f'{key}/x']
  dense.load_trax_weights(layer, key, x)
  assert [list(w.shape) for w in leaves(layer.weights)] == (
      case['weight_shapes'])
  if not case.get('predict'):  # Recorded from the 'predict'-mode layer.
    assert str(layer) == case['str']
  np.testing.assert_allclose(layer(x), ARRAYS[f'{key}/y'], rtol=1e-5,
                             atol=2e-6)


@pytest.mark.parametrize('key', ['mult_conv_att_predict', 'conv_att_predict'])
def test_predict_mode_decodes_like_trax_under_xla(key):
  case = CASES[key]
  x = ARRAYS[f'{key}/x']
  layer = dense.make_from_case(case, 'predict')
  dense.load_trax_weights(layer, key, x[:, :1])
  assert str(layer) == case['str']
  weights, state = layer.weights, layer.state
  step = lt.compile_fn(
      lambda xx, s: layer.pure_fn(xx, weights, s, fastmath.random.get_prng(0)),
      'xla')
  outs = []
  for i in range(x.shape[1]):
    y, state = step(jnp.asarray(x[:, i:i + 1]), state)
    outs.append(np.asarray(y))
  np.testing.assert_allclose(np.concatenate(outs, 1), ARRAYS[f'{key}/steps'],
                             rtol=1e-5, atol=2e-6)


# -- Causality and decoding --------------------------------------------------

_CONSTRUCTORS = [
    lambda mode: sp.ModularCausalAttention(8, n_heads=2, mode=mode),
    lambda mode: sp.ConvCausalAttention(8, n_heads=2, kernel_size=3,
                                        mode=mode),
    lambda mode: sp.LowRankCausalAttention(8, n_heads=2, lowrank=3,
                                           mode=mode),
    lambda mode: sp.MultiplicativeCausalAttention(8, n_heads=2, mode=mode),
    lambda mode: sp.MultiplicativeModularCausalAttention(8, n_heads=2,
                                                         mode=mode),
    lambda mode: sp.MultiplicativeConvCausalAttention(
        8, n_heads=2, output_layer_type='multconv', v_concat_type='fixed',
        mode=mode),
    lambda mode: sp.MultiplicativeConvCausalAttention(
        8, n_heads=2, share_qk=True, output_layer_type='conv',
        v_concat_type='original', length_kernel_size=2, mode=mode),
]


@pytest.mark.parametrize('index', range(len(_CONSTRUCTORS)))
def test_later_positions_do_not_change_earlier_outputs(index):
  x = dense.make_x(2, 5, 8)
  layer = _CONSTRUCTORS[index]('eval')
  layer.init(shapes.signature(x))
  changed = x.copy()
  changed[:, 3] += 1.0
  y, y_changed = np.asarray(layer(x)), np.asarray(layer(changed))
  np.testing.assert_array_equal(y[:, :3], y_changed[:, :3])
  assert np.abs(y[:, 3:] - y_changed[:, 3:]).max() > 1e-3


@pytest.mark.parametrize('index', range(len(_CONSTRUCTORS)))
def test_predict_one_token_at_a_time_equals_full_sequence(index):
  x = dense.make_x(2, 5, 8)
  full = _CONSTRUCTORS[index]('eval')
  full.init(shapes.signature(x))
  step = _CONSTRUCTORS[index]('predict')
  step.init(shapes.signature(x[:, :1]))
  step.weights = full.weights
  outs = [np.asarray(step(x[:, i:i + 1])) for i in range(5)]
  np.testing.assert_allclose(np.concatenate(outs, 1), full(x), rtol=1e-5,
                             atol=2e-6)


# -- Bad input ---------------------------------------------------------------


def test_sizes_that_do_not_divide_are_rejected():
  with pytest.raises(ValueError, match=r'ModularCausalAttention: d_feature '
                     r'\(8\) must be a multiple of the number of modules '
                     r'\(sparsity, default n_heads\) \(3\)'):
    sp.ModularCausalAttention(8, n_heads=2, sparsity=3)
  with pytest.raises(ValueError, match=r'ConvCausalAttention: d_feature '
                     r'\(9\) must be a multiple of n_heads \(2\)'):
    sp.ConvCausalAttention(9, n_heads=2)
  with pytest.raises(ValueError, match=r'LowRankCausalAttention: d_feature '
                     r'\(10\) must be a multiple of n_heads \(4\)'):
    sp.LowRankCausalAttention(10, n_heads=4)
  with pytest.raises(ValueError, match=r'MultiplicativeCausalAttention: '
                     r'd_feature \(6\) .* \(4\)'):
    sp.MultiplicativeCausalAttention(6, n_heads=2, sparsity=4)
  with pytest.raises(ValueError, match=r'MultiplicativeConvCausalAttention: '
                     r"output_layer_type must be one of \('none', 'mult', "
                     r"'conv', 'multconv'\), got 'dense'"):
    sp.MultiplicativeConvCausalAttention(8, output_layer_type='dense')
  with pytest.raises(ValueError, match=r'v_concat_type must be one of '
                     r".*got 'concat'"):
    sp.MultiplicativeConvCausalAttention(8, v_concat_type='concat')


def test_wrong_input_width_names_the_projection():
  layer = sp.MultiplicativeCausalAttention(8, n_heads=2)
  layer.init(shapes.ShapeDtype((1, 3, 8)))
  with pytest.raises(tl.LayerError, match='FactoredDense: input last dim 6 '
                     'does not match d_in 8'):
    layer(dense.make_x(1, 3, 6))


def test_force_no_dropout_overrides_dropout():
  x = dense.make_x(1, 4, 8)
  kwargs = dict(d_feature=8, n_heads=2, dropout=0.9)
  forced = sp.MultiplicativeConvCausalAttention(force_no_dropout=True,
                                                **kwargs)
  forced.init(shapes.signature(x))
  dropped = sp.MultiplicativeConvCausalAttention(**kwargs)
  dropped.init(shapes.signature(x))
  dropped.weights = forced.weights
  evaluated = sp.MultiplicativeConvCausalAttention(mode='eval', **kwargs)
  evaluated.init(shapes.signature(x))
  evaluated.weights = forced.weights
  want = np.asarray(evaluated(x))
  for seed in range(3):
    np.testing.assert_allclose(
        forced(x, rng=fastmath.random.get_prng(seed)), want, rtol=1e-6,
        atol=1e-6)
  # Without the override, 'train' mode drops attention weights.
  assert np.abs(dropped(x, rng=fastmath.random.get_prng(0)) - want).max() > 1e-3
