"""One pipeline step, two paths: Python iterators (as Trax) and tf.data.

Trax's data pipeline is a chain of functions, each taking a Python iterator
of examples (tuples of NumPy arrays) and returning another. tfnp_trax keeps
that contract exactly, and adds a second path: given a `tf.data.Dataset`, the
same step runs as a tf.data transformation, so the work happens in
TensorFlow's threads instead of the Python interpreter.

`Step` is the callable every combinator of `tfnp_trax.data.inputs` returns.
It looks at what it is given and picks the path. A step that has no tf.data
form (it needs Python state, or NumPy's global random stream) reads a
Dataset as NumPy, so the stream moves to the Python path from there on.
"""

import numpy as np
import tensorflow as tf

from tfnp_trax import shapes

__all__ = ['Step', 'is_dataset', 'to_dataset', 'to_stream', 'dataset_map',
           'element_arity', 'is_tuple_element', 'check_ids_dtype']


def is_dataset(stream):
  return isinstance(stream, tf.data.Dataset)


class Step:
  """A pipeline step with a Python path and, optionally, a tf.data path.

  Calling it with a `tf.data.Dataset` runs `dataset_fn` (or, when there is
  none, `python_fn` on the Dataset read as NumPy); anything else goes to
  `python_fn`, exactly as a Trax stream function would.

  Args:
    name: the combinator's name, used in reprs and error messages.
    python_fn: iterator (or None, for sources) -> iterator.
    dataset_fn: `tf.data.Dataset` -> `tf.data.Dataset`, or None.
  """

  def __init__(self, name, python_fn, dataset_fn=None):
    self.name = name
    self.python_fn = python_fn
    self.dataset_fn = dataset_fn

  @property
  def has_dataset_path(self):
    return self.dataset_fn is not None

  def __call__(self, generator=None):
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
