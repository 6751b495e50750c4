"""Trax's `Inputs` bundle, and `batcher`, which builds one from streams.

`Inputs` is what Trax's gin-configured `Trainer` reads: functions from a
device count to streams of batches, plus the shapes of one batch.
"""

from absl import logging

from tfnp_trax.data import _tf_path
from tfnp_trax.data._combinators import Parallel
from tfnp_trax.data._combinators import Serial
from tfnp_trax.data._combinators import batch
from tfnp_trax.data._combinators import shuffle
from tfnp_trax.data._length import bucket_by_length
from tfnp_trax.data._lm_inputs import add_loss_weights

__all__ = ['Inputs', 'make_inputs', 'make_additional_stream',
           'make_parallel_stream', 'batcher', 'batch_fn',
           'buckets_for_length']


class Inputs:
  """Streams of batches for training and evaluation, and a batch's shapes.

  Args:
    train_stream: a function from `n_devices` (int) to an iterator of
      training batches, tuples `(inputs, targets[, weights])`.
    eval_stream: the same for evaluation batches (default: `train_stream`).
    train_eval_stream: the same for training data used in evaluation
      (default: `train_stream`).
  """

  def __init__(self, train_stream, eval_stream=None, train_eval_stream=None):
    if not callable(train_stream):
      raise ValueError('Trax Inputs should be initialized with a function. '
                       'Did you forget the n_devices argument? If your inputs '
                       'do not use it, try lambda _: [your-inputs].')
    self._train_stream = train_stream
    self._eval_stream = eval_stream or train_stream
    self._train_eval_stream = train_eval_stream or train_stream
    # Shapes are read off one training batch, as Trax does.
    first = train_stream(1)
    if _tf_path.is_dataset(first):
      first = _tf_path.to_stream(first)
    example = next(iter(first))
    self._input_shape = tuple(example[0].shape)[1:]
    self._input_dtype = example[0].dtype
    self._target_shape = tuple(example[-1].shape)[1:]
    self._target_dtype = example[-1].dtype
    self._example_shape = [x.shape for x in example]
    self._example_dtype = [x.dtype for x in example]

  def train_stream(self, n_devices):
    return self._train_stream(n_devices)

  def eval_stream(self, n_devices):
    return self._eval_stream(n_devices)

  def train_eval_stream(self, n_devices):
    # Trax returns the training stream here, not `train_eval_stream`.
    return self._train_stream(n_devices)

  @property
  def input_shape(self):
    """One input's shape, without the batch dimension."""
    return self._input_shape

  @property
  def target_shape(self):
    """One target's shape (the batch's last value), without batch dim."""
    return self._target_shape

  @property
  def input_dtype(self):
    return self._input_dtype

  @property
  def target_dtype(self):
    return self._target_dtype

  @property
  def example_shape_dtype(self):
    """`([shape of each value], [dtype of each value])` of one batch."""
    return self._example_shape, self._example_dtype


def make_inputs(train_stream=None, eval_stream=None):
  """Inputs from a train and an eval stream; a list is run as `Serial`."""
  if train_stream is None:
    raise ValueError('make_inputs: train_stream is required.')
  if isinstance(train_stream, (list, tuple)):
    train_stream = Serial(train_stream)()
  if isinstance(eval_stream, (list, tuple)):
    eval_stream = Serial(eval_stream)()
  eval_fn = None if eval_stream is None else lambda _: eval_stream
  return Inputs(train_stream=lambda _: train_stream, eval_stream=eval_fn)


def make_additional_stream(stream=None):
  """A stream from a list of steps, run as `Serial`."""
  if stream is None:
    raise ValueError('make_additional_stream: stream is required.')
  return Serial(stream)()


def make_parallel_stream(streams=None, counters=None):
  """A stream mixing `streams` by `counters`, run as `Parallel`."""
  if streams is None:
    raise ValueError('make_parallel_stream: streams is required.')
  return Parallel(streams, counters=counters)()


