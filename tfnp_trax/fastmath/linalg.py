"""The few linear-algebra routines layers need (`jnp.linalg` is missing).

TensorFlow's NumPy module has no `linalg` namespace, so these wrap
`tf.linalg` with NumPy's conventions for the right-hand side.
"""

import tensorflow as tf

__all__ = ['cholesky', 'slogdet', 'solve']


def cholesky(a):
  """Lower-triangular L with L @ L^T = a, for symmetric positive-definite a."""
  return tf.linalg.cholesky(tf.convert_to_tensor(a))


def slogdet(a):
  """Sign and log|det| of the matrices `a[..., n, n]`, as `np.linalg.slogdet`.

  XLA has no kernel for it; under `jit_compile=True` use the Cholesky factor
  of a positive-definite matrix instead (log det = 2 sum log diag L).
  """
  return tf.linalg.slogdet(tf.convert_to_tensor(a))


def solve(a, b):
  """Solves `a @ x = b`; `b` is `[..., n]` (vectors) or `[..., n, k]`.

  `b` counts as vectors when it has one axis (NumPy 2) or one axis less than
  `a` (NumPy 1, as Trax's Gaussian densities use it); batch axes broadcast.
  """
  a = tf.convert_to_tensor(a)
  b = tf.convert_to_tensor(b, a.dtype)
  if b.shape.rank in (1, a.shape.rank - 1):
    a, b = _broadcast(a, b[..., None])
    return tf.linalg.solve(a, b)[..., 0]
  a, b = _broadcast(a, b)
  return tf.linalg.solve(a, b)


def _broadcast(a, b):
  # tf.linalg.solve wants equal batch shapes; NumPy broadcasts them.
  batch = tf.broadcast_dynamic_shape(tf.shape(a)[:-2], tf.shape(b)[:-2])
  a = tf.broadcast_to(a, tf.concat([batch, tf.shape(a)[-2:]], 0))
  b = tf.broadcast_to(b, tf.concat([batch, tf.shape(b)[-2:]], 0))
  return a, b
