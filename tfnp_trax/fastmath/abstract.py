"""Shape inference by tracing: outputs' shapes and dtypes without computing."""

import numpy as onp
import tensorflow as tf

from tfnp_trax import shapes
from tfnp_trax.fastmath import trees

__all__ = ['abstract_eval']


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

    tf.function(flat_fn, autograph=False).get_concrete_function(*flat_specs)
    return trees.nested_map(_to_shape_dtype, holder['out'])
  return wrapped
