"""RMSProp: gradients scaled by a running RMS of past gradients."""

from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.optimizers import base

__all__ = ['RMSProp', 'rms_prop_update']


def rms_prop_update(grads, weights, avg_sq_grad, learning_rate, gamma, eps):
  """One RMSProp step on one array; returns `(new_weights, new_avg)`."""
  # Exponential moving average of squared gradients.
  avg = gamma * avg_sq_grad + (1.0 - gamma) * grads * grads
  # Step scaled by the inverse root-mean-square.
  new_weights = weights - learning_rate * grads / (jnp.sqrt(avg) + eps)
  return new_weights, avg


class RMSProp(base.Optimizer):
  """RMSProp (Tieleman & Hinton, 2012, Coursera lecture 6.5).

  With learning rate `lr`, decay `gamma` and gradient `g`:

    a <- gamma * a + (1 - gamma) * g^2
    w <- w - lr * g / (sqrt(a) + eps)

  Each weight's slot is the average `a`, a single array (as in Trax); it
  starts at ones, which damps the first steps.

  Example:

  >>> from tfnp_trax.fastmath import numpy as jnp
  >>> opt = RMSProp(learning_rate=0.1)
  >>> w = jnp.zeros((1,), jnp.float32)
  >>> new_w, slots = opt.update(0, w + 1.0, w, opt.init(w), opt.opt_params)
  >>> round(float(new_w[0]), 4), slots.numpy().tolist()
  (-0.1, [1.0])
  """

  def __init__(self, learning_rate=0.001, gamma=0.9, eps=1e-8,
               clip_grad_norm=None):
    """Creates an RMSProp optimizer.

    Args:
      learning_rate: the step size `lr`.
      gamma: decay of the squared-gradient average.
      eps: added to the root-mean-square for numerical stability.
      clip_grad_norm: optional global gradient-norm limit.
    """
    super().__init__(learning_rate=learning_rate, gamma=gamma, eps=eps,
                     clip_grad_norm=clip_grad_norm)

  def init(self, weights):
    return jnp.ones_like(weights)

  def update(self, step, grads, weights, slots, opt_params):
    del step
    new_weights, avg = rms_prop_update(
        grads, weights, slots, opt_params['learning_rate'],
        opt_params['gamma'], opt_params['eps'])
    return new_weights.astype(weights.dtype), avg
