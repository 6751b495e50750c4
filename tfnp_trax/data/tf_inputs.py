"""TensorFlow data sources and preprocessing, as `trax.data.tf_inputs`.

* TFDS streams read offline from a local data_dir: `TFDS`, `data_streams`,
  `dataset_to_stream`, `download_and_prepare` (which never downloads).
* Tokenizers over Trax's vocabulary files (`.subword`, SentencePiece
  `.model`, BERT `vocab.txt`, or bytes): `Tokenize`, `detokenize`,
  `vocab_size`, `ConvertToUnicode`, `SentencePieceTokenize`. `Tokenize`
  also maps a `tf.data.Dataset`.
* `tf.data` preprocessors `fn(dataset, training, ...)`: `lm1b_preprocess`,
  `wmt_preprocess`, `cifar10_augmentation_preprocess`,
  `filter_dataset_on_len`, ...
* MathQA, AQuA and annotated-DROP text streams from local json files.
* BERT inputs and the GLUE/C4 streams that use t5's preprocessors (these
  need the optional `t5` package).

Example:
  >>> from tfnp_trax.data import tf_inputs
  >>> ids = next(tf_inputs.Tokenize(vocab_type='char')(iter(['ok'])))
  >>> ids.tolist()
  [111, 107]
"""

from tfnp_trax.data._mathqa import compute_nums
from tfnp_trax.data._mathqa import compute_ops
from tfnp_trax.data._mathqa import compute_program
from tfnp_trax.data._mathqa import compute_result
from tfnp_trax.data._mathqa import convert_float_to_mathqa
from tfnp_trax.data._mathqa import convert_to_subtract
from tfnp_trax.data._mathqa import execute_mathqa_dsl_program
from tfnp_trax.data._mathqa import execute_mathqa_program
from tfnp_trax.data._mathqa import is_number
from tfnp_trax.data._mathqa import process_single_mathqa_example
from tfnp_trax.data._mathqa_inputs import CreateAnnotatedDropInputs
from tfnp_trax.data._mathqa_inputs import CreateAquaInputs
from tfnp_trax.data._mathqa_inputs import CreateMathQAInputs
from tfnp_trax.data._mathqa_ops import compute_single_result
from tfnp_trax.data._mathqa_ops import single_op_to_python_command
from tfnp_trax.data._preprocessors import add_eos_to_output_features
from tfnp_trax.data._preprocessors import bair_robot_pushing_hparams
from tfnp_trax.data._preprocessors import bair_robot_pushing_preprocess
from tfnp_trax.data._preprocessors import c4_preprocess
from tfnp_trax.data._preprocessors import cifar10_augmentation_flatten_preprocess
from tfnp_trax.data._preprocessors import cifar10_augmentation_preprocess
from tfnp_trax.data._preprocessors import cifar10_no_augmentation_preprocess
from tfnp_trax.data._preprocessors import concat_preprocess
from tfnp_trax.data._preprocessors import downsampled_imagenet_flatten_bare_preprocess
from tfnp_trax.data._preprocessors import filter_dataset_on_len
from tfnp_trax.data._preprocessors import lm1b_preprocess
from tfnp_trax.data._preprocessors import lm_token_preprocessing
from tfnp_trax.data._preprocessors import no_preprocess
from tfnp_trax.data._preprocessors import pad_dataset_to_length
from tfnp_trax.data._preprocessors import squeeze_targets_preprocess
from tfnp_trax.data._preprocessors import truncate_dataset_on_len
from tfnp_trax.data._preprocessors import wmt_concat_preprocess
from tfnp_trax.data._preprocessors import wmt_preprocess
from tfnp_trax.data._t5_streams import BertDoubleSentenceInputs
from tfnp_trax.data._t5_streams import BertGlueEvalStream
from tfnp_trax.data._t5_streams import BertGlueTrainStream
from tfnp_trax.data._t5_streams import BertNextSentencePredictionInputs
from tfnp_trax.data._t5_streams import BertSingleSentenceInputs
from tfnp_trax.data._t5_streams import c4_bare_preprocess_fn
from tfnp_trax.data._t5_streams import CorpusToRandomChunks
from tfnp_trax.data._t5_streams import CreateBertInputs
from tfnp_trax.data._t5_streams import CreateDropInputs
from tfnp_trax.data._t5_streams import generic_text_dataset_preprocess_fn
from tfnp_trax.data._t5_streams import get_t5_preprocessor_by_name
from tfnp_trax.data._t5_streams import mask_random_tokens
from tfnp_trax.data._t5_streams import t2t_problems
from tfnp_trax.data._t5_streams import t5_data
from tfnp_trax.data._t5_streams import T5GlueEvalStream
from tfnp_trax.data._t5_streams import T5GlueEvalStreamsParallel
from tfnp_trax.data._t5_streams import T5GlueEvalTasks
from tfnp_trax.data._t5_streams import T5GlueTrainStream
from tfnp_trax.data._t5_streams import T5GlueTrainStreamsParallel
from tfnp_trax.data._tfds import data_streams
from tfnp_trax.data._tfds import DatasetNotPreparedError
from tfnp_trax.data._tfds import dataset_to_stream
from tfnp_trax.data._tfds import download_and_prepare
from tfnp_trax.data._tfds import TFDS
from tfnp_trax.data._tokenize import ConvertToUnicode
from tfnp_trax.data._tokenize import detokenize
from tfnp_trax.data._tokenize import SentencePieceTokenize
from tfnp_trax.data._tokenize import sentencepiece_tokenize
from tfnp_trax.data._tokenize import Tokenize
from tfnp_trax.data._tokenize import tokenize
from tfnp_trax.data._tokenize import vocab_size

