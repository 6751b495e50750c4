"""Numeric ops that Trax reaches through `fastmath` rather than `jnp`."""

import tensorflow as tf

__all__ = ['logsumexp', 'expit', 'erf', 'sort_key_val', 'top_k',
           'index_update', 'index_add', 'index_min', 'index_max',
           'dynamic_slice', 'dynamic_update_slice', 'dynamic_slice_in_dim',
           'dynamic_update_slice_in_dim', 'one_hot', 'is_float', 'qr',
           'cast_like']


def is_float(x):
  return tf.as_dtype(x.dtype).is_floating


def logsumexp(x, axis=None, keepdims=False):
  """Numerically stable log(sum(exp(x))) over `axis`."""
  return tf.reduce_logsumexp(x, axis=axis, keepdims=keepdims)


def expit(x):
  """The logistic sigmoid 1 / (1 + exp(-x))."""
  return tf.math.sigmoid(x)


def erf(x):
  """The Gauss error function."""
  return tf.math.erf(x)


def sort_key_val(keys, values, dimension=-1):
  """Sorts `keys` along `dimension` and permutes `values` the same way."""
  keys = tf.convert_to_tensor(keys)
  values = tf.convert_to_tensor(values)
  order = tf.argsort(keys, axis=dimension, stable=True)
  return (tf.experimental.numpy.take_along_axis(keys, order, axis=dimension),
          tf.experimental.numpy.take_along_axis(values, order, axis=dimension))


def top_k(x, k):
  """The `k` largest entries on the last axis and their indices."""
  return tf.math.top_k(x, k=k)


def _index_op(x, idx, y, op):
  x = tf.convert_to_tensor(x)
  # Index a tensor of flat positions with NumPy indexing, then scatter there.
  indices = tf.reshape(tf.range(tf.size(x)), tf.shape(x))
  selected = tf.reshape(indices[idx], [-1, 1])
  updates = tf.reshape(tf.broadcast_to(tf.cast(y, x.dtype),
                                       tf.shape(indices[idx])), [-1])
  flat = tf.reshape(x, [-1])
  flat = op(flat, selected, updates)
  return tf.reshape(flat, tf.shape(x))


def index_update(x, idx, y):
  """Functional `x[idx] = y` (JAX's `x.at[idx].set(y)`)."""
  return _index_op(x, idx, y, tf.tensor_scatter_nd_update)


def index_add(x, idx, y):
  """Functional `x[idx] += y`."""
  return _index_op(x, idx, y, tf.tensor_scatter_nd_add)


def index_min(x, idx, y):
  """Functional `x[idx] = minimum(x[idx], y)`."""
  return _index_op(x, idx, y, tf.tensor_scatter_nd_min)


def index_max(x, idx, y):
  """Functional `x[idx] = maximum(x[idx], y)`."""
  return _index_op(x, idx, y, tf.tensor_scatter_nd_max)


def _clamped_starts(x, start_indices, sizes):
  # Like XLA, clamp starts so the slice stays inside the array.
  shape = tf.shape(x)
  starts = tf.cast(tf.stack([tf.convert_to_tensor(s) for s in start_indices]),
                   tf.int32)
  return tf.clip_by_value(starts, 0, shape - tf.constant(sizes, tf.int32))


def dynamic_slice(x, start_indices, slice_sizes):
  """Slice of `slice_sizes` at traced `start_indices` (clamped as in XLA)."""
  x = tf.convert_to_tensor(x)
  starts = _clamped_starts(x, start_indices, slice_sizes)
  # Gathers, not tf.slice: XLA recompiles tf.slice for every traced begin
  # value, while a gather takes traced indices in one compiled program.
  for axis, size in enumerate(slice_sizes):
    if x.shape[axis] is None or size != x.shape[axis]:
      x = tf.gather(x, starts[axis] + tf.range(size), axis=axis)
  return x


def dynamic_update_slice(x, update, start_indices):
  """Writes `update` into `x` at traced `start_indices` (clamped)."""
  x = tf.convert_to_tensor(x)
  update = tf.cast(update, x.dtype)
  sizes = update.shape.as_list()
  starts = _clamped_starts(x, start_indices, sizes)
  grids = tf.meshgrid(*[tf.range(s) for s in sizes], indexing='ij')
  idx = tf.stack([g + starts[i] for i, g in enumerate(grids)], axis=-1)
  return tf.tensor_scatter_nd_update(x, idx, update)


def dynamic_slice_in_dim(x, start_index, slice_size, axis=0):
  """`dynamic_slice` along one axis."""
  x = tf.convert_to_tensor(x)
  rank = x.shape.rank
  axis = axis % rank
  starts = [0] * rank
  starts[axis] = start_index
  sizes = x.shape.as_list()
  sizes[axis] = slice_size
  return dynamic_slice(x, starts, sizes)


def dynamic_update_slice_in_dim(x, update, start_index, axis):
  """`dynamic_update_slice` along one axis."""
  x = tf.convert_to_tensor(x)
  rank = x.shape.rank
  starts = [0] * rank
  starts[axis % rank] = start_index
  return dynamic_update_slice(x, update, starts)


def one_hot(x, n_categories, dtype=tf.float32):
  """One-hot encodes integer `x` into a new trailing axis."""
  return tf.one_hot(tf.cast(x, tf.int32), n_categories, dtype=dtype)


def qr(a):
  """Reduced QR decomposition of a matrix."""
  return tf.linalg.qr(a)


def cast_like(x, y):
  """Casts `x` to the dtype of `y`."""
  return tf.cast(x, y.dtype)

