"""Trax's `trax.data`: input pipelines, plus offline data for examples.

The pipeline steps of `trax.data.inputs` are re-exported here, flat, as in
Trax (`data.Serial`, `data.Shuffle`, ...). The offline corpora feed the
examples and the `tfnp-trax train` command.
"""

from tfnp_trax.data import inputs
from tfnp_trax.data.copy_task import copy_batches
from tfnp_trax.data.digits import classification_batches
from tfnp_trax.data.digits import load_digits_split
from tfnp_trax.data.inputs import AddLossWeights
from tfnp_trax.data.inputs import AppendValue
from tfnp_trax.data.inputs import Batch
from tfnp_trax.data.inputs import BucketByLength
from tfnp_trax.data.inputs import CastTo
from tfnp_trax.data.inputs import ConcatenateToLMInput
from tfnp_trax.data.inputs import CountAndSkip
from tfnp_trax.data.inputs import Dup
from tfnp_trax.data.inputs import FilterByLength
from tfnp_trax.data.inputs import FilterEmptyExamples
from tfnp_trax.data.inputs import Inputs
from tfnp_trax.data.inputs import Log
from tfnp_trax.data.inputs import MLM
from tfnp_trax.data.inputs import PadToLength
from tfnp_trax.data.inputs import Parallel
from tfnp_trax.data.inputs import Prefetch
from tfnp_trax.data.inputs import PrefixLM
from tfnp_trax.data.inputs import Serial
from tfnp_trax.data.inputs import Shuffle
from tfnp_trax.data.inputs import TruncateToLength
from tfnp_trax.data.inputs import UnBatch
from tfnp_trax.data.inputs import UniformlySeek
from tfnp_trax.data.inputs import add_loss_weights
from tfnp_trax.data.inputs import addition_inputs
from tfnp_trax.data.inputs import batch
from tfnp_trax.data.inputs import batcher
from tfnp_trax.data.inputs import bucket_by_length
from tfnp_trax.data.inputs import consume_noise_mask
from tfnp_trax.data.inputs import debug_pipeline
from tfnp_trax.data.inputs import generate_random_noise_mask
from tfnp_trax.data.inputs import generate_sequential_chunks
from tfnp_trax.data.inputs import make_inputs
from tfnp_trax.data.inputs import random_spans_noise_mask
from tfnp_trax.data.inputs import sequence_copy_inputs
from tfnp_trax.data.inputs import shuffle
from tfnp_trax.data.inputs import simple_sequence_copy_inputs
from tfnp_trax.data.inputs import sine_inputs
from tfnp_trax.data.inputs import to_dataset
from tfnp_trax.data.inputs import to_stream
from tfnp_trax.data import text_encoder
from tfnp_trax.data import tf_inputs
from tfnp_trax.data.tf_inputs import BertGlueEvalStream
from tfnp_trax.data.tf_inputs import BertGlueTrainStream
from tfnp_trax.data.tf_inputs import BertNextSentencePredictionInputs
from tfnp_trax.data.tf_inputs import ConvertToUnicode
from tfnp_trax.data.tf_inputs import CorpusToRandomChunks
from tfnp_trax.data.tf_inputs import CreateAnnotatedDropInputs
from tfnp_trax.data.tf_inputs import CreateAquaInputs
from tfnp_trax.data.tf_inputs import CreateBertInputs
from tfnp_trax.data.tf_inputs import CreateDropInputs
from tfnp_trax.data.tf_inputs import CreateMathQAInputs
from tfnp_trax.data.tf_inputs import SentencePieceTokenize
from tfnp_trax.data.tf_inputs import T5GlueEvalStream
from tfnp_trax.data.tf_inputs import T5GlueEvalStreamsParallel
from tfnp_trax.data.tf_inputs import T5GlueEvalTasks
from tfnp_trax.data.tf_inputs import T5GlueTrainStream
from tfnp_trax.data.tf_inputs import T5GlueTrainStreamsParallel
from tfnp_trax.data.tf_inputs import TFDS
from tfnp_trax.data.tf_inputs import Tokenize
from tfnp_trax.data.tf_inputs import add_eos_to_output_features
from tfnp_trax.data.tf_inputs import cifar10_augmentation_flatten_preprocess
from tfnp_trax.data.tf_inputs import cifar10_augmentation_preprocess
from tfnp_trax.data.tf_inputs import data_streams
from tfnp_trax.data.tf_inputs import detokenize
from tfnp_trax.data.tf_inputs import downsampled_imagenet_flatten_bare_preprocess
from tfnp_trax.data.tf_inputs import filter_dataset_on_len
from tfnp_trax.data.tf_inputs import lm1b_preprocess
from tfnp_trax.data.tf_inputs import mask_random_tokens
from tfnp_trax.data.tf_inputs import sentencepiece_tokenize
from tfnp_trax.data.tf_inputs import squeeze_targets_preprocess
from tfnp_trax.data.tf_inputs import tokenize
from tfnp_trax.data.tf_inputs import truncate_dataset_on_len
from tfnp_trax.data.tf_inputs import vocab_size
from tfnp_trax.data.tf_inputs import wmt_concat_preprocess
from tfnp_trax.data.tf_inputs import wmt_preprocess
from tfnp_trax.data.pylm import lm_batches
from tfnp_trax.data.pylm import load_corpus
from tfnp_trax.data.pylm import unigram_bits_per_char
from tfnp_trax.data.pylm import window_batches

