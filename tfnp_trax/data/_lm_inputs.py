"""Language-model steps of `trax.data.inputs`: loss weights, LM inputs."""

import numbers

import numpy as np
import tensorflow as tf

from tfnp_trax.data import _tf_path
from tfnp_trax.data._combinators import debug_pipeline
from tfnp_trax.data._tf_path import Step

__all__ = ['AddLossWeights', 'add_loss_weights', 'ConcatenateToLMInput',
           'PrefixLM', 'generate_sequential_chunks']


def _check_ids(where, pos, x):
  if np.asarray(x).dtype.kind in 'SUO':
    raise ValueError(f'{where}: position {pos} holds {np.asarray(x).dtype} '
                     f'values where token ids are expected; tokenize text '
                     f'first (e.g. data.Tokenize).')


def _weights(example, id_to_mask, where, index):
  """Trax's rule: float32 weights (ones, or the given ones), 0 at padding."""
  n = len(example)
  if n < 2 or n > 3:
    if id_to_mask is not None:
      raise ValueError(f'{where}: example {index} has {n} value(s); masking '
                       f'id {id_to_mask} needs (inputs, targets[, weights]).')
    return example
  _check_ids(where, 1, example[1])
  if n == 2:
    weights = np.ones_like(example[1]).astype(np.float32)
  else:
    weights = example[2].astype(np.float32)
  if id_to_mask is not None:
    weights = weights * (1.0 - np.equal(example[1], id_to_mask).astype(
        np.float32))
  return (example[0], example[1], weights)


def add_loss_weights(generator, id_to_mask=None):
  """Adds float32 loss weights to `(inputs, targets)` examples.

  `(inputs, targets)` gets weights of ones shaped like `targets`;
  `(inputs, targets, weights)` keeps its weights, as float32. With
  `id_to_mask`, weights are 0 where `targets == id_to_mask`. Examples of
  other lengths pass unchanged (and cannot be masked).

  Args:
    generator: an iterator of example tuples.
    id_to_mask: the padding id, or None.

  Yields:
    `(inputs, targets, weights)` examples.
  """
  for i, example in enumerate(generator):
    yield _weights(example, id_to_mask, 'AddLossWeights', i)


def _loss_weights_fn(arity, tupled, targets_dtype, id_to_mask,
                     targets_fn=lambda t: t):
  """`(inputs, targets[, weights])` -> with float32 weights; None: unchanged.

  Works on one example or on a block (ragged values), as TensorFlow's ops
  dispatch on both; `targets_fn` gives the targets in their own dtype, to
  compare with `id_to_mask`.
  """
  if not tupled or arity < 2 or arity > 3:
    if id_to_mask is not None:
      raise ValueError(f'AddLossWeights: examples have {arity} value(s); '
                       f'masking id {id_to_mask} needs '
                       f'(inputs, targets[, weights]).')
    return None
  _tf_path.check_ids_dtype('AddLossWeights', 1, targets_dtype)

  def add(xs):
    targets = xs[1]
    if id_to_mask is None:
      weights = (tf.ones_like(targets, tf.float32) if arity == 2
                 else tf.cast(xs[2], tf.float32))
      return (xs[0], targets, weights)
    ids = targets_fn(targets)
    kept = tf.cast(tf.not_equal(ids, tf.cast(id_to_mask, ids.dtype)),
                   tf.float32)
    # Ones times the mask is the mask: one op less per batch.
    weights = kept if arity == 2 else tf.cast(xs[2], tf.float32) * kept
    return (xs[0], targets, weights)
  return add


def _add_loss_weights_dataset(ds, id_to_mask):
  tupled = _tf_path.is_tuple_element(ds)
  add = _loss_weights_fn(_tf_path.element_arity(ds), tupled,
                         ds.element_spec[1].dtype if tupled else None,
                         id_to_mask)
  return ds if add is None else _tf_path.dataset_map(ds, add)


