"""Tests of relative attention (tfnp_trax/layers/research/rel_attention.py).

Three kinds of checks: a float64 NumPy reference written from the
definition (relative distance = key position - query position, with pooled
positions spaced by the funnel factor), a case small enough to do by hand,
and outputs recorded from Trax 1.4.1 given the same weights.
"""

import math

import numpy as np
import pytest

from tests import _layer_testing as lt
from tests.layers.research import _rel_fixtures as fx
from tfnp_trax import fastmath
from tfnp_trax import layers as tl
from tfnp_trax import shapes
from tfnp_trax.layers.research import rel_attention as ra


def _biases():
  return ra.get_rel_att_inputs(8, 2)


def _lm(pooling):
  return lambda: ra.RelativeAttentionLMLayer(8, *_biases(), pooling,
                                             n_heads=2, mode='eval')


# The same constructors as tests/testdata/rel_attention/make_fixtures.py.
CASES = {
    'pos_emb_eq': lambda: ra.PositionalEmbeddings(8, False, 1),
    'pos_emb_eq_pool2': lambda: ra.PositionalEmbeddings(8, False, 2),
    'pos_emb_down': lambda: ra.PositionalEmbeddings(8, False, 2),
    'pos_emb_up': lambda: ra.PositionalEmbeddings(8, False, 2),
    'mask_eq': ra.CreateAttentionMaskLayer,
    'mask_down': ra.CreateAttentionMaskLayer,
    'mask_up': ra.CreateAttentionMaskLayer,
    'core_eq_full': lambda: ra.RelativeAttention(False, 2, mode='eval'),
    'core_eq_cls': lambda: ra.RelativeAttention(True, 2, mode='eval'),
    'core_down': lambda: ra.RelativeAttention(False, 2, mode='eval'),
    'core_up': lambda: ra.RelativeAttention(False, 2, mode='eval'),
    'core_up_cls': lambda: ra.RelativeAttention(True, 2, mode='eval'),
    'lm_eq': _lm(1),
    'lm_eq_pool2': _lm(2),
    'lm_down': _lm(2),
    'lm_up': _lm(2),
    'layer_masked': lambda: ra.RelativeAttentionLayer(
        8, *_biases(), 1, False, n_heads=2, mode='eval'),
    'wrapper': lambda: ra.RelativeAttentionWrapper(
        8, 2, mode='eval', context_bias_layer=_biases()[0],
        location_bias_layer=_biases()[1], total_pooling=1),
    'shift_right_cls_int': lambda: ra.ShiftRightCls(5),
    'shift_right_cls_float': lambda: ra.ShiftRightCls(3),
}
# Cases also run under tf.function and XLA: one per code path of the shift.
COMPILED = ('core_eq_full', 'core_down', 'core_up_cls', 'lm_up', 'wrapper')


@pytest.mark.parametrize('name', sorted(CASES))
def test_structure_and_outputs_match_trax(name):
  fx.assert_structure_matches(name, CASES[name]())
  modes = lt.MODES if name in COMPILED else ('eager',)
  fx.assert_outputs_match(name, CASES[name](), modes=modes)


# -- NumPy float64 reference ---------------------------------------------------


