"""generate and beam_search signatures: whole decodes in one SavedModel call.

Every sequence model is saved once with `generate`, and one of each kind
with `beam_search` too (without XLA, which
compiles for seconds per model; the TransformerLM tests below use XLA, the
default); one subprocess in which tfnp_trax cannot be imported loads each
SavedModel and calls them eagerly. Each result must equal the library's own
`decoding.autoregressive_sample` / `decoding.beam_search` on a predict model
holding the same weights, token for token.
"""

import functools
import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from tests.export import _isolated
from tfnp_trax import export
from tfnp_trax import fastmath
from tfnp_trax import models
from tfnp_trax import shapes
from tfnp_trax.layers.research import efficient_attention as ea
from tfnp_trax.models.reformer import reformer
from tfnp_trax.models.research import terraformer
from tfnp_trax.supervised import decoding

BATCH, MAX_LENGTH, N_BEAMS, BEAM_LENGTH = 2, 10, 2, 6
_T = dict(d_model=16, d_ff=32, n_heads=2, max_len=32)
_LSH = functools.partial(ea.LSHSelfAttention, chunk_len=4, n_buckets=2,
                         n_hashes=1, predict_mem_len=16, predict_drop_len=16)
_SELF = functools.partial(ea.SelfAttention, predict_mem_len=32,
                          predict_drop_len=32)

# name -> (builder of mode, source length for encoder-decoders, prompt
# length fixed at export or None for any length).
CASES = {
    'transformer_lm': (lambda mode: models.TransformerLM(
        20, n_layers=2, mode=mode, **_T), None, None),
    'transformer': (lambda mode: models.Transformer(
        20, n_encoder_layers=1, n_decoder_layers=1, mode=mode, **_T), 5,
                    None),
    # LSH attention hashes a prompt fed at once together, and one fed token
    # by token bucket by bucket: the sampler feeds it at once, so does this.
    'reformer_lm_lsh': (lambda mode: reformer.ReformerLM(
        20, d_attention_key=8, d_attention_value=8, n_layers=2,
        attention_type=_LSH, mode=mode, **_T), None, 3),
    'reformer': (lambda mode: reformer.Reformer(
        20, n_encoder_layers=1, n_decoder_layers=1, mode=mode, **_T), 5,
                 None),
    'terraformer': (lambda mode: terraformer.ConfigurableTerraformer(
        20, n_encoder_layers=1, n_decoder_layers=2,
        encoder_decoder_attention_type=_SELF, mode=mode, **_T), 5, None),
    'rnnlm': (lambda mode: models.RNNLM(20, d_model=16, n_layers=2,
                                        mode=mode), None, None),
    'grulm': (lambda mode: models.GRULM(20, d_model=16, mode=mode), None,
              None),
}


# Beam search runs the same step over every cache; one case of each kind
# (a language model, an encoder-decoder, LSH's bucketed cache) covers it.
BEAM_CASES = ('transformer_lm', 'transformer', 'reformer_lm_lsh')


def _build(name, mode):
  # Trax's Reformer builds its decoder's SelfAttention itself; in Trax a gin
  # binding gives it the predict-mode cache sizes, here a patch does.
  with pytest.MonkeyPatch.context() as patch:
    patch.setattr(ea, 'SelfAttention', _SELF)
    return CASES[name][0](mode)


def _signatures(name):
  source, length = CASES[name][1:]
  sig = shapes.ShapeDtype((BATCH, 8), np.int32)
  if source:
    sig = (shapes.ShapeDtype((BATCH, source), np.int32), sig)
  return sig, source or length


def _inputs(name, seed=0):
  source, length = CASES[name][1:]
  return np.random.RandomState(seed).randint(
      2, 20, (BATCH, source or length or 3)).astype(np.int32)


def _predict_twin(name, eval_model):
  """The predict model the library's samplers use, with the same weights."""
  source = CASES[name][1]
  tokens = shapes.ShapeDtype((BATCH, 1), np.int32)
  sig = ((shapes.ShapeDtype((BATCH, source), np.int32), tokens) if source
         else tokens)
  model = _build(name, 'predict')
  # The signatures initialize their cache with key 0 (LSH draws its hash
  # rotations there).
  model.init(sig, rng=fastmath.random.get_prng(0))
  model.weights = fastmath.tree_unflatten(
      fastmath.tree_flatten(eval_model.weights), model.weights)[0]
  return model


