"""Fused in-place updates of variables, for optimizers that write their own.

An optimizer's pure `update` returns new arrays, which the caller then
writes back into its variables. For the commonest updates TensorFlow has one
kernel per variable that reads the gradient once and changes the variable
and its slots in place: no intermediate arrays and a handful of graph nodes
instead of about twenty. These functions give optimizers those kernels
without importing TensorFlow, as every other op reaches them through
fastmath. Each returns the op that writes, for control dependencies.

Variables here are `tf.Variable`s (or the per-replica components of a
mirrored one, inside a replica context): anything with a resource
`handle`.
"""

import tensorflow as tf

__all__ = ['apply_gradient_descent', 'apply_adam', 'add_n']


def apply_gradient_descent(var, learning_rate, grad):
  """`var -= learning_rate * grad`, in place; returns the write op."""
  return tf.raw_ops.ResourceApplyGradientDescent(
      var=var.handle, alpha=learning_rate, delta=grad)


def apply_adam(var, m, v, learning_rate, b1, b2, eps, grad, keep=None):
  """One Adam step written into `var`, `m` and `v`; returns the last op.

  The kernel computes, with no bias correction of its own (its beta powers
  are passed as 0):

    m <- b1 * m + (1 - b1) * grad
    v <- b2 * v + (1 - b2) * grad^2
    var <- var - learning_rate * m / (sqrt(v) + eps)

  so the caller folds any bias correction into `learning_rate` and `eps`.

  Args:
    var: the weight variable (float32).
    m: its first-moment slot variable.
    v: its second-moment slot variable.
    learning_rate: float32 scalar, bias corrections included.
    b1: float32 scalar decay of `m`.
    b2: float32 scalar decay of `v`.
    eps: float32 scalar added to `sqrt(v)`, bias correction included.
    grad: the gradient.
    keep: optional float32 scalar; the weight is first scaled by it
      (decoupled weight decay, `keep = 1 - decay rate`), and the Adam step
      is then taken from the decayed weight.
  """
  deps = []
  if keep is not None:
    w = tf.raw_ops.ReadVariableOp(resource=var.handle, dtype=var.dtype)
    deps.append(tf.raw_ops.AssignVariableOp(resource=var.handle,
                                            value=w * keep))
  zero = tf.constant(0.0, tf.float32)
  with tf.control_dependencies(deps):
    return tf.raw_ops.ResourceApplyAdam(
        var=var.handle, m=m.handle, v=v.handle, beta1_power=zero,
        beta2_power=zero, lr=learning_rate, beta1=b1, beta2=b2, epsilon=eps,
        grad=grad)


def add_n(scalars, dtype='float32'):
  """The sum of a list of scalars as one op (0 of `dtype` for an empty list)."""
  if not scalars:
    return tf.zeros((), dtype)
  return tf.add_n(scalars)
