"""Numeric ops that Trax reaches through `fastmath` rather than `jnp`.

This module is also Trax's `fastmath.ops` import path: the transforms,
control flow, pooling and backend functions that live in sibling modules are
re-exported here, so `from tfnp_trax.fastmath.ops import scan` works as the
Trax spelling does.
"""

import numpy as onp
import tensorflow as tf

from distribute import mapping as _mapping
from distribute.collectives import psum
from tfnp_trax.fastmath import devices as _devices
from tfnp_trax.fastmath import random
from tfnp_trax.fastmath import trees as _trees
from tfnp_trax.fastmath._numpy import numpy
from tfnp_trax.fastmath.abstract import abstract_eval
from tfnp_trax.fastmath.backend import Backend
from tfnp_trax.fastmath.backend import backend_name
from tfnp_trax.fastmath.backend import set_backend
from tfnp_trax.fastmath.backend import use_backend
from tfnp_trax.fastmath.control_flow import cond
from tfnp_trax.fastmath.control_flow import fori_loop
from tfnp_trax.fastmath.control_flow import scan
from tfnp_trax.fastmath.control_flow import vmap
from tfnp_trax.fastmath.devices import local_device_count
from tfnp_trax.fastmath.nn_ops import avg_pool
from tfnp_trax.fastmath.nn_ops import conv
from tfnp_trax.fastmath.nn_ops import max_pool
from tfnp_trax.fastmath.nn_ops import sum_pool
from tfnp_trax.fastmath.transforms import custom_grad
from tfnp_trax.fastmath.transforms import custom_vjp
from tfnp_trax.fastmath.transforms import grad
from tfnp_trax.fastmath.transforms import jit
from tfnp_trax.fastmath.transforms import stop_gradient
from tfnp_trax.fastmath.transforms import value_and_grad
from tfnp_trax.fastmath.transforms import vjp

__all__ = ['logsumexp', 'expit', 'sigmoid', 'erf', 'sort_key_val', 'top_k',
           'index_update', 'index_add', 'index_min', 'index_max',
           'dynamic_slice', 'dynamic_update_slice', 'dynamic_slice_in_dim',
           'dynamic_update_slice_in_dim', 'one_hot', 'is_float', 'qr',
           'cast_like', 'lt', 'map', 'remat', 'disable_jit', 'is_backend',
           'dataset_as_numpy', 'global_device_count', 'pmap', 'nested_zip',
           'nested_stack',
           # Re-exported from sibling modules, for Trax's import path.
           'numpy', 'random', 'abstract_eval', 'Backend', 'backend_name',
           'set_backend', 'use_backend', 'cond', 'fori_loop', 'scan', 'vmap',
           'local_device_count', 'avg_pool', 'conv', 'max_pool', 'sum_pool',
           'custom_grad', 'custom_vjp', 'grad', 'jit', 'stop_gradient',
           'value_and_grad', 'vjp', 'psum']


def is_float(x):
  return tf.as_dtype(x.dtype).is_floating


def logsumexp(x, axis=None, keepdims=False):
  """Numerically stable log(sum(exp(x))) over `axis`."""
  return tf.reduce_logsumexp(x, axis=axis, keepdims=keepdims)


def expit(x):
  """The logistic sigmoid 1 / (1 + exp(-x)).

  Integer and boolean inputs compute in float32, as JAX promotes them
  (TensorFlow's sigmoid kernel has no integer version).
  """
  x = tf.convert_to_tensor(x)
  if not (x.dtype.is_floating or x.dtype.is_complex):
    x = tf.cast(x, tf.float32)
  return tf.math.sigmoid(x)


# Trax offers the logistic function under both names.
sigmoid = expit


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



def lt(x, y):
  """`x < y`, elementwise for arrays (Trax keeps it for backends lacking <)."""
  return x < y


def map(f, xs):  # pylint: disable=redefined-builtin
  """Applies `f` to each slice of `xs` along axis 0 and stacks the results.

  Like `jax.lax.map`: `xs` may be a tree of arrays sharing a leading axis;
  `f` gets one slice of every leaf (the same tree) and may return a tree.
  Runs as a loop (`scan` without a carry), so `f` is traced once.

  Example:
    >>> map(tf.reduce_sum, tf.ones((3, 2))).numpy()
    array([2., 2., 2.], dtype=float32)

  Args:
    f: function of one slice.
    xs: an array or tree of arrays with a common leading dimension.

  Returns:
    `f`'s outputs stacked along a new leading axis.
  """
  _, ys = scan(lambda carry, x: (carry, f(x)), (), xs)
  return ys


