"""Attention, AttentionQKV, PureAttention and head reshaping vs NumPy."""

import numpy as np
import pytest

from tests.layers import _attention_ref as ref
from tests import _layer_testing as lt
from tfnp_trax import fastmath
from tfnp_trax import layers as tl
from tfnp_trax import shapes
from tfnp_trax.fastmath import numpy as jnp


def _padding_mask(lengths, n_keys):
  return (np.arange(n_keys)[None, :] < np.asarray(lengths)[:, None]).reshape(
      (len(lengths), 1, 1, n_keys))


def test_attention_matches_numpy_with_gradients(rng):
  x = rng.normal(size=(2, 3, 4))
  mask = _padding_mask([3, 2], 3)

  def reference(inputs, weights):
    xx, m = inputs
    return ref.multi_head(xx, xx, xx, m, weights, n_heads=2), m
  lt.check_layer(tl.Attention(4, n_heads=2), (x, mask), reference,
                 grad_rtol=1e-3, grad_atol=1e-4)


def test_attention_qkv_matches_numpy_with_gradients(rng):
  q = rng.normal(size=(2, 2, 4))
  k, v = rng.normal(size=(2, 3, 4)), rng.normal(size=(2, 3, 4))
  mask = _padding_mask([1, 3], 3)

  def reference(inputs, weights):
    qq, kk, vv, m = inputs
    return ref.multi_head(qq, kk, vv, m, weights, n_heads=2), m
  lt.check_layer(tl.AttentionQKV(4, n_heads=2), (q, k, v, mask),
                 reference, grad_rtol=1e-3, grad_atol=1e-4)


def test_pure_and_dot_product_attention_match_numpy(rng):
  q, k, v = (rng.normal(size=(1, 3, 4)) for _ in range(3))
  mask = _padding_mask([2], 3)

  def pure(inputs, _):
    qq, kk, vv, m = inputs
    heads = ref.dot_product_attention(ref.split_heads(qq, 2),
                                      ref.split_heads(kk, 2),
                                      ref.split_heads(vv, 2), m)
    return ref.merge_heads(heads), m
  lt.check_layer(tl.PureAttention(n_heads=2), (q, k, v, mask), pure)

  qh, kh, vh = (rng.normal(size=(1, 2, 3, 2)) for _ in range(3))
  lt.check_layer(
      tl.DotProductAttention(), (qh, kh, vh, mask),
      lambda inputs, _: ref.dot_product_attention(*inputs))


@pytest.mark.parametrize('merged', [True, False])
def test_split_and_merge_heads_match_numpy(merged, rng):
  x = rng.normal(size=(2, 3, 6))

  def split_ref(xx, _):
    y = ref.split_heads(xx, 3)
    return y.reshape((6, 3, 2)) if merged else y
  lt.check_layer(tl.SplitIntoHeads(3, merged_batch_and_head=merged), x,
                 split_ref, check_grad=False)
  heads = split_ref(x, None)
  lt.check_layer(
      tl.MergeHeads(3, merged_batch_and_head=merged), heads,
      lambda h, _: ref.merge_heads(h.reshape((2, 3, 3, 2))),
      check_grad=False)


def test_mask_of_wrong_shape_names_layer_and_both_shapes(rng):
  layer = tl.Attention(4, n_heads=2)
  x = jnp.asarray(rng.normal(size=(2, 3, 4)), dtype=jnp.float32)
  layer.init(shapes.signature((x, jnp.ones((2, 1, 1, 3), dtype=bool))))
  bad_mask = jnp.ones((2, 1, 1, 5), dtype=bool)
  # As in Trax, Attention's shape check ('bld,b11l->bld,b11l') reports it.
  with pytest.raises(tl.LayerError,
                     match=r"AssertShape: spec 'bld,b11l->bld,b11l' \(around "
                     r"layer Serial\): dimension 'l' is 3 in input 0 but 5 in "
                     r'input 1'):
    layer((x, bad_mask))
  # Unchecked layers report it in their own words.
  heads = jnp.ones((2, 2, 3, 2), dtype=jnp.float32)
  with pytest.raises(tl.LayerError,
                     match=r'DotProductAttention: mask shape \(2, 1, 1, 5\) '
                     r'does not broadcast to the attention logits shape '
                     r'\(2, 2, 3, 3\)'):
    tl.DotProductAttention(mode='eval')((heads, heads, heads, bad_mask))


