"""Length-based steps of `trax.data.inputs`: filter, truncate, pad, bucket.

An example's length (Trax's rule) is the largest size along `length_axis`
among the values at `length_keys` (default: positions 0 and 1).
"""

import math

from absl import logging
import numpy as np
import tensorflow as tf

from tfnp_trax.data import _bucket_blocks
from tfnp_trax.data import _padding
from tfnp_trax.data import _tf_path
from tfnp_trax.data._combinators import check_batch_size
from tfnp_trax.data._combinators import debug_pipeline
from tfnp_trax.data._tf_path import Step

__all__ = ['FilterByLength', 'FilterEmptyExamples', 'TruncateToLength',
           'PadToLength', 'BucketByLength', 'bucket_by_length', 'length_fn']


def _check_key(where, key, arity, what='length_keys'):
  if not -arity <= key < arity:
    raise ValueError(f'{where}: {what} names position {key}, but examples '
                     f'have {arity} value(s).')


def _dict_error(where, keys, length_keys):
  # Trax measures tuples (by position) and bare arrays only; a dict (as
  # TFDS gives without `keys`) has no positions to measure.
  return TypeError(
      f'{where}: expected tuple examples (length_keys {list(length_keys)} '
      f'are positions) or arrays, got a dict with keys {sorted(keys)}. '
      f'Turn dicts into tuples first, e.g. data.TFDS(..., keys=(...)).')


def _checked_length_keys(length_keys, where):
  """`length_keys` (default [0, 1]) as a list of int positions."""
  keys = length_keys or [0, 1]
  if not isinstance(keys, (list, tuple)) or not all(
      isinstance(k, (int, np.integer)) and not isinstance(k, bool)
      for k in keys):
    raise TypeError(f'{where}: length_keys must be a list of example '
                    f'positions (ints), e.g. [0] or [0, 1], got '
                    f'{length_keys!r}.')
  return [int(k) for k in keys]


def length_fn(example, length_axis, length_keys, where='length'):
  """Largest size along `length_axis` over the values at `length_keys`."""
  if isinstance(example, dict):
    raise _dict_error(where, example.keys(), length_keys)
  if isinstance(example, (list, tuple)):
    for key in length_keys:
      _check_key(where, key, len(example))
    return max(np.shape(example[i])[length_axis] for i in length_keys)
  return np.shape(example)[length_axis]


def _dataset_length_fn(ds, length_axis, length_keys, where):
  """`length_fn` on Dataset elements, checked against the element spec."""
  if isinstance(ds.element_spec, dict):
    raise _dict_error(where, ds.element_spec.keys(), length_keys)
  if _tf_path.is_tuple_element(ds):
    specs = ds.element_spec
    for key in length_keys:
      _check_key(where, key, len(specs))
    def fn(*xs):
      return tf.reduce_max(tf.stack(
          [tf.shape(xs[i], out_type=tf.int64)[length_axis]
           for i in length_keys]))
    return fn
  return lambda x: tf.shape(x, out_type=tf.int64)[length_axis]


def _block_length_fn(blocks, length_axis, length_keys, where):
  """Per-block lengths `[k]` (int64), or None where blocks cannot measure.

  Blocks hold vectors as ragged rows, so lengths along the one axis are the
  row lengths; other layouts take the per-example path.
  """
  specs = blocks.element_spec
  specs = specs if isinstance(specs, tuple) else (specs,)
  keys = length_keys if blocks.tupled else [0]
  for key in keys:
    _check_key(where, key, len(specs))
  if length_axis not in (0, -1) or any(specs[k].shape.rank != 1
                                       for k in keys):
    return None

  def fn(xs):
    return tf.reduce_max(tf.stack([xs[k].row_lengths() for k in keys]),
                         axis=0)
  return fn


