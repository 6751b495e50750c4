"""Efficient attention: functions, SelfAttention and EncDecAttention.

References are NumPy float64 implementations written from the definitions
(tests/layers/research/_efficient_ref.py) and hand-computed values. LSH
layers are tested in lsh_attention_test.py.
"""

import functools
import textwrap

import numpy as np
import pytest

from tests import _subprocess
from tests._layer_testing import MODES
from tests._layer_testing import compile_fn
from tests.layers.research import _efficient_ref as ref
from tfnp_trax import fastmath
from tfnp_trax import layers as tl
from tfnp_trax import shapes
from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.layers.research import efficient_attention as ea

KEY = fastmath.random.get_prng(0)


def _init(layer, inputs, seed=1):
  layer.init(shapes.signature(inputs), rng=fastmath.random.get_prng(seed))
  return layer


def _x(shape, seed=0):
  return np.random.RandomState(seed).normal(size=shape).astype(np.float32)


# -- Functions ---------------------------------------------------------------


def test_length_normalized_and_look_adjacent_by_hand():
  y = ea.length_normalized(jnp.array([[3.0, 4.0]], jnp.float32))
  np.testing.assert_allclose(y, [[3.0, 4.0]] / np.sqrt(12.5 + 1e-6),
                             rtol=1e-6)
  x = jnp.arange(4)[:, None] * 10 + jnp.arange(2)[None, :]  # 4 chunks of 2.
  got = ea.look_adjacent(x, 1, 1).numpy()
  # Chunk c is followed by chunks c-1, c, c+1 (wrapping).
  np.testing.assert_array_equal(got[0], [30, 31, 0, 1, 10, 11])
  np.testing.assert_array_equal(got[3], [20, 21, 30, 31, 0, 1])
  assert ea.look_adjacent(x, 0, 0) is x


def test_mask_self_attention_by_hand():
  dots = jnp.zeros((3, 3), jnp.float32)
  q_info = jnp.array([0, 1, 2])[:, None]
  kv_info = jnp.array([0, 1, -2])[None, :]
  got = ea.mask_self_attention(dots, q_info, kv_info, causal=True,
                               exclude_self=True, masked=True).numpy()
  want = -np.array([[1e5, 1e9, 1e9], [0, 1e5, 1e9], [0, 0, 1e9]])
  np.testing.assert_allclose(got, want)


def test_attend_chunked_matches_numpy_window():
  rs = np.random.RandomState(0)
  q, k, v = (rs.normal(size=(8, 3)) for _ in range(3))
  mask_fn = functools.partial(ea.mask_self_attention, causal=True,
                              exclude_self=False)
  out, lse = ea.attend(q, k, v, q_chunk_len=2, kv_chunk_len=2,
                       n_chunks_before=1, mask_fn=mask_fn)
  allowed = ref.window(8, 2, 1, 0)
  want = ref.head_attention(q, k, v, allowed, causal=True,
                            exclude_self=False)
  np.testing.assert_allclose(out, want, rtol=1e-10)
  logits = np.where(allowed & np.tril(np.ones((8, 8), bool)),
                    q @ k.T / np.sqrt(3), -np.inf)
  np.testing.assert_allclose(lse, np.log(np.exp(logits).sum(-1)),
                             rtol=1e-10)


def test_attend_batched_equals_per_example():
  rs = np.random.RandomState(1)
  q, v = rs.normal(size=(2, 3, 8, 4)), rs.normal(size=(2, 3, 8, 4))
  mask_fn = functools.partial(ea.mask_self_attention, causal=True)
  batched, _ = ea.attend(q, None, v, q_chunk_len=4, n_chunks_before=1,
                         mask_fn=mask_fn)
  for b in range(2):
    for h in range(3):
      single, _ = ea.attend(q[b, h], None, v[b, h], q_chunk_len=4,
                            n_chunks_before=1, mask_fn=mask_fn)
      np.testing.assert_allclose(batched[b, h], single, rtol=1e-12)


