"""Cross-entropy loss layers: category (softmax) and binary (sigmoid).

Each loss is composed as in Trax 1.4.1, from the same named pieces, so it
returns Trax's number: `CrossEntropyLoss` is `Serial(_CrossEntropy,
_WeightedMean)`, `BinaryCrossEntropyLoss` is `Serial(_BinaryCrossEntropy,
_WeightedMean)` and so on, each printing as one name (`CrossEntropyLoss_in3`).

Targets must fit the model output (checked; a mismatch raises ValueError,
where Trax would broadcast into a meaningless number). Weights broadcast as
in Trax (see `_metric_utils`). Means are taken over the whole batch, across
replicas under a tf.distribute strategy, and a zero denominator (all weights
zero) gives 0.0 where Trax gives NaN. Computation happens in float32 (float64
for float64 inputs), also for bfloat16 logits.
"""

from tfnp_trax import fastmath
from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.layers import base
from tfnp_trax.layers import combinators as cb
from tfnp_trax.layers import core
from tfnp_trax.layers import _metric_utils as mu

__all__ = ['CategoryCrossEntropy', 'WeightedCategoryCrossEntropy',
           'CrossEntropyLoss', 'CrossEntropyLossWithLogSoftmax',
           'CrossEntropySum', 'BinaryCrossEntropy', 'BinaryCrossEntropyLoss',
           'BinaryCrossEntropySum']

# Trax's `_WeightedMean` layer (also `metrics._WeightedMean`).
_WeightedMean = mu.WeightedMean


def _check_label_smoothing(name, label_smoothing):
  # Checked when the layer runs, not when it is built, as in Trax.
  if label_smoothing and not 0.0 <= label_smoothing <= 1.0:
    raise ValueError(f'{name}: label_smoothing must be between 0 and 1 (or '
                     f'None), got {label_smoothing}.')


def _float_inputs(model_output, targets):
  model_output, targets = mu.as_array(model_output), mu.as_array(targets)
  return model_output.astype(mu.result_dtype(model_output)), targets


def _category_cross_entropy(name, model_output, targets, label_smoothing,
                            cutoff=0.0):
  """Per-item -sum(p * log_softmax(model_output)), p the smoothed target."""
  _check_label_smoothing(name, label_smoothing)
  logits, targets = _float_inputs(model_output, targets)
  mu.check_targets_fit_output(name, logits, targets)
  n_categories = logits.shape[-1]
  if not label_smoothing and targets.dtype.is_integer:
    # Hard integer targets: the fused kernel gives the same value.
    ce = fastmath.sparse_softmax_cross_entropy(logits, targets)
    return jnp.maximum(ce, cutoff) - cutoff if cutoff > 0.0 else ce
  target_dist = fastmath.one_hot(targets, n_categories, logits.dtype)
  if label_smoothing:
    # Keep (1 - eps) of the mass on the target, spread eps over all classes.
    target_dist = (target_dist * (1.0 - label_smoothing) +
                   label_smoothing / n_categories)
  ce = -jnp.sum(target_dist * core.log_softmax(logits), axis=-1)
  if cutoff > 0.0:
    # Items already below the cutoff contribute 0 (and no gradient).
    ce = jnp.maximum(ce, cutoff) - cutoff
  return ce


def CategoryCrossEntropy(label_smoothing=None):  # pylint: disable=invalid-name
  r"""Mean cross-entropy between softmax(model_output) and integer targets.

  Per item, with q = softmax(model_output) and p the one-hot target (or
  p = (1 - eps) * one_hot + eps / n_categories with label smoothing eps):
  cross_entropy = -sum_i p_i log q_i. Returns the mean over all items (0.0 for
  an empty batch).

  Example:
    >>> layer = CategoryCrossEntropy()
    >>> round(float(layer((jnp.array([[0., 0.]]), jnp.array([1])))), 4)
    0.6931

  Args:
    label_smoothing: if given, a float in [0, 1] making soft targets; other
      values raise a ValueError when the layer runs.
  """
  def f(model_output, targets):
    return mu.global_mean(_category_cross_entropy(
        'CategoryCrossEntropy', model_output, targets, label_smoothing))
  return base.Fn('CategoryCrossEntropy', f)