def FilterByLength(max_length, min_length=0,  # pylint: disable=invalid-name
                   length_keys=None, length_axis=0):
  """Keeps examples whose length is in `[min_length, max_length]`.

  Args:
    max_length: the longest length kept, or None for no upper bound.
    min_length: the shortest length kept, or None for no lower bound.
    length_keys: example positions to measure (default [0, 1]).
    length_axis: the axis to measure.
  """
  if max_length is None and min_length is None:
    raise ValueError('FilterByLength: give max_length or min_length.')
  if (max_length is not None and min_length is not None and
      min_length > max_length):
    # Trax accepts this (a finite stream comes out empty), so it is a
    # warning; on an endless stream nothing would ever come out.
    logging.warning('FilterByLength: min_length (%s) is greater than '
                    'max_length (%s), so no example can pass; swap them, or '
                    'lower min_length.', min_length, max_length)
  length_keys = _checked_length_keys(length_keys, 'FilterByLength')

  def keep(length):
    return ((max_length is None or length <= max_length) and
            (min_length is None or length >= min_length))

  def python_fn(gen):
    for example in gen:
      if keep(length_fn(example, length_axis, length_keys, 'FilterByLength')):
        yield example

  def dataset_fn(ds):
    measure = _dataset_length_fn(ds, length_axis, length_keys,
                                 'FilterByLength')
    def predicate(*xs):
      n = measure(*xs)
      ok = tf.constant(True)
      if max_length is not None:
        ok = tf.logical_and(ok, n <= max_length)
      if min_length is not None:
        ok = tf.logical_and(ok, n >= min_length)
      return ok
    return ds.filter(predicate)

  def block_fn(blocks):
    measure = _block_length_fn(blocks, length_axis, length_keys,
                               'FilterByLength')
    if measure is None:
      return dataset_fn(blocks.unblock())

    def kept(xs):
      n = measure(xs)
      ok = tf.ones_like(n, tf.bool)
      if max_length is not None:
        ok = tf.logical_and(ok, n <= max_length)
      if min_length is not None:
        ok = tf.logical_and(ok, n >= min_length)
      return tf.where(ok)[:, 0]
    return blocks.take(kept)
  return Step('FilterByLength', python_fn, dataset_fn, block_fn)


def FilterEmptyExamples(axes=None, debug=False):  # pylint: disable=invalid-name
  """Drops examples where a value (at `axes`, or any) has shape `(0,)`."""
  def empty(example):
    return any(np.shape(x) == (0,) for i, x in enumerate(example)
               if axes is None or i in axes)

  def python_fn(generator):
    for example in generator:
      if not empty(example):
        yield example
      elif debug:
        logging.info('Filtered example: %r', example)

  def dataset_fn(ds):
    specs = ds.element_spec
    specs = specs if isinstance(specs, tuple) else (specs,)
    # Only rank-1 values can have shape (0,); the rank is static in tf.data.
    checked = [i for i, s in enumerate(specs)
               if s.shape.rank == 1 and (axes is None or i in axes)]
    def predicate(*xs):
      if not checked:
        return tf.constant(True)
      return tf.reduce_all(tf.stack([tf.size(xs[i]) > 0 for i in checked]))
    return ds.filter(predicate)
  return Step('FilterEmptyExamples', python_fn, dataset_fn)


def _resize_like_numpy(x, shape):
  """`np.resize` in TensorFlow: flat values, repeated cyclically, reshaped."""
  n = int(np.prod(shape))
  flat = tf.reshape(x, [-1])
  size = tf.size(flat)
  reps = (n + tf.maximum(size, 1) - 1) // tf.maximum(size, 1)
  filled = tf.cond(size > 0, lambda: tf.tile(flat, [reps])[:n],
                   lambda: tf.zeros([n], x.dtype))
  return tf.reshape(filled, shape)


def _shape_greater(shape, limit):
  """Python's tuple `shape > limit`, lexicographic, for a dynamic shape."""
  greater, decided = tf.constant(False), tf.constant(False)
  for i in range(min(len(limit), shape.shape[0])):
    s = tf.cast(shape[i], tf.int64)
    greater = tf.logical_or(greater, tf.logical_and(
        tf.logical_not(decided), s > limit[i]))
    decided = tf.logical_or(decided, tf.not_equal(s, limit[i]))
  if shape.shape[0] > len(limit):
    # Equal on the common prefix: the longer tuple is the greater.
    greater = tf.logical_or(greater, tf.logical_not(decided))
  return greater