def test_broadcasted_dropout_shares_mask_over_rows():
  y = ea.apply_broadcasted_dropout(jnp.ones((5, 8), jnp.float32), 0.5, KEY)
  y = y.numpy()
  assert set(np.unique(y)) <= {0.0, 2.0}
  np.testing.assert_array_equal(y, np.broadcast_to(y[:1], y.shape))
  assert ea.apply_broadcasted_dropout(jnp.ones((2,)), 0.0, None) is not None


@pytest.mark.parametrize('permute', ['gather', 'sort'])
def test_permutations_and_their_gradients(permute):
  perm = np.array([2, 0, 3, 1], np.int32)
  inv = np.argsort(perm).astype(np.int32)
  # Sorting needs keys and values of one shape (as lax.sort_key_val does).
  shape = (4, 2) if permute == 'gather' else (4,)
  x = np.arange(8.0)[:np.prod(shape)].reshape(shape)
  ct = np.random.RandomState(0).normal(size=shape)

  def f(val):
    if permute == 'gather':
      return ea.permute_via_gather(val, perm, inv, axis=0)
    return ea.permute_via_sort(val, inv, perm, axis=0)  # Sorting by inv.
  out, vjp_fn = fastmath.vjp(f, jnp.array(x))
  np.testing.assert_array_equal(out.numpy(), x[perm])
  # The gradient of x -> x[perm] puts ct[i] back at perm[i].
  want = np.zeros(shape)
  want[perm] = ct
  np.testing.assert_allclose(vjp_fn(jnp.array(ct))[0], want)


# -- SelfAttention -------------------------------------------------------


SA_CASES = {
    'chunked_causal': dict(causal=True, chunk_len=4, n_chunks_before=1),
    'chunked_both_ways': dict(chunk_len=4, n_chunks_before=1,
                              n_chunks_after=1),
    'shared_qk_causal': dict(causal=True, share_qk=True, chunk_len=4,
                             n_chunks_before=1),
    'full_masked': dict(masked=True),
}