def test_bad_heads_and_unsupported_options_are_named(rng):
  x = jnp.asarray(rng.normal(size=(1, 2, 6)), dtype=jnp.float32)
  with pytest.raises(tl.LayerError,
                     match='SplitIntoHeads: d_feature 6 is not a multiple of '
                     'n_heads 4'):
    tl.SplitIntoHeads(4)(x)
  with pytest.raises(ValueError,
                     match="AttentionQKV: q_sparsity=0.5; expected None"):
    tl.AttentionQKV(8, q_sparsity=0.5)
  with pytest.raises(ValueError, match="PureAttention: mode must be one of"):
    tl.PureAttention(mode='training')


def test_noop_sparsity_skips_projections(rng):
  q, k, v = (rng.normal(size=(1, 2, 4)) for _ in range(3))
  mask = np.ones((1, 1, 1, 2), bool)
  layer = tl.AttentionQKV(4, n_heads=1, q_sparsity='noop',
                          result_sparsity='noop')

  def reference(inputs, weights):
    qq, kk, vv, m = inputs
    wk, bk, wv, bv = fastmath.tree_leaves(weights)
    return ref.dot_product_attention(qq, kk @ wk + bk, vv @ wv + bv,
                                     m[:, 0]), m
  lt.check_layer(layer, (q, k, v, mask), reference, modes=('eager',),
                 check_grad=False)


def test_cached_kv_in_predict_reuses_first_keys_and_values(rng):
  q, k, v = (jnp.asarray(rng.normal(size=(1, 2, 4)), dtype=jnp.float32)
             for _ in range(3))
  mask = jnp.ones((1, 1, 1, 2), dtype=bool)
  layer = tl.AttentionQKV(4, n_heads=2, mode='predict',
                          cache_KV_in_predict=True)
  layer.init(shapes.signature((q, k, v, mask)))
  first, _ = layer((q, k, v, mask))
  again, _ = layer((q, k * 3.0, v - 1.0, mask))  # Ignored: cached.
  np.testing.assert_allclose(np.asarray(again), np.asarray(first), rtol=1e-6)


def test_bfloat16_activations_with_float32_softmax(rng):
  x = rng.normal(size=(2, 3, 4))
  mask = _padding_mask([3, 1], 3)
  drop_mask = tl.Select([0], n_in=2)
  lt.check_bfloat16(tl.Serial(tl.Attention(4, n_heads=2), drop_mask),
                    (x, mask))
  layer = tl.DotProductAttention(mode='viz')
  qkv = [jnp.asarray(rng.normal(size=(2, 2, 3, 2))).astype('bfloat16')
         for _ in range(3)]
  out = layer(tuple(qkv) + (jnp.asarray(mask),))
  assert out.dtype.name == 'bfloat16'
  assert layer.state.dtype.name == 'float32'  # The attention strengths.
  np.testing.assert_allclose(np.asarray(layer.state).sum(-1), 1.0, rtol=1e-6)


def test_attention_dropout_only_in_train_mode(rng):
  q, k = (jnp.asarray(rng.normal(size=(1, 1, 400, 4)), dtype=jnp.float32)
          for _ in range(2))
  v = jnp.ones((1, 1, 400, 1), dtype=jnp.float32)
  mask = jnp.ones((1, 1, 1, 400), dtype=bool)
  key = fastmath.random.get_prng(3)
  evaluated = tl.DotProductAttention(dropout=0.5, mode='eval')(
      (q, k, v, mask), rng=key)
  np.testing.assert_allclose(np.asarray(evaluated), 1.0, rtol=1e-5)
  trained = np.asarray(tl.DotProductAttention(dropout=0.5, mode='train')(
      (q, k, v, mask), rng=key))
  # Each output is (kept strengths) / 0.5: no longer 1, but 1 on average.
  assert np.abs(trained - 1.0).max() > 0.1
  assert abs(trained.mean() - 1.0) < 0.1
