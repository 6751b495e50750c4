"""Transformer models: NumPy forward reference, causality, parameter count."""


import numpy as np
import pytest
import tensorflow as tf

from tests.layers import _attention_ref as ref
from tests import _layer_testing as lt
from tfnp_trax import fastmath
from tfnp_trax import models
from tfnp_trax import shapes
from tfnp_trax.fastmath import numpy as jnp

SMALL = dict(d_model=8, d_ff=16, n_heads=2, max_len=16, dropout=0.0)


def _layer_norm(x, scale, bias, epsilon=1e-6):
  x = x - x.mean(-1, keepdims=True)
  return x / np.sqrt((x * x).mean(-1, keepdims=True) + epsilon) * scale + bias


def _blocks(x, leaves, n_layers, n_heads, mask=None, causal=False):
  """Pre-norm blocks: x += attn(LN(x)); x += FF(LN(x))."""
  for _ in range(n_layers):
    scale, bias = next(leaves), next(leaves)
    h = _layer_norm(x, scale, bias)
    attention_weights = [next(leaves) for _ in range(8)]
    x = x + ref.multi_head(h, h, h, mask, attention_weights, n_heads, causal)
    scale, bias = next(leaves), next(leaves)
    h = _layer_norm(x, scale, bias)
    w1, b1, w2, b2 = (next(leaves) for _ in range(4))
    x = x + np.maximum(h @ w1 + b1, 0.0) @ w2 + b2
  return x


def _lm_reference(tokens, weights, n_layers, n_heads):
  leaves = iter(lt.to_numpy64(fastmath.tree_leaves(weights)))
  embedding, table = next(leaves), next(leaves)
  shifted = np.concatenate([np.zeros_like(tokens[:, :1]), tokens[:, :-1]], 1)
  x = embedding[shifted] + table[None, :tokens.shape[1]]
  x = _blocks(x, leaves, n_layers, n_heads, causal=True)
  x = _layer_norm(x, next(leaves), next(leaves))
  return x @ next(leaves) + next(leaves)


def _encoder_reference(tokens, weights, n_layers, n_heads):
  leaves = iter(lt.to_numpy64(fastmath.tree_leaves(weights)))
  embedding, table = next(leaves), next(leaves)
  x = embedding[tokens] + table[None, :tokens.shape[1]]
  mask = (tokens != 0)[:, None, None, :]
  x = _blocks(x, leaves, n_layers, n_heads, mask=mask)
  x = _layer_norm(x, next(leaves), next(leaves)).mean(axis=1)
  return x @ next(leaves) + next(leaves)


def _init(model, *inputs):
  model.init(shapes.signature(inputs[0] if len(inputs) == 1 else inputs),
             rng=fastmath.random.get_prng(0))
  return model


@pytest.fixture(scope='module')
def lm():
  """One small eval-mode TransformerLM, shared: init dominates test time."""
  return _init(models.TransformerLM(11, n_layers=2, mode='eval', **SMALL),
               jnp.zeros((2, 8), jnp.int32))


@pytest.mark.parametrize('mode', lt.MODES)
def test_transformer_lm_matches_numpy(lm, mode, rng):
  tokens = rng.integers(0, 11, size=(2, 8)).astype(np.int32)
  got = lt.layer_outputs(lm, jnp.asarray(tokens), mode)
  np.testing.assert_allclose(np.asarray(got),
                             _lm_reference(tokens, lm.weights, 2, 2),
                             rtol=1e-4, atol=1e-5)


def test_transformer_encoder_matches_numpy(rng):
  tokens = np.array([[3, 4, 5, 0], [6, 1, 0, 0]], np.int32)
  model = _init(models.TransformerEncoder(9, n_classes=3, n_layers=1,
                                          mode='eval', **SMALL),
                jnp.asarray(tokens))
  for mode in ('eager', 'jit'):
    got = lt.layer_outputs(model, jnp.asarray(tokens), mode)
    np.testing.assert_allclose(np.asarray(got),
                               _encoder_reference(tokens, model.weights, 1, 2),
                               rtol=1e-4, atol=1e-5)


def test_transformer_lm_is_causal(lm, rng):
  model = lm
  tokens = rng.integers(1, 11, size=(2, 8)).astype(np.int32)
  changed = tokens.copy()
  t = 3
  changed[:, t + 1:] = (changed[:, t + 1:] + 5) % 11
  before, after = (np.asarray(model(jnp.asarray(x))) for x in (tokens,
                                                                changed))
  # The input is shifted right, so position t + 1 sees tokens up to t only.
  np.testing.assert_allclose(after[:, :t + 2], before[:, :t + 2], rtol=1e-5,
                             atol=1e-6)
  assert not np.allclose(after[:, t + 2:], before[:, t + 2:], atol=1e-3)


def test_transformer_decoder_on_vectors_is_causal(rng):
  model = _init(models.TransformerDecoder(None, n_layers=1, mode='eval',
                                          **SMALL),
                jnp.zeros((2, 6, 3), jnp.float32))
  x = rng.normal(size=(2, 6, 3)).astype(np.float32)
  changed = x.copy()
  changed[:, 4:] += 1.0
  before, after = (np.asarray(model(jnp.asarray(v))) for v in (x, changed))
  assert before.shape == (2, 6, 8)
  np.testing.assert_allclose(after[:, :4], before[:, :4], rtol=1e-5,
                             atol=1e-6)
  assert not np.allclose(after[:, 4:], before[:, 4:], atol=1e-3)


