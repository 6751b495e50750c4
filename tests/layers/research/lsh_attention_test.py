"""LSH attention: hashing, LSHSelfAttention, PureLSH and its wrappers, LSHFF.

References are NumPy float64 implementations written from the definitions
(tests/layers/research/_efficient_ref.py); bucket ids are pinned literally.
"""

import numpy as np
import pytest

from tests._layer_testing import MODES
from tests._layer_testing import compile_fn
from tests.layers.research import _efficient_ref as ref
from tfnp_trax import fastmath
from tfnp_trax import layers as tl
from tfnp_trax import shapes
from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.layers.research import efficient_attention as ea
from tfnp_trax.layers.research import _attention_functions as fns

KEY = fastmath.random.get_prng(0)


def _init(layer, inputs, seed=1):
  layer.init(shapes.signature(inputs), rng=fastmath.random.get_prng(seed))
  return layer


def _x(shape, seed=0):
  return np.random.RandomState(seed).normal(size=shape).astype(np.float32)


def _mask():
  mask = np.ones((2, 16), bool)
  mask[1, 10:] = False  # Trax's scheme cannot mask positions 0 and 1.
  return mask


# -- Hashing ---------------------------------------------------------------

# hash_vecs(arange-based vectors, 4 buckets, 2 rounds, get_prng(0)).
PINNED_BUCKETS = [[0, 3, 2, 1, 0, 0], [2, 1, 3, 0, 3, 2]]
PINNED_FACTORED = [[6, 1, 3, 0, 4, 6], [6, 4, 2, 7, 6, 6]]


def _vecs():
  return (np.arange(24.0, dtype=np.float32).reshape(6, 4) % 5) - 2.0


@pytest.mark.parametrize('mode', MODES)
def test_bucket_ids_are_pinned_in_every_mode(mode):
  def f(vecs, key):
    return (ea.hash_vecs(vecs, 4, 2, key)[0],
            ea.hash_vecs(vecs, [2, 4], 2, key)[0])
  plain, factored = compile_fn(f, mode)(_vecs(), KEY)
  np.testing.assert_array_equal(plain, PINNED_BUCKETS)
  np.testing.assert_array_equal(factored, PINNED_FACTORED)


def test_buckets_are_argmax_of_signed_rotations():
  vecs = _x((9, 5))
  rot = np.asarray(fns.random_rotations(KEY, 5, 3, [2, 4]), np.float64)
  assert rot.shape == (5, 3, 3)
  assert abs(rot.mean()) < 0.6 and 0.3 < rot.std() < 2.0  # Normal draws.
  r = np.einsum('tf,fhb->htb', vecs.astype(np.float64), rot)
  first = np.argmax(np.concatenate([r[..., :1], -r[..., :1]], -1), -1)
  second = np.argmax(np.concatenate([r[..., 1:], -r[..., 1:]], -1), -1)
  got, n = ea.hash_vecs(vecs, [2, 4], 3, KEY)
  assert n == 8
  np.testing.assert_array_equal(got, first + 2 * second)


def test_hash_vecs_rejects_odd_buckets():
  with pytest.raises(ValueError, match=r'hash_vecs: n_buckets must be an even '
                     r'int >= 2 or a list of such factors.*got \[2, 3\]'):
    ea.hash_vecs(_vecs(), [2, 3], 1, KEY)


# -- LSHSelfAttention --------------------------------------------------------


def _run64(layer, x, mask=None):
  """Runs `layer` in float64 (tensors keep it); returns output and state.

  float64 keeps the -1e5 self-attention penalty exact: in float32, a query
  that sees only itself mixes its rounds with ~0.5% error (as in Trax).
  """
  w64 = fastmath.nested_map(lambda w: jnp.asarray(w, jnp.float64),
                            layer.weights)
  x64 = jnp.asarray(x, jnp.float64)
  y, state = layer.pure_fn(x64 if mask is None else (x64, mask), w64,
                           layer.state, KEY)
  assert y.dtype == jnp.float64
  return np.asarray(y), state


def _lsh_reference(layer, x, buckets, mask=None, **kw):
  """NumPy LSH attention of x with the given per-(example, head) buckets."""
  heads = ref.heads_of(layer.weights, share_qk=True)
  out = np.zeros(x.shape)
  for b in range(x.shape[0]):
    for h, (w_q, _, w_v, w_o) in enumerate(heads):
      xb = x[b].astype(np.float64)
      o = ref.lsh_head(xb @ w_q, xb @ w_v, buckets[b * len(heads) + h],
                       mask=None if mask is None else mask[b], **kw)
      out[b] += o @ w_o
  return out


