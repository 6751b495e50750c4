"""Stream combinators of `trax.data.inputs`: composing, mixing, batching.

Each public constructor returns a `Step`: a function from a stream to a
stream. A stream is a Python iterator of examples (tuples of NumPy arrays),
as in Trax, or a `tf.data.Dataset`, on which the step runs as tf.data ops.
"""

import functools
import itertools
import math
import queue as queue_lib
import threading

from absl import logging
import numpy as np
import tensorflow as tf

from tfnp_trax import fastmath
from tfnp_trax import shapes
from tfnp_trax.data import _padding
from tfnp_trax.data import _shuffle_blocks
from tfnp_trax.data import _tf_path
from tfnp_trax.data._tf_path import Step

__all__ = ['Serial', 'Parallel', 'Shuffle', 'shuffle', 'Batch', 'batch',
           'UnBatch', 'Prefetch', 'Log', 'Dup', 'CastTo', 'AppendValue',
           'debug_pipeline', 'check_batch_size']


def debug_pipeline(f, debug=False, method='pow', log_prefix=None):
  """Wraps a stream function to log examples (all, or at powers of two).

  Args:
    f: a function returning an iterator of examples.
    debug: if False, `f` is returned unchanged.
    method: 'pow' logs examples 1, 2, 4, 8, ...; 'every' logs all.
    log_prefix: the log line's prefix (default: `f`'s name).

  Returns:
    `f`, or a wrapper that logs what it yields.
  """
  if not debug:
    return f
  if method not in ('pow', 'every'):
    raise ValueError(f"debug_pipeline: method must be 'pow' or 'every', got "
                     f'{method!r}.')

  @functools.wraps(f)
  def logged(*args, **kwargs):
    prefix = log_prefix or f.__name__
    for count, example in enumerate(f(*args, **kwargs), start=1):
      if method == 'every' or count & (count - 1) == 0:
        logging.info('%s example[%d] = %r', prefix, count, example)
      yield example
  return logged


def Serial(*fns):  # pylint: disable=invalid-name
  """Chains stream functions (nested lists are flattened), first to last.

  The first function is called with None, so it can be a source. On a
  Dataset, our steps run as tf.data ops, and runs of steps that work on
  blocks of examples pass `Blocks` between them; a plain user function there
  is handed the Dataset read as NumPy (Trax's contract), and the rest of the
  chain then runs in Python.
  """
  steps = fastmath.tree_flatten(fns)
  # Checked here: a non-callable would otherwise fail only once data flows,
  # far from the line that built the pipeline.
  for i, f in enumerate(steps):
    if not callable(f):
      raise TypeError(f'Serial: step {i} must be a callable stream function '
                      f'(e.g. data.Batch(8)), got {f!r}. Did you pass an '
                      f'argument meant for a step to Serial itself?')

  def chain(generator):
    for f in steps:
      if not isinstance(f, Step):
        if isinstance(generator, _tf_path.Blocks) or _tf_path.is_dataset(
            generator):
          generator = _tf_path.to_stream(generator)
      elif (f.block_fn is not None and _tf_path.is_dataset(generator) and
            _tf_path.can_block(generator)):
        generator = _tf_path.to_blocks(generator)
      generator = f(generator)
    return generator

  def run(generator=None):
    generator = chain(generator)
    if isinstance(generator, _tf_path.Blocks):
      return generator.unblock()
    return generator
  # Nested in another Serial, blocks pass through without being unblocked.
  return Step('Serial', run, run, chain)


def _round_robin_passes(counters):
  """Trax's ungraded mixing order as (prefix, cycle) of source indices.

  Each pass visits the sources in turn and draws from those under their
  counter; the counts reset, mid-pass, once all counters are reached. The
  state at the start of a pass fixes what follows, so the order is a prefix
  and then a cycle, found by running passes until a start state repeats.
  """
  n = len(counters)
  used, order, seen = [0] * n, [], {}
  while tuple(used) not in seen:
    seen[tuple(used)] = len(order)
    for i in range(n):
      if used[i] < counters[i]:
        used[i] += 1
        if sum(used) == sum(counters):
          used = [0] * n
        order.append(i)
  start = seen[tuple(used)]
  return order[:start], order[start:]