def _funnel(q_len, k_len):
  """(factor, key position of key j, query position of query i, visible)."""
  if q_len == k_len:
    return 1, (lambda j: j), (lambda i: i), (lambda i, j: j <= i)
  if q_len < k_len:  # Pooled queries: query i starts at key f * i.
    f = k_len // q_len
    return f, (lambda j: j), (lambda i: f * i), (lambda i, j: j // f <= i)
  f = q_len // k_len  # Upsampled queries: key j sits at query f * j.
  return f, (lambda j: f * j), (lambda i: i), (lambda i, j: j <= i // f)


def _sinusoid(position, d):
  inv_freq = 1.0 / 10000.0 ** (np.arange(0, d, 2) / d)
  return np.concatenate([np.sin(position * inv_freq),
                         np.cos(position * inv_freq)])


def _np_lm_layer(x, w, pooling, n_heads):
  """RelativeAttentionLMLayer from its definition, one score at a time."""
  q_in, k_in, v_in = x
  (w_pe, b_pe, w_q, b_q, w_k, b_k, w_v, b_v, ctx, loc, w_o,
   b_o) = lt.leaves(w)
  q, k, v = q_in @ w_q + b_q, k_in @ w_k + b_k, v_in @ w_v + b_v
  batch, q_len, d = q.shape
  k_len, d_head = k.shape[1], d // n_heads
  factor, key_pos, query_pos, visible = _funnel(q_len, k_len)
  heads = lambda a: a.reshape(a.shape[0], a.shape[1], n_heads, d_head)
  q, k, v = heads(q), heads(k), heads(v)
  ctx, loc = ctx.reshape(n_heads, d_head), loc.reshape(n_heads, d_head)
  # Distances count tokens: pooled keys are `pooling` tokens apart, while
  # upsampled distances are in query units (as Trax defines them).
  scale = 1 if q_len > k_len else pooling
  out = np.zeros((batch, q_len, n_heads, d_head))
  for b in range(batch):
    for h in range(n_heads):
      for i in range(q_len):
        scores = np.full(k_len, -np.inf)
        for j in range(k_len):
          if not visible(i, j):
            continue
          dist = (key_pos(j) - query_pos(i)) * scale
          r = (_sinusoid(dist, d) @ w_pe + b_pe).reshape(n_heads, d_head)
          scores[j] = ((q[b, i, h] + ctx[h]) @ k[b, j, h] +
                       (q[b, i, h] + loc[h]) @ r[h]) / math.sqrt(d_head)
        p = np.exp(scores - scores.max())
        out[b, i, h] = (p / p.sum()) @ v[b, :, h]
  return out.reshape(batch, q_len, d) @ w_o + b_o


@pytest.mark.parametrize('q_len,k_len,pooling', [(3, 3, 1), (2, 4, 2),
                                                 (4, 2, 2)])
def test_lm_layer_matches_numpy_with_gradients(q_len, k_len, pooling):
  rng = np.random.default_rng(q_len * 10 + k_len)
  x = tuple(lt.random(rng, 1, n, 4) for n in (q_len, k_len, k_len))
  layer = ra.RelativeAttentionLMLayer(4, *ra.get_rel_att_inputs(4, 2),
                                      pooling, n_heads=2, mode='eval')
  # Larger biases than the 1e-6 init, so that they matter in the check.
  lt.init_layer(layer, lt.to_tensors(x))
  w = [np.asarray(a, np.float64) for a in lt.leaves(layer.weights)]
  w[8] = lt.random(rng, 1, 2, 1, 2)
  w[9] = lt.random(rng, 1, 2, 1, 2)
  w_tree, _ = fastmath.tree_unflatten(w, layer.weights)
  lt.check_layer(layer, x, lambda xx, ww: _np_lm_layer(xx, ww, pooling, 2),
                 weights=w_tree, rtol=1e-4, atol=1e-5)


def test_hand_computed_case():
  # One head, d=2, two positions, zero context bias. pos_emb row 0 stands
  # for distance -1 and row 1 for distance 0. Query 1 plus the location
  # bias (1, 0) scores 1 against row 0 (key 0 is one step back), which
  # exactly makes up for its content score q1.k0 = 0 < q1.k1 = 1, so it
  # attends evenly: out1 = (v0 + v1) / 2. Query 0 sees only key 0.
  loc = np.array([1., 0.]).reshape(1, 1, 1, 2)
  ctx = np.zeros((1, 1, 1, 2))
  pos_emb = np.array([[1., 0.], [0., 0.]])
  q = k = np.array([[[1., 0.], [0., 1.]]])
  v = np.array([[[1., 2.], [3., 4.]]])
  mask = np.tril(np.ones((2, 2), bool))[None, None]
  layer = ra.RelativeAttention(False, n_heads=1, mode='eval')
  args = lt.to_tensors((loc, ctx, pos_emb, q, k, v, mask))
  lt.init_layer(layer, args)
  for mode in lt.MODES:
    (out, mask_out), _ = lt.run_layer(layer, args, mode)
    np.testing.assert_allclose(out, [[[1., 2.], [2., 3.]]], atol=1e-6)
    np.testing.assert_array_equal(mask_out, mask)


def test_viz_mode_keeps_attention_weights_as_state():
  x = fx.inputs('core_down')
  layer = ra.RelativeAttention(False, 2, mode='viz')
  lt.init_layer(layer, x)
  _, dots = lt.run_layer(layer, x, 'eager')
  dots = np.asarray(dots)
  assert dots.shape == (2, 2, 2, 6)
  np.testing.assert_allclose(dots.sum(-1), 1.0, atol=1e-6)
  assert np.all(dots[np.broadcast_to(~x[-1], dots.shape)] < 1e-30)


def test_train_mode_dropout_scales_kept_weights():
  x = fx.inputs('core_eq_full')
  evals = ra.RelativeAttention(False, 2, mode='eval')
  lt.init_layer(evals, x)
  want = np.asarray(lt.run_layer(evals, x, 'eager')[0][0])
  layer = ra.RelativeAttention(False, 2, dropout=0.5, mode='train')
  lt.init_layer(layer, x)
  outs = [np.asarray(lt.run_layer(layer, x, 'eager', rng=fastmath.random
                                  .get_prng(s))[0][0]) for s in (0, 0, 1)]
  np.testing.assert_array_equal(outs[0], outs[1])  # Same key, same mask.
  assert not np.allclose(outs[0], want)
  assert not np.allclose(outs[0], outs[2])


# -- Pieces ------------------------------------------------------------------


def test_calc_funnel_ratio():
  assert ra.calc_funnel_ratio(6, 2) == (3, False)
  assert ra.calc_funnel_ratio(2, 6) == (3, True)
  assert ra.calc_funnel_ratio(4, 4) == (1, False)
  with pytest.raises(ValueError, match=r'calc_funnel_ratio: the longer of '
                     r'keys_len \(5\) and queries_len \(2\) must be'):
    ra.calc_funnel_ratio(5, 2)


# pylint: disable=protected-access
def test_fast_matrix_shift_private_name_by_hand():
  # Trax's layers/research/rel_attention.py `_fast_matrix_shift` (its own
  # rel_attention_test calls the private name): row i of a square score
  # matrix moves right by (rows - 1 - i), zeros entering from the left and
  # the overflow wrapping into the next row.
  x = np.tile(np.array([-3., -2., -1., 0.], np.float32), (1, 1, 4, 1))
  y = ra._fast_matrix_shift(x)
  assert np.asarray(y).dtype == np.float32
  np.testing.assert_array_equal(
      np.asarray(y)[0, 0], [[0., 0., -3., -2.], [-1., 0., 0., -3.],
                            [-2., -1., 0., 0.], [-3., -2., -1., 0.]])
  # Pooled keys (factor 2), by hand: rows 1..7 and 8..14 with two zeros
  # prepended, read as (9, 2), the first two rows dropped, read back as
  # (2, 7): [3..7, 0, 0] and [8..14]; columns 1 to 4 are kept.
  x = np.arange(1., 15., dtype=np.float32).reshape((1, 1, 2, 7))
  y = np.asarray(ra._fast_matrix_shift(x, 2, False))
  np.testing.assert_array_equal(y[0, 0], [[4., 5., 6., 7.],
                                          [9., 10., 11., 12.]])


@pytest.mark.parametrize('q_len,k_len,pooling,positions', [
    (3, 3, 2, [-4, -2, 0]),
    (2, 4, 3, [-9, -6, -3, 0, 3, 6, 9]),
    (4, 2, 3, [-3, -2, -1, 0, 1, 2, 3]),
])
def test_positional_embeddings_are_sinusoids_of_distances(q_len, k_len,
                                                          pooling, positions):
  layer = ra.PositionalEmbeddings(6, False, pooling)
  x = (np.zeros((1, q_len, 6), np.float32), np.zeros((1, k_len, 6),
                                                     np.float32))
  lt.init_layer(layer, x)
  want = np.stack([_sinusoid(p, 6) for p in positions])
  np.testing.assert_allclose(layer(x), want, atol=1e-6)


def test_attention_masks_by_hand():
  layer = ra.CreateAttentionMaskLayer()

  def mask(q_len, k_len):
    x = tuple(np.zeros((2, n, 4), np.float32) for n in (q_len, k_len, k_len))
    lt.init_layer(layer, x)
    out = np.asarray(layer(x)[3])
    assert out.shape == (2, 1, q_len, k_len)
    return out[1, 0].astype(int)
  np.testing.assert_array_equal(mask(3, 3), [[1, 0, 0], [1, 1, 0],
                                             [1, 1, 1]])
  np.testing.assert_array_equal(mask(2, 4), [[1, 1, 0, 0], [1, 1, 1, 1]])
  np.testing.assert_array_equal(mask(4, 2), [[1, 0], [1, 0], [1, 1],
                                             [1, 1]])


def test_shift_right_cls_by_hand():
  layer = ra.ShiftRightCls(7)
  x = np.array([[1, 2, 3], [4, 5, 6]], np.int32)
  lt.init_layer(layer, x)
  np.testing.assert_array_equal(layer(x), [[7, 1, 2], [7, 4, 5]])


def test_bias_layers_are_shared_once_in_the_weights():
  ctx, loc = ra.get_rel_att_inputs(8, 2)
  layer = tl.Serial(ra.RelativeAttentionWrapper(8, 2, mode='eval',
                                                context_bias_layer=ctx,
                                                location_bias_layer=loc,
                                                total_pooling=1),
                    ra.RelativeAttentionWrapper(8, 2, mode='eval',
                                                context_bias_layer=ctx,
                                                location_bias_layer=loc,
                                                total_pooling=1))
  layer.init(shapes.ShapeDtype((1, 3, 8)))
  bias_shapes = [tuple(w.shape) for w in fastmath.tree_flatten(layer.weights)
                 if tuple(w.shape) == (1, 2, 1, 4)]
  assert len(bias_shapes) == 2  # One context and one location bias.


def test_bad_arguments_are_named():
  with pytest.raises(ValueError, match=r'get_rel_att_inputs: d_model \(6\) '
                     r'must be even and a multiple of n_heads \(4\)'):
    ra.get_rel_att_inputs(6, 4)
  with pytest.raises(ValueError, match=r'RelativeAttentionWrapper: needs the '
                     r'shared context_bias_layer.*get_rel_att_inputs'):
    ra.RelativeAttentionWrapper(8, 2)
  layer = ra.RelativeAttentionLayer(8, *_biases(), 1, True, n_heads=2)
  x = fx.inputs('layer_masked')
  with pytest.raises(tl.LayerError, match=r'PositionalEmbeddings: '
                     r'separate_cls=True is not supported'):
    layer.init(shapes.signature(x))
  layer = ra.RelativeAttentionWrapper(8, 2, context_bias_layer=_biases()[0],
                                      location_bias_layer=_biases()[1])
  with pytest.raises(tl.LayerError, match=r'PositionalEmbeddings: '
                     r'total_kv_pooling \(total_pooling\) is None'):
    layer.init(shapes.ShapeDtype((1, 3, 8)))
  x = fx.inputs('core_down')
  core = ra.RelativeAttention(False, n_heads=3)
  lt.init_layer(core, x)
  with pytest.raises(tl.LayerError, match=r'RelativeAttention: d_feature '
                     r'\(8\) is not a multiple of n_heads \(3\)'):
    core(x)
  core = ra.RelativeAttention(False, n_heads=2, dropout=1.0)
  lt.init_layer(core, x)
  with pytest.raises(tl.LayerError, match=r'RelativeAttention: dropout rate '
                     r'must be lower than 1, got 1.0'):
    core(x)