@pytest.fixture(scope='module')
def exported(tmp_path_factory):
  """name -> (path, eval model), each saved with generate and beam_search."""
  root = tmp_path_factory.mktemp('generate')
  out = {}
  for name in CASES:
    sig, length = _signatures(name)
    model = _build(name, 'eval')
    model.init(sig, rng=fastmath.random.get_prng(1))
    path = str(root / name)
    signatures = {'generate': export.generate_signature(
        _build(name, 'predict'), MAX_LENGTH, eos_id=-1, batch_size=BATCH,
        input_length=length, jit_compile=False)}
    if name in BEAM_CASES:
      signatures['beam_search'] = export.beam_search_signature(
          _build(name, 'predict'), BEAM_LENGTH, n_beams=N_BEAMS, eos_id=-1,
          batch_size=BATCH, input_length=length, jit_compile=False)
    export.save_model(model, path, sig, signatures=signatures)
    out[name] = path, model
  return out


# -- One model, more settings ----------------------------------------------

_LM = dict(vocab_size=12, d_model=16, d_ff=32, n_layers=2, n_heads=2,
           max_len=16, dropout=0.0)
_PROMPT = np.array([[3, 4], [5, 6]], np.int32)


def _lm_predict():
  return models.TransformerLM(mode='predict', **_LM)


def _lm_twin(lm):
  model = _lm_predict()
  model.init(shapes.ShapeDtype((BATCH, 1), np.int32))
  model.weights = lm.weights
  return model


@pytest.fixture(scope='module')
def lm():
  model = models.TransformerLM(mode='eval', **_LM)
  model.init(shapes.ShapeDtype((BATCH, 8), np.int32),
             rng=fastmath.random.get_prng(5))
  return model


@pytest.fixture(scope='module')
def lm_saved(lm, tmp_path_factory):
  """`(path, signatures, eos)`: one TransformerLM with every kind of signature.

  `eos` is the third greedy token of row 0 of `_PROMPT`, so that row ends
  by then.
  """
  greedy = decoding.autoregressive_sample(
      _lm_twin(lm), inputs=_PROMPT, batch_size=BATCH, temperature=0.0,
      eos_id=-1, max_length=8)
  eos = int(greedy[0, 2])
  path = str(tmp_path_factory.mktemp('lm') / 'lm')
  sampled = dict(temperature=1.0, eos_id=-1, batch_size=BATCH,
                 input_length=2)
  export.save_model(lm, path, shapes.ShapeDtype((BATCH, 8), np.int32),
                    signatures={
                        'generate': export.generate_signature(
                            _lm_predict(), 10, batch_size=BATCH),
                        'generate_eos': export.generate_signature(
                            _lm_predict(), 8, eos_id=eos, batch_size=BATCH,
                            jit_compile=False),
                        'sample': export.generate_signature(
                            _lm_predict(), 8, **sampled),
                        'fresh': export.generate_signature(
                            _lm_predict(), 8, seed_input=False, **sampled),
                        'beam_search': export.beam_search_signature(
                            _lm_predict(), 4, batch_size=BATCH)})
  return path, tf.saved_model.load(path).signatures, eos


@pytest.fixture(scope='module')
def served(exported, lm_saved, tmp_path_factory):
  """name -> the signatures' outputs, from a process without tfnp_trax."""
  result = tmp_path_factory.mktemp('served') / 'out.npz'
  jobs = {name: (path, _inputs(name).tolist())
          for name, (path, _) in exported.items()}
  _isolated.run_without_tfnp_trax(f'''
      import json
      import numpy as np
      import tensorflow as tf
      # Grappler's passes take longer over these loops than running them.
      tf.config.optimizer.set_experimental_options(
          {{'disable_meta_optimizer': True}})
      out = {{}}
      for name, (path, inputs) in json.loads({json.dumps(jobs)!r}).items():
        inputs = tf.constant(inputs, tf.int32)
        sigs = tf.saved_model.load(path).signatures
        out[f'{{name}}/generate'] = sigs['generate'](
            inputs=inputs)['outputs'].numpy()
        if 'beam_search' in sigs:
          beams = sigs['beam_search'](inputs=inputs)
          out[f'{{name}}/beams'] = beams['outputs'].numpy()
          out[f'{{name}}/scores'] = beams['scores'].numpy()
      # Fresh keys are nondeterministic, which the tests' op determinism
      # forbids: they are drawn here, where it is off, as in a server.
      fresh = tf.saved_model.load({lm_saved[0]!r}).signatures['fresh']
      out['fresh'] = np.stack([fresh(inputs=tf.constant({_PROMPT.tolist()}))[
          'outputs'].numpy() for _ in range(3)])
      np.savez({str(result)!r}, **out)
  ''', timeout=600)
  return dict(np.load(result))