def WeightedCategoryCrossEntropy(label_smoothing=None, cutoff=0.0):  # pylint: disable=invalid-name
  """Weighted mean of per-item category cross-entropies.

  Inputs: `model_output` (..., n_categories) pre-softmax activations, integer
  `targets` of shape model_output.shape[:-1] and `weights` broadcasting
  against the targets. Returns sum(w * ce) / sum(w), or 0.0 if all weights
  are zero.

  Args:
    label_smoothing: if given, a float in [0, 1] making soft targets; other
      values raise a ValueError when the layer runs.
    cutoff: per-item losses below `cutoff` count as 0 and the rest are
      lowered by it (`max(ce, cutoff) - cutoff`); 0.0 means no cutoff.
  """
  name = 'WeightedCategoryCrossEntropy'

  def f(model_output, targets, weights):
    ce = _category_cross_entropy(name, model_output, targets,
                                 label_smoothing, cutoff)
    weights = mu.as_array(weights)
    mu.check_broadcastable(name, 'weights', weights, 'targets', ce)
    return mu.global_weighted_mean(ce, weights)
  return base.Fn(name, f)


def _CrossEntropy():  # pylint: disable=invalid-name
  """Per-item -model_output[target]: cross-entropy of log-probabilities.

  Trax's building block of `CrossEntropyLoss` and `CrossEntropySum`: the
  model output must already be log-probabilities (e.g. after `LogSoftmax`).
  As in Trax (trax/layers/metrics.py _CrossEntropy, through core.one_hot),
  float targets are accepted and compared with each category index: 2.0
  selects category 2, and a fractional target selects none.
  """
  def f(model_output, target_category):
    log_probs, targets = _float_inputs(model_output, target_category)
    mu.check_targets_fit_output('_CrossEntropy', log_probs, targets,
                                allow_float=True)
    n_categories = log_probs.shape[-1]
    if targets.dtype.is_integer:
      one_hot = fastmath.one_hot(targets, n_categories, log_probs.dtype)
    else:
      categories = jnp.arange(n_categories, dtype=targets.dtype)
      one_hot = (targets[..., None] == categories).astype(log_probs.dtype)
    return -jnp.sum(log_probs * one_hot, axis=-1)
  return base.Fn('_CrossEntropy', f)


def CrossEntropyLoss():  # pylint: disable=invalid-name
  """Weighted mean of -model_output[target], for log-probability outputs.

  Trax's composition `Serial(_CrossEntropy, _WeightedMean)`. The model
  output must already be log-probabilities (e.g. after `LogSoftmax`);
  `WeightedCategoryCrossEntropy` takes raw activations. Returns 0.0 if all
  weights are zero.
  """
  return cb.Serial(_CrossEntropy(), _WeightedMean(),
                   name='CrossEntropyLoss', sublayers_to_print=[])


def CrossEntropyLossWithLogSoftmax():  # pylint: disable=invalid-name
  """Weighted mean cross-entropy of log_softmax(model_output) and targets.

  Trax's composition `Serial(LogSoftmax, _CrossEntropy, _WeightedMean)`.
  """
  return cb.Serial(core.LogSoftmax(), _CrossEntropy(), _WeightedMean(),
                   name='CrossEntropyLossWithLogSoftmax',
                   sublayers_to_print=[])


def CrossEntropySum():  # pylint: disable=invalid-name
  """Weighted sum of -model_output[target] over the whole batch.

  Trax's composition `Serial(_CrossEntropy, WeightedSum)`.
  """
  return cb.Serial(_CrossEntropy(), mu.WeightedSum(),
                   name='CrossEntropySum', sublayers_to_print=[])