@pytest.mark.parametrize('kw', [
    dict(causal=True, n_hashes=2, n_buckets=4, chunk_len=4),
    dict(masked=True, n_hashes=2, n_buckets=[2, 2], chunk_len=4,
         n_chunks_after=1),
])
def test_lsh_attention_matches_numpy_given_buckets(kw):
  x = _x((2, 16, 6))
  mask = _mask() if kw.get('masked') else None
  inputs = (x, mask) if kw.get('masked') else x
  layer = _init(ea.LSHSelfAttention(n_heads=2, d_qk=3, d_v=4, mode='eval',
                                    **kw), inputs)
  y, state = _run64(layer, x, mask)
  buckets = np.asarray(state[0])
  rounds = buckets.reshape(4, 2, 16)
  assert len(np.unique(rounds[0, 0])) > 1  # A real partition.
  if mask is not None:
    assert np.all(rounds[3, :, 10:] == [[4], [9]])  # The padding bucket.
  want = _lsh_reference(
      layer, x, buckets, mask, n_hashes=2, chunk_len=4, n_before=1,
      n_after=kw.get('n_chunks_after', 0), causal=kw.get('causal', False))
  np.testing.assert_allclose(y, want, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize('n_hashes', [1, 2])
def test_one_chunk_of_lsh_is_exact_causal_attention(n_hashes):
  x = _x((2, 8, 6))
  layer = _init(ea.LSHSelfAttention(n_heads=2, d_qk=4, d_v=4, causal=True,
                                    chunk_len=8, n_chunks_before=0,
                                    n_hashes=n_hashes, n_buckets=4), x)
  # Each hashing round is one chunk: all positions, whatever the buckets.
  want = ref.self_attention(x.astype(np.float64),
                            ref.heads_of(layer.weights, share_qk=True),
                            causal=True, share_qk=True)
  np.testing.assert_allclose(_run64(layer, x)[0], want, rtol=1e-9,
                             atol=1e-9)
  if n_hashes == 1:  # No round mixing: float32 is exact too.
    np.testing.assert_allclose(layer(x), want, rtol=2e-5, atol=2e-5)


def test_predict_prefix_of_part_of_a_chunk_is_causal_attention():
  # A prefix in a 12-slot cache is padded to one whole chunk of 16 (Trax
  # pads it, trax/layers/research/efficient_attention.py
  # LSHSelfAttention._incremental_forward_unbatched); one chunk with no
  # earlier chunks is exact causal attention over the prefix.
  x = _x((2, 6, 6))
  layer = _init(ea.LSHSelfAttention(n_heads=2, d_qk=4, d_v=4, causal=True,
                                    chunk_len=16, n_chunks_before=0,
                                    n_buckets=[32, 32], mode='predict',
                                    predict_mem_len=12, predict_drop_len=6),
                x[:, :1])
  y, state = layer.pure_fn(x, layer.weights, layer.state, KEY)
  want = ref.self_attention(x.astype(np.float64),
                            ref.heads_of(layer.weights, share_qk=True),
                            causal=True, share_qk=True)
  np.testing.assert_allclose(y, want, rtol=2e-5, atol=2e-5)
  assert int(state[0]) == 6  # Six tokens cached.


def _grads(layer, inputs, ct, mode='eager'):
  def loss(xx, ww):
    full = (xx,) + tuple(inputs[1:]) if isinstance(inputs, tuple) else xx
    y, s = layer.pure_fn(full, ww, layer.state, KEY)
    return jnp.sum(y * ct), (y, s)
  x = inputs[0] if isinstance(inputs, tuple) else inputs
  fn = compile_fn(fastmath.value_and_grad(loss, argnums=(0, 1),
                                          has_aux=True), mode)
  (_, (y, s)), g = fn(x, layer.weights)
  return np.asarray(y), s, g


@pytest.mark.parametrize('kw,mode', [
    (dict(causal=True, n_hashes=2, n_buckets=4), 'eager'),
    (dict(masked=True, n_hashes=3, n_buckets=[2, 2], attention_dropout=0.2,
          output_dropout=0.1), 'eager'),
    (dict(causal=True, n_hashes=2, n_buckets=4), 'xla'),
])
def test_reference_code_and_efficient_path_agree(kw, mode):
  x, ct = _x((2, 16, 6)), _x((2, 16, 6), seed=2)
  inputs = (x, _mask()) if kw.get('masked') else x
  results = []
  for use_ref in (True, False):
    layer = _init(ea.LSHSelfAttention(n_heads=2, d_qk=4, d_v=4, chunk_len=4,
                                      use_reference_code=use_ref, **kw),
                  inputs)
    # The reference runs eagerly; the efficient path in `mode`. Buckets do
    # not depend on the mode; dropout masks would (XLA's float stream).
    results.append(_grads(layer, inputs, ct, 'eager' if use_ref else mode))
  (y0, s0, g0), (y1, s1, g1) = results
  np.testing.assert_array_equal(s0[0], s1[0])  # Same buckets.
  np.testing.assert_array_equal(s0[1], s1[1])  # Same advanced hash keys.
  np.testing.assert_allclose(y1, y0, rtol=1e-5, atol=1e-5)
  for got, want in zip(fastmath.tree_leaves(g1), fastmath.tree_leaves(g0)):
    assert np.all(np.isfinite(got)) and np.abs(got).max() > 0
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_state_advances_hash_key_and_backward_reuses_buckets():
  x = _x((1, 16, 6))
  layer = _init(ea.LSHSelfAttention(n_heads=1, d_qk=4, d_v=4, chunk_len=4,
                                    n_buckets=4, causal=True), x)
  layer(x)
  first = np.asarray(layer.state[0])
  y = layer(x)
  assert not np.array_equal(first, np.asarray(layer.state[0]))
  # Without a state update, attention uses the stored buckets: the output
  # of the pass that stored them (what a reversible backward pass needs).
  y2, no_state, _, _ = layer.forward_and_or_backward(
      x, layer.weights, layer.state, layer.rng, update_state=False)
  assert no_state is None
  np.testing.assert_allclose(y2, y, rtol=1e-6)
  y3, _, _, _ = layer.forward_and_or_backward(
      x, layer.weights, (jnp.asarray(first),) + layer.state[1:], layer.rng,
      update_state=False)
  assert np.abs(np.asarray(y3) - np.asarray(y)).max() > 1e-3


@pytest.mark.parametrize('prefix', [0, 6])
def test_lsh_predict_equals_full_causal_forward(prefix):
  x = _x((2, 16, 6))
  kw = dict(n_heads=2, d_qk=4, d_v=4, causal=True, chunk_len=8,
            n_chunks_before=1, n_buckets=2, predict_mem_len=16,
            predict_drop_len=8)
  full = _init(ea.LSHSelfAttention(mode='eval', **kw), x)
  want = ref.self_attention(x.astype(np.float64),
                            ref.heads_of(full.weights, share_qk=True),
                            causal=True, share_qk=True)
  np.testing.assert_allclose(full(x), want, rtol=2e-5, atol=2e-5)
  fast = _init(ea.LSHSelfAttention(mode='predict', **kw), x[:, :1])
  step = compile_fn(lambda xx, s: fast.pure_fn(xx, full.weights, s, KEY),
                    'jit')
  state, outs = fast.state, []
  if prefix:
    y, state = step(x[:, :prefix], state)
    outs.append(np.asarray(y))
  for t in range(prefix, 16):
    y, state = step(x[:, t:t + 1], state)
    outs.append(np.asarray(y))
  # A window of n_hashes * chunk_len * 2 = 16 cached positions: every past
  # position is visible, so decoding is exact causal attention.
  np.testing.assert_allclose(np.concatenate(outs, 1), want, rtol=2e-5,
                             atol=2e-5)
  assert int(state[0]) == 16 and int(np.asarray(state[2][1])[0]) == 16


def test_lsh_decoding_over_a_rolling_cache_equals_windowed_attention():
  # The cache (8 positions, dropping 4 when full) is smaller than the
  # sequence; the LSH window (1 * 4 * 2 = 8) covers the whole cache, so
  # each step attends to every cached earlier position, as SelfAttention
  # with shared keys does over the same cache.
  x = _x((1, 14, 6))
  cache = dict(n_heads=2, d_qk=4, d_v=4, causal=True, predict_mem_len=8,
               predict_drop_len=4, mode='predict')
  lsh = _init(ea.LSHSelfAttention(chunk_len=4, n_buckets=4, **cache),
              x[:, :1])
  dense = _init(ea.SelfAttention(share_qk=True, **cache), x[:, :1])
  outs = []
  for layer in (lsh, dense):
    state, ys = layer.state, []
    for t in range(14):
      y, state = layer.pure_fn(x[:, t:t + 1], lsh.weights, state, KEY)
      ys.append(np.asarray(y))
    outs.append(np.concatenate(ys, 1))
  np.testing.assert_allclose(outs[0], outs[1], rtol=2e-5, atol=2e-5)
  assert int(state[0]) == 6  # Two drops of 4 leave tokens 8..13 cached.


def test_lsh_bad_inputs_name_layer_and_numbers():
  layer = _init(ea.LSHSelfAttention(n_heads=1, d_qk=2, d_v=2, chunk_len=4,
                                    n_buckets=16), _x((1, 32, 3)))
  with pytest.raises(tl.LayerError, match=r'LSHSelfAttention: n_hashes \* '
                     r'length = 1 \* 18 is not a multiple of chunk_len 4'):
    layer(_x((1, 18, 3)))
  with pytest.raises(ValueError, match='n_buckets must be an even int'):
    ea.LSHSelfAttention(n_buckets=5)
  with pytest.raises(tl.LayerError, match=r'PureLSHSelfAttention: expects 2 '
                     r'inputs'):
    ea.PureLSHSelfAttention().init(shapes.signature(_x((2, 8, 4))))
  with pytest.raises(tl.LayerError, match=r'PureLSHSelfAttention: qk has 3 '
                     r'rows, not a multiple of n_heads=2'):
    ea.PureLSHSelfAttention().init(shapes.signature((_x((3, 8, 4)),) * 2))


def test_more_buckets_than_positions_as_trax():
  # Trax's reformer_copy.gin hashes 32-token sequences into [32, 32] = 1024
  # buckets (max_length_for_buckets=1024): Trax checks neither n_buckets
  # against the length nor the length against max_length_for_buckets
  # (follows trax/layers/research/efficient_attention.py
  # LSHSelfAttention.hash_vectors / forward_unbatched).
  x = _x((2, 8, 6))
  layer = _init(ea.LSHSelfAttention(n_heads=2, d_qk=3, d_v=4, causal=True,
                                    chunk_len=4, n_hashes=2,
                                    n_buckets=[32, 32], mode='eval',
                                    max_length_for_buckets=1024), x)
  assert layer.state[0].shape == (4, 2 * 1024)
  y, state = _run64(layer, x)
  buckets = np.asarray(state[0])
  assert buckets.shape == (4, 2 * 1024)
  assert not buckets[:, 16:].any()  # Padded to max_length_for_buckets.
  rounds = buckets[:, :16].reshape(4, 2, 8)
  assert rounds.max() >= 32 and rounds[:, 0].max() < 1024  # Factored ids.
  assert np.all(rounds[:, 1] >= 1024) and np.all(rounds[:, 1] < 2048)
  want = _lsh_reference(layer, x, buckets[:, :16], n_hashes=2, chunk_len=4,
                        n_before=1, n_after=0, causal=True)
  np.testing.assert_allclose(y, want, rtol=1e-9, atol=1e-9)
  # A sequence longer than max_length_for_buckets stores all its buckets.
  short = _init(ea.LSHSelfAttention(n_heads=1, d_qk=2, d_v=2, chunk_len=4,
                                    n_buckets=4, max_length_for_buckets=8),
                _x((1, 8, 3)))
  _, state = short.pure_fn(_x((1, 16, 3)), short.weights, short.state, KEY)
  assert state[0].shape == (1, 16)


def test_lsh_names_weights_and_state_follow_trax():
  x = _x((2, 16, 6))
  layer = _init(ea.LSHSelfAttention(n_heads=3, d_qk=4, d_v=5, chunk_len=4,
                                    max_length_for_buckets=32), x)
  assert str(layer) == 'LSHSelfAttention'
  assert [tuple(w.shape) for w in layer.weights] == [(3, 6, 4), (3, 6, 5),
                                                     (3, 5, 6)]
  buckets, keys = layer.state
  assert buckets.shape == (6, 32) and keys.shape == (6, 2)
  layer(x)
  assert layer.state[0].shape == (6, 32)
  assert tl.LSHSelfAttention is ea.LSHSelfAttention


# -- PureLSH and wrappers ------------------------------------------------------


def _split_heads(a, n_heads):
  b, l, d = a.shape
  return a.reshape(b, l, n_heads, d // n_heads).transpose(0, 2, 1, 3).reshape(
      b * n_heads, l, d // n_heads)


def test_pure_lsh_equals_lsh_self_attention_on_projections():
  x = _x((2, 16, 6))
  lsh = _init(ea.LSHSelfAttention(n_heads=2, d_qk=3, d_v=3, chunk_len=4,
                                  n_buckets=4, n_hashes=2, causal=True), x)
  w_q, w_v, w_o = (np.asarray(w) for w in lsh.weights)
  qk = np.einsum('bld,hdk->bhlk', x, w_q).reshape(4, 16, 3)
  v = np.einsum('bld,hdk->bhlk', x, w_v).reshape(4, 16, 3)
  pure = _init(ea.PureLSHSelfAttention(n_heads=2, chunk_len=4, n_buckets=4,
                                       n_hashes=2, causal=True), (qk, v))
  o = np.asarray(pure((qk, v))).reshape(2, 2, 16, 3)
  # Same layer rng: each (example, head) row hashes with the same key.
  np.testing.assert_allclose(np.einsum('bhlk,hkd->bld', o, w_o), lsh(x),
                             rtol=2e-5, atol=2e-5)
  np.testing.assert_array_equal(pure.state[0], lsh.state[0])


def test_pure_lsh_gradients_match_central_differences():
  qk = jnp.asarray(_x((2, 8, 2)), jnp.float64)
  v = jnp.asarray(_x((2, 8, 2), seed=1), jnp.float64)
  mask = np.ones((1, 8), bool)
  layer = _init(ea.PureLSHSelfAttention(n_heads=2, chunk_len=4, n_buckets=2,
                                        masked=True, mode='eval'),
                (qk, v, mask))
  layer((qk, v, mask))
  state, ct = layer.state, _x((2, 8, 2), seed=2).astype(np.float64)

  def f(a, b):
    return jnp.sum(layer.pure_fn((a, b, mask), (), state, KEY)[0] * ct)
  g_qk, g_v = fastmath.grad(f, argnums=(0, 1))(qk, v)
  eps = 1e-6
  for arr, grad, other in ((qk, g_qk, 'qk'), (v, g_v, 'v')):
    for idx in [(0, 1, 0), (1, 5, 1)]:
      d = np.zeros(arr.shape)
      d[idx] = eps
      d = jnp.asarray(d)
      hi = f(arr + d, v) if other == 'qk' else f(qk, arr + d)
      lo = f(arr - d, v) if other == 'qk' else f(qk, arr - d)
      np.testing.assert_allclose(grad[idx], (hi - lo) / (2 * eps),
                                 rtol=1e-5, atol=1e-8)


def test_mixed_lsh_uses_standard_attention_up_to_std_length():
  qk, v = _x((2, 8, 4)), _x((2, 8, 4), seed=1)
  mixed = _init(ea.MixedLSHSelfAttention(n_heads=2, causal=True, std_length=8,
                                         chunk_len=4, n_buckets=2),
                (qk, v))
  std = tl.DotProductCausalAttention()
  std.init(shapes.signature((qk, qk, v)))
  np.testing.assert_allclose(mixed((qk, v)), std((qk, qk, v)), rtol=1e-6)
  long_qk, long_v = _x((2, 16, 4)), _x((2, 16, 4), seed=1)
  mixed = _init(ea.MixedLSHSelfAttention(n_heads=2, causal=True, std_length=8,
                                         chunk_len=4, n_buckets=2),
                (long_qk, long_v))
  pure = _init(ea.PureLSHSelfAttention(n_heads=2, causal=True, chunk_len=4,
                                       n_buckets=2), (long_qk, long_v))
  pure.state = mixed.state[0]
  np.testing.assert_allclose(
      mixed.pure_fn((long_qk, long_v), (), mixed.state, KEY)[0],
      pure.pure_fn((long_qk, long_v), (), pure.state,
                   fastmath.random.split(KEY, 2)[0])[0], rtol=1e-6)


def test_wrapper_projects_attends_and_trains():
  x = _x((2, 8, 4))
  layer = _init(ea.PureLSHSelfAttentionWrapper(
      n_heads=2, d_qk=2, d_v=2, chunk_len=4, n_buckets=2, causal=True), x)
  assert [str(s) for s in layer.sublayers[1::2]] == [
      'PureLSHSelfAttention_in2', 'Dense_4']

  def loss(w):
    return jnp.sum(layer.pure_fn(x, w, layer.state, KEY)[0]**2)
  grads = fastmath.grad(loss)(layer.weights)
  leaves = fastmath.tree_leaves(grads)
  assert leaves and all(np.all(np.isfinite(g)) for g in leaves)
  assert np.abs(leaves[0]).max() > 0  # Reaches the first projection.
  with pytest.raises(NotImplementedError, match="weights_format='sparse'"):
    ea.PureLSHSelfAttentionWrapper(weights_format='sparse')


@pytest.mark.parametrize('num_weights', [2, 3])
def test_wrapper_rotary_rotates_queries_and_keys(num_weights):
  # Follows trax/layers/research/efficient_attention.py
  # _ProjectAndSplitHeads: with rotary_position_emb, Rotate acts on Q and K
  # (before their average) or on the shared QK, never on V.
  x = _x((2, 8, 4))
  kw = dict(n_heads=2, d_qk=2, d_v=2, chunk_len=8, n_chunks_before=0,
            n_buckets=2, causal=True, num_weights=num_weights)
  rotated = _init(ea.PureLSHSelfAttentionWrapper(rotary_position_emb=True,
                                                 **kw), x)
  plain = _init(ea.PureLSHSelfAttentionWrapper(**kw), x)
  assert 'Rotate' in repr(rotated) and 'Rotate' not in repr(plain)
  qkv = rotated.sublayers[0]
  qk, v = qkv.pure_fn(x, qkv.weights, qkv.state, KEY)[0]
  # NumPy: dense projections, RoFormer rotation of Q/K, heads split.
  leaves = [np.asarray(a, np.float64) for a in fastmath.tree_leaves(
      qkv.weights)]
  assert len(leaves) == 2 * num_weights  # Kernel and bias per Dense.
  dense = list(zip(leaves[0::2], leaves[1::2]))
  proj = [x.astype(np.float64) @ w + b for w, b in dense]
  pos = np.arange(8.0)[:, None]
  theta = 10000.0**(-np.arange(0, 4, 2) / 4.0)
  ang = np.concatenate([pos * theta, pos * theta], -1)

  def rope(a):
    half = np.concatenate([-a[..., 2:], a[..., :2]], -1)
    return a * np.cos(ang) + half * np.sin(ang)
  want_qk = (rope(proj[0]) if num_weights == 2 else
             (rope(proj[0]) + rope(proj[1])) / 2.0)
  want_v = proj[-1]
  np.testing.assert_allclose(qk, _split_heads(want_qk, 2), rtol=1e-5,
                             atol=1e-6)
  np.testing.assert_allclose(v, _split_heads(want_v, 2), rtol=1e-5,
                             atol=1e-6)
  # A causal single-chunk LSH is position-dependent now: outputs differ.
  rotated.weights = fastmath.tree_unflatten(
      fastmath.tree_leaves(plain.weights), rotated.weights)[0]
  assert not np.allclose(rotated(x), plain(x))


def test_lshff_matches_numpy_with_hash_mask():
  x = _x((2, 3, 4))
  layer = _init(ea.LSHFF(6, n_buckets=4, n_hashes=2), x)
  assert str(layer) == 'LSHFF_6'
  w1, w2, b2 = (np.asarray(w, np.float64) for w in layer.weights)
  flat = x.reshape(-1, 4)
  xb, _ = ea.hash_vecs(flat, 4, 2, layer.rng)
  wb, _ = ea.hash_vecs(w1.astype(np.float32), 4, 2, layer.rng)
  hit = np.any(np.asarray(xb)[:, :, None] == np.asarray(wb)[:, None, :], 0)
  assert 0 < hit.mean() < 1  # Some units kept, some skipped.
  want = np.maximum(flat @ w1.T * hit, 0) @ w2 + b2
  np.testing.assert_allclose(layer(x), want.reshape(x.shape), rtol=1e-5,
                             atol=1e-6)