__all__ = [
    'copy_batches', 'classification_batches', 'load_digits_split',
    'lm_batches', 'load_corpus', 'unigram_bits_per_char', 'window_batches',
    'AddLossWeights', 'AppendValue', 'Batch', 'BucketByLength', 'CastTo',
    'ConcatenateToLMInput', 'CountAndSkip', 'Dup', 'FilterByLength',
    'FilterEmptyExamples', 'Inputs', 'Log', 'MLM', 'PadToLength', 'Parallel',
    'Prefetch', 'PrefixLM', 'Serial', 'Shuffle', 'TruncateToLength',
    'UnBatch', 'UniformlySeek', 'add_loss_weights', 'addition_inputs',
    'batch', 'batcher', 'bucket_by_length', 'consume_noise_mask',
    'debug_pipeline', 'generate_random_noise_mask',
    'generate_sequential_chunks', 'make_inputs', 'random_spans_noise_mask',
    'sequence_copy_inputs', 'shuffle', 'simple_sequence_copy_inputs',
    'sine_inputs', 'to_dataset', 'to_stream',
    # trax.data.tf_inputs
    'text_encoder', 'tf_inputs',
    'BertGlueEvalStream', 'BertGlueTrainStream',
    'BertNextSentencePredictionInputs', 'ConvertToUnicode',
    'CorpusToRandomChunks', 'CreateAnnotatedDropInputs', 'CreateAquaInputs',
    'CreateBertInputs', 'CreateDropInputs', 'CreateMathQAInputs',
    'SentencePieceTokenize', 'T5GlueEvalStream', 'T5GlueEvalStreamsParallel',
    'T5GlueEvalTasks', 'T5GlueTrainStream', 'T5GlueTrainStreamsParallel',
    'TFDS', 'Tokenize', 'add_eos_to_output_features',
    'cifar10_augmentation_flatten_preprocess',
    'cifar10_augmentation_preprocess', 'data_streams', 'detokenize',
    'downsampled_imagenet_flatten_bare_preprocess', 'filter_dataset_on_len',
    'lm1b_preprocess', 'mask_random_tokens', 'sentencepiece_tokenize',
    'squeeze_targets_preprocess', 'tokenize', 'truncate_dataset_on_len',
    'vocab_size', 'wmt_concat_preprocess', 'wmt_preprocess',
]