@pytest.mark.parametrize('name', sorted(CASES))
def test_generate_equals_autoregressive_sample(name, exported, served):
  _, model = exported[name]
  inputs = _inputs(name)
  # The sampler unaccelerated: the signatures here are not compiled either
  # (test_greedy_generate_with_xla_equals_the_sampler compares XLA's).
  want = decoding.autoregressive_sample(
      _predict_twin(name, model), inputs=inputs, batch_size=BATCH,
      temperature=0.0, eos_id=-1, max_length=MAX_LENGTH, accelerate=False)
  assert want.shape == (BATCH, MAX_LENGTH)
  got = served[f'{name}/generate']
  assert got.dtype == np.int32
  np.testing.assert_array_equal(got, want, err_msg=name)


@pytest.mark.parametrize('name', BEAM_CASES)
def test_beam_search_signature_equals_beam_search(name, exported, served):
  _, model = exported[name]
  beams = decoding.beam_search(
      _predict_twin(name, model), inputs=_inputs(name), batch_size=BATCH,
      n_beams=N_BEAMS, eos_id=-1, max_length=BEAM_LENGTH, accelerate=False)
  got, scores = served[f'{name}/beams'], served[f'{name}/scores']
  assert got.shape == (BATCH, N_BEAMS, BEAM_LENGTH)
  for k, (tokens, score) in enumerate(beams):
    np.testing.assert_array_equal(got[:, k], tokens,
                                  err_msg=f'{name} beam {k}')
    np.testing.assert_allclose(scores[:, k], score, rtol=1e-5, atol=1e-5)


def test_tokens_after_eos_are_zero_and_decoding_stops(lm, lm_saved):
  _, sigs, eos = lm_saved
  got = sigs['generate_eos'](inputs=tf.constant(_PROMPT))['outputs'].numpy()
  want = decoding.autoregressive_sample(
      _lm_twin(lm), inputs=_PROMPT, batch_size=BATCH, temperature=0.0,
      eos_id=eos, max_length=8)
  # The sampler stops once every row has produced eos and keeps the tokens
  # after it; the signature pads to max_length and zeroes them.
  expected = np.zeros((BATCH, 8), np.int32)
  for row in range(BATCH):
    ends = np.flatnonzero(want[row] == eos)
    stop = ends[0] + 1 if ends.size else want.shape[1]
    expected[row, :stop] = want[row, :stop]
  np.testing.assert_array_equal(got, expected)
  first = np.flatnonzero(got[0] == eos)[0]
  assert first <= 2 and not got[0, first + 1:].any()


def test_greedy_generate_with_xla_equals_the_sampler(lm, lm_saved):
  prompt = np.array([[1, 2, 3, 4, 5], [9, 8, 7, 6, 5]], np.int32)
  got = lm_saved[1]['generate'](inputs=tf.constant(prompt))['outputs']
  want = decoding.autoregressive_sample(
      _lm_twin(lm), inputs=prompt, batch_size=BATCH, temperature=0.0,
      eos_id=1, max_length=10)
  np.testing.assert_array_equal(got.numpy()[:, :want.shape[1]], want)


