"""Adafactor: Adam-like steps with factored second moments for matrices."""

from typing import Any, NamedTuple

from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.optimizers import base

__all__ = ['Adafactor', 'AdafactorFactoredSlots', 'AdafactorUnfactoredSlots',
           'decay_rate_pow', 'adafactor_direction']


class AdafactorFactoredSlots(NamedTuple):
  """Slots of a weight of rank >= 2 with `factored=True`.

  Flattens to Trax's list `[v_row, v_col(, m)]`, so slots read from a Trax
  checkpoint map leaf by leaf. `momentum` is `()` (no leaf) unless
  `do_momentum`.
  """
  v_row: Any
  v_col: Any
  momentum: Any = ()


class AdafactorUnfactoredSlots(NamedTuple):
  """Slots of an unfactored weight: Trax's `[v(, m)]`; see above."""
  v: Any
  momentum: Any = ()


def _named_slots(slots, factored):
  """`slots` as the NamedTuple for its layout; Trax's plain lists pass too."""
  if isinstance(slots, (AdafactorFactoredSlots, AdafactorUnfactoredSlots)):
    return slots
  slots = list(slots)  # E.g. Trax's `[v_row, v_col, m]` from a checkpoint.
  cls = AdafactorFactoredSlots if factored else AdafactorUnfactoredSlots
  n_moments = 2 if factored else 1
  return cls(*slots[:n_moments], *(slots[n_moments:] or [()]))


def decay_rate_pow(step, exponent=0.8):
  """Second-moment decay `1 - (step + 1)^(-exponent)`; 0 at step 0."""
  t = jnp.asarray(step, jnp.float32) + 1.0
  return 1.0 - t ** (-exponent)


def _faded_weight_decay(step, rate, n_steps):
  # The rate fades linearly to 0 over n_steps; n_steps < 1 keeps it constant.
  # (max(n_steps, 1) only avoids 0/0 in the branch that is not selected.)
  faded = rate * jnp.maximum(n_steps - step, 0.0) / jnp.maximum(n_steps, 1.0)
  return jnp.where(n_steps < 1, rate, faded)


def _rms(x):
  return jnp.sqrt(jnp.mean(x * x))


def adafactor_direction(grads, second_moments, decay, epsilon1, factored):
  """Preconditioned gradient `y` and the new second moments.

  Args:
    grads: the gradient of one weight array.
    second_moments: `[v_row, v_col]` if `factored` else `[v]`.
    decay: the second-moment decay for this step.
    epsilon1: regularizer added to the second moments.
    factored: whether the moments are the row/column factors.

  Returns:
    `(y, new_second_moments)`, the moments as a list.
  """
  mix = 1.0 - decay
  g2 = grads * grads
  if factored:
    v_row, v_col = second_moments
    v_row = decay * v_row + mix * jnp.mean(g2, axis=-1)  # Row means of g^2.
    v_col = decay * v_col + mix * jnp.mean(g2, axis=-2)  # Column means.
    # v ~ outer(v_row, v_col) / mean(v_row): the rank-1 estimate of g^2.
    row_mean = jnp.mean(v_row, axis=-1, keepdims=True)
    row_factor = (row_mean / (v_row + epsilon1)) ** 0.5
    col_factor = (v_col + epsilon1) ** -0.5
    y = (grads * jnp.expand_dims(row_factor, -1)  # y = g / sqrt(v).
         * jnp.expand_dims(col_factor, -2))
    return y, [v_row, v_col]
  (v,) = second_moments
  v = decay * v + mix * g2  # Full second-moment average.
  y = grads * (v + epsilon1) ** -0.5  # y = g / sqrt(v).
  return y, [v]


