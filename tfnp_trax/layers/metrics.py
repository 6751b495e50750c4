"""Accuracy metrics, classifiers and WeightedSum.

A metric layer maps a batch to one scalar. Its inputs are the model output
(typically one activation vector per item), the targets and, for weighted
metrics, weights with exactly the targets' shape. Shapes are checked strictly:
a mismatch raises a ValueError naming the metric, both shapes and the fix.

Means are taken over the whole batch, across replicas when run under a
tf.distribute strategy (numerator and denominator are summed over replicas
before dividing), and a zero denominator gives 0.0 rather than NaN.
"""

from tfnp_trax import fastmath
from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.layers import base
from tfnp_trax.layers import combinators as cb
from tfnp_trax.layers import _metric_utils as mu

__all__ = ['BinaryClassifier', 'MulticlassClassifier', 'CategoryAccuracy',
           'WeightedCategoryAccuracy', 'MaskedSequenceAccuracy', 'Accuracy',
           'SequenceAccuracy', 'WeightedSum']


def BinaryClassifier(threshold=0.5):  # pylint: disable=invalid-name
  """Predicts category 1 where the model output exceeds `threshold` (int32).

  Example:
    >>> BinaryClassifier()(jnp.array([0.2, 0.7])).tolist()
    [0, 1]
  """
  return base.Fn('BinaryClassifier',
                 lambda model_output: (mu.as_array(model_output) > threshold)
                 .astype(jnp.int32))


def MulticlassClassifier(axis=-1):  # pylint: disable=invalid-name
  """Predicts the index of the largest model output along `axis` (int32)."""
  return base.Fn('MulticlassClassifier',
                 lambda model_output: jnp.argmax(
                     mu.as_array(model_output), axis=axis).astype(jnp.int32))


def _category_matches(metric, model_output, targets):
  model_output, targets = mu.as_array(model_output), mu.as_array(targets)
  mu.check_targets_fit_output(metric, model_output, targets)
  return jnp.equal(jnp.argmax(model_output, axis=-1), targets), targets


def CategoryAccuracy():  # pylint: disable=invalid-name
  """Fraction of items whose argmax over the last axis equals the target.

  Inputs: `model_output` of shape (..., n_categories) and integer `targets`
  of shape model_output.shape[:-1]. An empty batch gives 0.0.

  Example:
    >>> layer = CategoryAccuracy()
    >>> float(layer((jnp.array([[0., 1.], [1., 0.]]), jnp.array([1, 1]))))
    0.5
  """
  def f(model_output, targets):
    correct, _ = _category_matches('CategoryAccuracy', model_output, targets)
    return mu.global_mean(correct)
  return base.Fn('CategoryAccuracy', f)


def WeightedCategoryAccuracy():  # pylint: disable=invalid-name
  """sum(w * [argmax == target]) / sum(w); 0.0 when all weights are zero.

  Inputs: `model_output` (..., n_categories), integer `targets` of shape
  model_output.shape[:-1] and `weights` of exactly the targets' shape.
  """
  def f(model_output, targets, weights):
    name = 'WeightedCategoryAccuracy'
    correct, targets = _category_matches(name, model_output, targets)
    weights = mu.as_array(weights)
    mu.check_same_shape(name, 'weights', weights, 'targets', targets)
    return mu.global_weighted_mean(correct, weights)
  return base.Fn('WeightedCategoryAccuracy', f)


def _sequence_mean(wrong, weights, seq_axes):
  """Fraction of sequences with no wrong position among nonzero weights."""
  wrong = jnp.logical_and(wrong, jnp.not_equal(weights, 0))
  return mu.global_mean(jnp.logical_not(jnp.any(wrong, axis=seq_axes)))


def _check_has_sequence_axis(metric, targets, what):
  if targets.shape.rank is not None and targets.shape.rank < 1:
    raise ValueError(f'{metric}: targets are a scalar (shape ()); expected '
                     f'{what}.')