def _parallel_order(counters, gradually_reweight, use_remainders):
  """The source indices Parallel draws from, as (prefix, repeated cycle)."""
  n = len(counters)
  if not gradually_reweight:
    return _round_robin_passes(counters)
  ranked = sorted(range(n), key=lambda i: counters[i])

  def emit(k, prev_counter):
    if k == len(ranked):
      return []
    out = []
    for _ in range(math.floor(counters[ranked[k]] / prev_counter)):
      out.append(ranked[k])
      out += emit(k + 1, counters[ranked[k]])
    return out
  order = emit(0, min(counters))
  if use_remainders:
    fractions = []
    for k, i in enumerate(ranked):
      done = int(np.prod(fractions)) if fractions else 1
      order += [i] * int(counters[i] - done)
      if k + 1 < len(ranked):
        fractions.append(math.floor(counters[ranked[k + 1]] / counters[i]))
  return [], order


def Parallel(fns=None, counters=None, reweight_by_minimum=False,  # pylint: disable=invalid-name
             gradually_reweight=False, use_remainders=False):
  """Mixes several streams, drawing from each in proportion to `counters`.

  Without `gradually_reweight`, passes visit the streams in turn, drawing
  from each still under its counter; the counts reset once all are reached
  (mid-pass, as in Trax). With it, streams sorted by counter are nested: counters 1, 20, 40
  give (a (b c^2)^20) repeated; `use_remainders` then appends what integer
  division left over. The mix stops when any stream ends.

  Args:
    fns: the stream functions; each is called with the incoming stream (or
      with no argument, when there is none).
    counters: one int per stream (default: all 1); zero drops a stream.
    reweight_by_minimum: divide counters by the smallest one first.
    gradually_reweight: use the nested order described above.
    use_remainders: with `gradually_reweight`, add the remainders.

  Returns:
    A stream function.
  """
  fns = list(fns or [])
  for i, f in enumerate(fns):
    if not callable(f):
      raise TypeError(f'Parallel: stream {i} must be a stream function (e.g. '
                      f'data.TFDS(...)), got {f!r:.60}.')
  if counters:
    if len(counters) != len(fns):
      raise ValueError(f'Parallel: got {len(fns)} streams but {len(counters)}'
                       f' counters ({list(counters)}); give one per stream.')
    for i, c in enumerate(counters):
      # Any real number counts, as in Trax (a negative counter never draws,
      # a fraction rounds as Trax's comparisons do); an order that would
      # never yield is refused below instead of hanging.
      if not isinstance(c, (int, float, np.integer, np.floating)):
        raise TypeError(f'Parallel: counters[{i}] is {c!r}; counters are '
                        f'numbers (how many examples to draw from each '
                        f'stream per round; 0 drops it).')
    kept = [i for i, c in enumerate(counters) if c != 0]
    fns = [fns[i] for i in kept]
    counters = [counters[i] for i in kept]
  else:
    counters = [1] * len(fns)
  if reweight_by_minimum:
    counters = [math.floor(c / min(counters)) for c in counters]
  prefix, cycle = _parallel_order(counters, gradually_reweight,
                                  use_remainders)
  if not cycle:
    # Trax would loop forever here without yielding (after the prefix).
    raise ValueError(f'Parallel: counters {counters} draw from no stream '
                     f'once the first {len(prefix)} examples are out, so the '
                     f'mix would hang; give positive whole counters.')

  def sources(gen):
    return [f(gen) if gen is not None else f() for f in fns]

  def mix_datasets(datasets):
    choice = tf.data.Dataset.from_tensor_slices(
        tf.constant(prefix, tf.int64)).concatenate(
            tf.data.Dataset.from_tensor_slices(
                tf.constant(cycle, tf.int64)).repeat())
    return tf.data.Dataset.choose_from_datasets(datasets, choice,
                                                stop_on_empty_dataset=True)

  def mix_streams(streams):
    iterators = [_tf_path.to_stream(s) for s in streams]
    for i in itertools.chain(prefix, itertools.cycle(cycle)):
      try:
        example = next(iterators[i])
      except StopIteration:
        return
      yield example

  def run(gen=None):
    # Sources that all give Datasets are mixed in tf.data; otherwise in
    # Python.
    streams = sources(gen)
    if all(_tf_path.is_dataset(s) for s in streams):
      return mix_datasets(streams)
    return mix_streams(streams)

  return _ParallelStep('Parallel', run, run)