def TruncateToLength(len_map=None):  # pylint: disable=invalid-name
  """Cuts values to shapes in `len_map`, as Trax does it with `np.resize`.

  A value at key `k` whose shape is greater than `len_map[k]` (as tuples,
  lexicographically) is resized to exactly `len_map[k]`: for 1-D values
  that keeps the first elements. `len_map={0: (256,), 1: (256,)}` caps two
  token sequences at 256.
  """
  if len_map is not None and not isinstance(len_map, dict):
    raise TypeError(f'TruncateToLength: len_map must be a dict from example '
                    f'position to shape, e.g. {{0: (256,)}}, got '
                    f'{type(len_map).__name__} ({len_map!r}).')
  len_map = dict(len_map or {})
  for key, max_len in len_map.items():
    if not isinstance(max_len, (tuple, list)):
      raise ValueError(f'TruncateToLength: len_map[{key}] is {max_len!r}; '
                       f'give a shape tuple, e.g. ({max_len},).')
    if not all(isinstance(d, (int, np.integer)) and d >= 0 for d in max_len):
      raise ValueError(f'TruncateToLength: len_map[{key}] is {max_len!r}; '
                       f'its sizes must be ints >= 0, e.g. (256,).')
  len_map = {k: tuple(v) for k, v in len_map.items()}

  def python_fn(generator):
    for example in generator:
      if isinstance(example, np.ndarray):
        example = (example,)
      if not isinstance(example, (list, tuple)):
        raise ValueError(f'TruncateToLength: unknown example type '
                         f'{type(example).__name__}: {example!r:.80}; len_map '
                         f'keys are positions of tuple examples.')
      example = list(example)
      for key, max_len in len_map.items():
        _check_key('TruncateToLength', key, len(example), 'len_map')
        if example[key].shape > max_len:
          example[key] = np.resize(example[key], max_len)
      yield tuple(example)

  def dataset_fn(ds):
    if isinstance(ds.element_spec, dict):
      raise ValueError(f'TruncateToLength: unknown example type dict: '
                       f'{ds.element_spec!r:.80}; len_map keys are positions '
                       f'of tuple examples.')
    tupled = _tf_path.is_tuple_element(ds)
    for key in len_map:
      _check_key('TruncateToLength', key, _tf_path.element_arity(ds),
                 'len_map')
    def truncate(xs):
      xs = list(xs) if tupled else [xs]
      for key, max_len in len_map.items():
        x = xs[key]
        xs[key] = tf.cond(_shape_greater(tf.shape(x), max_len),
                          lambda x=x, m=max_len: _resize_like_numpy(x, m),
                          lambda x=x: x)
      return tuple(xs) if tupled else xs[0]
    return _tf_path.dataset_map(ds, truncate)
  return Step('TruncateToLength', debug_pipeline(python_fn), dataset_fn)


def _checked_len_map(len_map, pad_value, multiple):
  """`len_map` as a dict, once its lengths and pad values are usable.

  Checked when the step is built: Trax would pad nothing for a negative
  length (a silent no-op), divide by zero for a 0 multiple, and fail with a
  KeyError at the first example for a missing pad value.
  """
  if not isinstance(len_map, dict):
    raise TypeError(f'PadToLength: len_map must be a dict from example '
                    f'position to length, e.g. {{0: 256}}, got '
                    f'{type(len_map).__name__} ({len_map!r}).')
  for key, value in len_map.items():
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
      raise TypeError(f'PadToLength: len_map[{key!r}] must be an int length, '
                      f'got {value!r} ({type(value).__name__}).')
    if multiple and value < 1:
      raise ValueError(f'PadToLength: with multiple=True, len_map[{key!r}] is '
                       f'the multiple to pad to and must be >= 1, got '
                       f'{value}.')
    if value < 0:
      raise ValueError(f'PadToLength: len_map[{key!r}] is the length to pad '
                       f'to and must be >= 0, got {value}. Padding never '
                       f'shortens a value; use TruncateToLength for that.')
    if isinstance(pad_value, dict) and key not in pad_value:
      raise ValueError(f'PadToLength: pad_value is a dict without key '
                       f'{key!r} of len_map (it has {list(pad_value)}); give '
                       f'a pad value for every padded position, or one '
                       f'value for all.')
  # Python ints: a NumPy int64 would not mix with the int32 sizes of the
  # tf.data path.
  return {key: int(value) for key, value in len_map.items()}


