"""`BucketByLength` on `Blocks`: Trax's per-example bucketing, by block.

Trax's `bucket_by_length` appends each example to its bucket and yields the
bucket as a batch the moment it holds `batch_sizes[i]` examples. Here a
whole block is placed at once. The examples still pending in partly filled
buckets (carried from block to block as `scan` state, in arrival order) are
put before the block's; each example's rank within its bucket, `r`, says
which batch it joins (`r // batch_size`), and a batch is complete when its
last member is there. Complete batches are emitted in the order of their
last members' arrival, which is the order Trax yields them; the examples of
incomplete batches stay pending. Each batch's padded length, by Trax's
rule (`_padding.padded_sizes`), is found in the same vectorised pass, so
what is left per batch is one `to_tensor`.
"""

import numpy as np
import tensorflow as tf

from tfnp_trax.data import _padding
from tfnp_trax.data import _tf_path

__all__ = ['bucket_blocks']


def _bucket_keys(lengths, boundaries, n_buckets):
  """First bucket whose (inclusive) boundary fits each length; checked."""
  bounds = tf.constant(list(boundaries) + [np.iinfo(np.int64).max] * (
      n_buckets - len(boundaries)), tf.int64)
  keys = tf.reduce_sum(tf.cast(lengths[:, None] > bounds[None, :], tf.int64),
                       axis=1)
  check = tf.debugging.Assert(tf.reduce_all(keys < n_buckets), [
      f'BucketByLength: an example is longer than the last boundary '
      f'{boundaries[-1] if boundaries else None} and there is no bucket for '
      f'it; length:',
      tf.reduce_max(lengths)])
  with tf.control_dependencies([check]):
    return tf.identity(keys)


def _complete_batches(keys, sizes, n_buckets):
  """Which pooled examples complete batches, and in which order.

  Args:
    keys: `[m]` bucket of each pooled example, in arrival order.
    sizes: `[n_buckets]` batch sizes.
    n_buckets: the number of buckets.

  Returns:
    `(order, batch_keys, kept)`: the positions of emitted examples, batch
    after batch in emission order (arrival order inside a batch); each
    batch's bucket; the positions of the examples still pending.
  """
  onehot = tf.one_hot(keys, n_buckets, dtype=tf.int64)
  rank = tf.reduce_sum(tf.cumsum(onehot, axis=0, exclusive=True) * onehot,
                       axis=1)
  size = tf.gather(sizes, keys)
  batch = rank // size
  n_full = tf.reduce_sum(onehot, axis=0) // sizes
  emitted = batch < tf.gather(n_full, keys)
  # A batch is emitted when its last member arrives.
  last = tf.where(tf.logical_and(emitted, rank % size == size - 1))[:, 0]
  batch_keys = tf.gather(keys, last)
  # Emission index of each (bucket, batch) pair, looked up per member.
  slots = tf.scatter_nd(
      tf.stack([batch_keys, tf.gather(batch, last)], axis=1),
      tf.range(tf.size(last, out_type=tf.int64)),
      tf.stack([tf.constant(n_buckets, tf.int64), tf.reduce_max(n_full)]))
  members = tf.where(emitted)[:, 0]
  slot = tf.gather_nd(slots, tf.stack(
      [tf.gather(keys, members), tf.gather(batch, members)], axis=1))
  order = tf.gather(members, tf.argsort(slot, stable=True))
  kept = tf.where(tf.logical_not(emitted))[:, 0]
  return order, batch_keys, kept


def _batches(x, order, rows, boundary, strict_pad_on_len):
  """One example position of a block's complete batches, and their widths.

  Args:
    x: the pooled values, `[m]` or ragged `[m, None]`.
    order: positions of the emitted examples, batch after batch.
    rows: `[T]` examples per batch.
    boundary: `[T]` each batch's bucket boundary (-1: none).
    strict_pad_on_len: as in `pad_to_max_dims`.

  Returns:
    Scalars: ragged `[T, None]`, a batch per row. Vectors: ragged
    `[T, None, None]` and `[T]` widths, Trax's padded length of each batch.
  """
  values = tf.gather(x, order)
  batches = tf.RaggedTensor.from_row_lengths(values, rows, validate=False)
  if not isinstance(x, tf.RaggedTensor):
    return batches
  n_batches = tf.size(rows, out_type=tf.int64)
  longest = tf.math.unsorted_segment_max(
      values.row_lengths(), tf.repeat(tf.range(n_batches), rows), n_batches)
  return batches, _padding.padded_sizes(longest, boundary, strict_pad_on_len)


def bucket_blocks(blocks, measure, boundaries, batch_sizes,
                  strict_pad_on_len=False):
  """Buckets the examples of `Blocks` into batches, as Trax does.

  Args:
    blocks: `_tf_path.Blocks` of tuple examples, vectors not strings.
    measure: block positions -> `[k]` int64 lengths.
    boundaries: int bucket boundaries (inclusive).
    batch_sizes: one per bucket (`len(boundaries)` or one more).
    strict_pad_on_len: as in `pad_to_max_dims`.

  Returns:
    A `tf.data.Dataset` of padded batch tuples, in Trax's order.
  """
  n = len(batch_sizes)
  sizes = tf.constant(batch_sizes, tf.int64)
  # -1 stands for the unbounded last bucket: no extra padding.
  pad_bounds = tf.constant(list(boundaries) + [-1] * (n - len(boundaries)),
                           tf.int64)
  init = (tf.zeros([0], tf.int64),
          _tf_path.pack_block(blocks.empty_block()))

  def step(state, xs):
    pending_keys, pending = state
    keys = tf.concat([pending_keys, _bucket_keys(
        measure(blocks.positions(xs)), boundaries, n)], axis=0)
    pool = tuple(tf.concat([p, x], axis=0)
                 for p, x in zip(_tf_path.unpack_block(pending), xs))
    order, batch_keys, kept = _complete_batches(keys, sizes, n)
    rows = tf.gather(sizes, batch_keys)
    bounds = tf.gather(pad_bounds, batch_keys)
    batches = tuple(_batches(x, order, rows, bounds, strict_pad_on_len)
                    for x in pool)
    pending = _tf_path.pack_block(tuple(tf.gather(x, kept) for x in pool))
    return (tf.gather(keys, kept), pending), batches

  def to_batch(*columns):
    # The widths were computed for the whole block: one op per value here.
    return blocks.restore(tuple(
        x[0].to_tensor(shape=tf.stack([-1, x[1]])) if isinstance(x, tuple)
        else x for x in columns))

  # Plain TensorFlow code: autograph's conversion would only cost time.
  step = tf.autograph.experimental.do_not_convert(step)
  to_batch = tf.autograph.experimental.do_not_convert(to_batch)
  return (blocks.dataset.scan(init, step).unbatch()
          .map(to_batch, num_parallel_calls=tf.data.AUTOTUNE,
               deterministic=True))
