"""One pipeline step, two paths: Python iterators (as Trax) and tf.data.

Trax's data pipeline is a chain of functions, each taking a Python iterator
of examples (tuples of NumPy arrays) and returning another. tfnp_trax keeps
that contract exactly, and adds a second path: given a `tf.data.Dataset`, the
same step runs as a tf.data transformation, so the work happens in
TensorFlow's threads instead of the Python interpreter.

Inside `Serial`, consecutive steps that can work on blocks of examples
(`Tokenize`, `Dup`, `Shuffle`, `FilterByLength`, `BucketByLength`, ...) pass
`Blocks` between them: a Dataset whose elements are up to `BLOCK_SIZE`
examples, each value batched as a `tf.RaggedTensor`. A per-example tf.data
transformation costs microseconds of interpreter-free overhead per example
and per step; on blocks that cost is paid once per block. The examples, and
their order, are the same as on the per-example path.

`Step` is the callable every combinator of `tfnp_trax.data.inputs` returns.
It looks at what it is given and picks the path. A step that has no tf.data
form (it needs Python state, or NumPy's global random stream) reads a
Dataset as NumPy, so the stream moves to the Python path from there on.
"""

import numpy as np
import tensorflow as tf

from tfnp_trax import shapes

__all__ = ['BLOCK_SIZE', 'Blocks', 'Step', 'block_size', 'can_block',
           'check_ids_dtype', 'dataset_map', 'element_arity', 'is_dataset',
           'is_tuple_element', 'pack_block', 'to_blocks', 'to_dataset',
           'to_stream', 'unpack_block']

# Examples per block on the blocked tf.data path. Large enough that the
# per-block overhead (about a millisecond) is small per example; the first
# output waits for one block.
BLOCK_SIZE = 1024


def is_dataset(stream):
  return isinstance(stream, tf.data.Dataset)