class _ParallelStep(Step):
  """Parallel's step, called with the incoming stream as Trax names it."""

  def __call__(self, gen=None):  # pylint: disable=arguments-renamed
    # Trax's `parallel_generator(gen=None)`: callers may pass `gen=...`.
    return super().__call__(gen)


def _check_queue_size(queue_size):
  """Raises unless `queue_size` is an int >= 1 (NumPy ints count).

  Trax fills its queue with `range(queue_size)`, so a float fails there; a
  float queue here would never be full, and the whole stream would be read
  before the first example came out (forever, on an endless stream).
  """
  if not isinstance(queue_size, (int, np.integer)):
    raise TypeError(f'Shuffle: queue_size must be an int number of examples '
                    f'(>= 1), got {queue_size!r} '
                    f'({type(queue_size).__name__}); e.g. Shuffle(1024).')
  if queue_size < 1:
    raise ValueError(f'Shuffle: queue_size ({queue_size}) is less than 1.')


def shuffle(samples, queue_size):
  """Shuffles a stream through a queue: a random slot out, the next one in.

  Uses NumPy's global random stream, so `np.random.seed` fixes the order.

  Args:
    samples: an iterator of examples.
    queue_size: how many examples the queue holds (>= 1; 1 keeps the order).

  Yields:
    The same examples in shuffled order; when the input ends, the queue is
    shuffled and drained.
  """
  _check_queue_size(queue_size)
  if queue_size == 1:
    logging.warning('Shuffle: a queue of size 1 does not shuffle.')
  samples = iter(samples)
  queue = []
  for sample in samples:
    queue.append(sample)
    if len(queue) == queue_size:
      break
  if len(queue) == queue_size:
    for sample in samples:
      i = np.random.randint(queue_size)
      yield queue[i]
      queue[i] = sample
  else:
    logging.warning('Shuffle: only %d examples for a queue of %d.',
                    len(queue), queue_size)
  np.random.shuffle(queue)
  yield from queue


def Shuffle(queue_size=1024):  # pylint: disable=invalid-name
  """Shuffles a stream (see `shuffle`); on a Dataset, `Dataset.shuffle`.

  Inside `Serial`, on blocks of examples, the same buffer of `queue_size`
  examples is drawn from a block at a time (see `_shuffle_blocks`). The
  Dataset's seed is drawn from NumPy's global stream when the step is
  applied to a Dataset, so `np.random.seed` fixes every path (each in its
  own order).
  """
  _check_queue_size(queue_size)

  # Drawn when applied, not when the step is made, so that the Python
  # path's draws stay exactly Trax's.
  def seed():
    return int(np.random.randint(2**31 - 1))

  def dataset_fn(ds):
    return ds.shuffle(queue_size, seed=seed())

  def block_fn(blocks):
    return _shuffle_blocks.shuffle_blocks(blocks, queue_size, seed())
  return Step('Shuffle', lambda g: shuffle(g, queue_size), dataset_fn,
              block_fn)


