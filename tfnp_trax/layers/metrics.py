"""Accuracy metrics, classifiers, WeightedSum and Trax's weighted means.

A metric layer maps a batch to one scalar. Its inputs are the model output
(typically one activation vector per item), the targets and, for weighted
metrics, weights. Each metric is composed as in Trax 1.4.1, from the same
named pieces, so it returns Trax's number: `Accuracy` is
`Serial(ArgMax, _Accuracy, _WeightedMean)` and prints as one name
(`Accuracy_in3`), the others are single `Fn` layers.

Shapes: targets must fit the model output (`model_output.shape[:-1]` for
category metrics), which Trax asserts (or, in `_Accuracy`, meant to: its
assertion is commented out there) and which we check with a ValueError
naming the metric, both shapes and the fix. Weights broadcast against the
values exactly as in Trax (see `_metric_utils`); shapes that cannot
broadcast raise a ValueError.

Means are taken over the whole batch, across replicas when run under a
tf.distribute strategy (numerator and denominator are summed over replicas
before dividing), and a zero denominator gives 0.0 where Trax gives NaN.
Results are float32 (float64 when the model output is float64).
"""

from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.layers import base
from tfnp_trax.layers import combinators as cb
from tfnp_trax.layers import core
from tfnp_trax.layers import _metric_utils as mu
from tfnp_trax.layers._metric_utils import WeightedSum
from tfnp_trax.layers.fscores import MacroAveragedFScore
from tfnp_trax.layers.fscores import WeightedFScore
# Trax keeps its losses in this module too; ours are in losses.py.
from tfnp_trax.layers.losses import BinaryCrossEntropy
from tfnp_trax.layers.losses import BinaryCrossEntropyLoss
from tfnp_trax.layers.losses import BinaryCrossEntropySum
from tfnp_trax.layers.losses import CategoryCrossEntropy
from tfnp_trax.layers.losses import CrossEntropyLoss
from tfnp_trax.layers.losses import CrossEntropyLossWithLogSoftmax
from tfnp_trax.layers.losses import CrossEntropySum
from tfnp_trax.layers.losses import WeightedCategoryCrossEntropy
from tfnp_trax.layers.regression_losses import L2Loss
from tfnp_trax.layers.regression_losses import SmoothL1Loss

__all__ = ['BinaryClassifier', 'MulticlassClassifier', 'CategoryAccuracy',
           'WeightedCategoryAccuracy', 'MaskedSequenceAccuracy', 'Accuracy',
           'SequenceAccuracy', 'WeightedSum', 'MacroAveragedFScore',
           'WeightedFScore', 'L2Loss', 'SmoothL1Loss',
           'CategoryCrossEntropy', 'WeightedCategoryCrossEntropy',
           'CrossEntropyLoss', 'CrossEntropyLossWithLogSoftmax',
           'CrossEntropySum', 'BinaryCrossEntropy', 'BinaryCrossEntropyLoss',
           'BinaryCrossEntropySum']

# Trax's reduction of `Accuracy` and the losses, shared with losses.py.
_WeightedMean = mu.WeightedMean


def BinaryClassifier(threshold=0.5):  # pylint: disable=invalid-name
  """Predicts category 1 where the model output exceeds `threshold` (int32).

  (Not in Trax 1.4.1, whose equivalent is `ThresholdToBinary`; later Trax
  versions added it for use as `Accuracy(classifier=...)`.)

  Example:
    >>> BinaryClassifier()(jnp.array([0.2, 0.7])).tolist()
    [0, 1]
  """
  return base.Fn('BinaryClassifier',
                 lambda model_output: (mu.as_array(model_output) > threshold)
                 .astype(jnp.int32))


