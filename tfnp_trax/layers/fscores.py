"""F-score metrics: MacroAveragedFScore and WeightedFScore.

Predictions are argmax(model_output, axis=-1). As in Trax, the counts for
each category k are sums over the batch axis (axis 0) only:

  precision_k = n_correct_k / n_predicted_k
  recall_k    = n_correct_k / n_targets_k
  F_k = (1 + beta**2) * precision_k * recall_k
        / (beta**2 * precision_k + recall_k)

where any 0/0 counts as 0 (a category never predicted has precision 0, one
never a target has recall 0, and then F_k = 0). Categories below
`initial_category_index` are left out (e.g. to skip padding, category 0).
For 1-D targets these are the usual per-category scores. For targets of
shape (batch, length, ...), Trax counts every position separately (its
Python `sum` runs over the batch axis), so there is one F-score per
(position, category) pair, and the macro average is their plain mean; we
reproduce that.

All categories are handled at once with one-hot sums, so the traced graph has
the same size whatever the number of categories. The counts are summed over
replicas before any division, so the result on N replicas equals the result
on the whole batch. Results are float32 (float64 for float64 model output).
"""

import numbers

from tfnp_trax import fastmath
from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.layers import base
from tfnp_trax.layers import _metric_utils as mu

__all__ = ['MacroAveragedFScore', 'WeightedFScore']


def _check_index(name, initial_category_index):
  if (not isinstance(initial_category_index, numbers.Integral) or
      initial_category_index < 0):
    raise ValueError(f'{name}: initial_category_index must be an int >= 0, '
                     f'got {initial_category_index!r}.')


def _per_category(name, model_output, targets, beta, initial_category_index):
  """Returns (F-scores, target counts) for categories from the initial one."""
  model_output, targets = mu.as_array(model_output), mu.as_array(targets)
  mu.check_targets_fit_output(name, model_output, targets)
  n_categories = model_output.shape[-1]
  if n_categories is None or initial_category_index >= n_categories:
    raise ValueError(
        f'{name}: initial_category_index {initial_category_index} leaves no '
        f'category to score; model_output has {n_categories} categories '
        f'(shape {tuple(model_output.shape)}). Use an index below '
        f'{n_categories}.')
  dtype = mu.result_dtype(model_output)
  if targets.shape.rank == 0:
    raise ValueError(f'{name}: targets are a scalar (shape ()); expected a '
                     f'batch of targets of shape (batch, ...).')
  predicted = fastmath.one_hot(jnp.argmax(model_output, axis=-1),
                               n_categories, dtype)
  target = fastmath.one_hot(targets, n_categories, dtype)
  # Counts over the batch axis only, one per position and category, as
  # Trax's Python `sum` does. Counts, not ratios, are summed across replicas
  # so the ratios are exact.
  n_correct, n_predicted, n_targets = fastmath.psum((
      jnp.sum(predicted * target, axis=0), jnp.sum(predicted, axis=0),
      jnp.sum(target, axis=0)))
  precision = mu.safe_divide(n_correct, n_predicted)
  recall = mu.safe_divide(n_correct, n_targets)
  beta2 = jnp.asarray(beta, dtype) ** 2
  f_scores = mu.safe_divide((1.0 + beta2) * precision * recall,
                            beta2 * precision + recall)
  return (f_scores[..., initial_category_index:],
          n_targets[..., initial_category_index:])


def MacroAveragedFScore(beta=1.0, initial_category_index=0):  # pylint: disable=invalid-name
  """Unweighted mean of the per-category F-scores.

  Inputs: `model_output` (batch, ..., n_categories) and integer `targets` of
  shape model_output.shape[:-1]. Every category from `initial_category_index`
  on counts equally, including categories absent from the batch (which score
  0); with positions after the batch axis, every (position, category) pair
  counts equally, as in Trax.

  Example:
    >>> layer = MacroAveragedFScore()
    >>> out = jnp.array([[1., 0.], [0., 1.], [0., 1.]])
    >>> round(float(layer((out, jnp.array([0, 1, 0])))), 4)
    0.6667

  Args:
    beta: weight of recall relative to precision (beta=1: the F1 score).
    initial_category_index: first category to include.
  """
  name = 'MacroAveragedFScore'
  _check_index(name, initial_category_index)

  def f(model_output, targets):
    f_scores, _ = _per_category(name, model_output, targets, beta,
                                initial_category_index)
    return jnp.mean(f_scores)
  return base.Fn(name, f)


def WeightedFScore(beta=1.0, initial_category_index=0):  # pylint: disable=invalid-name
  """Mean of the per-category F-scores weighted by each category's targets.

  Inputs as for `MacroAveragedFScore`. Returns
  sum_k n_targets_k * F_k / sum_k n_targets_k over categories from
  `initial_category_index` on (and over positions, for targets with axes
  after the batch axis), or 0.0 when none of them is ever a target (Trax
  gives NaN).

  Args:
    beta: weight of recall relative to precision (beta=1: the F1 score).
    initial_category_index: first category to include.
  """
  name = 'WeightedFScore'
  _check_index(name, initial_category_index)

  def f(model_output, targets):
    f_scores, n_targets = _per_category(name, model_output, targets, beta,
                                        initial_category_index)
    return mu.safe_divide(jnp.sum(f_scores * n_targets), jnp.sum(n_targets))
  return base.Fn(name, f)
