"""Bad inputs at the edges: data pipelines, export, decoding and the CLI.

Command-line entry points run in-process through `_case.call_cli`: a usage
error must come back as exit code 2 with a message on stderr (raised here
as `CliExit`), never as a traceback.
"""

import numpy as np
import pytest
import tensorflow as tf

from tests.bad_inputs import _case
from tfnp_trax import cli
from tfnp_trax import data
from tfnp_trax import debug
from tfnp_trax import export
from tfnp_trax import models
from tfnp_trax import shapes
from tfnp_trax import trainer as trainer_main
import tfnp_trax.layers as tl
from tfnp_trax.supervised import decoding

Case = _case.Case
CliExit = _case.CliExit
LayerError = tl.LayerError
SD = shapes.ShapeDtype
F32 = np.float32


def _pairs(n=6):
  return iter([(np.ones(3, np.int32), np.ones(3, np.int32))] * n)


def _first(make_step, stream=None):
  """Builds a data step and pulls one example through it."""
  return lambda: next(make_step()(_pairs() if stream is None else stream))


def _mlp():
  model = tl.Serial(tl.Dense(4), tl.Relu(), tl.Dense(3))
  model.init(SD((2, 5), F32))
  return model


def _save(signature, **kwargs):
  return lambda tmp_path: export.save_model(_mlp(), str(tmp_path),
                                            signature, **kwargs)


def _serve_wrong_shape(tmp_path):
  export.save_model(_mlp(), str(tmp_path), SD((None, 5), F32))
  serve = tf.saved_model.load(str(tmp_path)).signatures['serving_default']
  return serve(inputs=tf.ones((2, 6)))


def _keras_wrong_width():
  layer = export.AsKeras(_mlp(), batch_size=2)
  return layer(tf.ones((2, 7)))


def _lm():
  model = models.TransformerLM(10, d_model=8, d_ff=16, n_layers=1,
                               n_heads=2, max_len=16, mode='predict')
  model.init(SD((1, 1), np.int32))
  return model


def _sample(model=_lm, **kwargs):
  # accelerate=False: eager steps trace nothing, so the rows stay fast, and
  # debug-mode checks raise at once (XLA would drop their Assert ops).
  return lambda: decoding.autoregressive_sample(
      model(), max_length=3, accelerate=False, **kwargs)


def _debug(fn):
  def call():
    with debug.enabled():
      return fn()
  return call


def _train_lm():
  return models.TransformerLM(10, d_model=8, d_ff=16, n_layers=1, n_heads=2,
                              max_len=16, mode='train')


def _tfnp_trax(*argv):
  return lambda: _case.call_cli(cli.run, ['tfnp-trax', *argv])


def _trainer(*argv):
  return lambda: _case.call_cli(trainer_main.main, ['trainer', *argv])


