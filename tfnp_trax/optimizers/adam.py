"""Adam with bias correction and decoupled weight decay."""

from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.optimizers import base

__all__ = ['Adam', 'adam_update']


def adam_update(step, grads, weights, m, v, learning_rate, b1, b2, eps,
                weight_decay_rate):
  """One Adam step on one array; returns `(new_weights, new_m, new_v)`.

  The bias corrections are applied to scalars rather than to `m` and `v`:
  `m_hat / (sqrt(v_hat) + eps) == c * m / (sqrt(v) + eps * sqrt(1 - b2^t))`
  with `c = sqrt(1 - b2^t) / (1 - b1^t)`, which saves two full-size
  divisions per step.
  """
  t = jnp.asarray(step, jnp.float32) + 1.0  # 1-based count of updates.
  m = b1 * m + (1.0 - b1) * grads  # First moment estimate.
  v = b2 * v + (1.0 - b2) * grads * grads  # Second moment estimate.
  root_c2 = jnp.sqrt(1.0 - b2 ** t)  # sqrt of the second bias correction.
  step_size = learning_rate * root_c2 / (1.0 - b1 ** t)  # Scalar lr * c.
  new_weights = ((1.0 - weight_decay_rate) * weights  # Decoupled decay.
                 - step_size * m / (jnp.sqrt(v) + eps * root_c2))
  return new_weights, m, v


class Adam(base.Optimizer):
  """Adam (Kingma & Ba, 2014, https://arxiv.org/abs/1412.6980).

  With step count `t = step + 1`, learning rate `lr`, gradient `g`, weight
  decay `wd`:

    m <- b1 * m + (1 - b1) * g
    v <- b2 * v + (1 - b2) * g^2
    m_hat = m / (1 - b1^t),   v_hat = v / (1 - b2^t)
    w <- (1 - wd) * w - lr * m_hat / (sqrt(v_hat) + eps)

  Weight decay is not part of the paper's algorithm; set
  `weight_decay_rate=0.0` for plain Adam. Each weight's slots are the pair
  `(m, v)` (a plain tuple, as in Trax).

  Example:

  >>> from tfnp_trax.fastmath import numpy as jnp
  >>> opt = Adam(learning_rate=0.1, weight_decay_rate=0.0)
  >>> w = jnp.zeros((1,), jnp.float32)
  >>> new_w, slots = opt.update(0, w + 2.0, w, opt.init(w), opt.opt_params)
  >>> round(float(new_w[0]), 4)  # The first step is about -lr * sign(g).
  -0.1
  """

  def __init__(self, learning_rate=0.0001, weight_decay_rate=1e-5, b1=0.9,
               b2=0.999, eps=1e-5, clip_grad_norm=None):
    """Creates an Adam optimizer.

    Args:
      learning_rate: the step size `lr`.
      weight_decay_rate: fraction of each weight removed every step.
      b1: decay of the first-moment average.
      b2: decay of the second-moment average.
      eps: added to `sqrt(v_hat)` for numerical stability.
      clip_grad_norm: optional global gradient-norm limit.
    """
    super().__init__(learning_rate=learning_rate,
                     weight_decay_rate=weight_decay_rate, b1=b1, b2=b2,
                     eps=eps, clip_grad_norm=clip_grad_norm)

  def init(self, weights):
    return jnp.zeros_like(weights), jnp.zeros_like(weights)

  def update(self, step, grads, weights, slots, opt_params):
    m, v = slots
    new_weights, m, v = adam_update(
        step, grads, weights, m, v, opt_params['learning_rate'],
        opt_params['b1'], opt_params['b2'], opt_params['eps'],
        opt_params['weight_decay_rate'])
    return new_weights.astype(weights.dtype), (m, v)