@pytest.mark.parametrize('case', sorted(SA_CASES))
def test_self_attention_matches_numpy_window(case):
  kw = SA_CASES[case]
  x = _x((2, 16, 6))
  mask = np.ones((2, 16), bool)
  mask[1, 11:] = False
  inputs = (x, mask) if kw.get('masked') else x
  layer = _init(ea.SelfAttention(n_heads=2, d_qk=3, d_v=5, mode='eval',
                                 **kw), inputs)
  want = ref.self_attention(
      x.astype(np.float64), ref.heads_of(layer.weights, kw.get('share_qk')),
      chunk_len=kw.get('chunk_len'), n_before=kw.get('n_chunks_before', 0),
      n_after=kw.get('n_chunks_after', 0), causal=kw.get('causal', False),
      share_qk=kw.get('share_qk', False),
      mask=mask if kw.get('masked') else None)
  np.testing.assert_allclose(layer(inputs), want, rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize('mode', MODES)
def test_self_attention_modes_and_bias_match_reference_code(mode):
  x = _x((2, 8, 6))
  outs = []
  for use_ref in (True, False):
    layer = _init(ea.SelfAttention(n_heads=2, d_qk=4, d_v=4, bias=True,
                                   causal=True, chunk_len=4,
                                   n_chunks_before=1,
                                   use_reference_code=use_ref), x)
    w = list(layer.weights)
    w[4] = w[4] + 0.5  # Nonzero biases, so they are exercised.
    w[6] = w[6] - 0.25
    fn = compile_fn(lambda xx, ww, l=layer: l.pure_fn(xx, ww, l.state,
                                                      KEY)[0], mode)
    outs.append(np.asarray(fn(x, tuple(w))))
  np.testing.assert_allclose(outs[0], outs[1], rtol=1e-5, atol=1e-6)


def _loss_and_grads(layer, inputs, weights, ct):
  def loss(xx, ww):
    full = (xx,) + tuple(inputs[1:]) if isinstance(inputs, tuple) else xx
    y, _ = layer.pure_fn(full, ww, layer.state, KEY)
    return jnp.sum(y * ct)
  x = inputs[0] if isinstance(inputs, tuple) else inputs
  return fastmath.grad(loss, argnums=(0, 1))(x, weights)


@pytest.mark.parametrize('cls,kw', [
    (ea.SelfAttention, dict(causal=True, chunk_len=4, n_chunks_before=1,
                            masked=True)),
    (ea.EncDecAttention, dict(masked=False)),
])
def test_custom_backward_matches_reference_autodiff(cls, kw):
  x = _x((2, 8, 6))
  mask = np.arange(8)[None, :] < np.array([[8], [5]])
  if cls is ea.EncDecAttention:
    inputs = (x, _x((2, 5, 3), seed=1))
  else:
    inputs = (x, mask)
  ct = _x((2, 8, 6), seed=2)
  grads = []
  for use_ref in (True, False):
    layer = _init(cls(n_heads=2, d_qk=4, d_v=4, use_reference_code=use_ref,
                      **kw), inputs)
    assert layer.has_backward == (not use_ref)
    grads.append(_loss_and_grads(layer, inputs, layer.weights, ct))
  for got, want in zip(fastmath.tree_leaves(grads[1]),
                       fastmath.tree_leaves(grads[0])):
    assert np.all(np.isfinite(got))
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_custom_backward_matches_central_differences():
  x = _x((1, 4, 3)).astype(np.float64)
  layer = _init(ea.SelfAttention(n_heads=1, d_qk=2, d_v=2, causal=True,
                                 chunk_len=2, n_chunks_before=1), x)
  weights = fastmath.nested_map(lambda w: jnp.asarray(w, jnp.float64),
                                layer.weights)
  ct = _x((1, 4, 3), seed=3).astype(np.float64)
  gx, gw = _loss_and_grads(layer, jnp.asarray(x, jnp.float64), weights, ct)

  def f(xx, w0):
    w = (jnp.asarray(w0, jnp.float64),) + tuple(weights[1:])
    # Tensors keep float64 (NumPy float64 would enter as float32, as in JAX).
    out = layer.pure_fn(jnp.asarray(xx, jnp.float64), w, (), KEY)[0]
    return float(jnp.sum(out * ct))
  eps = 1e-6
  w0 = np.asarray(weights[0])
  for idx in [(0, 0, 0), (0, 2, 1), (0, 3, 2)]:
    d = np.zeros_like(x)
    d[idx] = eps
    np.testing.assert_allclose(gx[idx], (f(x + d, w0) - f(x - d, w0)) /
                               (2 * eps), rtol=1e-6, atol=1e-8)
  for idx in [(0, 0, 0), (0, 2, 1)]:
    d = np.zeros_like(w0)
    d[idx] = eps
    np.testing.assert_allclose(gw[0][idx], (f(x, w0 + d) - f(x, w0 - d)) /
                               (2 * eps), rtol=1e-6, atol=1e-8)


def _decode(layer, x, weights, mode='jit', prefix=0):
  """Runs `layer` (mode='predict') on a prefix, then token by token."""
  step = compile_fn(lambda xx, s: layer.pure_fn(xx, weights, s, KEY), mode)
  state, outs = layer.state, []
  if prefix:
    y, state = step(x[:, :prefix], state)
    outs.append(np.asarray(y))
  for t in range(prefix, x.shape[1]):
    y, state = step(x[:, t:t + 1], state)
    outs.append(np.asarray(y))
  return np.concatenate(outs, axis=1)


@pytest.mark.parametrize('kw,prefix', [
    (dict(chunk_len=4, n_chunks_before=1), 0),
    (dict(chunk_len=4, n_chunks_before=1, share_qk=True), 8),
    (dict(predict_mem_len=16, predict_drop_len=4), 5),
])
def test_self_attention_predict_equals_full_causal_forward(kw, prefix):
  x = _x((2, 16, 6))
  full = _init(ea.SelfAttention(n_heads=2, d_qk=4, d_v=4, causal=True,
                                mode='eval', **kw), x)
  want = np.asarray(full(x))
  fast = _init(ea.SelfAttention(n_heads=2, d_qk=4, d_v=4, causal=True,
                                mode='predict', **kw), x[:, :1])
  got = _decode(fast, x, full.weights, prefix=prefix)
  np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_predict_cache_state_layout_and_prefix_after_start_is_nan():
  x = _x((1, 8, 6))
  layer = _init(ea.SelfAttention(n_heads=1, d_qk=4, d_v=4, causal=True,
                                 chunk_len=4, n_chunks_before=1,
                                 mode='predict'), x[:, :1])
  mem_end, (mem,), head_state = layer.state
  assert int(mem_end) == 0 and mem.shape == (1, 8, 6) and head_state == ()
  layer(x[:, :1])
  assert int(layer.state[0]) == 1
  np.testing.assert_array_equal(layer.state[1][0][0, 0], x[0, 0])
  # A long prefix only works at the start: Trax signals misuse with NaNs.
  assert np.all(np.isnan(layer(x)))


def test_self_attention_bad_inputs_name_layer_and_numbers():
  layer = _init(ea.SelfAttention(n_heads=1, d_qk=2, d_v=2, chunk_len=4),
                _x((1, 8, 3)))
  with pytest.raises(tl.LayerError,
                     match=r'SelfAttention.*length 10 is not a multiple of '
                     r'chunk_len 4'):
    layer(_x((1, 10, 3)))
  with pytest.raises(ValueError, match='SelfAttention: mode="predict".*'
                     'causal=True'):
    ea.SelfAttention(mode='predict', chunk_len=4)
  with pytest.raises(ValueError, match='n_parallel_heads must be a multiple '
                     'or fraction of n_heads, got n_parallel_heads=3'):
    ea.SelfAttention(n_heads=2, n_parallel_heads=3)
  with pytest.raises(ValueError, match=r'predict_drop_len <= predict_mem_len'
                     r', got predict_drop_len=8, predict_mem_len=4'):
    ea.SelfAttention(causal=True, mode='predict', predict_mem_len=4,
                     predict_drop_len=8)


def test_names_and_weight_shapes_follow_trax():
  layer = _init(ea.SelfAttention(n_heads=3, d_qk=4, d_v=5, bias=True),
                _x((2, 8, 6)))
  assert str(layer) == 'SelfAttention'
  assert [tuple(w.shape) for w in layer.weights] == [
      (3, 6, 4), (3, 6, 4), (3, 6, 5), (3, 5, 6), (3, 4), (3, 4), (3, 5)]
  assert not isinstance(layer, ea.EfficientAttentionBase)  # As in Trax.
  assert isinstance(ea.EncDecAttention(), ea.EfficientAttentionBase)
  assert str(ea.SelfAttention(masked=True)) == 'SelfAttention_in2'
  lim = np.sqrt(6.0 / (6 + 4 * 3))
  assert np.abs(layer.weights[0]).max() <= lim
  assert tl.SelfAttention is ea.SelfAttention


# -- EncDecAttention -----------------------------------------------------


def test_enc_dec_attention_matches_numpy():
  q_in, kv_in = _x((2, 3, 6)), _x((2, 5, 4), seed=1)
  layer = _init(ea.EncDecAttention(n_heads=2, d_qk=3, d_v=3, masked=False),
                (q_in, kv_in))
  heads = ref.heads_of(layer.weights, share_qk=False)
  want = np.zeros((2, 3, 6))
  for b in range(2):
    for w_q, w_k, w_v, w_o in heads:
      o = ref.head_attention(q_in[b] @ w_q, kv_in[b] @ w_k, kv_in[b] @ w_v,
                             np.ones((3, 5), bool), False, False)
      want[b] += o @ w_o
  np.testing.assert_allclose(layer((q_in, kv_in)), want, rtol=2e-5,
                             atol=2e-5)


def test_enc_dec_masked_keeps_trax_float32_quirk():
  q_in, kv_in = _x((1, 3, 4)), _x((1, 5, 4), seed=1)
  mask = np.array([[True, True, True, False, False]])
  layer = _init(ea.EncDecAttention(n_heads=1, d_qk=4, d_v=4), (q_in, kv_in,
                                                               mask))
  (w_q, w_k, w_v, w_o), = ref.heads_of(layer.weights, share_qk=False)
  # float32: every real key's logit rounds to -1e9, so each query sums the
  # real keys' values (what Trax 1.4.1 computes).
  summed = (kv_in[0, :3] @ w_v).sum(0) @ w_o
  got = layer((q_in, kv_in, mask))
  np.testing.assert_allclose(got[0], np.tile(summed, (3, 1)), rtol=1e-5,
                             atol=1e-5)
  # float64 keeps the logits: ordinary attention over the real keys.
  w64 = fastmath.nested_map(lambda w: jnp.asarray(w, jnp.float64),
                            layer.weights)
  got64, _ = layer.pure_fn((jnp.asarray(q_in, jnp.float64),
                            jnp.asarray(kv_in, jnp.float64), mask), w64, (),
                           KEY)
  assert got64.dtype == jnp.float64
  valid = np.array([True, True, True, False, False])
  want = ref.head_attention(q_in[0] @ w_q, kv_in[0] @ w_k, kv_in[0] @ w_v,
                            np.ones((3, 5), bool), False, False,
                            key_valid=valid) @ w_o
  # (Logits near -1e9 keep ~1e-7 absolute precision in float64.)
  np.testing.assert_allclose(got64[0], want, rtol=1e-5, atol=1e-7)
  assert np.abs(got64[0] - np.tile(summed, (3, 1))).max() > 0.1


# -- Gin -----------------------------------------------------------------------


def test_pure_lsh_gin_bindings_reach_calls_from_python():
  # Trax's layers/__init__.py registers PureLSHSelfAttention and
  # PureLSHSelfAttentionWrapper with gin under trax.layers (denylist 'mode');
  # trax/models/research/hourglass_test.py binds them from Python and
  # builds a model with tl.PureLSHSelfAttentionWrapper.
  # pylint: disable=protected-access
  import gin  # pylint: disable=g-import-not-at-top
  from tfnp_trax import _gin_registry  # pylint: disable=g-import-not-at-top
  _gin_registry.register_in_place()
  _gin_registry.register_in_place()  # Once only: __init__ wrapped once.
  assert tl.PureLSHSelfAttention is ea.PureLSHSelfAttention
  gin.clear_config()
  try:
    gin.bind_parameter('PureLSHSelfAttentionWrapper.pure_lsh_implementation',
                       tl.PureLSHSelfAttention)
    gin.bind_parameter('PureLSHSelfAttention.chunk_len', 2)
    layer = tl.PureLSHSelfAttentionWrapper(n_heads=2, d_qk=2, d_v=2,
                                           causal=True)
    assert layer.sublayers[1]._chunk_len == 2
    # Arguments given in the call still win over bindings.
    assert tl.PureLSHSelfAttention(chunk_len=4)._chunk_len == 4
    with pytest.raises(ValueError, match='denylist'):
      gin.bind_parameter('trax.layers.PureLSHSelfAttention.mode', 'eval')
  finally:
    gin.clear_config()
  assert tl.PureLSHSelfAttention()._chunk_len == 128


def test_import_after_gin_registers_pure_lsh_for_python_bindings():
  # As after `import trax` with gin loaded: no config parsed, and a binding
  # made from Python reaches the call.
  out = _subprocess.run_python(textwrap.dedent("""
      import gin
      import tfnp_trax
      gin.bind_parameter('PureLSHSelfAttention.chunk_len', 2)
      print('chunk_len', tfnp_trax.layers.PureLSHSelfAttention()._chunk_len)
  """))
  assert 'chunk_len 2' in out
