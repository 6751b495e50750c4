"""Plain stochastic gradient descent."""

from tfnp_trax.optimizers import base

__all__ = ['SGD', 'sgd_update']


def sgd_update(grads, weights, learning_rate):
  """One SGD step on one array: `w' = w - lr * g`."""
  return weights - learning_rate * grads  # Step against the gradient.


class SGD(base.Optimizer):
  """Stochastic gradient descent, without slots.

  Update, with learning rate `lr` and gradient `g`:

    w <- w - lr * g

  As in Trax, SGD keeps no state: each weight's slot entry is None.

  Reference: Robbins & Monro (1951), "A Stochastic Approximation Method".

  Example:

  >>> from tfnp_trax.fastmath import numpy as jnp
  >>> opt = SGD(learning_rate=0.1)
  >>> w = jnp.ones((2,), jnp.float32)
  >>> new_w, slots = opt.update(0, w, w, opt.init(w), opt.opt_params)
  >>> new_w.numpy().tolist(), slots
  ([0.8999999761581421, 0.8999999761581421], None)
  """

  def init(self, weights):
    del weights
    return None

  def update(self, step, grads, weights, slots, opt_params):
    del step, slots
    new_weights = sgd_update(grads, weights, opt_params['learning_rate'])
    return new_weights.astype(weights.dtype), None