def buckets_for_length(bucket_length, batch_size, max_eval_length, n_devices,
                       training):
  """Trax's heuristic buckets around `(bucket_length, batch_size)`.

  Boundaries are `bucket_length` times 1/4, 1/2, 1, 2, 4, 8, 16; batch sizes
  scale inversely (4x down to 1/16x, then 1 for longer). For eval the
  boundaries are cut at `max_eval_length` (default 32x) and the last sized
  bucket gets `batch_size // max_eval_length`. Batch sizes are rounded down
  to multiples of `n_devices` (at least `n_devices`).

  Returns:
    `(boundaries, batch_sizes)`, with one more batch size than boundaries.
  """
  boundaries = [bucket_length // 4, bucket_length // 2, bucket_length,
                bucket_length * 2, bucket_length * 4, bucket_length * 8,
                bucket_length * 16]
  if not training:
    max_eval_length = max_eval_length or bucket_length * 32
    # Trax adds max_eval_length twice; kept, as it sets the bucket count.
    boundaries = [b for b in boundaries if b < max_eval_length]
    boundaries += [max_eval_length, max_eval_length]
  sizes = [batch_size * 4, batch_size * 2, batch_size, batch_size // 2,
           batch_size // 4, batch_size // 8, batch_size // 16, 1]
  if not training:
    sizes = sizes[:len(boundaries)] + [1]
    sizes[-2] = batch_size // max_eval_length
  sizes = [max(b // n_devices, 1) * n_devices for b in sizes]
  return boundaries, sizes


def batch_fn(dataset, training, n_devices, variable_shapes,
             batch_size_per_device=32, batch_size=None, eval_batch_size=32,
             bucket_length=32, buckets=None,
             buckets_include_inputs_in_length=False,
             batch_shuffle_size=None, max_eval_length=None,
             id_to_mask=None, strict_pad_on_len=False):
  """Batches an example stream as Trax's `batcher` does (see there)."""
  batch_size = batch_size or batch_size_per_device * n_devices
  cur_batch_size = batch_size if training else eval_batch_size
  cur_batch_size = max(cur_batch_size // n_devices, 1) * n_devices
  if buckets is None and variable_shapes:
    buckets = buckets_for_length(bucket_length, cur_batch_size,
                                 max_eval_length, n_devices, training)
  if buckets:
    logging.info('Bucketing with buckets %s.', str(buckets))

    def example_length(x):
      # The targets' length, or the inputs' if longer and asked for.
      inputs_length = x[0].shape[0] if buckets_include_inputs_in_length else 0
      return max(x[1].shape[0], inputs_length)
    boundaries, batch_sizes = buckets
    dataset = bucket_by_length(dataset, example_length, boundaries,
                               batch_sizes, strict_pad_on_len)
  else:
    logging.info('Not Bucketing cur_batch_size %d.', cur_batch_size)
    dataset = batch(dataset, cur_batch_size)
  if training and batch_shuffle_size is not None:
    dataset = shuffle(dataset, batch_shuffle_size)
  return add_loss_weights(dataset, id_to_mask)


def batcher(data_streams=None, variable_shapes=True,
            batch_size_per_device=32, batch_size=None, eval_batch_size=32,
            bucket_length=32, buckets=None,
            buckets_include_inputs_in_length=False,
            batch_shuffle_size=None, max_eval_length=None,
            id_to_mask=None, strict_pad_on_len=False):
  """`Inputs` whose streams batch single-example streams.

  Args:
    data_streams: `(train_fn, eval_fn)` of no-argument functions returning
      example streams, or a function returning that pair.
    variable_shapes: with no `buckets`, bucket by length heuristically (see
      `buckets_for_length`); if False, plain batches.
    batch_size_per_device: training batch size per device (used when
      `batch_size` is None).
    batch_size: the global training batch size.
    eval_batch_size: the evaluation batch size.
    bucket_length: the middle bucket's length for the heuristic buckets.
    buckets: `(boundaries, batch_sizes)` to bucket with.
    buckets_include_inputs_in_length: measure inputs too, not only targets.
    batch_shuffle_size: if given, shuffle training batches in this queue.
    max_eval_length: the longest eval bucket.
    id_to_mask: padding id given weight 0 (see `add_loss_weights`).
    strict_pad_on_len: see `pad_to_max_dims`.

  Returns:
    An `Inputs`.
  """
  if data_streams is None:
    raise ValueError('batcher: data_streams is required: (train_fn, eval_fn) '
                     'or a function returning them.')
  if callable(data_streams):
    train_stream, eval_stream = data_streams()
  else:
    train_stream, eval_stream = data_streams
  options = (variable_shapes, batch_size_per_device, batch_size,
             eval_batch_size, bucket_length, buckets,
             buckets_include_inputs_in_length, batch_shuffle_size,
             max_eval_length, id_to_mask, strict_pad_on_len)

  def make(source, training):
    return lambda n_devices: batch_fn(source(), training, n_devices, *options)
  return Inputs(train_stream=make(train_stream, True),
                eval_stream=make(eval_stream, False),
                train_eval_stream=make(train_stream, False))
