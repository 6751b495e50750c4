"""Sums of squares over groups of arrays, and ordering reads before writes.

Optimizers report the global L2 norms of the gradients and of the weights
every step (`gradients_l2`, `weights_l2`), so computing them must cost as
little as possible, in step time and in compile time, with and without XLA:

* Without XLA each array costs one `L2Loss` kernel (it reads the array once
  and writes no squared copy).
* Under XLA each group costs two dots with ones, whatever its number of
  arrays: one sums the squares of 128-long rows of all its arrays, stacked,
  the other sums those row sums. XLA fuses the squares and the stacking
  into the dots. XLA's CPU backend reduces a large array to a scalar on one
  thread, about 3x slower than a dot, and rewrites a long reduction into a
  tree of several kernels; each kernel costs about 10 ms of compile time
  (5 ms of wall time on 2 cores), so the form with the fewest kernels also
  gives the shortest first step (a 3-layer MLP's norms: 11 kernels with a
  dot per array, 8 with this form).
"""

import tensorflow as tf

from tfnp_trax.fastmath import transforms

__all__ = ['sums_of_squares', 'ordered_after']

_ROW = 128  # Row length of the first dot.


def _sum_dtype(groups):
  """float64 if any array is float64, else float32."""
  for group in groups:
    for x in group:
      if x.dtype == tf.float64:
        return tf.float64
  return tf.float32


def _dots(groups, dtype):
  """The XLA form: two dots with ones per group, whatever its array count.

  Every array whose size divides by `_ROW` is viewed as rows of `_ROW`
  (a free reshape), all of a group's rows are stacked, and one dot with
  ones sums the squares of each row; the row sums and the squares of the
  remaining small arrays are then summed by a second dot. XLA fuses the
  squares and the concatenations into the two dots.
  """
  sums = []
  for group in groups:
    blocks, rest = [], []
    for x in group:
      x = tf.cast(x, dtype)
      size = x.shape.num_elements()
      if size is not None and size >= _ROW and size % _ROW == 0:
        blocks.append(tf.reshape(x, [-1, _ROW]))
      else:
        rest.append(tf.reshape(x, [-1]))
    parts = [v * v for v in rest]
    if blocks:
      rows = tf.concat(blocks, 0) if len(blocks) > 1 else blocks[0]
      parts.insert(0, tf.linalg.matvec(rows * rows, tf.ones([_ROW], dtype)))
    if not parts:
      sums.append(tf.zeros((), dtype))
      continue
    flat = tf.concat(parts, 0) if len(parts) > 1 else parts[0]
    ones = (tf.ones(flat.shape, dtype) if flat.shape.is_fully_defined()
            else tf.ones_like(flat))  # A dimension known only at run time.
    sums.append(tf.tensordot(flat, ones, 1))
  return sums


def _per_array(groups, dtype):
  # L2Loss is half the sum of squares; one doubling per group, not per array.
  sums = []
  for group in groups:
    parts = [tf.nn.l2_loss(tf.cast(x, dtype)) for x in group]
    sums.append(2.0 * (tf.add_n(parts) if len(parts) > 1 else parts[0])
                if parts else tf.zeros((), dtype))
  return sums


def sums_of_squares(groups):
  """The sum of squares of all elements of each group of arrays.

  Args:
    groups: a sequence of groups, each a sequence of arrays (any shapes,
      floating or integer dtypes).

  Returns:
    A list with one scalar per group (separate scalars, not one vector: under
    XLA, slicing a vector would compile a kernel per entry), float64 if any
    array is float64, else float32 (bfloat16 and float16 arrays are summed in
    float32). An empty group sums to 0.
  """
  groups = [[tf.convert_to_tensor(x) for x in group] for group in groups]
  dtype = _sum_dtype(groups)
  if transforms.in_xla():
    return _dots(groups, dtype)
  return _per_array(groups, dtype)


def ordered_after(tree_leaves, values):
  """`tree_leaves`, made to depend on `values` at no numeric cost.

  Under XLA each floating array is multiplied by a factor that is exactly 1
  (each of `values` is a norm or sum of squares, never negative, and
  `NaN < 0` is false) but that XLA cannot fold away. So whatever reads the
  result runs after `values` are computed, and XLA can then update a
  variable that `values` read in place instead of copying it first; the
  multiply fuses into the reader's own kernel. Outside XLA, where
  TensorFlow orders variable reads and writes itself and a multiply would
  be a full extra kernel, the arrays come back unchanged.

  Args:
    tree_leaves: a list of arrays.
    values: a non-negative scalar tensor, or a list of them (norms or sums
      of squares).

  Returns:
    A list of arrays with the same values.
  """
  if not transforms.in_xla():
    return list(tree_leaves)
  if not isinstance(values, (list, tuple)):
    values = [values]
  negative = None
  for value in values:
    value = tf.reshape(tf.cast(value, tf.float32), [])
    negative = value < 0 if negative is None else negative | (value < 0)
  if negative is None:
    return list(tree_leaves)
  one = tf.where(negative, 0.0, 1.0)
  out = []
  for x in tree_leaves:
    x = tf.convert_to_tensor(x)
    out.append(x * tf.cast(one, x.dtype) if x.dtype.is_floating else x)
  return out