def _batch_dicts(examples, where, first_index):
  """Stacks dict examples key by key, as `padded_batch` does on a Dataset.

  Trax's `batch` zips the dicts' keys instead, giving arrays of key names.
  """
  if not all(isinstance(e, dict) for e in examples):
    kinds = sorted({type(e).__name__ for e in examples})
    raise ValueError(f'{where}: examples {first_index}..'
                     f'{first_index + len(examples) - 1} mix kinds {kinds}; '
                     f'batch either dicts or tuples.')
  keys = list(examples[0])
  for j, e in enumerate(examples):
    if set(e) != set(keys):
      raise ValueError(f'{where}: example {first_index + j} has keys '
                       f'{sorted(e)}, but example {first_index} has '
                       f'{sorted(keys)}; dicts batched together need the '
                       f'same keys.')
  columns = _batch_arrays([tuple(e[k] for k in keys) for e in examples],
                          where, first_index)
  return dict(zip(keys, columns))


def _batch_arrays(examples, where, first_index):
  """Stacks a list of example tuples position by position, padding to max."""
  if any(isinstance(e, dict) for e in examples):
    return _batch_dicts(examples, where, first_index)
  arities = {len(e) if isinstance(e, (tuple, list)) else 1 for e in examples}
  if len(arities) > 1:
    raise ValueError(f'{where}: examples {first_index}..'
                     f'{first_index + len(examples) - 1} have different '
                     f'numbers of values {sorted(arities)}; every example '
                     f'must be a tuple of the same length.')
  out = []
  for pos, column in enumerate(zip(*examples)):
    column = [np.asarray(x) for x in column]
    ranks = [x.ndim for x in column]
    if len(set(ranks)) > 1:
      j = next(j for j, r in enumerate(ranks) if r != ranks[0])
      raise ValueError(
          f'{where}: position {pos} of example {first_index + j} has shape '
          f'{column[j].shape}, but example {first_index} has shape '
          f'{column[0].shape}; one position must have one rank to batch.')
    try:
      out.append(_padding.pad_to_max_dims(column))
    except ValueError as e:
      raise ValueError(f'{where}: position {pos}: {e}') from None
  return tuple(out)


def check_batch_size(batch_size, where, what='batch_size'):
  """Raises unless `batch_size` is a positive int (NumPy ints count).

  Raises:
    TypeError: `batch_size` is not an int (a float would batch nothing).
    ValueError: it is 0 or negative.
  """
  if isinstance(batch_size, bool) or not isinstance(batch_size,
                                                    (int, np.integer)):
    raise TypeError(f'{where}: {what} must be a positive int, got '
                    f'{batch_size!r} ({type(batch_size).__name__}).')
  if batch_size <= 0:
    raise ValueError(f'{where}: {what} must be positive, got {batch_size}.')


def batch(generator, batch_size):
  """Groups a stream into batches, padding with zeros to the largest shape.

  As `tf.data.Dataset.padded_batch(batch_size, drop_remainder=True)`: a
  final batch short of `batch_size` is not yielded.

  Args:
    generator: an iterator of example tuples.
    batch_size: examples per batch (positive).

  Yields:
    Tuples of arrays, each `[batch_size, ...]`.
  """
  check_batch_size(batch_size, 'Batch')
  buf, start = [], 0
  for example in generator:
    buf.append(example)
    if len(buf) == batch_size:
      yield _batch_arrays(buf, 'Batch', start)
      start += batch_size
      buf = []


def Batch(batch_size):  # pylint: disable=invalid-name
  """Batches a stream (see `batch`); on a Dataset, `padded_batch`."""
  check_batch_size(batch_size, 'Batch')

  def dataset_fn(ds):
    return ds.padded_batch(batch_size, drop_remainder=True)
  return Step('Batch', lambda g: batch(g, batch_size), dataset_fn)


def UnBatch():  # pylint: disable=invalid-name
  """Splits batches (tuples, or dicts as `Dataset.unbatch` does) apart."""
  def split(i, batched):
    sizes = [np.shape(x)[0] for x in batched]
    if len(set(sizes)) != 1:
      raise ValueError(f'UnBatch: batch {i} has leading sizes {sizes}; all '
                       f'positions must share one batch size.')
    return (tuple(x[j] for x in batched) for j in range(sizes[0]))

  def python_fn(generator):
    for i, batched in enumerate(generator):
      if isinstance(batched, dict):
        keys = list(batched)
        for values in split(i, tuple(batched.values())):
          yield dict(zip(keys, values))
      elif isinstance(batched, tuple):
        yield from split(i, batched)
      else:
        raise ValueError(f'UnBatch: batch {i} is a {type(batched).__name__}, '
                         f'expected a tuple (or dict) of arrays.')
  return Step('UnBatch', python_fn, lambda ds: ds.unbatch())