def _add_loss_weights_blocks(blocks, id_to_mask):
  dtypes = blocks.dtypes
  add = _loss_weights_fn(
      len(dtypes), blocks.tupled, dtypes[min(1, len(dtypes) - 1)],
      id_to_mask, lambda t: tf.cast(t, dtypes[1]))
  if add is None:
    return blocks
  return blocks.map(add, dtypes=(dtypes[0], dtypes[1], tf.float32))


def AddLossWeights(id_to_mask=None):  # pylint: disable=invalid-name
  """Adds loss weights (see `add_loss_weights`)."""
  if id_to_mask is not None and (isinstance(id_to_mask, bool) or
                                 not isinstance(id_to_mask, numbers.Real)):
    raise TypeError(f'AddLossWeights: id_to_mask must be the int id of '
                    f'padding (e.g. 0) or None, got {id_to_mask!r} '
                    f'({type(id_to_mask).__name__}).')
  return Step('AddLossWeights',
              debug_pipeline(lambda g: add_loss_weights(g, id_to_mask)),
              lambda ds: _add_loss_weights_dataset(ds, id_to_mask),
              lambda blocks: _add_loss_weights_blocks(blocks, id_to_mask))


def ConcatenateToLMInput(pad_to_length=None):  # pylint: disable=invalid-name
  """Joins `(inputs, targets)` into one LM sequence, weighted on targets.

  `(x, y)` becomes `(xy, xy, w)` with `xy = concat(x, y)` and `w` 0 over `x`
  and 1 over `y` (in `x`'s dtype, as Trax), both zero-padded at the end to
  `pad_to_length` if given. `(x,)` and a bare `x` become `(x, x)`.
  """
  def join(x, y, where):
    _check_ids(where, 0, x)
    _check_ids(where, 1, y)
    both = np.concatenate((x, y), axis=-1)
    weights = np.concatenate((np.zeros_like(x), np.ones_like(y)))
    if pad_to_length is not None:
      extra = pad_to_length - (x.shape[0] + y.shape[0])
      if extra < 0:
        raise ValueError(f'ConcatenateToLMInput: example lengths '
                         f'({x.shape[0]}, {y.shape[0]}) longer than '
                         f'pad_to_length ({pad_to_length}).')
      weights = np.pad(weights, (0, extra), 'constant')
      both = np.pad(both, (0, extra), 'constant')
    return (both, both, weights)

  def python_fn(generator):
    for example in generator:
      if isinstance(example, (list, tuple)) and len(example) == 2:
        yield join(example[0], example[1], 'ConcatenateToLMInput')
      elif isinstance(example, (list, tuple)) and len(example) == 1:
        yield (example[0], example[0])
      elif isinstance(example, np.ndarray):
        yield (example, example)
      else:
        got = (f'a tuple of {len(example)}'
               if isinstance(example, (list, tuple))
               else type(example).__name__)
        raise ValueError(f'ConcatenateToLMInput: expected (inputs, targets), '
                         f'(x,) or an array, got {got}: {example!r}')

  def dataset_fn(ds):
    n = _tf_path.element_arity(ds)
    if not _tf_path.is_tuple_element(ds):
      return ds.map(lambda x: (x, x))
    if n == 1:
      return ds.map(lambda x: (x, x))
    if n != 2:
      raise ValueError(f'ConcatenateToLMInput: expected (inputs, targets), '
                       f'(x,) or an array, got tuples of {n}.')
    for pos in (0, 1):
      _tf_path.check_ids_dtype('ConcatenateToLMInput', pos,
                               ds.element_spec[pos].dtype)

    def join_tf(xs):
      x, y = xs
      both = tf.concat([x, y], axis=-1)
      weights = tf.concat([tf.zeros_like(x), tf.ones_like(y)], axis=0)
      if pad_to_length is not None:
        extra = pad_to_length - (tf.shape(x)[0] + tf.shape(y)[0])
        check = tf.debugging.assert_non_negative(
            extra, message=f'ConcatenateToLMInput: example lengths longer '
                           f'than pad_to_length ({pad_to_length})')
        with tf.control_dependencies([check]):
          extra = tf.identity(extra)
        both = tf.pad(both, [[0, extra]])
        weights = tf.pad(weights, [[0, extra]])
      return (both, both, weights)
    return _tf_path.dataset_map(ds, join_tf)
  return Step('ConcatenateToLMInput', debug_pipeline(python_fn), dataset_fn)