CASES = [
    # -- Data pipelines (tfnp_trax.data) ---------------------------------------
    Case('data_batch_size_zero', _first(lambda: data.Batch(0)), ValueError,
         r'Batch: batch_size must be positive, got 0'),
    Case('data_batch_ranks_differ',
         _first(lambda: data.Batch(2),
                iter([(np.ones(3),), (np.ones((3, 2)),)])),
         ValueError, r'Batch: position 0 of example 1 has shape \(3, 2\), but '
         r'example 0 has shape \(3,\)'),
    Case('data_shuffle_negative_queue', _first(lambda: data.Shuffle(-1)),
         ValueError,
         r'Shuffle: queue_size \(-1\) is less than 1'),
    Case('data_tokenize_unknown_vocab_type',
         _first(lambda: data.Tokenize(vocab_type='bogus'),
                iter([('hi', 'hi')] * 3)),
         ValueError, r'Tokenize: vocab_type must be "subword", "char", '
         r'.* but got bogus'),
    Case('data_lm_input_longer_than_pad_length',
         _first(lambda: data.ConcatenateToLMInput(pad_to_length=2)), ValueError,
         r'ConcatenateToLMInput: example lengths \(3, 3\) longer than '
         r'pad_to_length \(2\)'),
    Case('data_add_loss_weights_without_targets',
         _first(lambda: data.AddLossWeights(id_to_mask=0),
                iter([(np.ones(3),)] * 3)),
         ValueError, r'AddLossWeights: example 0 has 1 value\(s\); masking '
         r'id 0 needs \(inputs, targets\[, weights\]\)'),
    Case('data_filter_length_key_out_of_range',
         _first(lambda: data.FilterByLength(max_length=2, length_keys=[5])),
         ValueError, r'FilterByLength: length_keys names position 5, but '
         r'examples have 2 value\(s\)'),
    Case('data_batch_size_float', _first(lambda: data.Batch(2.5)), TypeError,
         r'Batch: batch_size must be a positive int, got 2.5 \(float\)'),
    Case('data_batch_size_string', _first(lambda: data.Batch('4')), TypeError,
         r"Batch: batch_size must be a positive int, got '4' \(str\)"),
    Case('data_serial_of_a_non_callable', lambda: data.Serial(3), TypeError,
         r'Serial: step 0 must be a callable stream function .*got 3'),
    # len(boundaries) batch sizes is accepted (Trax's eval buckets rely on
    # it): there is no bucket for longer examples, which then raise.
    Case('data_bucket_batch_sizes_wrong_length',
         _first(lambda: data.BucketByLength([4, 8], [2])), ValueError,
         r'BucketByLength: 2 boundaries \[4, 8\] need 3 batch sizes .* or '
         r'2 .* but 1 batch sizes \[2\] were given'),
    Case('data_bucket_example_beyond_the_last_boundary',
         _first(lambda: data.BucketByLength([2], [2])), ValueError,
         r'BucketByLength: an example of length 3 is longer than the last '
         r'boundary 2, and there is no bucket for it'),
    # -- Export (SavedModel, Keras, TFLite) ------------------------------------
    Case('export_signature_wrong_width', _save(SD((2, 7), F32)), LayerError,
         r'Dense_4: input last dim 7 does not match weights in_dim 5'),
    Case('export_signature_plain_shape', _save((2, 5)), TypeError,
         r'save_model: input_signature must be a ShapeDtype .*got the plain '
         r'shape \(2, 5\)'),
    Case('export_signature_too_many_inputs',
         _save((SD((2, 5), F32), SD((2, 5), F32))), ValueError,
         r'save_model: layer Serial takes 1 input\(s\) but the '
         r'input_signature describes 2'),
    Case('export_weights_of_another_tree',
         _save(SD((2, 5), F32), weights=_mlp().weights[:2]), ValueError,
         r'save_model: weights of Serial: the layer holds 4 arrays but 2 '
         r'were given'),
    Case('export_not_initialized',
         lambda tmp_path: export.save_model(tl.Dense(3), str(tmp_path),
                                            SD((2, 5), F32)), ValueError,
         r'save_model: layer Dense_3 is not initialized'),
    Case('export_serving_call_wrong_shape', _serve_wrong_shape,
         tf.errors.InvalidArgumentError,
         r'Serial \(serving_default\): input `inputs` must have shape '
         r".*got shape\] \[2 6\]"),
    Case('tflite_unknown_batch_size',
         lambda: export.to_tflite(_mlp(), SD((None, 5), F32)), ValueError,
         r'to_tflite: Serial needs fully known input sizes'),
    Case('tflite_signature_wrong_width',
         lambda: export.to_tflite(_mlp(), SD((2, 7), F32)), LayerError,
         r'Dense_4: input last dim 7 does not match weights in_dim 5'),
    Case('keras_wrap_not_a_layer', lambda: export.AsKeras('dense'), TypeError,
         r'AsKeras: expected a tfnp_trax layer, a LayerFactory or its config '
         r"dict, got str \('dense'\)"),
    Case('keras_call_wrong_width', _keras_wrong_width, RuntimeError,
         r'Dense_4: input last dim 7 does not match weights in_dim 5'),
    # -- Decoding (tfnp_trax.supervised.decoding) ------------------------------
    Case('decode_negative_temperature', _sample(temperature=-1.0),
         ValueError, r'autoregressive_sample: temperature must be >= 0, got '
         r'-1.0'),
    Case('decode_inputs_batch_mismatch',
         _sample(inputs=np.ones((2, 3), np.int32), batch_size=1), ValueError,
         r'autoregressive_sample: inputs must have shape \(batch_size=1, '
         r'length\), got shape \(2, 3\)'),
    Case('decode_start_id_beyond_vocab_debug', _debug(_sample(start_id=50)),
         LayerError, r'Embedding_10_8: ids: expected ids in \[0, 10\) but '
         r'got 1 of 1 outside \(min 50, max 50'),
    Case('decode_uninitialized_model',
         _sample(lambda: models.TransformerLM(
             10, d_model=8, d_ff=16, n_layers=1, n_heads=2, max_len=16,
             mode='predict')), ValueError,
         r'autoregressive_sample: model Serial is not initialized; '
         r'call model.init\(shapes.ShapeDtype\(\(1, 1\), jnp.int32\)\)'),
    Case('decode_float_inputs', _sample(inputs=np.ones((1, 3), F32)),
         TypeError, r'autoregressive_sample: inputs must be integer token '
         r'ids, got dtype float32'),
    Case('decode_train_mode_model', _sample(_train_lm), ValueError,
         r"autoregressive_sample: expected a model built with mode='predict' "
         r"\(it keeps a decoding cache in its state\), but Serial's "
         r"layers are in mode \['train'\]"),
    # -- Command line: tfnp-trax / python -m tfnp_trax.cli, and the trainer ----
    Case('cli_unknown_model', _tfnp_trax('train', '--model=gpt9'), CliExit,
         r'exit 2: tfnp-trax train: flag --model=gpt9: value should be one '
         r'of <mlp\|transformer_lm\|resnet_frn>'),
    Case('cli_unknown_strategy', _tfnp_trax('train', '--strategy=gpu9'),
         CliExit, r'exit 2: .*--strategy=gpu9: value should be one of '
         r'<auto\|default\|one_device\|mirrored\|multiworker\|tpu>'),
    Case('cli_unknown_task_default_command', _tfnp_trax('--task=imagenet'),
         CliExit, r'exit 2: .*--task=imagenet: value should be one of '
         r'<pylm\|digits\|copy>'),
    Case('cli_non_integer_steps', _tfnp_trax('train', '--steps=ten'),
         CliExit, r"exit 2: .*--steps=ten: invalid literal for int\(\)"),
    Case('cli_unknown_command', _tfnp_trax('serve'), CliExit,
         r"exit 2: tfnp-trax: unknown command 'serve'; choose one of "
         r"\['export', 'rl', 'train'\]"),
    Case('cli_rl_unknown_flag', _tfnp_trax('rl', '--algorithm=foo'), CliExit,
         r"exit 2: tfnp-trax rl: Unknown command line flag 'algorithm'"),
    Case('trainer_unknown_flag', _trainer('--frobnicate=1'), CliExit,
         r"exit 2: trainer: Unknown command line flag 'frobnicate'"),
    Case('trainer_no_config', _trainer(), CliExit,
         r'exit 2: trainer: give --config_file=X.gin'),
    Case('trainer_misspelled_gin_parameter',
         _trainer('--config=train.stepz = 3'), CliExit,
         r"exit 2: trainer: Gin configurable 'train' has no parameter "
         r"'stepz'. Did you mean 'steps'\?"),
    Case('trainer_missing_config_file',
         _trainer('--config_file=/nonexistent/x.gin'), CliExit,
         r'exit 2: trainer: Unable to open file: /nonexistent/x.gin'),
]


@pytest.mark.parametrize('case', _case.params(CASES))
def test_bad_input_raises_clear_error(case, tmp_path):
  _case.check(case, tmp_path)