def MaskedSequenceAccuracy():  # pylint: disable=invalid-name
  """Fraction of sequences predicted right at every nonzero-weight position.

  Inputs: `model_output` (..., length, n_categories), integer `targets`
  (..., length) and `weights` of the targets' shape, used as a mask (only
  zero versus nonzero matters). A sequence is correct if argmax matches the
  target at every position with nonzero weight; a fully masked sequence counts
  as correct, so all-zero weights give 1.0. The result is the mean over all
  sequences (an empty batch gives 0.0).
  """
  def f(model_output, targets, weights):
    name = 'MaskedSequenceAccuracy'
    correct, targets = _category_matches(name, model_output, targets)
    _check_has_sequence_axis(name, targets, 'targets of shape (..., length)')
    weights = mu.as_array(weights)
    mu.check_same_shape(name, 'weights', weights, 'targets', targets)
    return _sequence_mean(jnp.logical_not(correct), weights, -1)
  return base.Fn('MaskedSequenceAccuracy', f)


def _predictions_vs_targets(metric, predictions, targets, weights):
  predictions, targets = mu.as_array(predictions), mu.as_array(targets)
  weights = mu.as_array(weights)
  mu.check_same_shape(metric, 'targets', targets, 'predictions', predictions)
  mu.check_same_shape(metric, 'weights', weights, 'targets', targets)
  return jnp.equal(predictions, targets), weights


def Accuracy(classifier=MulticlassClassifier()):  # pylint: disable=invalid-name
  """Weighted mean accuracy of `classifier`'s predictions.

  Inputs: `model_output`, `targets` with the shape of the classifier's
  predictions, and `weights` of the targets' shape. Returns
  sum(w * [prediction == target]) / sum(w), or 0.0 if all weights are zero.

  Args:
    classifier: a layer mapping model output to predicted categories.
  """
  def f(predictions, targets, weights):
    correct, weights = _predictions_vs_targets('Accuracy', predictions,
                                               targets, weights)
    return mu.global_weighted_mean(correct, weights)
  return cb.Serial(classifier, base.Fn('_WeightedAccuracy', f),
                   name='Accuracy', sublayers_to_print=[])


def SequenceAccuracy(classifier=MulticlassClassifier()):  # pylint: disable=invalid-name
  """Fraction of batch items whose weighted positions are all predicted right.

  Inputs: `model_output`, `targets` of shape (batch, ...) matching the
  classifier's predictions, and `weights` of the targets' shape. An item
  scores 1.0 only if every position with nonzero weight is right (for 0/1
  weights this is the usual masked sequence accuracy); the result is the mean
  over the batch axis. An item whose weights are all zero scores 1.0, so
  all-zero weights give 1.0; an empty batch gives 0.0.

  Args:
    classifier: a layer mapping model output to predicted categories.
  """
  def f(predictions, targets, weights):
    name = 'SequenceAccuracy'
    correct, weights = _predictions_vs_targets(name, predictions, targets,
                                               weights)
    _check_has_sequence_axis(name, correct,
                             'targets with a leading batch axis')
    axes = tuple(range(1, correct.shape.rank))
    return _sequence_mean(jnp.logical_not(correct), weights, axes)
  return cb.Serial(classifier, base.Fn('_WeightedSequenceMean', f),
                   name='SequenceAccuracy', sublayers_to_print=[])


def WeightedSum():  # pylint: disable=invalid-name
  """sum(values * weights) over the whole (replicated) batch.

  Inputs: `values` and `weights` of exactly the same shape.
  """
  def f(values, weights):
    values, weights = mu.as_array(values), mu.as_array(weights)
    mu.check_same_shape('WeightedSum', 'weights', weights, 'values', values)
    dtype = mu.result_dtype(values)
    return fastmath.psum(jnp.sum(values.astype(dtype) * weights.astype(dtype)))
  return base.Fn('WeightedSum', f)
