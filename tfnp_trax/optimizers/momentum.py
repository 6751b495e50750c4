"""Momentum SGD, with Nesterov's correction by default."""

from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.optimizers import base

__all__ = ['Momentum', 'momentum_update']


def momentum_update(grads, weights, velocity, learning_rate, mass,
                    weight_decay_rate, nesterov):
  """One momentum step on one array; returns `(new_weights, new_velocity)`."""
  new_v = mass * velocity + grads  # Accumulate gradients into the velocity.
  # Nesterov looks one step ahead along the new velocity.
  step_dir = mass * new_v + grads if nesterov else new_v
  # Decoupled weight decay, then the step.
  new_weights = (1.0 - weight_decay_rate) * weights - learning_rate * step_dir
  return new_weights, new_v


class Momentum(base.Optimizer):
  r"""Momentum SGD (Nesterov by default), with decoupled weight decay.

  With learning rate `lr`, mass `mu`, weight decay `wd` and gradient `g`:

    v <- mu * v + g
    u  = mu * v + g        (nesterov=True)   or   u = v   (nesterov=False)
    w <- (1 - wd) * w - lr * u

  References: Sutskever et al. (2013), "On the importance of initialization
  and momentum in deep learning"; Bengio et al. (2012),
  https://arxiv.org/abs/1212.0901 (eqs. 6 and 7).

  Each weight's slot is its velocity `v`, a single array (as in Trax).

  Example:

  >>> from tfnp_trax.fastmath import numpy as jnp
  >>> opt = Momentum(learning_rate=0.1, weight_decay_rate=0.0)
  >>> w = jnp.zeros((1,), jnp.float32)
  >>> new_w, slots = opt.update(0, w + 1.0, w, opt.init(w), opt.opt_params)
  >>> round(float(new_w[0]), 4), slots.numpy().tolist()
  (-0.19, [1.0])
  """

  def __init__(self, learning_rate=0.01, mass=0.9, weight_decay_rate=1e-5,
               nesterov=True):
    """Creates a Momentum optimizer.

    Args:
      learning_rate: the step size `lr`.
      mass: the velocity decay `mu`.
      weight_decay_rate: fraction of each weight removed every step.
      nesterov: whether to use Nesterov's look-ahead step (fixed at
        construction, not an opt param).
    """
    super().__init__(learning_rate=learning_rate, mass=mass,
                     weight_decay_rate=weight_decay_rate)
    self._nesterov = nesterov

  def init(self, weights):
    return jnp.zeros_like(weights)

  def update(self, step, grads, weights, slots, opt_params):
    del step
    new_weights, new_v = momentum_update(
        grads, weights, slots, opt_params['learning_rate'],
        opt_params['mass'], opt_params['weight_decay_rate'], self._nesterov)
    return new_weights.astype(weights.dtype), new_v
