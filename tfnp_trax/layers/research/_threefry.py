"""The Threefry-2x32 block cipher as a pseudorandom function on uint32 words.

Threefry-2x32 (Salmon et al., "Parallel random numbers: as easy as 1, 2,
3", SC 2011) maps a 64-bit key and a 64-bit counter, each two uint32
words, to two uint32 words with 20 rounds of add, rotate and xor. JAX's
random keys are built on it, and Trax's `InfinitePositionalEncoding` draws
its fixed noise table from it. The rounds below use only `+`, `*`, `//`,
`|` and `^` on uint32 arrays, which wrap modulo 2**32 alike in NumPy and in
TensorFlow, so one implementation serves both: NumPy for constants computed
once, `jnp` for the public functions, which trace and compile with XLA.
Outputs equal JAX's `threefry_2x32` bit for bit.
"""

import numpy as np

from tfnp_trax.fastmath import numpy as jnp

__all__ = ['threefry_2x32_prf', 'threefry_2x32_prange', 'threefry_words',
           'jax_split_first_key']

# Rotation distances of the even and odd groups of four rounds.
_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
# The key-schedule parity constant of Threefry.
_PARITY = 0x1BD11BDA


def _rotate_left(x, r):
  # x * 2**r drops the high bits and x // 2**(32 - r) keeps them: together a
  # 32-bit rotation, with no shift operators (which jnp lacks).
  return (x * np.uint32(2**r)) | (x // np.uint32(2**(32 - r)))


def threefry_words(k0, k1, x0, x1):
  """Threefry-2x32 of counters (x0, x1) under key (k0, k1), all uint32.

  Args:
    k0: first key word (uint32 scalar, NumPy or tensor).
    k1: second key word.
    x0: first counter words (uint32 array).
    x1: second counter words, shaped as x0.

  Returns:
    The two output word arrays, shaped as x0.
  """
  ks = (k0, k1, k0 ^ k1 ^ np.uint32(_PARITY))
  x0, x1 = x0 + ks[0], x1 + ks[1]
  for i in range(5):  # 5 groups of 4 rounds, a key injection after each.
    for r in _ROTATIONS[i % 2]:
      x0 = x0 + x1
      x1 = _rotate_left(x1, r) ^ x0
    x0 = x0 + ks[(i + 1) % 3]
    x1 = x1 + ks[(i + 2) % 3] + np.uint32(i + 1)
  return x0, x1


def jax_split_first_key(seed):
  """`jax.random.split(jax.random.PRNGKey(seed))[0]`, as NumPy uint32[2].

  JAX's split of key k enciphers the counters 0..3 as the pairs (0, 2) and
  (1, 3) and takes the first word of each pair for the first new key.
  """
  with np.errstate(over='ignore'):
    k0, k1 = np.uint32((seed >> 32) & 0xFFFFFFFF), np.uint32(seed & 0xFFFFFFFF)
    y0, _ = threefry_words(k0, k1, np.array([0, 1], np.uint32),
                           np.array([2, 3], np.uint32))
  return y0


def _check_key(fn_name, key):
  key = jnp.asarray(key)
  if tuple(key.shape) != (2,) or key.dtype not in (jnp.uint32, jnp.int32):
    raise TypeError(
        f'{fn_name}: key must be uint32[2] (a JAX key) or int32[2] (a '
        f'fastmath.random key), got dtype {key.dtype.name} and shape '
        f'{tuple(key.shape)}.')
  # int32 keys are read as the same 32 bits, unsigned.
  return key.astype(jnp.uint32)


def threefry_2x32_prf(key, x):
  """Applies the Threefry-2x32 pseudorandom function elementwise.

  Example:
    >>> y = threefry_2x32_prf(np.array([0, 1], np.uint32),
    ...                       np.zeros((3, 2), np.uint32))
    >>> tuple(y.shape), y.dtype.name
    ((3, 2), 'uint32')

  Args:
    key: uint32[2] key (JAX's key format); an int32[2] key of
      `fastmath.random` is read as the same bits.
    x: uint32[..., 2] inputs, one 64-bit counter per row of two words.

  Returns:
    uint32[..., 2]: the enciphered counters, equal to Trax's (JAX's) bits.

  Raises:
    TypeError: (as Trax) for a key or inputs of another dtype or shape.
  """
  key = _check_key('threefry_2x32_prf', key)
  x = jnp.asarray(x)
  if tuple(x.shape[-1:]) != (2,) or x.dtype != jnp.uint32:
    raise TypeError(
        f'threefry_2x32_prf: x must be uint32[..., 2], got dtype '
        f'{x.dtype.name} and shape {tuple(x.shape)}.')
  y0, y1 = threefry_words(key[0], key[1], x[..., 0], x[..., 1])
  return jnp.stack([y0, y1], axis=-1)


def threefry_2x32_prange(key, lo=0, hi=2):
  """Derives keys lo..hi-1 of a stream: Threefry of the counters i, as
  little-endian 64-bit numbers (low word i, high word 0).

  Example:
    >>> keys = threefry_2x32_prange(np.array([0, 1], np.uint32), 0, 4)
    >>> tuple(keys.shape)
    (4, 2)

  Args:
    key: uint32[2] key (or an int32[2] `fastmath.random` key).
    lo: first counter.
    hi: one past the last counter.

  Returns:
    uint32[hi - lo, 2] keys.

  Raises:
    ValueError: (as Trax) for a key of another dtype or shape.
    NotImplementedError: (as Trax) for hi >= 2**32.
  """
  try:
    key = _check_key('threefry_2x32_prange', key)
  except TypeError as e:
    raise ValueError(str(e)) from None
  if not hi < 2**32:
    raise NotImplementedError(
        f'threefry_2x32_prange: only 32-bit counters are supported, got '
        f'hi={hi}.')
  low = jnp.asarray(np.arange(lo, hi, dtype=np.uint32))
  return threefry_2x32_prf(key, jnp.stack([low, jnp.zeros_like(low)], -1))
