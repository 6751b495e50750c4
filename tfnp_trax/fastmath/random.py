"""JAX-style functional random numbers on TensorFlow's stateless RNG.

A key is an int32 tensor of shape [2]. The same key always yields the same
numbers, eagerly and inside `tf.function`. (Streams compiled by XLA may differ
from eager ones; each is deterministic on its own.) int32 keys are required
because TFP and XLA's categorical sampling reject int64 seeds.
"""

import numpy as onp
import tensorflow as tf

from tfnp_trax.fastmath import devices

__all__ = ['get_prng', 'split', 'fold_in', 'uniform', 'normal', 'bernoulli',
           'randint', 'categorical', 'truncated_normal', 'check_key',
           'permutation']


def check_key(key, fn_name='random'):
  """Converts `key` to an int32 [2] tensor, or raises a clear error."""
  key = tf.convert_to_tensor(key)
  if key.dtype != tf.int32:
    if key.dtype in (tf.int64, tf.uint32, tf.uint64):
      _check_fits_32_bits(key, fn_name)
      key = tf.cast(key, tf.int32)
    else:
      raise TypeError(f'fastmath.random.{fn_name}: keys must be int32 tensors '
                      f'of shape [2], got dtype {key.dtype.name}. Make keys '
                      f'with fastmath.random.get_prng(seed).')
  if key.shape.rank is not None and tuple(key.shape) != (2,):
    raise ValueError(f'fastmath.random.{fn_name}: keys must have shape [2], '
                     f'got shape {tuple(key.shape)}. Did you pass the result '
                     f'of split(key, n)? Index one key from it: keys[0].')
  return key


def _check_fits_32_bits(key, fn_name):
  """Eagerly refuses 64-bit keys that a cast to int32 would wrap around.

  Keys made by NumPy (`np.array([0, 1])` is int64) or JAX (uint32) cast
  exactly; larger values would silently collide with other keys.
  """
  if not hasattr(key, 'numpy'):
    return  # Symbolic: the cast wraps as in TensorFlow; nothing to read.
  values = onp.asarray(key)
  if values.size and (values.min() < -2**31 or values.max() >= 2**32):
    raise ValueError(
        f'fastmath.random.{fn_name}: keys must be int32 [2]; got dtype '
        f'{key.dtype.name} with values {values.tolist()} that do not fit in '
        f'32 bits (a cast would wrap them). Make keys with '
        f'fastmath.random.get_prng(seed).')


def get_prng(seed):
  """Returns a key for integer `seed`, as `jax.random.PRNGKey` does."""
  if isinstance(seed, (int, onp.integer)):
    seed = int(seed)
    # A key from a Python int is a constant: make it eagerly even inside a
    # trace, so objects that keep it (a layer's default rng) never hold a
    # tensor of a finished graph.
    # Placed on the host CPU when made: random ops read seeds from host
    # memory, and a step that takes a new key each call runs cheaper with a
    # placed one (see `fastmath.device_put`).
    with tf.init_scope():
      return devices.device_put(
          onp.array([(seed >> 32) & 0x7FFFFFFF, seed & 0x7FFFFFFF],
                    onp.int32), '/device:CPU:0')
  seed = tf.cast(seed, tf.int32)
  return tf.stack([tf.zeros_like(seed), seed])


def split(key, num=2):
  """Splits `key` into `num` new independent keys, shape [num, 2]."""
  key = check_key(key, 'split')
  return tf.random.experimental.stateless_split(key, num=num)


def fold_in(key, data):
  """Returns a new key that mixes integer `data` into `key`."""
  key = check_key(key, 'fold_in')
  return tf.random.experimental.stateless_fold_in(key, tf.cast(data, tf.int32))


def _shape(shape):
  return () if shape is None else tuple(shape)


def uniform(key, shape=(), dtype=tf.float32, minval=0.0, maxval=1.0):
  """Uniform samples in [minval, maxval)."""
  key = check_key(key, 'uniform')
  dtype = tf.as_dtype(dtype)
  sample_dtype = tf.float32 if dtype in (tf.bfloat16, tf.float16) else dtype
  x = tf.random.stateless_uniform(_shape(shape), seed=key, dtype=sample_dtype)
  x = tf.cast(minval, sample_dtype) + x * tf.cast(maxval - minval,
                                                  sample_dtype)
  return tf.cast(x, dtype)


def normal(key, shape=(), dtype=tf.float32):
  """Standard normal samples."""
  key = check_key(key, 'normal')
  dtype = tf.as_dtype(dtype)
  x = tf.random.stateless_normal(_shape(shape), seed=key, dtype=tf.float32
                                 if dtype != tf.float64 else tf.float64)
  return tf.cast(x, dtype)


def truncated_normal(key, lower=-2.0, upper=2.0, shape=(), dtype=tf.float32):
  """Normal samples truncated to [-2, 2] (the only bounds TF supports)."""
  key = check_key(key, 'truncated_normal')
  if (lower, upper) != (-2.0, 2.0):
    raise ValueError('fastmath.random.truncated_normal supports only bounds '
                     f'(-2, 2), got ({lower}, {upper}).')
  x = tf.random.stateless_truncated_normal(_shape(shape), seed=key)
  return tf.cast(x, dtype)


def bernoulli(key, p=0.5, shape=None):
  """Boolean samples that are True with probability `p`."""
  key = check_key(key, 'bernoulli')
  p = tf.convert_to_tensor(p, tf.float32)
  shape = tuple(p.shape) if shape is None else _shape(shape)
  return tf.random.stateless_uniform(shape, seed=key) < p


def randint(key, shape, minval, maxval, dtype=tf.int32):
  """Integers uniform in [minval, maxval)."""
  key = check_key(key, 'randint')
  return tf.random.stateless_uniform(_shape(shape), seed=key, minval=minval,
                                     maxval=maxval, dtype=dtype)


def categorical(key, logits, axis=-1, shape=None):
  """Samples category indices from unnormalized log-probabilities.

  Args:
    key: an int32 [2] key.
    logits: float tensor; categories along `axis`.
    axis: the category axis (only -1 or the last axis is supported).
    shape: optional result shape, which logits' batch shape must broadcast
      to (as in JAX); each position gets its own independent sample.

  Returns:
    int32 indices with logits' shape minus the category axis, or `shape`.
  """
  key = check_key(key, 'categorical')
  logits = tf.convert_to_tensor(logits)
  rank = logits.shape.rank
  if axis not in (-1, rank - 1):
    logits = tf.experimental.numpy.moveaxis(logits, axis, -1)
  if shape is not None:
    # Broadcast the logits, not the samples: broadcasting samples would
    # repeat one draw instead of drawing independently.
    logits = tf.broadcast_to(
        logits, tf.concat([_shape(shape), tf.shape(logits)[-1:]], axis=0))
  batch_shape = tf.shape(logits)[:-1]
  flat = tf.reshape(tf.cast(logits, tf.float32), [-1, tf.shape(logits)[-1]])
  samples = tf.random.stateless_categorical(flat, 1, seed=key,
                                            dtype=tf.int32)
  return tf.reshape(samples, batch_shape)


def permutation(key, n):
  """A random permutation of range(n)."""
  key = check_key(key, 'permutation')
  scores = tf.random.stateless_uniform([n], seed=key)
  return tf.cast(tf.argsort(scores), tf.int32)
