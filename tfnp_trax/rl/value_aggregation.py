"""Turning sampled Q-values into state values, and advantage preprocessing.

With Q-value baselines a critic scores `n_samples` actions per state; the
state value aggregates them along axis 1 of `values` [batch, n_samples, ...].
"""

from tfnp_trax import fastmath
from tfnp_trax.fastmath import numpy as jnp

__all__ = ['aggregate_values', 'preprocess_advantages', 'AGGREGATES',
           'Q_VALUE_NORMALIZATIONS']

AGGREGATES = ('max', 'softmax', 'logsumexp', 'mean')
Q_VALUE_NORMALIZATIONS = (None, False, 'std', 'abs')
_SCALE_EPSILON = 1e-5


def aggregate_values(values, aggregate='mean', act_log_probs=None,
                     q_value_normalization=None, q_value_temperature=1.0,
                     sample_all_discrete_actions=False):
  """Aggregates Q-values over the samples axis (axis 1).

  Args:
    values: Q-values, [batch, n_samples, ...].
    aggregate: 'max' (`max_a Q`), 'softmax' (`sum_a Q softmax(Q / T)`),
      'logsumexp' (`T * log mean_a exp(Q / T)`) or 'mean' (`mean_a Q`, or
      `sum_a pi(a) Q` when every discrete action was sampled once).
    act_log_probs: log-probabilities of the sampled actions, same shape as
      `values`; needed for 'mean' with `sample_all_discrete_actions`.
    q_value_normalization: None, 'std' or 'abs': divide the Q-values by
      their std (or mean absolute deviation) before aggregating and multiply
      back after, so the temperature adapts to the scale of the returns.
    q_value_temperature: the temperature T.
    sample_all_discrete_actions: whether the samples are all the actions.

  Returns:
    State values, [batch, ...].

  Example:
    >>> q = jnp.array([[1.0, 3.0]], dtype=jnp.float32)
    >>> float(aggregate_values(q, 'max')[0]), float(aggregate_values(q)[0])
    (3.0, 2.0)
  """
  if aggregate not in AGGREGATES:
    raise ValueError(f'aggregate_values: aggregate must be one of '
                     f'{AGGREGATES}, got {aggregate!r}.')
  if q_value_normalization not in Q_VALUE_NORMALIZATIONS:
    raise ValueError(f'aggregate_values: q_value_normalization must be None, '
                     f'"std" or "abs", got {q_value_normalization!r}.')
  if len(values.shape) < 2:
    raise ValueError(f'aggregate_values: values must be [batch, n_samples, '
                     f'...], got shape {tuple(values.shape)}.')
  scale = 1.0
  if q_value_normalization == 'std':
    scale = jnp.std(values) + _SCALE_EPSILON
  elif q_value_normalization == 'abs':
    scale = jnp.mean(jnp.abs(values - jnp.mean(values))) + _SCALE_EPSILON
  values = values / scale
  temperature = q_value_temperature
  if aggregate == 'max':
    result = jnp.max(values, axis=1)
  elif aggregate == 'softmax':
    scaled = values / temperature
    weights = jnp.exp(scaled - fastmath.logsumexp(scaled, axis=1,
                                                  keepdims=True))
    result = jnp.sum(values * weights, axis=1)
  elif aggregate == 'logsumexp':
    n = values.shape[1]
    result = (fastmath.logsumexp(values / temperature, axis=1) -
              jnp.log(jnp.asarray(n, dtype=values.dtype))) * temperature
  elif sample_all_discrete_actions:
    if act_log_probs is None:
      raise ValueError('aggregate_values: "mean" over all discrete actions '
                       'needs act_log_probs.')
    result = jnp.sum(values * jnp.exp(act_log_probs), axis=1)
  else:
    result = jnp.mean(values, axis=1)
  return result * scale


def preprocess_advantages(advantages, advantage_normalization=True,
                          advantage_normalization_epsilon=1e-5):
  """Normalizes advantages to mean 0 and std ~1 when asked to."""
  if not advantage_normalization:
    return advantages
  return ((advantages - jnp.mean(advantages)) /
          (jnp.std(advantages) + advantage_normalization_epsilon))