def BinaryCrossEntropy():  # pylint: disable=invalid-name
  """Mean binary cross-entropy of sigmoid(model_output) against 0/1 targets.

  Per item, with q = sigmoid(x): -(t log q + (1 - t) log(1 - q)), as in
  Trax, but computed stably as t * softplus(-x) + (1 - t) * softplus(x):
  equal to Trax's value up to rounding, and finite for large |x| where
  Trax's float32 log(sigmoid(x)) overflows to inf. `targets` must have the
  model output's shape. Returns the mean over all items (0.0 if empty).
  """
  def f(model_output, targets):
    x, t = _binary_inputs('BinaryCrossEntropy', model_output, targets)
    zero = jnp.zeros_like(x)
    entropies = (t * jnp.logaddexp(zero, -x) +
                 (1.0 - t) * jnp.logaddexp(zero, x))
    return mu.global_mean(entropies)
  return base.Fn('BinaryCrossEntropy', f)


def _binary_inputs(name, model_output, targets):
  model_output, targets = mu.as_array(model_output), mu.as_array(targets)
  mu.check_same_shape(name, 'targets', targets, 'model_output', model_output)
  dtype = mu.result_dtype(model_output)
  return model_output.astype(dtype), targets.astype(dtype)


def _BinaryCrossEntropy():  # pylint: disable=invalid-name
  """Trax's batch binary cross-entropy of probabilities, via matrix products.

  With p the model output (probabilities) and t the 0/1 targets, both of
  shape (batch, ...), returns
  `-squeeze(dot(t.T, log p) + dot((1 - t).T, log(1 - p))) / batch`. For 1-D
  inputs, or inputs of shape (batch, 1), this is one scalar: the mean
  binary cross-entropy of the whole batch. For (batch, n) inputs it is
  Trax's (n, n) matrix of cross terms (its diagonal holds the per-column
  means), which then broadcasts against the weights.
  """
  def f(model_output, target_category):
    p, t = _binary_inputs('_BinaryCrossEntropy', model_output,
                          target_category)
    if p.shape.rank == 0:
      raise ValueError('_BinaryCrossEntropy: model_output is a scalar; '
                       'expected a batch of shape (batch, ...).')
    j = jnp.dot(jnp.transpose(t), jnp.log(p))
    j = j + jnp.dot(jnp.transpose(1.0 - t), jnp.log(1.0 - p))
    batch_size = mu.leading_size(p)
    return -jnp.squeeze(j) / jnp.asarray(batch_size, p.dtype)
  return base.Fn('_BinaryCrossEntropy', f)


def BinaryCrossEntropyLoss():  # pylint: disable=invalid-name
  """Trax's weighted binary cross-entropy loss for probability outputs.

  Trax's composition `Serial(_BinaryCrossEntropy, _WeightedMean)`. Inputs:
  `model_output` probabilities in (0, 1) (e.g. after `Sigmoid`), 0/1
  `targets` of the same shape, and `weights`.

  Quirk kept from Trax: `_BinaryCrossEntropy` first reduces the whole batch
  to its mean cross-entropy `j`, and only then does `_WeightedMean` apply the
  weights, giving `sum(j * w) / sum(w) = j`. So for 1-D (or (batch, 1))
  inputs the weights do not change the value unless they all are zero: the
  result is the unweighted batch mean, not the per-item weighted mean
  `sum(w * ce) / sum(w)` (the two differ by about 1.5% on a random batch
  with non-uniform weights). For (batch, n) inputs Trax's matrix of cross
  terms meets the weights by broadcasting. On several replicas each replica
  contributes its own batch mean, weighted by its share of the weights.
  All-zero weights give 0.0.
  """
  return cb.Serial(_BinaryCrossEntropy(), _WeightedMean(),
                   name='BinaryCrossEntropyLoss', sublayers_to_print=[])


def BinaryCrossEntropySum():  # pylint: disable=invalid-name
  """Trax's `Serial(_BinaryCrossEntropy, WeightedSum)`.

  For 1-D inputs this is the batch mean binary cross-entropy times the sum
  of the weights (see `BinaryCrossEntropyLoss` for the composition).
  """
  return cb.Serial(_BinaryCrossEntropy(), mu.WeightedSum(),
                   name='BinaryCrossEntropySum', sublayers_to_print=[])