def test_saved_model_cli_runs_generate(lm, lm_saved, tmp_path):
  # TF Serving's rules: the session loader it uses runs the signature from
  # named tensors alone (TF Serving itself cannot be installed here).
  prompt = [[1, 2, 3, 4, 5], [9, 8, 7, 6, 5]]
  proc = subprocess.run(
      [sys.executable, '-m', 'tensorflow.python.tools.saved_model_cli', 'run',
       '--dir', lm_saved[0], '--tag_set', 'serve', '--signature_def',
       'generate', '--input_exprs', f'inputs={prompt}', '--outdir',
       str(tmp_path)], capture_output=True, text=True, timeout=240,
      env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2'), check=False)
  assert proc.returncode == 0, proc.stderr[-3000:]
  want = decoding.autoregressive_sample(
      _lm_twin(lm), inputs=np.array(prompt, np.int32), batch_size=BATCH,
      temperature=0.0, eos_id=1, max_length=10)
  got = np.load(tmp_path / 'outputs.npy')
  assert got.dtype == np.int32 and got.shape == (BATCH, 10)
  np.testing.assert_array_equal(got[:, :want.shape[1]], want)


def test_seeded_sampling_repeats_per_seed(lm, lm_saved, served):
  sigs = lm_saved[1]
  prompt = tf.constant(_PROMPT)
  runs = [sigs['sample'](inputs=prompt, seed=tf.constant(s))['outputs']
          .numpy() for s in (7, 7, 8)]
  np.testing.assert_array_equal(runs[0], runs[1])
  assert not np.array_equal(runs[0], runs[2])
  # The key of seed s is the sampler's get_prng(s): the same tokens.
  want = decoding.autoregressive_sample(
      _lm_twin(lm), inputs=_PROMPT, batch_size=BATCH, temperature=1.0,
      eos_id=-1, max_length=8, rng=fastmath.random.get_prng(7))
  np.testing.assert_array_equal(runs[0], want)
  assert set(sigs['fresh'].structured_input_signature[1]) == {'inputs'}
  fresh = served['fresh']
  assert len({f.tobytes() for f in fresh}) > 1


def test_signatures_follow_the_tf_serving_rules(lm_saved):
  generate, beam = lm_saved[1]['generate'], lm_saved[1]['beam_search']
  assert generate.structured_input_signature[1] == {
      'inputs': tf.TensorSpec([None, None], tf.int32, name='inputs')}
  assert generate.structured_outputs == {
      'outputs': tf.TensorSpec([BATCH, 10], tf.int32, name='outputs')}
  assert set(beam.structured_outputs) == {'outputs', 'scores'}
  assert beam.structured_outputs['outputs'].shape == (BATCH, 2, 4)


def test_wrong_batch_and_long_prompts_fail_clearly(lm_saved):
  generate = lm_saved[1]['generate']
  with pytest.raises(tf.errors.InvalidArgumentError,
                     match=r'Serial \(generate\): input `inputs` must have '
                           r"shape \(2, \\'None\\'\)"):
    generate(inputs=tf.zeros([3, 2], tf.int32))
  with pytest.raises(tf.errors.InvalidArgumentError,
                     match=r'leaves no room for max_length=10 tokens: the '
                           r'model holds 16 positions, so prompts may have '
                           r'at most 6 tokens'):
    generate(inputs=tf.zeros([BATCH, 7], tf.int32))
  # Six prompt tokens fit exactly.
  assert generate(inputs=tf.zeros([BATCH, 6], tf.int32))['outputs'].shape == (
      BATCH, 10)


@pytest.mark.parametrize('make, error, match', [
    (lambda: export.generate_signature(
        models.TransformerLM(mode='eval', **_LM), 4), ValueError,
     r"generate_signature: expected a model built with mode='predict'"),
    (lambda: export.generate_signature(
        models.TransformerLM(mode='predict', **_LM), 17), ValueError,
     r'generate_signature: max_length=17 after a prompt of 0 tokens needs '
     r'17 positions, but layer \w+ holds 16. Lower max_length to 16'),
    (lambda: export.generate_signature(
        models.TransformerLM(mode='predict', **_LM), 8, input_length=9),
     ValueError, r'needs 17 positions.*Lower max_length to 7'),
    (lambda: export.generate_signature(
        models.Transformer(12, d_model=8, d_ff=16, n_encoder_layers=1,
                           n_decoder_layers=1, n_heads=2, max_len=8,
                           mode='predict'), 4), ValueError,
     r'generate_signature: Serial takes a source sequence .* pass '
     r'input_length='),
    (lambda: export.generate_signature(
        models.TransformerLM(mode='predict', **_LM), 4, temperature=-1.0),
     ValueError, r'generate_signature: temperature must be >= 0, got -1.0'),
    (lambda: export.generate_signature(
        models.TransformerLM(mode='predict', **_LM), 0), ValueError,
     r'generate_signature: max_length must be at least 1, got 0'),
    (lambda: export.generate_signature(
        models.TransformerLM(mode='predict', **_LM), 4, batch_size=2.0),
     TypeError, r'generate_signature: batch_size must be an int, got 2.0'),
    (lambda: export.generate_signature('TransformerLM', 4), TypeError,
     r'generate_signature'),
    (lambda: export.beam_search_signature(
        models.TransformerLM(mode='predict', **_LM), 4, n_beams=0),
     ValueError, r'beam_search_signature: n_beams must be a positive int'),
    (lambda: export.beam_search_signature(
        models.TransformerLM(mode='predict', **_LM), 4,
        length_penalty=float('nan')), TypeError,
     r'beam_search_signature: length_penalty must be a finite number'),
], ids=['eval_mode', 'too_long', 'prompt_too_long', 'source_length',
        'temperature', 'max_length_zero', 'float_batch', 'not_a_layer',
        'no_beams', 'nan_penalty'])
def test_bad_arguments_fail_when_building(make, error, match):
  with pytest.raises(error, match=match):
    make()


def test_builder_rejects_weights_of_another_model(lm, tmp_path):
  other = dict(_LM, d_model=8)
  with pytest.raises(ValueError, match=r'generate_signature: the predict '
                                       r'model Serial has weights'):
    export.save_model(lm, str(tmp_path), shapes.ShapeDtype((BATCH, 8),
                                                           np.int32),
                      signatures={'generate': export.generate_signature(
                          models.TransformerLM(mode='predict', **other),
                          4)})