def _prefetch_thread(iterator, q, stop):
  try:
    for example in iterator:
      while not stop.is_set():
        try:
          q.put((True, example), timeout=0.1)
          break
        except queue_lib.Full:
          continue
      if stop.is_set():
        return
    q.put((False, None))
  except Exception as e:  # pylint: disable=broad-except
    q.put((False, e))  # Re-raised in the reading thread.


def Prefetch(n_prefetch=2):  # pylint: disable=invalid-name
  """Reads up to `n_prefetch` examples ahead, in a background thread."""
  # A queue of size 0 is unbounded: it would read an endless stream into
  # memory (Trax's process-based Prefetch would wait forever instead).
  check_batch_size(n_prefetch, 'Prefetch', 'n_prefetch')

  def python_fn(generator):
    q = queue_lib.Queue(maxsize=n_prefetch)
    stop = threading.Event()
    threading.Thread(target=_prefetch_thread, args=(iter(generator), q, stop),
                     daemon=True).start()
    try:
      while True:
        ok, value = q.get()
        if not ok:
          if value is not None:
            raise value
          return
        yield value
    finally:
      stop.set()
  return Step('Prefetch', python_fn, lambda ds: ds.prefetch(n_prefetch))


def Log(n_steps_per_example=1, only_shapes=True):  # pylint: disable=invalid-name
  """Logs (and prints) every `n_steps_per_example`-th example, or its shapes.

  On a Dataset, it prints with `tf.print` from inside the pipeline.
  """
  # Checked here: a 0 would fail (modulo by zero) only at the first example.
  check_batch_size(n_steps_per_example, 'Log', 'n_steps_per_example')

  def python_fn(stream):
    for counter, example in enumerate(stream):
      if counter % n_steps_per_example == 0:
        item = (fastmath.nested_map(shapes.signature, example) if only_shapes
                else example)
        logging.info(str(item))
        print(item)
      yield example

  def dataset_fn(ds):
    def log(i, *xs):
      values = [tf.shape(x) for x in xs] if only_shapes else list(xs)
      def printed():
        with tf.control_dependencies([tf.print(*values)]):
          return tf.constant(True)
      tf.cond(i % n_steps_per_example == 0, printed,
              lambda: tf.constant(False))
      return xs if _tf_path.is_tuple_element(ds) else xs[0]
    return ds.enumerate().map(
        lambda i, x: log(i, *(x if isinstance(x, tuple) else (x,))))
  return Step('Log', python_fn, dataset_fn)


def Dup():  # pylint: disable=invalid-name
  """Copies the first value of each example: `(x, *rest) -> (x, x, *rest)`.

  A bare array `x` becomes `(x, x)` (Trax would unpack it along axis 0).
  """
  def dup(xs):
    if isinstance(xs, np.ndarray):
      return (xs, xs)
    if not isinstance(xs, (tuple, list)) or not xs:
      raise ValueError(f'Dup: expected a non-empty tuple example, got '
                       f'{xs!r}.')
    return (xs[0], xs[0], *xs[1:])

  def dataset_fn(ds):
    if not _tf_path.is_tuple_element(ds):
      return ds.map(lambda x: (x, x))
    return _tf_path.dataset_map(ds, dup)

  def block_fn(blocks):
    d = blocks.dtypes
    return blocks.map(lambda xs: (xs[0], xs[0], *xs[1:]), tupled=True,
                      dtypes=(d[0], d[0], *d[1:]))
  return Step('Dup', lambda g: map(dup, g), dataset_fn, block_fn)


