"""Bad arguments to the samplers (decoding, beam search) and to export.

Every row here fails before a token is decoded or a function traced: the
arguments are checked first, so the rows stay fast.
"""

import numpy as np
import pytest
import tensorflow as tf

from tests.bad_inputs import _case
from tfnp_trax import export
from tfnp_trax import models
from tfnp_trax import shapes
import tfnp_trax.layers as tl
from tfnp_trax.supervised import decoding

Case = _case.Case
SD = shapes.ShapeDtype
F32 = np.float32

_LM = {}


def _lm():
  """One small predict-mode TransformerLM, shared by the rows."""
  if 'lm' not in _LM:
    model = models.TransformerLM(10, d_model=8, d_ff=16, n_layers=1,
                                 n_heads=2, max_len=16, mode='predict')
    model.init(SD((1, 1), np.int32))
    _LM['lm'] = model
  return _LM['lm']


def _sample(**kwargs):
  kwargs.setdefault('max_length', 3)
  return lambda: decoding.autoregressive_sample(_lm(), accelerate=False,
                                                **kwargs)


def _stream(**kwargs):
  # Not read: the stream checks its arguments when it is made.
  return lambda: decoding.autoregressive_sample_stream(
      _lm(), accelerate=False, **kwargs)


def _beam(**kwargs):
  kwargs.setdefault('max_length', 3)
  return lambda: decoding.beam_search(_lm(), accelerate=False, **kwargs)


def _transformer():
  """An encoder-decoder: it takes (source, tokens)."""
  if 'transformer' not in _LM:
    model = models.Transformer(10, d_model=8, d_ff=16, n_encoder_layers=1,
                               n_decoder_layers=1, n_heads=2, max_len=16,
                               mode='predict')
    model.init((SD((1, 4), np.int32), SD((1, 1), np.int32)))
    _LM['transformer'] = model
  return _LM['transformer']


def _mlp():
  model = tl.Serial(tl.Dense(4), tl.Relu(), tl.Dense(3))
  model.init(SD((2, 5), F32))
  return model


def _save(path_of=str, model=_mlp, signature=SD((2, 5), F32), **kwargs):
  return lambda tmp_path: export.save_model(model(), path_of(tmp_path),
                                            signature, **kwargs)


def _a_file(tmp_path):
  path = tmp_path / 'model.savedmodel'
  path.write_text('not a directory')
  return str(path)


def _adder():
  model = tl.Fn('Add', lambda a, b: a + b)
  model.init((SD((2, 5), F32), SD((2, 5), F32)))
  return model


