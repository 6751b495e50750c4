"""Tests for decode_signatures: serving token-by-token decoding."""

import numpy as np
import pytest
import tensorflow as tf

from tests.export import _isolated
from tfnp_trax import export
from tfnp_trax import fastmath
from tfnp_trax import models
from tfnp_trax import shapes
from tfnp_trax.supervised import decoding

_LM = dict(vocab_size=16, d_model=8, d_ff=16, n_layers=2, n_heads=2,
           max_len=8, dropout=0.0)


@pytest.fixture(scope='module')
def saved_lm(tmp_path_factory):
  """`(path, eval model)`: a TransformerLM saved with decode signatures."""
  path = str(tmp_path_factory.mktemp('lm') / 'lm')
  lm = models.TransformerLM(mode='eval', **_LM)
  lm.init(shapes.ShapeDtype((2, 8), np.int32),
          rng=fastmath.random.get_prng(3))
  predict = models.TransformerLM(mode='predict', **_LM)
  export.save_model(lm, path, shapes.ShapeDtype((2, 8), np.int32),
                    signatures=export.decode_signatures(predict, 2))
  return path, lm


def test_greedy_decoding_through_savedmodel_matches_native(saved_lm,
                                                           tmp_path):
  path, lm = saved_lm
  n_steps = 7
  _isolated.run_without_tfnp_trax(f'''
      import numpy as np
      import tensorflow as tf
      loaded = tf.saved_model.load({path!r})
      cache = loaded.signatures['init_cache'](batch_size=tf.constant(2))
      step = loaded.signatures['decode_step']
      tokens = np.zeros((2, 1), np.int32)
      out = []
      for _ in range({n_steps}):
        result = step(tokens=tf.constant(tokens), **cache)
        cache = {{k: v for k, v in result.items() if k.startswith('cache_')}}
        tokens = np.argmax(result['logits'].numpy()[:, -1], axis=-1)
        tokens = tokens.astype(np.int32)[:, None]
        out.append(tokens[:, 0])
      np.save({str(tmp_path / 'tokens.npy')!r}, np.stack(out, axis=1))
  ''')
  predict = models.TransformerLM(mode='predict', **_LM)
  predict.init(shapes.ShapeDtype((2, 1), np.int32))
  predict.weights = lm.weights
  native = decoding.autoregressive_sample(
      predict, batch_size=2, temperature=0.0, max_length=n_steps, eos_id=-1)
  np.testing.assert_array_equal(np.load(tmp_path / 'tokens.npy'), native)


def test_decode_step_logits_match_the_eval_model(saved_lm):
  # Feeding a sequence one token at a time reproduces the full forward pass.
  path, lm = saved_lm
  loaded = tf.saved_model.load(path)
  seq = np.random.RandomState(0).randint(0, 16, size=(2, 8)).astype(np.int32)
  cache = loaded.signatures['init_cache'](batch_size=tf.constant(2))
  shifted = np.concatenate([np.zeros((2, 1), np.int32), seq[:, :-1]], 1)
  logits = []
  for t in range(8):
    result = loaded.signatures['decode_step'](
        tokens=tf.constant(shifted[:, t:t + 1]), **cache)
    cache = {k: v for k, v in result.items() if k.startswith('cache_')}
    logits.append(result['logits'].numpy()[:, 0])
  np.testing.assert_allclose(np.stack(logits, 1), np.asarray(lm(seq)),
                             rtol=1e-4, atol=1e-5)


def test_init_cache_rejects_other_batch_sizes(saved_lm):
  loaded = tf.saved_model.load(saved_lm[0])
  with pytest.raises(tf.errors.InvalidArgumentError,
                     match=r'Serial \(init_cache\): this SavedModel '
                     r'decodes batches of exactly 2 sequences'):
    loaded.signatures['init_cache'](batch_size=tf.constant(3))


def test_decode_step_rejects_a_wrong_cache(saved_lm):
  loaded = tf.saved_model.load(saved_lm[0])
  cache = loaded.signatures['init_cache'](batch_size=tf.constant(2))
  cache['cache_2'] = cache['cache_2'][:1]
  with pytest.raises(tf.errors.InvalidArgumentError,
                     match=r'Serial \(decode_step\): input `cache_2` '
                     r'must have shape \(4, 8, 4\)'):
    loaded.signatures['decode_step'](tokens=tf.zeros((2, 1), tf.int32),
                                     **cache)


def test_predict_model_of_another_size_is_rejected(tmp_path):
  lm = models.TransformerLM(mode='eval', **_LM)
  lm.init(shapes.ShapeDtype((1, 8), np.int32))
  other = dict(_LM, d_model=4)
  predict = models.TransformerLM(mode='predict', **other)
  with pytest.raises(ValueError, match=r'decode_signatures: the predict '
                     r'model Serial has weights shaped'):
    export.save_model(lm, str(tmp_path / 'lm'),
                      shapes.ShapeDtype((1, 8), np.int32),
                      signatures=export.decode_signatures(predict))


def test_two_input_models_are_rejected():
  predict = models.Transformer(8, d_model=4, d_ff=8, n_encoder_layers=1,
                               n_decoder_layers=1, n_heads=2, max_len=8,
                               mode='predict')
  with pytest.raises(ValueError, match=r'decode_signatures: Serial '
                     r'takes 2 inputs; decode_step serves one-input'):
    export.decode_signatures(predict)