__all__ = [
    'BertDoubleSentenceInputs', 'BertGlueEvalStream', 'BertGlueTrainStream',
    'BertNextSentencePredictionInputs', 'BertSingleSentenceInputs',
    'ConvertToUnicode', 'CorpusToRandomChunks', 'CreateAnnotatedDropInputs',
    'CreateAquaInputs', 'CreateBertInputs', 'CreateDropInputs',
    'CreateMathQAInputs', 'DatasetNotPreparedError', 'SentencePieceTokenize',
    'T5GlueEvalStream', 'T5GlueEvalStreamsParallel', 'T5GlueEvalTasks',
    'T5GlueTrainStream', 'T5GlueTrainStreamsParallel', 'TFDS', 'Tokenize',
    'add_eos_to_output_features', 'bair_robot_pushing_hparams',
    'bair_robot_pushing_preprocess', 'c4_bare_preprocess_fn', 'c4_preprocess',
    'cifar10_augmentation_flatten_preprocess',
    'cifar10_augmentation_preprocess', 'cifar10_no_augmentation_preprocess',
    'compute_nums', 'compute_ops', 'compute_program', 'compute_result',
    'compute_single_result', 'concat_preprocess', 'convert_float_to_mathqa',
    'convert_to_subtract', 'data_streams', 'dataset_to_stream', 'detokenize',
    'download_and_prepare', 'downsampled_imagenet_flatten_bare_preprocess',
    'execute_mathqa_dsl_program', 'execute_mathqa_program',
    'filter_dataset_on_len',
    'generic_text_dataset_preprocess_fn', 'get_t5_preprocessor_by_name',
    'is_number', 'lm1b_preprocess', 'lm_token_preprocessing',
    'mask_random_tokens', 'no_preprocess', 'pad_dataset_to_length',
    'process_single_mathqa_example', 'sentencepiece_tokenize',
    'single_op_to_python_command', 'squeeze_targets_preprocess',
    't2t_problems',
    't5_data', 'tokenize', 'truncate_dataset_on_len', 'vocab_size',
    'wmt_concat_preprocess', 'wmt_preprocess',
]
