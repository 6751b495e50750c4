"""In-place optimizer updates for the Trainer's step, one fused kernel each.

`Optimizer.tree_update` is pure: it returns new weights and slots, which the
Trainer then writes back into its variables. For Adam and SGD on float32
weights the same update is available as one TensorFlow kernel per weight
(`ResourceApplyAdam`, `ResourceApplyGradientDescent`) that reads the
gradient once and updates the variable and its slots in place, with no
intermediate arrays and a handful of graph nodes instead of about twenty.
The Trainer uses this path whenever it computes exactly what `tree_update`
would (up to float rounding), and the pure path otherwise.

Trax's Adam, with `t = step + 1` and `c2 = sqrt(1 - b2^t)`:

  w <- (1 - wd) * w - lr * c2 / (1 - b1^t) * m / (sqrt(v) + eps * c2)

is ResourceApplyAdam with `lr_t = lr * c2 / (1 - b1^t)` (beta powers 0, so the
kernel's own bias correction is 1) and `epsilon = eps * c2`, after the
decoupled decay `w *= 1 - wd` when the decay rate is not zero.
"""

import tensorflow as tf

from tfnp_trax import fastmath
from tfnp_trax import optimizers

__all__ = ['FusedUpdate', 'plan']


class FusedUpdate:
  """The in-place update of one optimizer over a Trainer's variables.

  Attributes:
    kind: 'adam' or 'sgd'.
  """

  def __init__(self, kind, optimizer, weight_vars, slot_vars, decay):
    self.kind = kind
    self._clip = optimizer._clip_grad_norm  # pylint: disable=protected-access
    self._weight_vars = weight_vars
    self._slot_vars = slot_vars
    self._decay = decay

  def check_opt_params(self, params):
    """Raises if per-step hyperparameters leave what this plan assumed."""
    if not self._decay and 'weight_decay_rate' in params and float(
        params['weight_decay_rate']) != 0.0:
      raise ValueError(
          f'Trainer: weight_decay_rate={float(params["weight_decay_rate"])} '
          f'was passed for one step, but the optimizer was built with '
          f'weight_decay_rate=0.0 and the compiled step has no decay; build '
          f'the optimizer with the decay you will use.')

  def apply(self, step, grads, weights, opt_params):
    """Updates the variables in place; returns the optimizer's stats.

    Args:
      step: int32 step number (0-based), a tensor.
      grads: gradients (tensors), one per weight variable, all-reduced.
      weights: the weight values read at the start of the step (for
        `weights_l2`, as `tree_update` reports it).
      opt_params: dict of float32 scalar tensors.

    Returns:
      `{'gradients_l2', 'weights_l2'}`, as `tree_update` returns them, and
      the list of update ops (for control dependencies).
    """
    grads = [tf.convert_to_tensor(g) for g in grads]
    # One sum of squares per weight, so that each update need wait only for
    # the read of its own weight.
    weight_squares = fastmath.sums_of_squares([[w] for w in weights])
    grads_norm = tf.sqrt(fastmath.sums_of_squares([grads])[0])
    weights_norm = tf.sqrt(tf.add_n(weight_squares)
                           if weight_squares else tf.zeros((), tf.float32))
    # Each in-place update starts once every gradient exists (after the
    # whole backward pass, so no update competes with the backward matmuls
    # for the cores) and once its weight's sum of squares has read the old
    # value (so TensorFlow need not copy the weight before writing it: it
    # does while an earlier read is pending). The gradient norm and the
    # rest of the weight norm run beside the updates, off the critical
    # path. Against waiting for both whole norms: MLP +2.7%, LM +3.2%
    # (bench/README.md).
    ordered = []
    for g, square in zip(grads, weight_squares):
      with tf.control_dependencies(grads + [square]):
        ordered.append(tf.identity(g))
    grads = ordered
    if self._clip is not None:
      scale = self._clip / tf.maximum(grads_norm, self._clip)
      grads = [g * scale for g in grads]
    stats = {'gradients_l2': grads_norm, 'weights_l2': weights_norm}
    lr = opt_params['learning_rate']
    updates = []
    if self.kind == 'sgd':
      for var, g in zip(self._weight_vars, grads):
        updates.append(tf.raw_ops.ResourceApplyGradientDescent(
            var=var.handle, alpha=lr, delta=g))
      return stats, updates
    t = tf.cast(step, tf.float32) + 1.0
    b1, b2 = opt_params['b1'], opt_params['b2']
    root_c2 = tf.sqrt(1.0 - tf.pow(b2, t))
    lr_t = lr * root_c2 / (1.0 - tf.pow(b1, t))
    eps = opt_params['eps'] * root_c2
    zero = tf.constant(0.0, tf.float32)
    keep = 1.0 - opt_params['weight_decay_rate'] if self._decay else None
    for i, (var, g) in enumerate(zip(self._weight_vars, grads)):
      m, v = self._slot_vars[2 * i], self._slot_vars[2 * i + 1]
      if keep is not None:
        # The decoupled decay scales the weights before the Adam step; the
        # kernel then subtracts its step from the decayed weights.
        w = tf.raw_ops.ReadVariableOp(resource=var.handle, dtype=tf.float32)
        updates.append(tf.raw_ops.AssignVariableOp(resource=var.handle,
                                                   value=w * keep))
      with tf.control_dependencies(updates[-1:] if keep is not None else []):
        updates.append(tf.raw_ops.ResourceApplyAdam(
            var=var.handle, m=m.handle, v=v.handle, beta1_power=zero,
            beta2_power=zero, lr=lr_t, beta1=b1, beta2=b2, epsilon=eps,
            grad=g))
    return stats, updates


def plan(optimizer, weight_vars, slot_vars, default_params):
  """A FusedUpdate when one matches `optimizer` exactly, else None.

  Only the exact classes qualify (a subclass may change `update`), and only
  float32 weights whose slots are float32 arrays of the same shape.

  Args:
    optimizer: the Trainer's optimizer.
    weight_vars: flat list of weight variables.
    slot_vars: flat list of slot variables (Adam: m0, v0, m1, v1, ...).
    default_params: the optimizer's initial hyperparameters (Python floats).

  Returns:
    A FusedUpdate, or None to use `tree_update`.
  """
  if not weight_vars or any(v.dtype != tf.float32 for v in weight_vars):
    return None
  if type(optimizer) is optimizers.SGD:  # pylint: disable=unidiomatic-typecheck
    return (FusedUpdate('sgd', optimizer, weight_vars, slot_vars, False)
            if not slot_vars else None)
  if type(optimizer) is not optimizers.Adam:  # pylint: disable=unidiomatic-typecheck
    return None
  if len(slot_vars) != 2 * len(weight_vars):
    return None
  for i, w in enumerate(weight_vars):
    for s in slot_vars[2 * i:2 * i + 2]:
      if s.dtype != tf.float32 or tuple(s.shape) != tuple(w.shape):
        return None
  decay = float(default_params.get('weight_decay_rate', 0.0)) != 0.0
  return FusedUpdate('adam', optimizer, weight_vars, slot_vars, decay)