CASES = [
    # -- autoregressive_sample ------------------------------------------------
    Case('decode_max_length_infinite', _sample(max_length=float('inf')),
         ValueError, r'autoregressive_sample: max_length must be finite, got '
         r'inf'),
    Case('decode_max_length_string', _sample(max_length='10'), TypeError,
         r"autoregressive_sample: max_length must be a number of tokens, got "
         r"'10' \(str\)"),
    Case('decode_batch_size_zero', _sample(batch_size=0), ValueError,
         r'autoregressive_sample: batch_size must be a positive int, got 0'),
    Case('decode_batch_size_float', _sample(batch_size=1.0), TypeError,
         r'autoregressive_sample: batch_size must be a positive int, got 1.0 '
         r'\(float\)'),
    Case('decode_stream_batch_size_negative', _stream(batch_size=-2),
         ValueError, r'autoregressive_sample: batch_size must be a positive '
         r'int, got -2'),
    Case('decode_eos_id_string', _sample(eos_id='</s>'), TypeError,
         r"autoregressive_sample: eos_id must be an int token id \(-1 or None "
         r"for none\), got '</s>' \(str\)"),
    Case('decode_eos_id_fraction', _sample(eos_id=1.5), TypeError,
         r'autoregressive_sample: eos_id must be an int token id'),
    Case('decode_temperature_string', _sample(temperature='hot'), TypeError,
         r"autoregressive_sample: temperature must be a number >= 0 \(0.0 is "
         r"greedy\), got 'hot' \(str\)"),
    Case('decode_temperature_nan', _sample(temperature=float('nan')),
         ValueError, r'autoregressive_sample: temperature must be >= 0, got '
         r'nan'),
    Case('decode_start_id_wrong_size',
         _sample(start_id=np.zeros((3, 1), np.int32)), ValueError,
         r'autoregressive_sample: start_id must be an int or have shape '
         r'\(batch_size=1, 1\), got shape \(3, 1\)'),
    Case('decode_start_id_fraction', _sample(start_id=0.5), TypeError,
         r'autoregressive_sample: start_id must be an int token id or int ids '
         r'of shape \(batch_size=1, 1\), got 0.5'),
    Case('decode_start_id_float_array',
         _sample(start_id=np.zeros((1, 1), F32)), TypeError,
         r'autoregressive_sample: start_id must hold integer token ids, got '
         r'dtype float32'),
    Case('decode_inputs_rank_1', _sample(inputs=np.ones(3, np.int32)),
         ValueError, r'autoregressive_sample: inputs must have shape '
         r'\(batch_size=1, length\), got shape \(3,\)'),
    Case('decode_rng_an_int_seed', _sample(rng=7), ValueError,
         r'autoregressive_sample: rng must be a key of shape \(2,\) \(e.g. '
         r'fastmath.random.get_prng\(0\)\), got 7'),
    Case('decode_encoder_decoder_without_source',
         lambda: decoding.autoregressive_sample(_transformer(), max_length=2,
                                                accelerate=False),
         ValueError, r'autoregressive_sample: model Serial takes 2 inputs '
         r'\(the source sequence, then the tokens decoded so far\), but '
         r'inputs is None'),
    # -- beam_search ----------------------------------------------------------
    Case('beam_encoder_decoder_without_source',
         lambda: decoding.beam_search(_transformer(), max_length=2,
                                      accelerate=False),
         ValueError, r'beam_search: model Serial takes 2 inputs .*but inputs '
         r'is None. Pass the source ids as inputs='),
    Case('beam_max_length_zero', _beam(max_length=0), ValueError,
         r'beam_search: max_length must be positive \(it takes '
         r'ceil\(max_length\) steps\), got 0'),
    Case('beam_batch_size_zero', _beam(batch_size=0), ValueError,
         r'beam_search: batch_size must be a positive int, got 0'),
    Case('beam_n_beams_float', _beam(n_beams=2.0), TypeError,
         r'beam_search: n_beams must be a positive int, got 2.0 \(float\)'),
    Case('beam_eos_id_string', _beam(eos_id='eos'), TypeError,
         r"beam_search: eos_id must be an int token id \(-1 or None for "
         r"none\), got 'eos'"),
    Case('beam_length_penalty_string', _beam(length_penalty='gnmt'),
         TypeError, r"beam_search: length_penalty must be a finite number "
         r"\(the exponent alpha.*got 'gnmt'"),
    Case('beam_inputs_float', _beam(inputs=np.ones((1, 2), F32)), TypeError,
         r'beam_search: inputs must be integer token ids, got dtype float32'),
    # -- save_model -----------------------------------------------------------
    Case('export_path_is_a_file', _save(_a_file), NotADirectoryError,
         r'save_model: path .*model.savedmodel is a file, but a SavedModel is '
         r'written as a directory'),
    Case('export_path_under_a_file',
         _save(lambda tmp_path: _a_file(tmp_path) + '/v1'),
         NotADirectoryError, r'save_model: cannot create the SavedModel '
         r'directory .*/v1: .*model.savedmodel above it is a file, not a '
         r'directory'),
    Case('export_path_not_a_string', _save(lambda tmp_path: 3), TypeError,
         r'save_model: path must be a directory path \(str or os.PathLike\), '
         r'got int \(3\)'),
    Case('export_model_not_a_layer', _save(model=lambda: 'mlp'), TypeError,
         r"save_model: expected a tfnp_trax layer .*got str \('mlp'\)"),
    Case('export_signature_a_string', _save(signature='float32[2,5]'),
         TypeError, r'save_model: input_signature entry 0 must be a '
         r'ShapeDtype .*got str'),
    Case('export_input_names_repeated',
         _save(model=_adder, signature=(SD((2, 5), F32), SD((2, 5), F32)),
               input_names=('x', 'x')), ValueError,
         r"save_model: input_names \('x', 'x'\) repeat \['x'\]; each must be "
         r"distinct"),
    Case('export_input_name_with_a_space', _save(input_names='my input'),
         ValueError, r"save_model: input_names must be names of letters, "
         r"digits, .* got 'my input'"),
    Case('export_output_names_repeated', _save(output_names=('y', 'y')),
         ValueError, r"save_model: output_names \('y', 'y'\) repeat"),
    Case('export_signatures_a_list', _save(signatures=[len]), TypeError,
         r'save_model: signatures must be a dict from signature name to '
         r'builder .*got list'),
    Case('export_signature_builder_not_callable',
         _save(signatures={'decode': 3}), TypeError,
         r"save_model: signatures\['decode'\] must be a builder, a callable "
         r"taking the LayerModule"),
    Case('export_signatures_replace_serving_default',
         _save(signatures={'serving_default': lambda module: None}),
         ValueError, r"save_model: signatures may not replace "
         r"'serving_default'"),
    Case('export_signature_builder_returns_none',
         _save(signatures={'decode': lambda module: None}), TypeError,
         r"save_model: signatures\['decode'\] returned NoneType; a builder "
         r"must return a tf.function"),
    Case('export_serving_function_without_a_module',
         lambda: export.serving_function(_mlp(), _mlp().weights,
                                         SD((2, 5), F32)), TypeError,
         r'serving_function: module must be the LayerModule that holds the '
         r'weights'),
    Case('export_loop_not_a_loop',
         lambda tmp_path: export.export_loop(_mlp(), str(tmp_path)),
         TypeError, r'export_loop: expected a training.Loop .*got Serial'),
    # -- TFLite, Keras, decode signatures --------------------------------------
    Case('tflite_optimizations_a_string',
         lambda: export.to_tflite(_mlp(), SD((2, 5), F32),
                                  optimizations='DEFAULT'), TypeError,
         r'to_tflite: optimizations must be a list of tf.lite.Optimize '
         r"values, .*got 'DEFAULT'"),
    Case('tflite_model_not_a_layer',
         lambda: export.to_tflite(tf.keras.layers.Dense(3), SD((2, 5), F32)),
         TypeError, r'to_tflite: expected a tfnp_trax layer .*got Dense'),
    Case('keras_batch_size_zero',
         lambda: export.AsKeras(_mlp(), batch_size=0), ValueError,
         r'AsKeras: batch_size must be a positive int, got 0'),
    Case('keras_batch_size_float',
         lambda: export.AsKeras(_mlp(), batch_size=2.5), TypeError,
         r'AsKeras: batch_size must be a positive int or None, got 2.5'),
    Case('keras_input_dtype_unknown',
         lambda: export.AsKeras(_mlp(), input_dtype=('float32', 'f32x')),
         TypeError, r"AsKeras: input_dtype must be a dtype \(or nested "
         r"dtypes, one per input\).*got 'f32x'"),
    Case('from_keras_no_inputs',
         lambda: export.FromKeras(tf.keras.layers.Dense(3), n_in=0),
         ValueError, r'FromKeras: n_in must be a positive int, got 0'),
    Case('from_keras_unknown_mode',
         lambda: export.FromKeras(tf.keras.layers.Dense(3), mode='infer'),
         ValueError, r"FromKeras: mode must be 'train', 'eval' or 'predict', "
         r"got 'infer'"),
    Case('from_keras_not_a_keras_layer',
         lambda: export.FromKeras(tl.Dense(3)), TypeError,
         r'FromKeras: expects a Keras 3 layer \(with stateless_call\), got '
         r'Dense'),
    Case('decode_signatures_batch_size_zero',
         lambda: export.decode_signatures(_lm(), batch_size=0), ValueError,
         r'decode_signatures: batch_size must be a positive int, got 0'),
    Case('decode_signatures_float_tokens',
         lambda: export.decode_signatures(_lm(), token_dtype=np.float32),
         TypeError, r'decode_signatures: token_dtype must be an integer dtype '
         r'\(token ids, e.g. np.int32\)'),
    Case('decode_signatures_not_a_layer',
         lambda: export.decode_signatures('TransformerLM'), TypeError,
         r"decode_signatures: expected a tfnp_trax layer .*got str"),
]


@pytest.mark.parametrize('case', _case.params(CASES))
def test_bad_input_raises_clear_error(case, tmp_path):
  _case.check(case, tmp_path)
