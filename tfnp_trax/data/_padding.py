"""Padding examples into a batch: Trax's `pad_to_max_dims` and its tf twin.

The rule (Trax's), per dimension of the stacked tensors, with `m` the
largest size among them:
  - `boundary` None: pad to `m`;
  - `boundary` an int `b` (not strict): pad to `max(m, b)`, except that when
    that is more than twice `m`, pad only to the next power of two >= `m`
    (so a short batch in a long bucket is not padded out to the boundary);
  - strict, or `boundary` a list: pad dimension i up to a multiple of its
    boundary `b_i` (or to `m` where `b_i` is falsy).
Padding is with zeros of the tensors' dtype, at the end of each dimension.
"""

import math

import numpy as np
import tensorflow as tf

__all__ = ['pad_to_max_dims', 'pad_batch_like_trax', 'padded_sizes',
           'next_power_of_two']


def next_power_of_two(n):
  """Smallest power of two >= n (1 for n <= 1)."""
  return 1 if n <= 1 else 1 << (int(n) - 1).bit_length()


def _check_same_rank(tensors, where):
  ranks = [t.ndim for t in tensors]
  if len(set(ranks)) > 1:
    odd = next(i for i, r in enumerate(ranks) if r != ranks[0])
    raise ValueError(
        f'{where}: examples of one batch must have the same rank, but example '
        f'0 has shape {tensors[0].shape} and example {odd} has shape '
        f'{tensors[odd].shape}.')


def _target_dims(max_dims, boundary, strict_pad_on_len):
  ndim = len(max_dims)
  if boundary is not None and (strict_pad_on_len or
                               isinstance(boundary, (list, tuple))):
    per_dim = (list(boundary) if isinstance(boundary, (list, tuple))
               else [boundary] * ndim)
    if len(per_dim) != ndim:
      raise ValueError(f'pad_to_max_dims: boundary {boundary} has '
                       f'{len(per_dim)} entries but the tensors have {ndim} '
                       f'dimensions.')
    return [m if not b else b * math.ceil(m / b)
            for m, b in zip(max_dims, per_dim)]
  if boundary is None:
    return list(max_dims)
  targets = []
  for m in max_dims:
    target = max(m, boundary)
    if 2 * m < target:
      target = next_power_of_two(m)
    targets.append(target)
  return targets


def pad_to_max_dims(tensors, boundary=None, strict_pad_on_len=False):
  """Pads arrays to a common shape (see the module rule) and stacks them.

  Example:
    >>> pad_to_max_dims([np.ones((2, 10)), np.ones((3, 9))]).shape
    (2, 3, 10)
    >>> pad_to_max_dims([np.ones((8, 10)), np.ones((8, 9))], 12).shape
    (2, 12, 12)

  Args:
    tensors: a list or tuple of arrays of one rank.
    boundary: None, an int, or a list of ints (one per dimension).
    strict_pad_on_len: if True, pad every dimension to a multiple of
      `boundary`.

  Returns:
    One array of shape `(len(tensors),) + padded_shape`.
  """
  tensors = [np.asarray(t) for t in tensors]
  if not tensors:
    raise ValueError('pad_to_max_dims: got no tensors to pad.')
  _check_same_rank(tensors, 'pad_to_max_dims')
  max_dims = [max(t.shape[i] for t in tensors) for i in range(tensors[0].ndim)]
  targets = _target_dims(max_dims, boundary, strict_pad_on_len)
  padded = []
  for t in tensors:
    widths = [(0, target - size) for target, size in zip(targets, t.shape)]
    if any(w for _, w in widths):
      if t.dtype.kind in 'SUO':
        raise ValueError(f'pad_to_max_dims: cannot pad {t.dtype} values (of '
                         f'shape {t.shape}) with zeros; tokenize text first.')
      t = np.pad(t, widths, mode='constant', constant_values=t.dtype.type(0))
    padded.append(t)
  return np.stack(padded)


def _next_power_of_two_tensor(n):
  """`next_power_of_two` for an int32/int64 tensor, by bit smearing."""
  n = tf.cast(tf.maximum(n, 1), tf.int64) - 1
  for shift in (1, 2, 4, 8, 16, 32):
    n = tf.bitwise.bitwise_or(n, tf.bitwise.right_shift(n, shift))
  return n + 1


def padded_sizes(sizes, boundary, strict_pad_on_len=False):
  """Trax's padded size for each largest size in `sizes`, elementwise.

  Args:
    sizes: int64 tensor of largest sizes (any shape).
    boundary: int or int64 tensor broadcastable to `sizes`; a negative value
      stands for None (no boundary: no extra padding).
    strict_pad_on_len: as in `pad_to_max_dims`.

  Returns:
    An int64 tensor shaped like `sizes`.
  """
  b = tf.cast(boundary, tf.int64)
  if strict_pad_on_len:
    safe = tf.maximum(b, 1)
    rule = tf.where(b > 0, (sizes + safe - 1) // safe * safe, sizes)
  else:
    target = tf.maximum(sizes, b)
    rule = tf.where(2 * sizes < target, _next_power_of_two_tensor(sizes),
                    target)
  return tf.where(b < 0, sizes, rule)


def pad_batch_like_trax(batch, boundary=None, strict_pad_on_len=False):
  """Pads a batch, already padded to its max dims, as `pad_to_max_dims` would.

  `tf.data`'s `padded_batch` pads each dimension to the batch's largest size;
  this then applies Trax's boundary rule on top, in graph.

  Args:
    batch: a tensor `[batch, d1, ..., dn]` of known rank.
    boundary: as in `pad_to_max_dims`; or a scalar int64 tensor, where a
      negative value stands for None.
    strict_pad_on_len: as in `pad_to_max_dims`.

  Returns:
    The batch padded with zeros at the end of each non-batch dimension.
  """
  ndim = batch.shape.rank - 1
  if boundary is None or ndim == 0:
    return batch
  dims = tf.shape(batch, out_type=tf.int64)[1:]
  if isinstance(boundary, (list, tuple)):
    if len(boundary) != ndim:
      raise ValueError(f'pad_to_max_dims: boundary {boundary} has '
                       f'{len(boundary)} entries but the tensors have {ndim} '
                       f'dimensions.')
    targets = tf.stack([dims[i] if not b else (dims[i] + b - 1) // b * b
                        for i, b in enumerate(boundary)])
  else:
    targets = padded_sizes(dims, boundary, strict_pad_on_len)
  paddings = tf.stack([tf.zeros_like(targets), targets - dims], axis=1)
  paddings = tf.concat([tf.zeros([1, 2], tf.int64), paddings], axis=0)
  return tf.pad(batch, paddings)
