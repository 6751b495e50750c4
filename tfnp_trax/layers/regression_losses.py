"""Element-wise regression losses: L2Loss and SmoothL1Loss.

Both take `model_output`, `targets` and `weights` of one shape (checked) and
return sum(w * loss(y - t)) / sum(w) over the whole batch, across replicas
under a tf.distribute strategy; 0.0 when all weights are zero.
"""

from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.layers import base
from tfnp_trax.layers import _metric_utils as mu

__all__ = ['L2Loss', 'SmoothL1Loss']


def _elementwise_loss(name, loss_fn):
  def f(model_output, targets, weights):
    y, t, w = (mu.as_array(a) for a in (model_output, targets, weights))
    mu.check_same_shape(name, 'targets', t, 'model_output', y)
    mu.check_same_shape(name, 'weights', w, 'model_output', y)
    dtype = mu.result_dtype(y)
    return mu.global_weighted_mean(loss_fn(y.astype(dtype) - t.astype(dtype)),
                                   w)
  return base.Fn(name, f)


def L2Loss():  # pylint: disable=invalid-name
  """Weighted mean squared error: sum(w * (y - t)**2) / sum(w).

  Example:
    >>> y, t, w = jnp.array([1., 3.]), jnp.array([0., 0.]), jnp.array([1., 0.])
    >>> float(L2Loss()((y, t, w)))
    1.0
  """
  return _elementwise_loss('L2Loss', lambda d: d * d)


def SmoothL1Loss():  # pylint: disable=invalid-name
  """Weighted mean Huber loss with delta 1.

  Per element, with d = y - t: 0.5 * d**2 if |d| < 1, else |d| - 0.5.
  """
  def huber(d):
    a = jnp.abs(d)
    return jnp.where(a < 1.0, 0.5 * d * d, a - 0.5)
  return _elementwise_loss('SmoothL1Loss', huber)
