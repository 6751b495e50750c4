"""Adam with bias correction and decoupled weight decay."""

from tfnp_trax import fastmath
from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.optimizers import base

__all__ = ['Adam', 'adam_update', 'bias_corrected_scalars']


def bias_corrected_scalars(step, learning_rate, b1, b2, eps):
  """Adam's step size and epsilon with both bias corrections folded in.

  The bias corrections are applied to scalars rather than to `m` and `v`:
  `m_hat / (sqrt(v_hat) + eps) == c * m / (sqrt(v) + eps * sqrt(1 - b2^t))`
  with `c = sqrt(1 - b2^t) / (1 - b1^t)` and `t = step + 1`, which saves two
  full-size divisions per step. The pure update and the fused in-place
  kernel both take this form.

  Returns:
    `(lr * c, eps * sqrt(1 - b2^t))`.
  """
  t = jnp.asarray(step, jnp.float32) + 1.0  # 1-based count of updates.
  root_c2 = jnp.sqrt(1.0 - b2 ** t)  # sqrt of the second bias correction.
  return learning_rate * root_c2 / (1.0 - b1 ** t), eps * root_c2


def adam_update(step, grads, weights, m, v, learning_rate, b1, b2, eps,
                weight_decay_rate):
  """One Adam step on one array; returns `(new_weights, new_m, new_v)`."""
  m = b1 * m + (1.0 - b1) * grads  # First moment estimate.
  v = b2 * v + (1.0 - b2) * grads * grads  # Second moment estimate.
  step_size, eps_hat = bias_corrected_scalars(step, learning_rate, b1, b2,
                                              eps)
  new_weights = ((1.0 - weight_decay_rate) * weights  # Decoupled decay.
                 - step_size * m / (jnp.sqrt(v) + eps_hat))
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

  def supports_in_place(self, weight_vars, slot_vars):
    # The kernel computes this class's own update. A subclass may change
    # `init`, `update` or `tree_update`, so it opts in by overriding this.
    # Slots are (m, v) per weight.
    if type(self) is not Adam or not weight_vars:  # pylint: disable=unidiomatic-typecheck
      return False
    if len(slot_vars) != 2 * len(weight_vars):
      return False
    same_shapes = all(tuple(s.shape) == tuple(w.shape)
                      for i, w in enumerate(weight_vars)
                      for s in slot_vars[2 * i:2 * i + 2])
    return same_shapes and base.float32_variables(weight_vars + slot_vars)

  def _decays_in_place(self):
    # Fixed when a step is traced: without decay the step has no decay ops.
    return float(self.opt_params.get('weight_decay_rate', 0.0)) != 0.0

  def check_in_place_opt_params(self, opt_params):
    rate = opt_params.get('weight_decay_rate')
    if not self._decays_in_place() and rate is not None and float(rate):
      raise ValueError(
          f'Trainer: weight_decay_rate={float(rate)} was passed for one '
          f'step, but the optimizer was built with weight_decay_rate=0.0 '
          f'and the compiled step has no decay; build the optimizer with '
          f'the decay you will use.')

  def _apply_in_place(self, step, grads, weight_vars, slot_vars, opt_params):
    # Trax's Adam, with `t = step + 1` and `c2 = sqrt(1 - b2^t)`:
    #   w <- (1 - wd) * w - lr * c2 / (1 - b1^t) * m / (sqrt(v) + eps * c2)
    # is the kernel with the corrected step size and epsilon, after the
    # decoupled decay `w *= 1 - wd` when the decay rate is not zero.
    b1, b2 = opt_params['b1'], opt_params['b2']
    lr, eps = bias_corrected_scalars(step, opt_params['learning_rate'], b1,
                                     b2, opt_params['eps'])
    keep = (1.0 - opt_params['weight_decay_rate']
            if self._decays_in_place() else None)
    return [fastmath.in_place.apply_adam(
        var, slot_vars[2 * i], slot_vars[2 * i + 1], lr, b1, b2, eps, g,
        keep=keep) for i, (var, g) in enumerate(zip(weight_vars, grads))]