def _chunks_dataset(ds, bounds_fn):
  """Splits each bare-tensor element into slices given by `bounds_fn(n)`."""
  if _tf_path.is_tuple_element(ds):
    raise ValueError('expected a stream of bare token arrays, got tuples of '
                     f'{_tf_path.element_arity(ds)}.')

  def split(x):
    starts, ends = bounds_fn(tf.shape(x, out_type=tf.int64)[0])
    return tf.data.Dataset.from_tensor_slices((starts, ends)).map(
        lambda s, e: x[s:e])
  return ds.flat_map(split)


def PrefixLM(input_length=128, output_length=512):  # pylint: disable=invalid-name
  """Cuts token arrays into `(prefix, continuation)` pairs, left to right.

  While `input_length` tokens remain with at least one more after them, the
  next `input_length` tokens are the input and up to `output_length`
  following ones the target; what is left at the end is dropped.
  """
  for name, value in (('input_length', input_length),
                      ('output_length', output_length)):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
      raise TypeError(f'PrefixLM: {name} must be an int >= 0, got {value!r} '
                      f'({type(value).__name__}).')
    if value < 0:
      raise ValueError(f'PrefixLM: {name} must be >= 0, got {value}.')
  if input_length + output_length == 0:
    # No pair would advance through the tokens: an endless run of empties.
    raise ValueError('PrefixLM: input_length and output_length are both 0, '
                     'so each pair would be empty and never advance; give '
                     'positive lengths.')

  def python_fn(generator):
    for example in generator:
      n, begin = len(example), 0
      while begin + input_length < n:
        end = begin + input_length
        out_end = min(end + output_length, n)
        yield (example[begin:end], example[end:out_end])
        begin = out_end

  def dataset_fn(ds):
    if _tf_path.is_tuple_element(ds):
      raise ValueError('PrefixLM: expected a stream of bare token arrays, got '
                       f'tuples of {_tf_path.element_arity(ds)}.')
    period = input_length + output_length

    def split(x):
      n = tf.shape(x, out_type=tf.int64)[0]
      # Pair k starts at k * period; it exists while start + input_length < n.
      count = tf.maximum((n - input_length - 1) // period + 1, 0)
      begins = tf.range(count) * period
      return tf.data.Dataset.from_tensor_slices(begins).map(
          lambda b: (x[b:b + input_length],
                     x[b + input_length:tf.minimum(b + period, n)]))
    return ds.flat_map(split)
  return Step('PrefixLM', python_fn, dataset_fn)


def generate_sequential_chunks(max_length=None):
  """Cuts token arrays longer than `max_length` into consecutive chunks."""
  if max_length is None or max_length <= 0:
    raise ValueError(f'generate_sequential_chunks: max_length must be a '
                     f'positive int, got {max_length!r}.')

  def python_fn(generator):
    for example in generator:
      n = len(example)
      if n <= max_length:
        yield example
      else:
        for start in range(0, n, max_length):
          yield example[start:min(start + max_length, n)]

  def dataset_fn(ds):
    def bounds(n):
      count = tf.maximum((n + max_length - 1) // max_length, 1)
      starts = tf.range(count) * max_length
      return starts, tf.minimum(starts + max_length, n)
    try:
      return _chunks_dataset(ds, bounds)
    except ValueError as e:
      raise ValueError(f'generate_sequential_chunks: {e}') from None
  return Step('generate_sequential_chunks', python_fn, dataset_fn)