class Adafactor(base.Optimizer):
  """Adafactor (Shazeer & Stern, 2018, https://arxiv.org/abs/1804.04235).

  For step `s` (0-based), gradient `g` and weight `w`:

    d = 1 - (s + 1)^(-decay_rate)                      second-moment decay
    weights of rank >= 2 (factored=True):
      R <- d * R + (1 - d) * mean(g^2, axis=-1)        row statistics
      C <- d * C + (1 - d) * mean(g^2, axis=-2)        column statistics
      y  = g * sqrt(mean(R) / (R + eps1)) / sqrt(C + eps1)
    otherwise:
      V <- d * V + (1 - d) * g^2;   y = g / sqrt(V + eps1)
    y <- y / max(1, RMS(y) / clipping_threshold)       (do_clipping)
    u  = lr * max(RMS(w), eps2) * y       (lr * y without parameter scale)
    m <- beta1 * m + (1 - beta1) * u;  u = m           (do_momentum)
    w <- (1 - wd) * w - u

  where `wd = weight_decay_rate`, fading linearly to 0 over
  `weight_decay_n_steps` steps when that is at least 1.

  Slots per weight: `AdafactorFactoredSlots(v_row, v_col, momentum)` or
  `AdafactorUnfactoredSlots(v, momentum)`, with `momentum=()` unless
  `do_momentum`. Both flatten to Trax's list `[v_row, v_col(, m)]` / `[v(, m)]`, in
  Trax's order, so Trax checkpoints' slots still map; `update` also takes
  those plain lists.

  Example:

  >>> from tfnp_trax.fastmath import numpy as jnp
  >>> opt = Adafactor(learning_rate=0.1, multiply_by_parameter_scale=False)
  >>> slots = opt.init(jnp.zeros((2, 3), jnp.float32))
  >>> slots.v_row.shape, slots.v_col.shape, slots.momentum
  ((2,), (3,), ())
  """

  def __init__(self, learning_rate=0.05, factored=True,
               multiply_by_parameter_scale=True, do_clipping=True,
               do_momentum=False, momentum_in_bfloat16=False, beta1=0.0,
               decay_rate=0.8, clipping_threshold=1.0, weight_decay_rate=1e-5,
               weight_decay_n_steps=0, epsilon1=1e-16, epsilon2=1e-3):
    """Creates an Adafactor optimizer.

    Args:
      learning_rate: the (relative, with parameter scale) step size.
      factored: whether weights of rank >= 2 keep factored second moments.
      multiply_by_parameter_scale: scale steps by the weight's RMS.
      do_clipping: clip the update's RMS to `clipping_threshold`.
      do_momentum: keep a momentum slot, averaged with `beta1`.
      momentum_in_bfloat16: store the momentum slot in bfloat16.
      beta1: momentum decay (used with `do_momentum`).
      decay_rate: exponent of the second-moment decay schedule.
      clipping_threshold: the RMS limit of the update.
      weight_decay_rate: fraction of each weight removed every step.
      weight_decay_n_steps: if >= 1, weight decay fades to 0 over this many
        steps.
      epsilon1: regularizer of the second moments.
      epsilon2: floor of the parameter scale.
    """
    # Structural choices: fixed at construction, not opt params.
    self._factored = factored
    self._multiply_by_parameter_scale = multiply_by_parameter_scale
    self._do_clipping = do_clipping
    self._do_momentum = do_momentum
    self._momentum_in_bfloat16 = momentum_in_bfloat16
    super().__init__(
        learning_rate=learning_rate, beta1=beta1, decay_rate=decay_rate,
        clipping_threshold=clipping_threshold,
        weight_decay_rate=weight_decay_rate,
        weight_decay_n_steps=weight_decay_n_steps, epsilon1=epsilon1,
        epsilon2=epsilon2)

  def _is_factored(self, weights):
    return self._factored and len(weights.shape) >= 2

  def init(self, weights):
    shape = tuple(weights.shape)
    momentum = ()
    if self._do_momentum:
      momentum = jnp.zeros_like(weights)
      if self._momentum_in_bfloat16:
        momentum = momentum.astype('bfloat16')
    if self._is_factored(weights):
      return AdafactorFactoredSlots(
          v_row=jnp.zeros(shape[:-1], jnp.float32),
          v_col=jnp.zeros(shape[:-2] + shape[-1:], jnp.float32),
          momentum=momentum)
    return AdafactorUnfactoredSlots(v=jnp.zeros_like(weights),
                                    momentum=momentum)

  def update(self, step, grads, weights, slots, opt_params):
    p = opt_params
    step = jnp.asarray(step, jnp.float32)
    factored = self._is_factored(weights)
    slots = _named_slots(slots, factored)
    moments = [slots.v_row, slots.v_col] if factored else [slots.v]
    y, new_moments = adafactor_direction(
        grads, moments, decay_rate_pow(step, p['decay_rate']),
        p['epsilon1'], factored)
    # Clipping and parameter scale are scalars: fold them before touching y.
    update_scale = p['learning_rate']
    if self._do_clipping:
      update_scale = update_scale / jnp.maximum(
          1.0, _rms(y) / p['clipping_threshold'])  # Clip RMS(y).
    if self._multiply_by_parameter_scale:
      update_scale = update_scale * jnp.maximum(
          _rms(weights), p['epsilon2'])  # Relative step size.
    subtrahend = update_scale * y
    new_momentum = ()
    if self._do_momentum:
      m = slots.momentum
      new_m = p['beta1'] * m.astype(subtrahend.dtype) + (
          1.0 - p['beta1']) * subtrahend  # Momentum over scaled updates.
      subtrahend = new_m
      new_momentum = new_m.astype(m.dtype)
    # Trax stores the default n_steps (0) as int32; compute in float32.
    decay = _faded_weight_decay(
        step, p['weight_decay_rate'],
        jnp.asarray(p['weight_decay_n_steps'], jnp.float32))
    new_weights = (1.0 - decay) * weights - subtrahend
    return new_weights.astype(weights.dtype), type(slots)(*new_moments,
                                                          new_momentum)