def PadToLength(len_map=None, pad_value=0, multiple=False):  # pylint: disable=invalid-name
  """Pads values at the end, to lengths in `len_map`, as Trax does.

  The pad width is `len_map[k] - length` (never negative), or, with
  `multiple=True`, `length % len_map[k]` (Trax's arithmetic, kept as is).
  `np.pad` with one (before, after) pair pads every axis of the value.

  Args:
    len_map: a dict from example position to target length.
    pad_value: a dict from position to pad value, or one value for all.
    multiple: see above.
  """
  if len_map is None:
    raise ValueError('PadToLength: len_map parameter should be provided.')
  len_map = _checked_len_map(len_map, pad_value, multiple)

  def pad_of(key):
    return pad_value[key] if isinstance(pad_value, dict) else pad_value

  def bare_items():
    if 0 not in len_map:
      raise ValueError(f'PadToLength: a bare array example is padded to '
                       f'len_map[0], but len_map has only keys '
                       f'{list(len_map)}. Give len_map={{0: length}}.')
    return [(0, len_map[0])]

  def width(length, value):
    if multiple:
      return length - (length // value) * value
    return max(0, value - length)

  def python_fn(generator):
    for example in generator:
      bare = isinstance(example, np.ndarray)
      if isinstance(example, (list, tuple)):
        example, items = list(example), len_map.items()
      elif bare:
        example, items = [example], bare_items()
      else:
        raise ValueError(f"PadToLength: example isn't a tuple or an "
                         f'ndarray: a {type(example).__name__} '
                         f'{example!r:.80}; len_map keys are positions of '
                         f'tuple examples.')
      for key, value in items:
        _check_key('PadToLength', key, len(example), 'len_map')
        x = example[key]
        if x.dtype.kind in 'SUO':
          raise ValueError(f'PadToLength: position {key} holds {x.dtype} '
                           f'values; tokenize text before padding.')
        example[key] = np.pad(x, (0, width(x.shape[0], value)),
                              mode='constant', constant_values=pad_of(key))
      yield example[0] if bare else tuple(example)

  def dataset_fn(ds):
    if isinstance(ds.element_spec, dict):
      raise ValueError(f"PadToLength: example isn't a tuple or an ndarray: "
                       f'a dict {ds.element_spec!r:.80}; len_map keys are '
                       f'positions of tuple examples.')
    tupled = _tf_path.is_tuple_element(ds)
    specs = ds.element_spec if tupled else (ds.element_spec,)
    keys = len_map if tupled else dict(bare_items())
    for key in keys:
      _check_key('PadToLength', key, len(specs), 'len_map')
      _tf_path.check_ids_dtype('PadToLength', key, specs[key].dtype)

    def pad(xs):
      xs = list(xs) if tupled else [xs]
      for key, value in keys.items():
        x = xs[key]
        n = tf.shape(x)[0]
        w = n - (n // value) * value if multiple else tf.maximum(0, value - n)
        paddings = tf.stack([tf.zeros([x.shape.rank], tf.int32),
                             tf.fill([x.shape.rank], w)], axis=1)
        xs[key] = tf.pad(x, paddings,
                         constant_values=tf.cast(pad_of(key), x.dtype))
      return tuple(xs) if tupled else xs[0]
    return _tf_path.dataset_map(ds, pad)
  return Step('PadToLength', debug_pipeline(python_fn), dataset_fn)


def _check_buckets(boundaries, batch_sizes, where):
  """Accepts len(boundaries) + 1 batch sizes, or len(boundaries).

  With len(boundaries) + 1 the last bucket takes every longer example. With
  len(boundaries) there is no such bucket and a longer example raises when
  it comes: Trax's own eval buckets (`batcher`, `_buckets_for_length`) are
  built this way, so the form is kept.
  """
  n = len(boundaries)
  if len(batch_sizes) not in (n, n + 1):
    raise ValueError(
        f'{where}: {n} boundaries {list(boundaries)} need {n + 1} batch '
        f'sizes (one per bucket, the last for longer examples) or {n} (no '
        f'bucket for longer examples; they raise), but {len(batch_sizes)} '
        f'batch sizes {list(batch_sizes)} were given.')
  for i, b in enumerate(batch_sizes):
    check_batch_size(b, where, f'batch_sizes[{i}]')


def _too_long(length, boundaries, batch_sizes):
  return (f'BucketByLength: an example of length {length} is longer than the '
          f'last boundary {boundaries[-1]}, and there is no bucket for it '
          f'({len(batch_sizes)} batch sizes for {len(boundaries)} '
          f'boundaries); add a batch size for longer examples or filter them '
          f'(FilterByLength).')


def bucket_by_length(generator, length_fn, boundaries, batch_sizes,  # pylint: disable=redefined-outer-name
                     strict_pad_on_len=False):
  """Batches examples of similar length together, as Trax does.

  An example of length `l` goes to the first bucket `i` with
  `l <= boundaries[i]` (the last bucket has no bound). When bucket `i`
  holds `batch_sizes[i]` examples, they are yielded as one batch, padded
  with `pad_to_max_dims(..., boundaries[i], strict_pad_on_len)`. Examples
  left in partly filled buckets when the input ends are not yielded.

  Args:
    generator: an iterator of example tuples.
    length_fn: example -> length.
    boundaries: the buckets' upper bounds (inclusive).
    batch_sizes: one positive int per bucket: `len(boundaries) + 1`, the
      last for examples longer than every boundary; or `len(boundaries)`,
      as Trax's eval buckets give, so that a longer example raises.
    strict_pad_on_len: see `pad_to_max_dims`.

  Yields:
    Padded batches, in the order their buckets fill.

  Raises:
    ValueError: other numbers of batch sizes, a batch size that is not
      positive (TypeError if not an int), or a too-long example when there
      is no bucket for it.
  """
  _check_buckets(boundaries, batch_sizes, 'BucketByLength')
  bounds = list(boundaries) + [math.inf]
  buckets = [[] for _ in batch_sizes]
  for example in generator:
    length = length_fn(example)
    i = next(i for i, b in enumerate(bounds) if length <= b)
    if i == len(batch_sizes):
      raise ValueError(_too_long(length, boundaries, batch_sizes))
    buckets[i].append(example)
    if len(buckets[i]) == batch_sizes[i]:
      boundary = None if bounds[i] == math.inf else bounds[i]
      try:
        yield tuple(_padding.pad_to_max_dims(column, boundary,
                                             strict_pad_on_len)
                    for column in zip(*buckets[i]))
      except ValueError as e:
        raise ValueError(f'BucketByLength: bucket {i}: {e}') from None
      buckets[i] = []


def _bucket_key_fn(measure, boundaries, batch_sizes):
  """Element -> bucket index (int64), failing where no bucket fits."""
  unbounded = len(batch_sizes) == len(boundaries) + 1
  bounds = tf.constant(list(boundaries) + (
      [np.iinfo(np.int64).max] if unbounded else []), tf.int64)

  def key_fn(*xs):
    length = measure(*xs)
    fits = length <= bounds
    check = tf.debugging.Assert(tf.reduce_any(fits), [
        f'BucketByLength: an example is longer than the last boundary '
        f'{boundaries[-1]} and there is no bucket for it; length:', length])
    with tf.control_dependencies([check]):
      # argmax gives the first bucket whose boundary fits.
      return tf.argmax(tf.cast(fits, tf.int32), output_type=tf.int64)
  return key_fn


def _pad_for_bucket(key, xs, boundaries, n_buckets, strict_pad_on_len):
  """Trax's boundary padding of a batch `xs` from bucket `key`."""
  if any(isinstance(b, (list, tuple)) for b in boundaries):
    # Per-dimension boundaries: one branch per bucket, each a constant.
    branches = [
        (lambda b=(boundaries[i] if i < len(boundaries) else None): tuple(
            _padding.pad_batch_like_trax(x, b, strict_pad_on_len)
            for x in xs)) for i in range(n_buckets)]
    return tuple(tf.switch_case(tf.cast(key, tf.int32), branches))
  # -1 stands for the unbounded last bucket (no boundary: no extra padding).
  bounds = tf.constant(list(boundaries) + [-1] * (n_buckets - len(boundaries)),
                       tf.int64)
  return tuple(_padding.pad_batch_like_trax(
      x, tf.gather(bounds, key), strict_pad_on_len) for x in xs)


def _blockable_buckets(blocks, boundaries):
  # Blocks place examples by comparing lengths with int boundaries and pad
  # numbers; Trax's bucketing of bare arrays (zipping their rows) keeps the
  # per-example path.
  return blocks.tupled and not any(
      isinstance(b, (list, tuple)) for b in boundaries) and not any(
          s.dtype == tf.string and s.shape.rank == 1
          for s in blocks.element_spec)


def _dataset_bucket(ds, measure, boundaries, batch_sizes, strict_pad_on_len):
  """`bucket_by_length` in tf.data, per example: same batches, same order."""
  key_fn = _bucket_key_fn(measure, boundaries, batch_sizes)
  tupled = _tf_path.is_tuple_element(ds)
  sizes = tf.constant(batch_sizes, tf.int64)

  def reduce_fn(key, window):
    batched = window.padded_batch(tf.gather(sizes, key), drop_remainder=True)

    def pad(*xs):
      out = _pad_for_bucket(key, xs, boundaries, len(batch_sizes),
                            strict_pad_on_len)
      return out if tupled else out[0]
    return batched.map(pad)
  return ds.group_by_window(key_func=key_fn, reduce_func=reduce_fn,
                            window_size_func=lambda key: tf.gather(sizes, key))


def BucketByLength(boundaries, batch_sizes,  # pylint: disable=invalid-name
                   length_keys=None, length_axis=0, strict_pad_on_len=False):
  """Batches by length (see `bucket_by_length`); length from `length_keys`.

  On a Dataset of scalar and vector values this runs on blocks of examples
  (see `_bucket_blocks`); other Datasets use `group_by_window`. Both give
  the same batches in the same order as the Python path. `batch_sizes` has
  `len(boundaries) + 1` entries, or `len(boundaries)` for no bucket beyond
  the last boundary (see `bucket_by_length`); checked when built.
  """
  _check_buckets(boundaries, batch_sizes, 'BucketByLength')
  length_keys = _checked_length_keys(length_keys, 'BucketByLength')
  boundaries, batch_sizes = list(boundaries), list(batch_sizes)

  def python_fn(g):
    measure = lambda x: length_fn(x, length_axis, length_keys,
                                  'BucketByLength')
    return bucket_by_length(g, measure, boundaries, batch_sizes,
                            strict_pad_on_len)

  def block_fn(blocks):
    measure = _block_length_fn(blocks, length_axis, length_keys,
                               'BucketByLength')
    if measure is None or not _blockable_buckets(blocks, boundaries):
      return dataset_fn(blocks.unblock())
    return _bucket_blocks.bucket_blocks(blocks, measure, boundaries,
                                        batch_sizes, strict_pad_on_len)

  def dataset_fn(ds):
    if _tf_path.can_block(ds):
      blocks = _tf_path.to_blocks(ds)
      if (_blockable_buckets(blocks, boundaries) and _block_length_fn(
          blocks, length_axis, length_keys, 'BucketByLength') is not None):
        return block_fn(blocks)
    measure = _dataset_length_fn(ds, length_axis, length_keys,
                                 'BucketByLength')
    return _dataset_bucket(ds, measure, boundaries, batch_sizes,
                           strict_pad_on_len)
  return Step('BucketByLength', python_fn, dataset_fn, block_fn)