def CastTo(dtype=np.int32, indices=(0, 1,), debug=False):  # pylint: disable=invalid-name
  """Casts the values at `indices` of each example to `dtype`.

  Raises (when reading) on values that are not numbers, such as strings.
  """
  try:
    np.dtype(dtype)
  except TypeError:
    raise TypeError(f'CastTo: dtype must be a NumPy dtype (e.g. np.int32), '
                    f'got {dtype!r}.') from None
  def cast_one(pos, x):
    if x.dtype.kind in 'SUO':
      raise ValueError(f'CastTo: position {pos} holds {x.dtype} values where '
                       f'numbers are expected; tokenize text first.')
    return x.astype(dtype) if x.dtype != dtype else x

  def python_fn(generator):
    for count, example in enumerate(generator, start=1):
      if not isinstance(example, tuple):
        raise ValueError(f'CastTo: example {count - 1} is a '
                         f'{type(example).__name__}, expected a tuple.')
      cast = tuple(cast_one(i, np.asarray(x)) if i in indices else x
                   for i, x in enumerate(example))
      if debug:
        changed = [(i, x.dtype) for i, x in enumerate(example)
                   if i in indices and x.dtype != dtype and
                   not (x.dtype == np.int64 and dtype == np.int32)]
        if changed:
          logging.info('dtype mismatch in example[%d] = %r was earlier: %r',
                       count, cast, changed)
      yield cast

  def dataset_fn(ds):
    specs = ds.element_spec
    if not isinstance(specs, tuple):
      raise ValueError('CastTo: expected tuple elements, got a single '
                       f'tensor {specs}.')
    for i in indices:
      if i < len(specs):
        _tf_path.check_ids_dtype('CastTo', i, specs[i].dtype)
    target = tf.as_dtype(dtype)
    return _tf_path.dataset_map(ds, lambda xs: tuple(
        tf.cast(x, target) if i in indices else x for i, x in enumerate(xs)))
  return Step('CastTo', python_fn, dataset_fn)


def AppendValue(val=None):  # pylint: disable=invalid-name
  """Appends `val[key]` to the end (last axis) of value `key` of each example.

  Args:
    val: a dict from example position to the values to append; for a bare
      array example, `val[0]` is appended.
  """
  def check_keys(arity):
    for key in (val or {}):
      if not -arity <= key < arity:
        raise ValueError(f'AppendValue: val has key {key}, but examples have '
                         f'{arity} value(s); keys are example positions.')

  def python_fn(generator):
    for example in generator:
      if isinstance(example, tuple):
        check_keys(len(example))
        example = list(example)
        for key, value in (val or {}).items():
          example[key] = np.append(example[key], value, -1)
        yield tuple(example)
      elif isinstance(example, np.ndarray):
        yield np.append(example, val[0])
      else:
        raise ValueError(f'AppendValue: expected a tuple or an array, got '
                         f'{type(example).__name__}.')

  def dataset_fn(ds):
    specs = ds.element_spec
    specs = specs if isinstance(specs, tuple) else (specs,)
    if isinstance(ds.element_spec, tuple):
      check_keys(len(specs))
    items = (val or {}).items() if isinstance(ds.element_spec, tuple) else (
        [(0, val[0])])
    extra = {}
    for key, value in items:
      # NumPy's promotion decides the result dtype, as np.append would.
      value = np.asarray(value)
      dtype = np.result_type(specs[key].dtype.as_numpy_dtype, value.dtype)
      extra[key] = (tf.constant(value, dtype), tf.as_dtype(dtype))

    def append(xs):
      xs = list(xs) if isinstance(xs, tuple) else [xs]
      for key, (value, dtype) in extra.items():
        x = tf.cast(xs[key], dtype)
        if not isinstance(ds.element_spec, tuple):
          x = tf.reshape(x, [-1])
          value = tf.reshape(value, [-1])
        xs[key] = tf.concat([x, value], axis=-1)
      return tuple(xs) if isinstance(ds.element_spec, tuple) else xs[0]
    return _tf_path.dataset_map(ds, append)
  return Step('AppendValue', debug_pipeline(python_fn), dataset_fn)
