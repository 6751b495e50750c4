"""Shape inference by tracing: outputs' shapes and dtypes without computing."""

import numpy as onp
import tensorflow as tf

from tfnp_trax import shapes
from tfnp_trax.fastmath import checks
from tfnp_trax.fastmath import trees

__all__ = ['abstract_eval', 'shape_eval']


def _to_spec(x):
  if isinstance(x, shapes.ShapeDtype):
    return tf.TensorSpec(x.shape, x.dtype)
  if isinstance(x, tf.TensorSpec):
    return x
  if isinstance(x, (tf.Tensor, tf.Variable, onp.ndarray, onp.generic)):
    return tf.TensorSpec(x.shape, x.dtype)
  return x  # Python values stay static.


def _to_shape_dtype(x):
  if isinstance(x, (tf.Tensor, tf.TensorSpec)):
    return shapes.ShapeDtype(tuple(x.shape), x.dtype)
  return x


def abstract_eval(f):
  """Returns a function that maps input signatures to output signatures.

  Arguments may be ShapeDtypes, TensorSpecs, arrays or nested trees of them;
  `f` is traced on TensorSpecs once per call and never run.

  Example:
    >>> abstract_eval(lambda x: x[:, :2])(shapes.ShapeDtype((4, 3))).shape
    (4, 2)
  """
  def wrapped(*args):
    specs = trees.nested_map(_to_spec, args)
    flat_specs = [s for s in trees.tree_flatten(specs)
                  if isinstance(s, tf.TensorSpec)]
    holder = {}

    def flat_fn(*flat):
      it = iter(flat)
      rebuilt = trees.nested_map(
          lambda s: next(it) if isinstance(s, tf.TensorSpec) else s, specs)
      out = f(*rebuilt)
      holder['out'] = out
      return trees.tree_flatten(out)

    with checks.suspended():  # Value checks mean nothing on specs.
      tf.function(flat_fn, autograph=False).get_concrete_function(
          *flat_specs)
    return trees.nested_map(_to_shape_dtype, holder['out'])
  return wrapped


def _size(sig):
  n = 1
  for d in sig.shape:
    if d is None:
      return None
    n *= d
  return n


def shape_eval(f, max_concrete_elements=1 << 21):
  """Like `abstract_eval`, but small inputs are run eagerly on zeros.

  Tracing a graph costs tens of milliseconds however small the computation;
  running it eagerly on zero-filled inputs of a few hundred thousand
  elements costs far less. Arguments that are concrete arrays (e.g. weights)
  are passed as they are. Inside a graph, or for large or partly unknown
  shapes, this falls back to tracing.

  Args:
    f: the function to evaluate.
    max_concrete_elements: largest total size of the ShapeDtype arguments
      that are materialised as zeros.

  Returns:
    A function from arguments to output ShapeDtypes.
  """
  traced = abstract_eval(f)

  def wrapped(*args):
    sigs = [x for x in trees.tree_flatten(args)
            if isinstance(x, (shapes.ShapeDtype, tf.TensorSpec))]
    sizes = [_size(s) for s in sigs]
    if (not tf.executing_eagerly() or None in sizes or
        sum(sizes) > max_concrete_elements):
      return traced(*args)

    def zeros(x):
      if isinstance(x, (shapes.ShapeDtype, tf.TensorSpec)):
        return tf.zeros(x.shape, x.dtype)
      return x
    with checks.suspended():  # The zeros stand in for unknown values.
      out = f(*trees.nested_map(zeros, args))
    return trees.nested_map(_to_shape_dtype, out)
  return wrapped