def remat(f, *unused_args, **unused_kwargs):
  """Marks `f` for recomputation in the backward pass; here returns `f`.

  Trax on TensorFlow has no rematerialization either: values and gradients
  are the same, only the memory saving is missing. JAX's options
  (`concrete`, `prevent_cse`, `static_argnums`, `policy`) are accepted and
  ignored so Trax call sites run unchanged.
  """
  return f


def disable_jit():
  """Runs everything that `jit` (or `tf.function`) compiled eagerly.

  For debugging, as in Trax: afterwards compiled functions execute their
  Python body op by op, so prints and breakpoints inside them work. Like
  Trax's switch it is global and stays on; `tf.config.
  run_functions_eagerly(False)` turns compilation back on.
  """
  tf.config.run_functions_eagerly(True)


def is_backend(backend_):
  """Whether `backend_` (a `Backend` or its name) is the backend in use."""
  name = backend_.value if isinstance(backend_, Backend) else backend_
  return name == backend_name()


def dataset_as_numpy(ds, batch_size=None):
  """Yields the examples of a `tf.data.Dataset` as NumPy values.

  Each example keeps its structure (dicts, tuples) with NumPy arrays (and
  bytes for strings) as leaves.

  Args:
    ds: a `tf.data.Dataset`.
    batch_size: accepted for Trax compatibility: Trax uses it only to read
      the dataset faster, the examples yielded are the same.

  Yields:
    One example at a time.
  """
  del batch_size
  yield from ds.as_numpy_iterator()


def global_device_count():
  """Number of devices on all hosts: the replicas of the current strategy.

  Outside a `tf.distribute` strategy this is `local_device_count()`.
  """
  return _devices.device_count()


def pmap(f, axis_name='batch', in_axes=0, donate_argnums=(), strategy=None):
  """Runs `f` once per replica, as JAX's `pmap` does.

  Axis 0 of each mapped argument indexes replicas (split a batch with
  `distribute.shard_batch`); replica i gets slice i. Inside `f`, `psum` and
  friends reduce across replicas. Outputs are stacked along a new axis 0,
  one entry per local replica (JAX's layout).

  Args:
    f: function run on every replica.
    axis_name: accepted for Trax compatibility (a strategy has one replica
      axis, so collectives need no name).
    in_axes: 0 or None for all arguments, or one entry per argument; None
      passes the whole argument to every replica.
    donate_argnums: ignored, as by Trax on TensorFlow.
    strategy: the `tf.distribute` strategy; by default the one in scope,
      else a MirroredStrategy over all local devices.

  Returns:
    The mapped function.
  """
  del donate_argnums
  return _mapping.pmap(f, axis_name=axis_name, in_axes=in_axes,
                       strategy=strategy, out='stack')


def _is_leaf(x):
  return not isinstance(x, (list, tuple, dict))


def nested_zip(objs):
  """Zips same-shaped trees: each leaf becomes the tuple of their leaves.

  Matches Trax, including its quirk that tuples in the structure come back
  as lists (namedtuples keep their type).

  Example:
    >>> nested_zip([{'a': 1, 'b': [2]}, {'a': 3, 'b': [4]}])
    {'a': (1, 3), 'b': [(2, 4)]}

  Args:
    objs: a non-empty list or tuple of trees with one structure.

  Returns:
    The common structure with tuples of corresponding leaves as leaves.

  Raises:
    ValueError: for an empty `objs` or a leaf where a container is expected.
  """
  if not isinstance(objs, (list, tuple)) or not objs:
    raise ValueError(f'nested_zip: expects a non-empty list or tuple of '
                     f'trees, got {objs!r}.')
  first = objs[0]
  if all(_is_leaf(o) for o in objs):
    return tuple(objs)
  if isinstance(first, tuple) and hasattr(first, '_fields'):
    return type(first)(*nested_zip([list(o) for o in objs]))
  if isinstance(first, list):
    return [nested_zip([o[i] for o in objs]) for i in range(len(first))]
  if isinstance(first, tuple):
    return nested_zip([list(o) for o in objs])
  if isinstance(first, dict):
    return {k: nested_zip([o[k] for o in objs]) for k in first}
  raise ValueError(f'nested_zip: trees differ in structure: a leaf '
                   f'{first!r} sits where others have containers.')


def nested_stack(objs, axis=0, np_module=onp):
  """Stacks the corresponding leaves of same-shaped trees along `axis`.

  Leaves that are None in every tree stay None.

  Args:
    objs: a non-empty list of trees with one structure.
    axis: the new axis of every stacked leaf.
    np_module: the NumPy module to stack with; NumPy by default, as in Trax
      (pass `fastmath.numpy` to stay on TensorFlow tensors).

  Returns:
    The common structure (tuples as lists, see `nested_zip`) with stacked
    arrays as leaves.
  """
  return _trees.nested_map(lambda xs: np_module.stack(xs, axis=axis),
                           nested_zip(objs), level=1)
