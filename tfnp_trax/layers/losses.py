"""Cross-entropy loss layers: category (softmax) and binary (sigmoid).

Inputs are the model output, the targets and, for weighted losses, weights
with exactly the targets' shape (checked; a mismatch raises ValueError).
Means are taken over the whole batch, across replicas under a tf.distribute
strategy, and a zero denominator (all weights zero) gives 0.0, never NaN.
Computation happens in float32 (float64 for float64 inputs).
"""

from tfnp_trax import fastmath
from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.layers import base
from tfnp_trax.layers import _metric_utils as mu

__all__ = ['CategoryCrossEntropy', 'WeightedCategoryCrossEntropy',
           'CrossEntropyLoss', 'CrossEntropyLossWithLogSoftmax',
           'CrossEntropySum', 'BinaryCrossEntropy', 'BinaryCrossEntropyLoss']


def _check_label_smoothing(name, label_smoothing):
  if label_smoothing is not None and not 0.0 <= label_smoothing <= 1.0:
    raise ValueError(f'{name}: label_smoothing must be between 0 and 1 (or '
                     f'None), got {label_smoothing}.')


def _log_softmax(x):
  return x - fastmath.logsumexp(x, axis=-1, keepdims=True)


def _target_log_probs(name, log_probs, targets, label_smoothing=None):
  """Per-item -sum(p * log_probs) with p the (smoothed) one-hot target."""
  mu.check_targets_fit_output(name, log_probs, targets)
  n_categories = log_probs.shape[-1]
  target_dist = fastmath.one_hot(targets, n_categories, log_probs.dtype)
  if label_smoothing:
    # Keep (1 - eps) of the mass on the target, spread eps over all classes.
    target_dist = (target_dist * (1.0 - label_smoothing) +
                   label_smoothing / n_categories)
  return -jnp.sum(target_dist * log_probs, axis=-1)


def _category_cross_entropy(name, model_output, targets, label_smoothing,
                            cutoff=0.0):
  model_output, targets = mu.as_array(model_output), mu.as_array(targets)
  logits = model_output.astype(mu.result_dtype(model_output))
  ce = _target_log_probs(name, _log_softmax(logits), targets, label_smoothing)
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
    label_smoothing: if given, a float in [0, 1] making soft targets.
  """
  _check_label_smoothing('CategoryCrossEntropy', label_smoothing)

  def f(model_output, targets):
    return mu.global_mean(_category_cross_entropy(
        'CategoryCrossEntropy', model_output, targets, label_smoothing))
  return base.Fn('CategoryCrossEntropy', f)


def WeightedCategoryCrossEntropy(label_smoothing=None, cutoff=0.0):  # pylint: disable=invalid-name
  """Weighted mean of per-item category cross-entropies.

  Inputs: `model_output` (..., n_categories) pre-softmax activations, integer
  `targets` of shape model_output.shape[:-1] and `weights` of the targets'
  shape. Returns sum(w * ce) / sum(w), or 0.0 if all weights are zero.

  Args:
    label_smoothing: if given, a float in [0, 1] making soft targets.
    cutoff: per-item losses below `cutoff` count as 0 and the rest are
      lowered by it (`max(ce, cutoff) - cutoff`); 0.0 means no cutoff.
  """
  name = 'WeightedCategoryCrossEntropy'
  _check_label_smoothing(name, label_smoothing)

  def f(model_output, targets, weights):
    ce = _category_cross_entropy(name, model_output, targets,
                                 label_smoothing, cutoff)
    weights = mu.as_array(weights)
    mu.check_same_shape(name, 'weights', weights, 'targets',
                        mu.as_array(targets))
    return mu.global_weighted_mean(ce, weights)
  return base.Fn(name, f)


def _weighted_log_prob_loss(name, log_softmax, reduce_fn):
  """A (model_output, targets, weights) layer over -log_probs[target]."""
  def f(model_output, targets, weights):
    model_output, targets = mu.as_array(model_output), mu.as_array(targets)
    weights = mu.as_array(weights)
    log_probs = model_output.astype(mu.result_dtype(model_output))
    if log_softmax:
      log_probs = _log_softmax(log_probs)
    ce = _target_log_probs(name, log_probs, targets)
    mu.check_same_shape(name, 'weights', weights, 'targets', targets)
    return reduce_fn(ce, weights)
  return base.Fn(name, f)


def CrossEntropyLoss():  # pylint: disable=invalid-name
  """Weighted mean of -model_output[target], for log-probability outputs.

  The model output must already be log-probabilities (e.g. after
  `LogSoftmax`); `WeightedCategoryCrossEntropy` takes raw activations.
  Returns 0.0 if all weights are zero.
  """
  return _weighted_log_prob_loss('CrossEntropyLoss', False,
                                 mu.global_weighted_mean)


def CrossEntropyLossWithLogSoftmax():  # pylint: disable=invalid-name
  """Weighted mean cross-entropy of log_softmax(model_output) and targets."""
  return _weighted_log_prob_loss('CrossEntropyLossWithLogSoftmax', True,
                                 mu.global_weighted_mean)


def _global_weighted_sum(values, weights):
  return fastmath.psum(jnp.sum(values * weights.astype(values.dtype)))


def CrossEntropySum():  # pylint: disable=invalid-name
  """Weighted sum of -model_output[target] over the whole batch."""
  return _weighted_log_prob_loss('CrossEntropySum', False,
                                 _global_weighted_sum)


def _binary_inputs(name, model_output, targets):
  model_output, targets = mu.as_array(model_output), mu.as_array(targets)
  mu.check_same_shape(name, 'targets', targets, 'model_output', model_output)
  dtype = mu.result_dtype(model_output)
  return model_output.astype(dtype), targets.astype(dtype)


def BinaryCrossEntropy():  # pylint: disable=invalid-name
  """Mean binary cross-entropy of sigmoid(model_output) against 0/1 targets.

  Per item, with q = sigmoid(x): -(t log q + (1 - t) log(1 - q)), computed
  stably as t * softplus(-x) + (1 - t) * softplus(x). `targets` must have the
  model output's shape. Returns the mean over all items (0.0 if empty).
  """
  def f(model_output, targets):
    x, t = _binary_inputs('BinaryCrossEntropy', model_output, targets)
    zero = jnp.zeros_like(x)
    entropies = (t * jnp.logaddexp(zero, -x) +
                 (1.0 - t) * jnp.logaddexp(zero, x))
    return mu.global_mean(entropies)
  return base.Fn('BinaryCrossEntropy', f)


def BinaryCrossEntropyLoss():  # pylint: disable=invalid-name
  """Weighted mean binary cross-entropy for probability outputs.

  Inputs: `model_output` probabilities in (0, 1) (e.g. after `Sigmoid`),
  0/1 `targets` and `weights`, all of one shape. Returns
  sum(w * -(t log p + (1 - t) log(1 - p))) / sum(w), or 0.0 if all weights
  are zero. With equal weights this is the plain mean over items.
  """
  def f(model_output, targets, weights):
    name = 'BinaryCrossEntropyLoss'
    p, t = _binary_inputs(name, model_output, targets)
    weights = mu.as_array(weights)
    mu.check_same_shape(name, 'weights', weights, 'targets', t)
    entropies = -(t * jnp.log(p) + (1.0 - t) * jnp.log(1.0 - p))
    return mu.global_weighted_mean(entropies, weights)
  return base.Fn('BinaryCrossEntropyLoss', f)
