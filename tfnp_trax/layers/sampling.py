"""Turning model scores into discrete choices: sampling and thresholding."""

import numpy as onp

from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.layers import base

__all__ = ['logsoftmax_sample', 'ThresholdToBinary']


def logsoftmax_sample(log_probs, temperature=1.0):  # pylint: disable=invalid-name
  """Samples indices from log-probabilities, sharpened or flattened.

  Draws from softmax(log_probs / temperature) along the last axis with the
  Gumbel-max trick: argmax(log_probs + temperature * g), g ~ Gumbel(0, 1).
  As in Trax, the noise comes from NumPy's global generator on the host
  (`numpy.random`), so `numpy.random.seed` makes draws repeatable; the
  result is a NumPy array, and the function cannot run inside a compiled
  function. (`fastmath.random.categorical` is the traceable, keyed way.)

  Example:
    >>> logsoftmax_sample(jnp.log(jnp.array([[0.0, 1.0]])), 1.0).tolist()
    [1]

  Args:
    log_probs: array [..., n_categories] of log-probabilities (e.g. the
      output of LogSoftmax; any logits give the same distribution).
    temperature: 1.0 samples the softmax itself; 0.0 takes the argmax;
      larger values flatten the distribution.

  Returns:
    int NumPy array of shape `log_probs.shape[:-1]`.
  """
  log_probs = onp.asarray(log_probs)
  # Bounded away from 0 and 1 so that the double log stays finite.
  u = onp.random.uniform(low=1e-6, high=1.0 - 1e-6, size=log_probs.shape)
  gumbel = -onp.log(-onp.log(u))
  return onp.argmax(log_probs + gumbel * temperature, axis=-1)


def ThresholdToBinary(threshold=0.5):  # pylint: disable=invalid-name
  """A layer giving int32 1 where its input exceeds `threshold`, else 0.

  Example:
    >>> ThresholdToBinary()(jnp.array([0.2, 0.5, 0.7])).numpy().tolist()
    [0, 0, 1]
  """
  def threshold_fn(model_output):
    return (model_output > threshold).astype(jnp.int32)
  return base.Fn('ThresholdToBinary', threshold_fn)