def test_transformer_encoder_decoder_shapes_causality_and_padding(rng):
  # Without output_vocab_size, source and target share one embedding.
  model = models.Transformer(7, n_encoder_layers=1, n_decoder_layers=1,
                             mode='eval', **SMALL)
  source = np.array([[1, 2, 3, 0, 0], [4, 5, 6, 6, 1]], np.int32)
  target = rng.integers(1, 7, size=(2, 4)).astype(np.int32)
  _init(model, jnp.asarray(source), jnp.asarray(target))
  embeddings = [w for w in fastmath.tree_leaves(model.weights)
                if tuple(w.shape) == (7, 8)]
  assert len(embeddings) == 1

  def run(src, tgt):
    return model((jnp.asarray(src), jnp.asarray(tgt)))
  logits, passed = run(source, target)
  assert tuple(logits.shape) == (2, 4, 7)
  np.testing.assert_array_equal(np.asarray(passed), target)
  changed = target.copy()
  changed[:, 2:] = (changed[:, 2:] + 1) % 7
  # Shifted right: positions 0..2 see target tokens 0..1 only.
  np.testing.assert_allclose(np.asarray(run(source, changed)[0])[:, :3],
                             np.asarray(logits)[:, :3], rtol=1e-5, atol=1e-6)
  # Source id 0 is padding, masked out of all attention: more of it
  # changes nothing.
  more_padding = np.concatenate([source, np.zeros((2, 3), np.int32)], 1)
  np.testing.assert_allclose(np.asarray(run(more_padding, target)[0]),
                             np.asarray(logits), rtol=1e-5, atol=1e-6)


def test_transformer_lm_parameter_count():
  vocab, d, d_ff, n_layers, max_len = 256, 256, 1024, 2, 128
  model = models.TransformerLM(vocab_size=vocab, d_model=d, d_ff=d_ff,
                               n_heads=4, n_layers=n_layers, max_len=max_len)
  weights, _ = model.init(shapes.ShapeDtype((1, 8), jnp.int32))
  layer_norm = 2 * d
  attention = 4 * (d * d + d)  # Q, K, V and output projections.
  feed_forward = (d * d_ff + d_ff) + (d_ff * d + d)
  per_block = 2 * layer_norm + attention + feed_forward
  want = (vocab * d  # Token embedding.
          + max_len * d  # Learned positional encoding.
          + n_layers * per_block
          + layer_norm  # Final LayerNorm.
          + d * vocab + vocab)  # Output Dense.
  assert want == 1_744_128
  assert sum(int(np.prod(w.shape)) for w in fastmath.tree_leaves(weights)) == (
      want)


def test_train_mode_dropout_is_random_per_rng(rng):
  model = models.TransformerLM(11, n_layers=1, d_model=8, d_ff=16, n_heads=2,
                               max_len=8, dropout=0.5,
                               dropout_shared_axes=(1,))
  tokens = jnp.asarray(rng.integers(0, 11, size=(2, 6)), jnp.int32)
  _init(model, tokens)

  def run(seed):
    return np.asarray(model(tokens, rng=fastmath.random.get_prng(seed)))
  np.testing.assert_array_equal(run(1), run(1))
  assert not np.allclose(run(1), run(2))


def test_predict_transformer_runs_traced_at_another_length_than_its_file(
    tmp_path):
  # Follows Trax's intro notebook (trax/intro.ipynb): a predict-mode
  # Transformer loads weights written at one input length (the file's
  # signature initializes it) and decodes a sentence of another length in
  # a compiled step. Each step's logits must match the eval-mode model,
  # which re-reads the whole decoder prefix.
  kw = dict(input_vocab_size=20, d_model=16, d_ff=32, n_encoder_layers=1,
            n_decoder_layers=1, n_heads=2, max_len=32)
  evaluate = models.Transformer(mode='eval', **kw)
  sig = (shapes.ShapeDtype((1, 7), np.int32),) * 2
  evaluate.init(sig)
  path = str(tmp_path / 'model.pkl.gz')
  evaluate.save_to_file(path, weights_only=True, input_signature=sig)
  inputs = np.array([[3, 4, 5, 6, 7, 8, 9, 10, 11, 1, 0, 0]], np.int32)
  predict = models.Transformer(mode='predict', **kw)
  predict.init_from_file(path, weights_only=True)
  step = tf.function(predict.pure_fn, autograph=False)
  rng, state = fastmath.random.get_prng(0), predict.state
  # Predict mode is fed the start token 0, then each target token; eval
  # mode shifts its targets right, so both see [0, 5].
  prefix = np.array([[0, 5]], np.int32)
  want = np.asarray(evaluate((inputs, np.array([[5, 2]], np.int32)))[0])
  for i in range(prefix.shape[1]):
    (logits, *_), state = step((inputs, prefix[:, i:i + 1]), predict.weights,
                               state, rng)
    assert tuple(logits.shape) == (1, 1, 20)
    np.testing.assert_allclose(logits[:, 0], want[:, i], rtol=1e-4,
                               atol=1e-5)
