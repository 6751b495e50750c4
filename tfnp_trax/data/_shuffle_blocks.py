"""`Shuffle` on `Blocks`: a shuffle buffer of examples, drawn from by block.

The per-example tf.data path is `Dataset.shuffle(queue_size)`: each example
out is drawn at random from a buffer of `queue_size`, and the next one in
takes its place. Here a whole block comes in at once: the buffer and the
block form a pool, and as many examples as the block brought (once the
buffer is full) leave it, a uniformly random subset in random order. When
the input ends, the buffer is emptied in random order. So, as there, each
example waits in a buffer of `queue_size` others and every example comes
out once.
"""

import tensorflow as tf

from tfnp_trax.data import _tf_path

__all__ = ['shuffle_blocks']


def shuffle_blocks(blocks, queue_size, seed):
  """Shuffles the examples of `Blocks` through a buffer of `queue_size`.

  Args:
    blocks: a `_tf_path.Blocks`.
    queue_size: examples held back in the buffer (>= 1).
    seed: int seed of the stateless random draws.

  Returns:
    `Blocks` of the same examples, shuffled.
  """
  queue = tf.constant(queue_size, tf.int64)
  empty = _tf_path.pack_block(blocks.empty_block())

  def step(state, marked):
    count, buffer = state
    end, xs = marked
    pool = tuple(tf.concat([b, x], 0) for b, x in
                 zip(_tf_path.unpack_block(buffer), xs))
    n = _tf_path.block_size(pool)
    n_out = tf.where(end, n, tf.maximum(n - queue, 0))
    draws = tf.random.stateless_uniform([n], seed=tf.stack(
        [tf.constant(seed, tf.int64), count]))
    order = tf.argsort(draws)
    out = tuple(tf.gather(x, order[:n_out]) for x in pool)
    kept = tuple(tf.gather(x, order[n_out:]) for x in pool)
    return (count + 1, _tf_path.pack_block(kept)), out

  step = tf.autograph.experimental.do_not_convert(step)
  shuffled = blocks.with_end_marker().scan(
      (tf.constant(0, tf.int64), empty), step)
  shuffled = shuffled.filter(lambda *xs: _tf_path.block_size(xs) > 0)
  return blocks.with_dataset(shuffled)
