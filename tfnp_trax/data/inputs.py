"""Trax's `trax.data.inputs`: input pipelines as chains of stream functions.

A pipeline step is a function from a stream of examples to another stream,
and `Serial` chains them, as in Trax::

  from tfnp_trax import data

  pipeline = data.Serial(
      lambda _: my_examples(),          # a source: (tokens, tokens) tuples
      data.Shuffle(),
      data.FilterByLength(max_length=2048),
      data.BucketByLength(boundaries=[32, 128, 512],
                          batch_sizes=[64, 16, 4, 1]),
      data.AddLossWeights(id_to_mask=0),
  )
  batches = pipeline()

A stream is a Python iterator of tuples of NumPy arrays (Trax's contract, so
your own `def step(generator): ...` fits anywhere), or a `tf.data.Dataset`:
give the pipeline a Dataset source (or convert with `to_dataset`) and each
step of this module runs as tf.data ops (parallel `map`, `padded_batch`,
`scan`, ...) with the same examples in the same order; inside `Serial`,
`Tokenize`, `Dup`, `Shuffle`, `FilterByLength`, `BucketByLength` and
`AddLossWeights` work on blocks of examples at a time. `to_stream` reads a
Dataset back as NumPy. Steps that need Python state read the Dataset as
NumPy and continue in Python.
"""

from tfnp_trax.data._batcher import Inputs
from tfnp_trax.data._batcher import batch_fn
from tfnp_trax.data._batcher import batcher
from tfnp_trax.data._batcher import make_additional_stream
from tfnp_trax.data._batcher import make_inputs
from tfnp_trax.data._batcher import make_parallel_stream
from tfnp_trax.data._combinators import AppendValue
from tfnp_trax.data._combinators import Batch
from tfnp_trax.data._combinators import CastTo
from tfnp_trax.data._combinators import Dup
from tfnp_trax.data._combinators import Log
from tfnp_trax.data._combinators import Parallel
from tfnp_trax.data._combinators import Prefetch
from tfnp_trax.data._combinators import Serial
from tfnp_trax.data._combinators import Shuffle
from tfnp_trax.data._combinators import UnBatch
from tfnp_trax.data._combinators import batch
from tfnp_trax.data._combinators import debug_pipeline
from tfnp_trax.data._combinators import shuffle
from tfnp_trax.data._counters import CountAndSkip
from tfnp_trax.data._counters import UniformlySeek
from tfnp_trax.data._counters import count_and_skip
from tfnp_trax.data._counters import data_counters
from tfnp_trax.data._counters import load_data_counters
from tfnp_trax.data._counters import save_data_counters
from tfnp_trax.data._length import BucketByLength
from tfnp_trax.data._length import FilterByLength
from tfnp_trax.data._length import FilterEmptyExamples
from tfnp_trax.data._length import PadToLength
from tfnp_trax.data._length import TruncateToLength
from tfnp_trax.data._length import bucket_by_length
from tfnp_trax.data._lm_inputs import AddLossWeights
from tfnp_trax.data._lm_inputs import ConcatenateToLMInput
from tfnp_trax.data._lm_inputs import PrefixLM
from tfnp_trax.data._lm_inputs import add_loss_weights
from tfnp_trax.data._lm_inputs import generate_sequential_chunks
from tfnp_trax.data._noise_masks import MLM
from tfnp_trax.data._noise_masks import consume_noise_mask
from tfnp_trax.data._noise_masks import generate_random_noise_mask
from tfnp_trax.data._noise_masks import random_spans_noise_mask
from tfnp_trax.data._padding import pad_to_max_dims
from tfnp_trax.data._synthetic import addition_input_stream
from tfnp_trax.data._synthetic import addition_inputs
from tfnp_trax.data._synthetic import lower_endian_to_number
from tfnp_trax.data._synthetic import number_to_lower_endian
from tfnp_trax.data._synthetic import random_inputs
from tfnp_trax.data._synthetic import random_number_lower_endian
from tfnp_trax.data._synthetic import sequence_copy_inputs
from tfnp_trax.data._synthetic import simple_sequence_copy_inputs
from tfnp_trax.data._synthetic import sine_inputs
from tfnp_trax.data._tf_path import Step
from tfnp_trax.data._tf_path import to_dataset
from tfnp_trax.data._tf_path import to_stream

__all__ = [
    'AddLossWeights', 'AppendValue', 'Batch', 'BucketByLength', 'CastTo',
    'ConcatenateToLMInput', 'CountAndSkip', 'Dup', 'FilterByLength',
    'FilterEmptyExamples', 'Inputs', 'Log', 'MLM', 'PadToLength', 'Parallel',
    'Prefetch', 'PrefixLM', 'Serial', 'Shuffle', 'Step', 'TruncateToLength',
    'UnBatch', 'UniformlySeek', 'add_loss_weights', 'addition_input_stream',
    'addition_inputs', 'batch', 'batch_fn', 'batcher', 'bucket_by_length',
    'consume_noise_mask', 'count_and_skip', 'data_counters', 'debug_pipeline',
    'generate_random_noise_mask', 'generate_sequential_chunks',
    'load_data_counters', 'lower_endian_to_number', 'make_additional_stream',
    'make_inputs', 'make_parallel_stream', 'number_to_lower_endian',
    'pad_to_max_dims', 'random_inputs', 'random_number_lower_endian',
    'random_spans_noise_mask', 'save_data_counters', 'sequence_copy_inputs',
    'shuffle', 'simple_sequence_copy_inputs', 'sine_inputs', 'to_dataset',
    'to_stream',
]
