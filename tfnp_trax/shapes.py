"""Shape and dtype descriptions of layer inputs and outputs."""

import numpy as onp
import tensorflow as tf

__all__ = ['ShapeDtype', 'signature', 'splice_signatures']


class ShapeDtype:
  """The shape and dtype of an array, without its values.

  Example:
    >>> ShapeDtype((8, 16)).shape
    (8, 16)
  """

  __slots__ = ('shape', 'dtype')

  def __init__(self, shape, dtype=onp.float32):
    if isinstance(shape, int):
      shape = (shape,)
    self.shape = tuple(shape)
    self.dtype = tf.as_dtype(dtype)

  def __eq__(self, other):
    return (isinstance(other, ShapeDtype) and self.shape == other.shape and
            self.dtype == other.dtype)

  def __hash__(self):
    return hash((self.shape, self.dtype))

  def __repr__(self):
    return f'ShapeDtype{{shape:{self.shape}, dtype:{self.dtype.name}}}'

  def __len__(self):
    # Trax's ShapeDtype is not a sequence; one signature counts as one input.
    raise TypeError('len() of ShapeDtype: a signature of one input has no '
                    'length; wrap several in a tuple.')

  def as_tensor_spec(self):
    return tf.TensorSpec(self.shape, self.dtype)


def signature(obj):
  """Returns the ShapeDtype (or tuple/list/dict of them) describing `obj`."""
  if isinstance(obj, (list, tuple)):
    sigs = [signature(x) for x in obj]
    return tuple(sigs) if isinstance(obj, tuple) else sigs
  if isinstance(obj, dict):
    return {k: signature(v) for k, v in obj.items()}
  if isinstance(obj, ShapeDtype):
    return obj
  if isinstance(obj, (tf.TensorSpec,)):
    return ShapeDtype(tuple(obj.shape), obj.dtype)
  if isinstance(obj, (int, float, bool)):
    obj = onp.asarray(obj)
  return ShapeDtype(tuple(obj.shape), obj.dtype)


def splice_signatures(*sigs):
  """Joins signatures (single or tuples) into one tuple of ShapeDtypes."""
  result = []
  for sig in sigs:
    if isinstance(sig, (list, tuple)):
      result.extend(sig)
    else:
      result.append(sig)
  return result[0] if len(result) == 1 else tuple(result)
