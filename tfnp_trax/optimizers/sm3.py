"""SM3: memory-efficient adaptive steps with per-axis accumulators."""

import enum
import functools

from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.optimizers import base

__all__ = ['SM3', 'MomentumType']

# Added to square roots before inverting; entries with a zero accumulator
# get a zero preconditioner instead.
_TINY = 1e-16


class MomentumType(enum.IntEnum):
  """How SM3 folds preconditioned gradients into its momentum slot."""
  EMA = 1
  HEAVY_BALL = 2
  NESTEROV = 3


_MOMENTUM_TYPE_NAMES = [f'MomentumType.{t.name}' for t in MomentumType]


def _expanded_shape(shape, axis):
  # [M, N, K], axis 1 -> [1, N, 1]: broadcasts an axis accumulator.
  return [1] * axis + [shape[axis]] + [1] * (len(shape) - axis - 1)


def _cover(accumulators, shape):
  """The per-entry estimate: minimum of the broadcast axis accumulators."""
  if len(shape) <= 1:
    return accumulators[0]
  return functools.reduce(jnp.minimum, [
      jnp.reshape(a, _expanded_shape(shape, i))
      for i, a in enumerate(accumulators)])


def _project(acc):
  """New axis accumulators: maximum of `acc` over all other axes."""
  rank = len(acc.shape)
  if rank <= 1:
    return [acc]
  return [jnp.max(acc, axis=tuple(j for j in range(rank) if j != i))
          for i in range(rank)]


def _inv_sqrt_or_zero(acc):
  return jnp.where(acc > 0.0, 1.0 / (jnp.sqrt(acc) + _TINY),
                   jnp.zeros_like(acc))


def _norm(x):
  return jnp.sqrt(jnp.sum(x * x))


def _momentum(pg, m, beta, momentum_type):
  """Returns `(new_m, update)` for the chosen momentum type."""
  if momentum_type == MomentumType.EMA:
    m = beta * m + (1.0 - beta) * pg  # Exponential moving average.
    return m, m
  if momentum_type == MomentumType.HEAVY_BALL:
    m = beta * m + pg  # Accumulated velocity.
    return m, m
  m = beta * m + pg  # NESTEROV: velocity, then a look-ahead step along it.
  return m, beta * m + pg


class SM3(base.Optimizer):
  """SM3 (Anil et al., 2019, https://arxiv.org/abs/1901.11150).

  A weight of shape `(n_1, ..., n_k)` keeps one accumulator `a_i` of length
  `n_i` per axis (rank <= 1: one accumulator of the weight's shape). With
  gradient `g`, `b2 = second_moment_averaging` and `c = 1` if `b2 == 1`
  else `1 - b2`:

    nu  = b2 * min_i a_i[broadcast] + c * g^2       per-entry estimate
    a_i <- max of nu over all axes but i
    pg  = g / (sqrt(nu) + 1e-16)   (0 where nu == 0)
    pg  = pg * |pg_adagrad| / (|pg| + 1e-16)        only if b2 != 1
    pg  = pg + weight_decay * w
    EMA:        m <- beta * m + (1 - beta) * pg;  u = m
    HEAVY_BALL: m <- beta * m + pg;               u = m
    NESTEROV:   m <- beta * m + pg;               u = beta * m + pg
    w  <- w - lr * u                 (u = pg when momentum == 0)

  With `b2 != 1` the step size is grafted from plain SM3-Adagrad (`b2 = 1`),
  whose accumulators are kept as extra slots. `b2 == 1` is Adagrad-like.

  Slots per weight, as in Trax: the tuple `(momentum, accumulators,
  graft_accumulators)`, where `momentum` is an array (the empty list `[]`
  when `momentum == 0`) and the other two are lists of arrays (the graft
  list is empty when `b2 == 1`). Unlike Trax's, `update` builds new lists
  rather than overwriting the given ones, so it stays pure.

  Example:

  >>> from tfnp_trax.fastmath import numpy as jnp
  >>> opt = SM3(learning_rate=0.1, momentum=0.0)
  >>> w = jnp.zeros((2, 3), jnp.float32)
  >>> momentum, accumulators, graft_accumulators = opt.init(w)
  >>> [a.shape for a in accumulators], momentum, graft_accumulators
  ([(2,), (3,)], [], [])
  """

  def __init__(self, learning_rate=0.01, momentum=0.9,
               second_moment_averaging=1.0, weight_decay=0.0,
               momentum_type=MomentumType.EMA):
    """Creates an SM3 optimizer.

    Args:
      learning_rate: the step size `lr`.
      momentum: momentum decay `beta`; 0 keeps no momentum slot.
      second_moment_averaging: `b2`; 1.0 sums squared gradients (Adagrad),
        below 1.0 averages them exponentially and grafts the step size.
      weight_decay: coefficient of the `weight_decay * w` term added to the
        preconditioned gradient.
      momentum_type: a `MomentumType`.
    """
    if momentum_type not in list(MomentumType):
      raise ValueError(
          f'SM3: momentum_type must be one of {_MOMENTUM_TYPE_NAMES}, got '
          f'{momentum_type!r}.')
    self._momentum_type = MomentumType(momentum_type)
    # First: it checks that the hyperparameters are numbers.
    super().__init__(learning_rate=learning_rate, momentum=momentum,
                     second_moment_averaging=second_moment_averaging,
                     weight_decay=weight_decay)
    self._has_momentum = momentum > 0.0
    self._graft = second_moment_averaging != 1.0

  def init(self, weights):
    shape = tuple(weights.shape)
    sizes = [shape] if len(shape) <= 1 else [(n,) for n in shape]
    new = lambda: [jnp.zeros(s, weights.dtype) for s in sizes]
    momentum = jnp.zeros_like(weights) if self._has_momentum else []
    return (momentum, new(), new() if self._graft else [])

  def update(self, step, grads, weights, slots, opt_params):
    del step
    p = opt_params
    momentum, accumulators, graft_accumulators = slots
    shape = tuple(weights.shape)
    b2 = p['second_moment_averaging']
    g2 = grads * grads
    coeff = jnp.where(b2 == 1.0, 1.0, 1.0 - b2)  # Plain sum when b2 == 1.
    acc = b2 * _cover(accumulators, shape) + coeff * g2
    pg = grads * _inv_sqrt_or_zero(acc)  # Preconditioned gradient.
    graft = []
    if self._graft:
      graft_acc = _cover(graft_accumulators, shape) + g2
      pg_graft = grads * _inv_sqrt_or_zero(graft_acc)
      pg = pg * (_norm(pg_graft) / (_norm(pg) + _TINY))  # Graft step size.
      graft = _project(graft_acc)
    pg = pg + p['weight_decay'] * weights
    m, update = momentum, pg
    if self._has_momentum:
      m, update = _momentum(pg, m, p['momentum'], self._momentum_type)
    new_weights = weights - p['learning_rate'] * update
    return (new_weights.astype(weights.dtype), (m, _project(acc), graft))