def MulticlassClassifier(axis=-1):  # pylint: disable=invalid-name
  """Predicts the index of the largest model output along `axis` (int32).

  (Not in Trax 1.4.1, whose equivalent is `ArgMax`.)
  """
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
  model_output.shape[:-1] and `weights` that broadcast against the targets
  (the denominator sums the weights as given, as in Trax).

  Example:
    >>> out = jnp.eye(3)                       # predicts 0, 1, 2
    >>> layer = WeightedCategoryAccuracy()
    >>> float(layer((out, jnp.array([0, 2, 2]), jnp.array([1., 5., 2.]))))
    0.375
  """
  def f(model_output, targets, weights):
    name = 'WeightedCategoryAccuracy'
    correct, targets = _category_matches(name, model_output, targets)
    weights = mu.as_array(weights)
    mu.check_broadcastable(name, 'weights', weights, 'targets', targets)
    return mu.global_weighted_mean(correct, weights)
  return base.Fn('WeightedCategoryAccuracy', f)


def _check_has_sequence_axis(metric, targets, what):
  if targets.shape.rank is not None and targets.shape.rank < 1:
    raise ValueError(f'{metric}: targets are a scalar (shape ()); expected '
                     f'{what}.')


def MaskedSequenceAccuracy():  # pylint: disable=invalid-name
  """Fraction of sequences predicted right at every nonzero-weight position.

  Inputs: `model_output` (..., length, n_categories), integer `targets`
  (..., length) and `weights` broadcasting against the targets, used as a
  mask (only zero versus nonzero matters). A sequence is correct if argmax
  matches the target at every position with nonzero weight; a fully masked
  sequence counts as correct, so all-zero weights give 1.0. The result is the
  mean over all sequences (an empty batch gives 0.0).
  """
  def f(model_output, targets, weights):
    name = 'MaskedSequenceAccuracy'
    correct, targets = _category_matches(name, model_output, targets)
    _check_has_sequence_axis(name, targets, 'targets of shape (..., length)')
    weights = mu.as_array(weights)
    mu.check_broadcastable(name, 'weights', weights, 'targets', targets)
    position_ok = jnp.logical_or(correct, jnp.equal(weights, 0))
    return mu.global_mean(jnp.all(position_ok, axis=-1))
  return base.Fn('MaskedSequenceAccuracy', f)


def _Accuracy():  # pylint: disable=invalid-name
  """Per-item float32 1.0/0.0: does the prediction equal the target?

  Trax's building block of `Accuracy` and `SequenceAccuracy`. Predictions and
  targets must have the same shape.
  """
  def f(predicted_category, target_category):
    predicted = mu.as_array(predicted_category)
    targets = mu.as_array(target_category)
    mu.check_same_shape('_Accuracy', 'targets', targets, 'predictions',
                        predicted)
    return jnp.equal(predicted, targets).astype(jnp.float32)
  return base.Fn('_Accuracy', f)


def _WeightedSequenceMean():  # pylint: disable=invalid-name
  """Mean over the batch axis of 1 - min(1, sum of weighted errors per item).

  Trax's reduction for `SequenceAccuracy`. For each batch item (axis 0) the
  weighted errors `(1 - values) * weights` are summed over all other axes; the
  item scores `1 - min(1, that sum)`. With 0/1 weights an item scores 1.0 iff
  every unmasked position is right; fractional weights give partial credit
  (a single wrong position of weight 0.1 scores 0.9), exactly as in Trax.
  """
  def f(values, weights):
    values, weights = mu.as_array(values), mu.as_array(weights)
    mu.check_broadcastable('_WeightedSequenceMean', 'weights', weights,
                           'values', values)
    dtype = mu.result_dtype(values)
    not_correct = (1.0 - values.astype(dtype)) * weights.astype(dtype)
    rank = not_correct.shape.rank
    per_item = jnp.sum(not_correct, axis=tuple(range(1, rank)))
    return mu.global_mean(1.0 - jnp.minimum(1.0, per_item))
  return base.Fn('_WeightedSequenceMean', f)


def Accuracy(classifier=core.ArgMax()):  # pylint: disable=invalid-name
  """Weighted mean accuracy of `classifier`'s predictions.

  Trax's composition `Serial(classifier, _Accuracy, _WeightedMean)`.
  Inputs: `model_output`, `targets` of the shape of the classifier's
  predictions, and `weights` broadcasting against them. Returns
  sum(w * [prediction == target]) / sum(w), or 0.0 if all weights are zero.

  Args:
    classifier: a layer mapping model output to predicted categories.
  """
  return cb.Serial(classifier, _Accuracy(), _WeightedMean(),
                   name='Accuracy', sublayers_to_print=[])


def SequenceAccuracy(classifier=core.ArgMax()):  # pylint: disable=invalid-name
  """Fraction of batch items whose weighted positions are all predicted right.

  Trax's composition `Serial(classifier, _Accuracy, _WeightedSequenceMean)`;
  everything after the batch axis counts as one sequence. With 0/1 weights
  an item scores 1.0 iff every unmasked position is right; fractional
  weights give Trax's partial credit (see `_WeightedSequenceMean`). All-zero
  weights give 1.0; an empty batch gives 0.0.

  Args:
    classifier: a layer mapping model output to predicted categories.
  """
  return cb.Serial(classifier, _Accuracy(), _WeightedSequenceMean(),
                   name='SequenceAccuracy', sublayers_to_print=[])
