"""CausalAttention and DotProductCausalAttention (and its cache) vs NumPy."""

import numpy as np
import pytest

from tests.layers import _attention_ref as ref
from tests import _layer_testing as lt
from tfnp_trax import fastmath
from tfnp_trax import layers as tl
from tfnp_trax import shapes
from tfnp_trax.fastmath import numpy as jnp


def test_causal_attention_matches_numpy_with_gradients(rng):
  x = rng.normal(size=(2, 3, 4))
  lt.check_layer(
      tl.CausalAttention(4, n_heads=2), x,
      lambda xx, w: ref.multi_head(xx, xx, xx, None, w, 2, causal=True),
      grad_rtol=1e-3, grad_atol=1e-4)


def test_dot_product_causal_attention_matches_numpy_with_gradients(rng):
  q, k, v = (rng.normal(size=(2, 4, 3)) for _ in range(3))
  lt.check_layer(
      tl.DotProductCausalAttention(), (q, k, v),
      lambda qkv, _: ref.dot_product_attention(*qkv, causal=True))


def _run_predict(layer, chunks, mode):
  """Feeds `chunks` of (q, k, v) in turn; returns outputs and last state."""
  key = fastmath.random.get_prng(0)
  step = lt.compile_fn(
      lambda qkv, state: layer.pure_fn(qkv, (), state, key), mode)
  state, outputs = layer.state, []
  for chunk in chunks:
    y, state = step(tuple(jnp.asarray(c, jnp.float32) for c in chunk), state)
    outputs.append(np.asarray(y))
  return np.concatenate(outputs, axis=1), state


@pytest.mark.parametrize('mode', lt.MODES)
def test_predict_mode_cache_matches_full_causal_attention(mode, rng):
  q, k, v = (rng.normal(size=(2, 5, 3)) for _ in range(3))
  layer = tl.DotProductCausalAttention(max_inference_length=6,
                                       mode='predict')
  layer.init(shapes.signature(tuple(jnp.asarray(t[:, :2], jnp.float32)
                                    for t in (q, k, v))))
  # A 2-position prompt, then one position per call.
  chunks = [tuple(t[:, :2] for t in (q, k, v))] + [
      tuple(t[:, i:i + 1] for t in (q, k, v)) for i in range(2, 5)]
  got, state = _run_predict(layer, chunks, mode)
  want = ref.dot_product_attention(q, k, v, causal=True)
  np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
  keys, values, index = state
  assert int(index) == 5 and tuple(keys.shape) == (2, 6, 3)
  np.testing.assert_allclose(np.asarray(values)[:, :5], v, rtol=1e-6)
  np.testing.assert_array_equal(np.asarray(keys)[:, 5:], 0.0)


def test_predict_mode_causal_attention_layer_matches_train_mode(rng):
  x = jnp.asarray(rng.normal(size=(1, 4, 4)), dtype=jnp.float32)
  full = tl.CausalAttention(4, n_heads=2, mode='eval')
  full.init(shapes.signature(x))
  stepwise = tl.CausalAttention(4, n_heads=2, max_inference_length=4,
                                mode='predict')
  stepwise.init(shapes.signature(x[:, :1]))
  stepwise.weights = full.weights
  got = np.concatenate([np.asarray(stepwise(x[:, i:i + 1]))
                        for i in range(4)], axis=1)
  np.testing.assert_allclose(got, np.asarray(full(x)), rtol=1e-5, atol=1e-6)


def test_exceeding_the_cache_names_layer_length_and_limit(rng):
  layer = tl.DotProductCausalAttention(max_inference_length=3,
                                       mode='predict')
  qkv = tuple(jnp.asarray(rng.normal(size=(1, 2, 2)), jnp.float32)
              for _ in range(3))
  layer.init(shapes.signature(qkv))
  layer(qkv)
  with pytest.raises(tl.LayerError,
                     match=r'DotProductCausalAttention: decoding length 4 '
                     r'\(cache holds 2 positions, adding 2\) exceeds '
                     r'max_inference_length 3'):
    layer(qkv)
  long_qkv = tuple(jnp.zeros((1, 4, 2), jnp.float32) for _ in range(3))
  with pytest.raises(tl.LayerError,
                     match='DotProductCausalAttention: input length 4 '
                     'exceeds max_inference_length 3'):
    fastmath.jit(lambda a: layer.pure_fn(a, (), layer.state,
                                         layer.rng))(long_qkv)


def test_bfloat16_activations_cache_and_float32_softmax(rng):
  x = rng.normal(size=(1, 3, 4))
  lt.check_bfloat16(tl.CausalAttention(4, n_heads=2), x)
  qkv = tuple(jnp.asarray(rng.normal(size=(2, 1, 2))).astype('bfloat16')
              for _ in range(3))
  layer = tl.DotProductCausalAttention(max_inference_length=4,
                                       mode='predict')
  layer.init(shapes.signature(qkv))
  assert layer(qkv).dtype.name == 'bfloat16'
  assert [s.dtype.name for s in layer.state] == ['bfloat16', 'bfloat16',
                                                  'int32']
  viz = tl.DotProductCausalAttention(mode='viz')
  assert viz(qkv).dtype.name == 'bfloat16'
  assert viz.state.dtype.name == 'float32'


def test_constructor_errors():
  with pytest.raises(ValueError, match='CausalAttention: d_feature 6 is not '
                     'a multiple of n_heads 4'):
    tl.CausalAttention(6, n_heads=4)
  with pytest.raises(NotImplementedError, match='use_dconv=True'):
    tl.CausalAttention(4, use_dconv=True)
  with pytest.raises(ValueError, match=r'dropout rate must be in \[0, 1\)'):
    tl.DotProductCausalAttention(dropout=1.0)
