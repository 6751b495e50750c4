"""Value checks that raise eagerly and assert when traced.

The two checks here look at the *values* of a tensor (are they finite, do
integer ids lie in a range), which shape and dtype checks cannot. Each runs
in one of two ways:

* eagerly (concrete tensors), the values are read on the host and a failure
  raises a Python error at once, with counts and extremes in the message;
* inside `tf.function` (symbolic tensors), a `tf.debugging.Assert` op is
  added. TensorFlow runs it with the step (it is stateful, so automatic
  control dependencies keep it), and a failure raises
  `tf.errors.InvalidArgumentError` carrying the same message. XLA
  (`jit_compile=True`) drops Assert ops, so compiled steps are not checked.

Both cost a pass over the tensor, which is why callers decide when to run
them (see `tfnp_trax.debug`). Inside `suspended()` both do nothing: shape
inference (`abstract.shape_eval`) runs layers on dummy zeros, whose values
mean nothing.
"""

import contextlib
import threading

import numpy as onp
import tensorflow as tf

__all__ = ['is_traced', 'assert_finite', 'assert_ids_in_range', 'suspended']

# Per thread: tf.distribute runs replicas as threads, each may infer shapes.
_local = threading.local()


@contextlib.contextmanager
def suspended():
  """Context manager: no value checks inside (e.g. during shape inference)."""
  depth = getattr(_local, 'depth', 0)
  _local.depth = depth + 1
  try:
    yield
  finally:
    _local.depth = depth


def _is_suspended():
  return getattr(_local, 'depth', 0) > 0


def is_traced(x=None):
  """True while tracing a graph (or if `x` is a symbolic tensor)."""
  if x is not None and tf.is_tensor(x) and not hasattr(x, 'numpy'):
    return True
  return not tf.executing_eagerly()


def _shape(x):
  return tuple(x.shape) if x.shape.rank is not None else '<unknown rank>'


def assert_finite(x, message):
  """Checks that every value of floating-point `x` is finite.

  Args:
    x: a tensor or array; non-float dtypes pass unchecked.
    message: names the layer or function and the value, e.g.
      'Dense_4: input 0'.

  Raises:
    FloatingPointError: eagerly, if `x` holds NaN or Inf.
  """
  if _is_suspended():
    return
  x = tf.convert_to_tensor(x)
  if not (x.dtype.is_floating or x.dtype.is_complex):
    return
  if is_traced(x):
    tf.debugging.Assert(
        tf.reduce_all(tf.math.is_finite(x)),
        [f'{message}: expected finite values but found NaN or Inf (shape '
         f'{_shape(x)}, dtype {x.dtype.name}); count of non-finite values:',
         tf.reduce_sum(tf.cast(~tf.math.is_finite(x), tf.int32))])
    return
  values = onp.asarray(x)
  bad = ~onp.isfinite(values)
  if bad.any():
    first = tuple(int(i) for i in onp.argwhere(bad)[0])
    raise FloatingPointError(
        f'{message}: expected finite values but found '
        f'{int(onp.isnan(values).sum())} NaN and '
        f'{int(onp.isinf(values).sum())} Inf of {values.size} values '
        f'(shape {values.shape}, dtype {x.dtype.name}; first at index '
        f'{first}).')


def assert_ids_in_range(x, n, message, hint=''):
  """Checks that every value of integer `x` lies in [0, n).

  Args:
    x: integer ids (category labels, token ids).
    n: the number of categories (vocabulary size); ids must be < n.
    message: names the layer or function and the value.
    hint: appended to the eager error message (the likely fix).

  Raises:
    ValueError: eagerly, if some id is negative or >= n.
  """
  if _is_suspended():
    return
  x = tf.convert_to_tensor(x)
  if not x.dtype.is_integer:
    return
  if is_traced(x):
    ok = tf.logical_or(tf.equal(tf.size(x), 0), tf.logical_and(
        tf.reduce_min(x) >= 0, tf.reduce_max(x) < tf.cast(n, x.dtype)))
    tf.debugging.Assert(ok, [
        f'{message}: expected ids in [0, {n}) but got values outside; '
        f'min and max:', tf.reduce_min(x), tf.reduce_max(x)])
    return
  values = onp.asarray(x)
  if values.size == 0:
    return
  low, high = int(values.min()), int(values.max())
  if low < 0 or high >= n:
    n_bad = int(((values < 0) | (values >= n)).sum())
    raise ValueError(
        f'{message}: expected ids in [0, {n}) but got {n_bad} of '
        f'{values.size} outside (min {low}, max {high}; shape '
        f'{values.shape}).{" " + hint if hint else ""}')