class Blocks:
  """A stream of examples on the tf.data path, grouped in blocks.

  Each element of `dataset` is a tuple of columns, one value per example
  position: a `[k]` tensor for scalars, a `[k, None]` `tf.RaggedTensor` for
  vectors (k <= BLOCK_SIZE; a block may be empty). Only `Serial` and the
  steps' `block_fn`s see this type; `unblock` gives the plain Dataset back.

  Moving blocks around (shuffling, bucketing) is mostly copying, so two
  savings are kept until the examples leave the blocks: positions holding
  the same values (`Dup`) share one column (`layout` maps each position to
  its column), and token ids may be stored narrower than their dtype
  (`Tokenize` stores uint16 where the vocabulary fits; `dtypes` holds the
  dtypes the examples have).

  Args:
    dataset: the Dataset of blocks of columns.
    tupled: whether the examples are tuples (else bare tensors, held as
      1-tuples in the blocks).
    dtypes: the examples' dtypes, one per position (default: as stored).
    layout: the column of each position (default: one each, in order).
  """

  def __init__(self, dataset, tupled, dtypes=None, layout=None):
    self.dataset = dataset
    self.tupled = tupled
    specs = dataset.element_spec
    self.layout = tuple(range(len(specs)) if layout is None else layout)
    self.dtypes = tuple(specs[c].dtype for c in self.layout) if (
        dtypes is None) else tuple(dtypes)
    if len(self.dtypes) != len(self.layout):
      raise ValueError(f'Blocks: {len(self.dtypes)} dtypes for '
                       f'{len(self.layout)} positions.')

  def positions(self, columns):
    """A block's (or a batch's) columns, one per example position."""
    return tuple(columns[c] for c in self.layout)

  @property
  def element_spec(self):
    """The spec of one example, as a per-example Dataset would have it."""
    specs = tuple(tf.TensorSpec(s.shape[1:], d) for s, d in zip(
        self.positions(self.dataset.element_spec), self.dtypes))
    return specs if self.tupled else specs[0]

  def map(self, fn, tupled=None, dtypes=None):
    """Maps `fn(tuple_of_position_values) -> tuple` over the blocks, in order.

    Positions `fn` returns as the very same tensor share a column.

    Args:
      fn: block positions -> block positions.
      tupled: whether the result's examples are tuples (default: as now).
      dtypes: the result's example dtypes (default: as now, which needs the
        same number of positions).
    """
    found = {}

    def columns_of(*columns):
      columns_out, layout = [], []
      for x in fn(self.positions(columns)):
        same = [j for j, c in enumerate(columns_out) if c is x]
        layout.append(same[0] if same else len(columns_out))
        if not same:
          columns_out.append(x)
      found['layout'] = layout
      return tuple(columns_out)
    mapped = self.dataset.map(
        tf.autograph.experimental.do_not_convert(columns_of),
        num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    return Blocks(mapped, self.tupled if tupled is None else tupled,
                  self.dtypes if dtypes is None else dtypes, found['layout'])

  def take(self, rows_fn):
    """Keeps, in each block, the examples `rows_fn(positions)` indexes."""
    def taken(*columns):
      rows = rows_fn(self.positions(columns))
      return tuple(tf.gather(c, rows) for c in columns)
    return self.with_dataset(self.dataset.map(
        tf.autograph.experimental.do_not_convert(taken),
        num_parallel_calls=tf.data.AUTOTUNE, deterministic=True))

  def with_dataset(self, dataset):
    """Blocks of this structure over `dataset` (of columns, as this one)."""
    return Blocks(dataset, self.tupled, self.dtypes, self.layout)

  def restore(self, columns):
    """Columns (of a block, or of a batch) as positions in their dtypes."""
    cast = {}  # A column shared by positions is cast once.
    for c, d in zip(self.layout, self.dtypes):
      if columns[c].dtype != d and (c, d) not in cast:
        cast[(c, d)] = tf.cast(columns[c], d)
    return tuple(cast.get((c, d), columns[c])
                 for c, d in zip(self.layout, self.dtypes))

  def unblock(self):
    """The per-example Dataset, with plain (dense) tensors."""
    ds = self.dataset.unbatch()

    # Unbatched ragged rows come out as ragged specs; a map makes them dense
    # tensors, as every other step expects.
    def example(*columns):
      xs = self.restore(tuple(_dense(x) for x in columns))
      return xs if self.tupled else xs[0]
    return ds.map(tf.autograph.experimental.do_not_convert(example))

  def empty_block(self):
    """A block of no examples, of this stream's structure."""
    return tuple(
        tf.RaggedTensor.from_row_lengths(tf.zeros([0], s.dtype),
                                         tf.zeros([0], s.row_splits_dtype))
        if isinstance(s, tf.RaggedTensorSpec) else tf.zeros([0], s.dtype)
        for s in self.dataset.element_spec)

  def with_end_marker(self):
    """`(False, block)` elements, then one `(True, empty block)`.

    tf.data's `scan` cannot act when its input ends; a step that must flush
    what it holds (Shuffle) sees the marker instead.
    """
    marked = self.dataset.map(lambda *xs: (tf.constant(False), xs))
    return marked.concatenate(
        tf.data.Dataset.from_tensors((tf.constant(True), self.empty_block())))


def pack_block(xs):
  """A block as dense tensors (scan state cannot hold ragged ones)."""
  return tuple((x.flat_values, x.row_lengths())
               if isinstance(x, tf.RaggedTensor) else (x,) for x in xs)


def unpack_block(packed):
  """The inverse of `pack_block`."""
  return tuple(tf.RaggedTensor.from_row_lengths(*p, validate=False)
               if len(p) == 2 else p[0] for p in packed)


def block_size(xs):
  """Examples in a block (as an int64 scalar)."""
  x = xs[0]
  return (x.nrows() if isinstance(x, tf.RaggedTensor)
          else tf.shape(x, out_type=tf.int64)[0])


def _dense(x):
  return x.to_tensor() if isinstance(x, tf.RaggedTensor) else x


def can_block(dataset):
  """Whether `dataset`'s examples fit `Blocks`: scalars and vectors only."""
  spec = dataset.element_spec
  specs = spec if isinstance(spec, tuple) else (spec,)
  # Exactly TensorSpec: ragged and sparse specs are subclasses or kin.
  return bool(specs) and all(
      type(s) is tf.TensorSpec  # pylint: disable=unidiomatic-typecheck
      and s.shape.rank is not None and s.shape.rank <= 1 for s in specs)


def to_blocks(dataset, size=None):
  """Groups a per-example Dataset (see `can_block`) into `Blocks`."""
  tupled = is_tuple_element(dataset)
  if not tupled:
    dataset = dataset.map(lambda x: (x,))

  def as_ragged(*xs):
    # A vector position of fixed length batches dense; keep one form.
    return tuple(tf.RaggedTensor.from_tensor(x) if
                 not isinstance(x, tf.RaggedTensor) and x.shape.rank == 2
                 else x for x in xs)
  blocked = dataset.ragged_batch(size or BLOCK_SIZE).map(
      tf.autograph.experimental.do_not_convert(as_ragged))
  return Blocks(blocked, tupled)


class Step:
  """A pipeline step with a Python path and, optionally, tf.data paths.

  Calling it with a `tf.data.Dataset` runs `dataset_fn` (or, when there is
  none, `python_fn` on the Dataset read as NumPy); with `Blocks` (inside
  `Serial`), `block_fn`, or else the per-example path on the unblocked
  Dataset; anything else goes to `python_fn`, exactly as a Trax stream
  function would.

  Args:
    name: the combinator's name, used in reprs and error messages.
    python_fn: iterator (or None, for sources) -> iterator.
    dataset_fn: `tf.data.Dataset` -> `tf.data.Dataset`, or None.
    block_fn: `Blocks` -> `Blocks` or `tf.data.Dataset`, or None.
  """

  def __init__(self, name, python_fn, dataset_fn=None, block_fn=None):
    self.name = name
    self.python_fn = python_fn
    self.dataset_fn = dataset_fn
    self.block_fn = block_fn

  @property
  def has_dataset_path(self):
    return self.dataset_fn is not None

  def __call__(self, generator=None):
    if isinstance(generator, Blocks):
      if self.block_fn is not None:
        return self.block_fn(generator)
      generator = generator.unblock()
    if is_dataset(generator):
      if self.dataset_fn is None:
        return self.python_fn(to_stream(generator))
      return self.dataset_fn(generator)
    return self.python_fn(generator)

  def __repr__(self):
    return f'{self.name}'


def to_stream(dataset):
  """A `tf.data.Dataset` read as Trax's stream: tuples of NumPy arrays.

  Example:
    >>> ds = tf.data.Dataset.from_tensor_slices(([1, 2], [3, 4]))
    >>> [tuple(int(v) for v in ex) for ex in to_stream(ds)]
    [(1, 3), (2, 4)]

  Args:
    dataset: a `tf.data.Dataset`; elements that are tuples stay tuples, a
      single tensor becomes a bare NumPy array (as Trax streams allow). A
      Python stream (any iterable) is returned as an iterator, unchanged, so
      a pipeline's end can be read the same way on either path.

  Returns:
    An iterator of the elements as NumPy values, in order.
  """
  if isinstance(dataset, Blocks):
    dataset = dataset.unblock()
  if not is_dataset(dataset):
    if not hasattr(dataset, '__iter__'):
      raise TypeError(f'to_stream: expected a tf.data.Dataset or a Python '
                      f'stream, got {type(dataset).__name__}.')
    return iter(dataset)
  return (tuple(e) if isinstance(e, list) else e
          for e in dataset.as_numpy_iterator())


def _as_spec(sig, where):
  if isinstance(sig, tf.TensorSpec):
    return sig
  if isinstance(sig, shapes.ShapeDtype):
    return sig.as_tensor_spec()
  if hasattr(sig, 'shape') and hasattr(sig, 'dtype'):
    return tf.TensorSpec(tuple(sig.shape), tf.as_dtype(sig.dtype))
  raise TypeError(f'to_dataset: signature {where} should be a ShapeDtype or '
                  f'tf.TensorSpec, got {sig!r}.')


def _spec_of(example):
  """A spec with every dimension unknown, so examples may vary in length."""
  def one(x):
    x = np.asarray(x)
    return tf.TensorSpec([None] * x.ndim, tf.as_dtype(x.dtype))
  if isinstance(example, (tuple, list)):
    return tuple(one(x) for x in example)
  return one(example)


def _checked(examples, spec):
  """Re-yields `examples`, failing clearly where one does not fit `spec`."""
  specs = spec if isinstance(spec, tuple) else None
  for i, example in enumerate(examples):
    if specs is not None:
      if not isinstance(example, (tuple, list)) or len(example) != len(specs):
        got = (f'{len(example)} values' if isinstance(example, (tuple, list))
               else type(example).__name__)
        raise ValueError(f'to_dataset: example {i} has {got}, but the '
                         f'signature has {len(specs)} positions.')
      values = tuple(example)
    else:
      values = (example,)
    for pos, (x, s) in enumerate(zip(values, specs or (spec,))):
      x = np.asarray(x)
      if x.ndim != s.shape.rank or not s.shape.is_compatible_with(x.shape):
        raise ValueError(f'to_dataset: example {i} position {pos} has shape '
                         f'{x.shape}, but the signature says '
                         f'{tuple(s.shape.as_list())}.')
    yield tuple(example) if specs is not None else example


def to_dataset(stream, signature=None):
  """A Trax stream as a `tf.data.Dataset`, so later steps run in tf.data.

  Example:
    >>> ds = to_dataset(lambda: iter([(np.arange(3),)]))
    >>> ds.element_spec[0].shape.as_list()
    [None]

  Args:
    stream: a callable returning an iterable of examples (a Trax stream
      function, called with no argument, or a generator function), or an
      iterable. A callable gives a Dataset that can be iterated many times; an
      iterator only once.
    signature: a `ShapeDtype`/`tf.TensorSpec`, or a tuple of them, for one
      example. None: read off the first example, with every dimension
      unknown.

  Returns:
    A `tf.data.Dataset` yielding the stream's examples.
  """
  make = stream if callable(stream) else None
  if make is None and not hasattr(stream, '__iter__'):
    raise TypeError(f'to_dataset: expected a stream (callable or iterable), '
                    f'got {type(stream).__name__}.')
  if signature is None:
    first_it = iter(make() if make else stream)
    try:
      first = next(first_it)
    except StopIteration:
      raise ValueError('to_dataset: the stream is empty, so no signature '
                       'can be read from it; pass signature=.') from None
    spec = _spec_of(first)
    if make is None:
      # Put the peeked example back in front of the one-shot iterator.
      def chained():
        yield first
        yield from first_it
      make = chained
  elif isinstance(signature, (tuple, list)):
    spec = tuple(_as_spec(s, f'position {i}') for i, s in enumerate(signature))
  else:
    spec = _as_spec(signature, '')
  if make is None:
    make = lambda: iter(stream)
  return tf.data.Dataset.from_generator(lambda: _checked(make(), spec),
                                        output_signature=spec)


def is_tuple_element(dataset):
  return isinstance(dataset.element_spec, tuple)


def element_arity(dataset):
  """How many values a Dataset element has (1 for a bare tensor)."""
  spec = dataset.element_spec
  return len(spec) if isinstance(spec, tuple) else 1


def dataset_map(dataset, fn):
  """Maps `fn(tuple_of_tensors) -> tuple` in parallel, keeping the order.

  A bare-tensor element is handed to `fn` as the tensor itself, as Trax
  hands bare arrays to its steps.
  """
  if is_tuple_element(dataset):
    mapped = lambda *xs: fn(xs)
  else:
    mapped = fn
  # Our functions are plain TensorFlow code: autograph would only cost time.
  mapped = tf.autograph.experimental.do_not_convert(mapped)
  return dataset.map(mapped, num_parallel_calls=tf.data.AUTOTUNE,
                     deterministic=True)


def check_ids_dtype(name, position, dtype):
  """Fails where a string or other non-number sits where ids are expected."""
  dtype = tf.as_dtype(dtype)
  if not (dtype.is_integer or dtype.is_floating or dtype.is_bool):
    raise ValueError(f'{name}: position {position} holds {dtype.name} values '
                     f'where numbers (token ids) are expected; tokenize text '
                     f'first (e.g. data.Tokenize).')
