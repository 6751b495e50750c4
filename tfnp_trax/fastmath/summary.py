"""TensorBoard summaries from inside layers: written only if a writer is on.

The writer is TensorFlow's default one (`with writer.as_default(step=...)`).
With none active every function here does nothing, so layers can call them
unconditionally. Inside a compiled function the writer and step are those
in effect when it was traced (TensorFlow's rule); pass a `tf.Variable` as
the step to have a compiled step see its current value.
"""

import tensorflow as tf

from tfnp_trax.fastmath import transforms

__all__ = ['writer_active', 'scalar', 'image']


def writer_active():
  """True if a default summary writer is set and summaries can be written.

  False under XLA compilation (`jit_compile=True`), where TensorFlow cannot
  run summary ops: there the caller's value is simply not written.
  """
  try:
    from tensorflow.python.ops import summary_ops_v2  # pylint: disable=g-import-not-at-top
    active = summary_ops_v2.has_default_writer()
  except (ImportError, AttributeError):
    active = True  # tf.summary itself then decides, returning False if not.
  # TensorFlow has no XLA kernel for summary writes; compiling one fails.
  return bool(active) and not transforms.in_xla()


def _step():
  step = tf.summary.experimental.get_step()
  return 0 if step is None else step


def scalar(name, value):
  """Writes `value` (any shape, averaged to a scalar if needed) as `name`."""
  if not writer_active():
    return
  value = tf.cast(tf.convert_to_tensor(value), tf.float32)
  tf.summary.scalar(name, tf.reduce_mean(value), step=_step())


def image(name, images, max_outputs=3):
  """Writes `images` [k, height, width, channels] (1, 3 or 4 channels).

  Float images are taken to hold values in [0, 1]; rank-3 input [k, h, w]
  is treated as one grey channel.
  """
  if not writer_active():
    return
  images = tf.convert_to_tensor(images)
  if images.shape.rank == 3:
    images = images[..., tf.newaxis]
  if images.dtype.is_floating and images.dtype != tf.float32:
    images = tf.cast(images, tf.float32)
  tf.summary.image(name, images, step=_step(), max_outputs=max_outputs)
