"""One traced function for many structurally identical calls in a graph.

Tracing a deep stack of identical blocks into one `tf.function` repeats
every op of a block once per block: a 24-layer Reformer's step is tens of
thousands of graph ops, and the traced program (its Python trace, Grappler's
rewrites, the kernels and folded constants of each copy) then costs more
memory than the tensors the reversible backward pass saves. `SharedFunctions`
traces such a block once, as a function that Grappler does not inline, and
calls it once per block with that block's arrays, so the program grows by one
call op per block.

The caller vouches that calls under the same `key` compute the same function
of their array arguments (e.g. blocks with equal structure and
hyperparameters). Python values among the arguments (None, numbers, strings,
empty containers) are part of the key automatically, as are the arrays'
shapes and dtypes, and the device scope of the call (each replica of a
tf.distribute strategy traces its own copy, placed on its device).
Functions are cached per outer graph, so a later trace (under other global
settings, such as the compute precision) traces afresh.
Eagerly there is nothing to share, and the function is simply called; so
it is inside `inlined()`, for converters that cannot run function calls
(TFLite's).
"""

import contextlib
import threading
import weakref

import numpy as np
import tensorflow as tf

__all__ = ['SharedFunctions', 'tracing', 'inlined']

_THREAD = threading.local()


def tracing():
  """Whether ops are being added to a graph (e.g. inside `tf.function`)."""
  return not tf.executing_eagerly()


@contextlib.contextmanager
def inlined():
  """Within this context (on this thread) `SharedFunctions.call` inlines.

  Each call then adds `fn`'s ops to the graph itself, as an unshared trace
  would: the graph has no function-call ops, which TFLite's converter
  cannot lower when they are marked not to be inlined.
  """
  before = getattr(_THREAD, 'inlined', False)
  _THREAD.inlined = True
  try:
    yield
  finally:
    _THREAD.inlined = before


_ARRAY = object()  # Marks where an array goes among an output's leaves.


def _is_array(x):
  return isinstance(x, (tf.Tensor, tf.Variable, np.ndarray, np.generic))


class _Traced:
  """A traced function with what it needs to rebuild its Python outputs."""

  def __init__(self):
    self.concrete = None
    self.out_structure = None
    self.out_leaves = None  # Python leaves; _ARRAY where an array goes.


class SharedFunctions:
  """Traces each keyed function once per graph and calls it per use.

  Example:
    >>> shared = SharedFunctions()
    >>> @tf.function
    ... def stack(x, ws):
    ...   for w in ws:  # one traced body, len(ws) calls
    ...     x = shared.call('dense_tanh', lambda x, w: tf.tanh(x @ w), x, w)
    ...   return x
  """

  def __init__(self):
    self._by_graph = weakref.WeakKeyDictionary()

  def call(self, key, fn, *args):
    """Returns `fn(*args)`, through a function shared by calls under `key`.

    Args:
      key: a hashable value naming what `fn` computes.
      fn: a function of `args`; used to trace the first call under `key`
        (and the arguments' Python values, shapes and dtypes) in a graph.
        Later calls run that trace on their own arrays.
      *args: nested tuples/lists/dicts of arrays and Python values.

    Returns:
      `fn(*args)`'s result, with the same nesting. Python values in the
      result come from the first trace.
    """
    if not tracing() or getattr(_THREAD, 'inlined', False):
      return fn(*args)
    flat = tf.nest.flatten(args)
    is_array = [_is_array(x) for x in flat]
    arrays = [tf.convert_to_tensor(x) for x, a in zip(flat, is_array) if a]
    statics = tuple(None if a else x for x, a in zip(flat, is_array))
    specs = tuple((t.dtype, None if t.shape.rank is None else
                   tuple(t.shape.as_list())) for t in arrays)
    try:
      full_key = (key, _structure_key(args), tuple(is_array), statics, specs,
                  _device_scope())
      hash(full_key)
    except TypeError:  # A Python leaf that cannot be part of a key.
      return fn(*args)
    graph = tf.compat.v1.get_default_graph()
    cache = self._by_graph.setdefault(graph, {})
    traced = cache.get(full_key)
    if traced is None:
      traced = self._trace(fn, args, is_array, statics, arrays)
      cache[full_key] = traced
    results = iter(traced.concrete(*arrays))
    out = [next(results) if leaf is _ARRAY else leaf
           for leaf in traced.out_leaves]
    return tf.nest.pack_sequence_as(traced.out_structure, out)

  def _trace(self, fn, args, is_array, statics, arrays):
    traced = _Traced()

    def flat_fn(*inner_arrays):
      it = iter(inner_arrays)
      leaves = [next(it) if a else s for a, s in zip(is_array, statics)]
      result = fn(*tf.nest.pack_sequence_as(args, leaves))
      out_flat = tf.nest.flatten(result)
      traced.out_structure = tf.nest.map_structure(lambda _: 0, result)
      traced.out_leaves = [_ARRAY if _is_array(x) else x for x in out_flat]
      return [tf.convert_to_tensor(x) for x in out_flat if _is_array(x)]

    # Not inlined: inlining would copy the body into the caller again.
    function = tf.function(flat_fn, autograph=False,
                           experimental_attributes={'_noinline': True})
    traced.concrete = function.get_concrete_function(
        *[tf.TensorSpec(t.shape, t.dtype) for t in arrays])
    return traced


def _device_scope():
  """The device that ops created here are placed on (e.g. a replica's).

  A trace under one replica's device scope places its ops there, so each
  device (each replica of a tf.distribute strategy) gets its own trace.
  """
  return tf.no_op().device


def _structure_key(tree):
  """A hashable description of `tree`'s nesting (not of its leaves)."""
  if isinstance(tree, dict):
    return ('dict', tuple((k, _structure_key(tree[k])) for k in sorted(tree)))
  if isinstance(tree, (list, tuple)):
    return (type(tree), tuple(_structure_key(t) for t in tree))
  return '.'
