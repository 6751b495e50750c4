"""Span-corruption noise (T5's) for masked-LM pipelines, and the MLM step.

`random_spans_noise_mask` marks about `noise_density` of a sequence as noise,
in spans of mean length `mean_noise_span_length`, alternating non-noise and
noise spans and starting with non-noise. `consume_noise_mask` then turns
(tokens, mask) into T5's (inputs, targets): in each, a span the other keeps
becomes one sentinel id counting down from `vocab_size - 1`.
"""

import numpy as np
import tensorflow as tf

from tfnp_trax.data import _tf_path
from tfnp_trax.data._combinators import Serial
from tfnp_trax.data._lm_inputs import generate_sequential_chunks
from tfnp_trax.data._tf_path import Step

__all__ = ['random_spans_noise_mask', 'generate_random_noise_mask',
           'consume_noise_mask', 'MLM']


def _segment_lengths(num_items, num_segments, seed):
  """Random split of `num_items` into `num_segments` positive lengths.

  Draws from NumPy's global stream (reseeded with `seed` if given): one
  shuffle of the `num_items - 1` gaps, `num_segments - 1` of them cuts.
  """
  cuts = np.arange(num_items - 1) < num_segments - 1
  if seed is not None:
    np.random.seed(seed)
  np.random.shuffle(cuts)
  segment_id = np.cumsum(np.pad(cuts, (1, 0), mode='constant'))
  return np.bincount(segment_id)


def random_spans_noise_mask(length, noise_density=0.15,
                            mean_noise_span_length=3.0, seed1=None,
                            seed2=None, example=None):
  """A boolean mask of `length` with random noise spans (T5's algorithm).

  The noise count is `round(length * noise_density)`, kept in
  `[1, length - 1]`; the span count is `round(noise / mean_span_length)`,
  at least 1. Both noise and non-noise tokens are split into that many
  spans at random, and the spans interleave, non-noise first.

  Args:
    length: the sequence length.
    noise_density: the fraction of tokens that are noise.
    mean_noise_span_length: the mean length of a noise span.
    seed1: if given, reseeds NumPy's global stream before the noise split.
    seed2: if given, reseeds it before the non-noise split.
    example: unused (kept for Trax's signature).

  Returns:
    A bool array of shape `(length,)`.
  """
  del example
  orig_length = length
  length = max(length, 2)  # Room for at least one token of each kind.
  num_noise = min(max(int(round(length * noise_density)), 1), length - 1)
  num_spans = max(int(round(num_noise / mean_noise_span_length)), 1)
  num_nonnoise = length - num_noise
  noise_lengths = _segment_lengths(num_noise, num_spans, seed1)
  nonnoise_lengths = _segment_lengths(num_nonnoise, num_spans, seed2)
  interleaved = np.stack([nonnoise_lengths, noise_lengths], axis=1).reshape(
      [num_spans * 2])
  span_starts = np.cumsum(interleaved)[:-1]
  start_marks = np.zeros(length)
  start_marks[span_starts] = 1
  is_noise = np.equal(np.cumsum(start_marks) % 2, 1)
  return is_noise[:orig_length]


def generate_random_noise_mask(noise_density=0.15, mean_noise_span_length=3.0,
                               seed1=None, seed2=None):
  """Pairs each token array with a `random_spans_noise_mask` for it.

  Python only (it draws from NumPy's global stream); on a Dataset it reads
  the Dataset as NumPy.
  """
  def python_fn(generator):
    for example in generator:
      yield (example, random_spans_noise_mask(
          len(example), noise_density=noise_density,
          mean_noise_span_length=mean_noise_span_length, seed1=seed1,
          seed2=seed2, example=example))
  return Step('generate_random_noise_mask', python_fn)


def consume_noise_mask(vocab_size=32100):
  """Turns `(tokens, noise_mask)` into T5's `(inputs, targets)`.

  Inputs keep the non-noise tokens and replace each noise span by one
  sentinel; targets do the reverse. Sentinels are `vocab_size - 1`,
  `vocab_size - 2`, ... in span order. Values come out as int64 or wider,
  as NumPy computes them.
  """
  if vocab_size is None:
    raise ValueError('consume_noise_mask: vocab_size is None; give the '
                     'vocabulary size (sentinels count down from it).')

  def to_sentinels(tokens, noise_mask):
    prev_noise = np.pad(noise_mask[:-1], [1, 0], mode='constant',
                        constant_values=False)
    first = np.logical_and(noise_mask, np.logical_not(prev_noise))
    later = np.logical_and(noise_mask, prev_noise)
    tokens = np.where(first, vocab_size - np.cumsum(first), tokens)
    return tokens[np.logical_not(later)]

  def python_fn(generator):
    for i, example in enumerate(generator):
      if not isinstance(example, (tuple, list)) or len(example) != 2:
        got = (f'{len(example)} values' if isinstance(example, (tuple, list))
               else type(example).__name__)
        raise ValueError(f'consume_noise_mask: example {i} has {got}; '
                         f'expected (tokens, noise_mask).')
      tokens, mask = example
      yield (to_sentinels(tokens, mask),
             to_sentinels(tokens, np.logical_not(mask)))

  def dataset_fn(ds):
    if _tf_path.element_arity(ds) != 2 or not _tf_path.is_tuple_element(ds):
      raise ValueError(f'consume_noise_mask: expected (tokens, noise_mask) '
                       f'elements, got {ds.element_spec}.')
    token_dtype = ds.element_spec[0].dtype
    _tf_path.check_ids_dtype('consume_noise_mask', 0, token_dtype)
    out_dtype = tf.as_dtype(np.result_type(token_dtype.as_numpy_dtype,
                                           np.int64))

    def to_sentinels_tf(tokens, noise_mask):
      noise_mask = tf.cast(noise_mask, tf.bool)
      prev_noise = tf.pad(noise_mask[:-1], [[1, 0]])
      first = tf.logical_and(noise_mask, tf.logical_not(prev_noise))
      later = tf.logical_and(noise_mask, prev_noise)
      sentinels = vocab_size - tf.cumsum(tf.cast(first, out_dtype))
      tokens = tf.where(first, sentinels, tf.cast(tokens, out_dtype))
      return tf.boolean_mask(tokens, tf.logical_not(later))

    return _tf_path.dataset_map(ds, lambda xs: (
        to_sentinels_tf(xs[0], xs[1]),
        to_sentinels_tf(xs[0], tf.logical_not(tf.cast(xs[1], tf.bool)))))
  return Step('consume_noise_mask', python_fn, dataset_fn)


def MLM(vocab_size=None, max_length=None, noise_density=0.15,  # pylint: disable=invalid-name
        mean_noise_span_length=3.0):
  """Masked-LM pipeline: chunk to `max_length`, add noise, make (in, out)."""
  return Serial(
      generate_sequential_chunks(max_length=max_length),
      generate_random_noise_mask(
          noise_density=noise_density,
          mean_noise_span_length=mean_noise_span_length),
      consume_noise_mask(vocab_size=vocab_size),
  )
