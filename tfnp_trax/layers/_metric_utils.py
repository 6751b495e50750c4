"""Shared pieces of the metric layers: shape checks, exact means, reductions.

The reduction layers `WeightedMean` (Trax's `_WeightedMean`) and
`WeightedSum` live here because both metrics.py and losses.py build on them.

Every metric that averages reduces to `numerator / denominator` where both are
sums over the batch. On several replicas each replica holds a shard of the
batch, so both sums are added up across replicas (`fastmath.psum`, one
collective for the pair) before dividing: the value every replica sees is the
value of the whole batch, however unevenly the weights are spread. Outside a
multi-replica context `psum` is the identity. (Trax instead divides each
core's numerator by `_n_weights_per_core`, the psum of the weights over the
number of cores; averaged over cores, as both trainers do, the two agree.)

Weights broadcast against the values as in Trax: the numerator is
`sum(values * weights)` over the broadcast product while the denominator is
`sum(weights)` over the weights as given, so weights of shape (batch, 1)
against values of shape (batch, length) give `length` times the mean. Shapes
that do not broadcast at all raise a ValueError naming the metric.

A zero denominator (all weights zero, or an empty batch) gives 0.0 where Trax
gives NaN, so that a fully padded evaluation batch cannot stop training.

Gradients: inside a replica, the gradient of such a metric with respect to
that replica's inputs is `n_replicas` times its share of the full-batch
gradient (the all-reduce passes the cotangent of every replica back to each).
Averaging gradients over replicas (`pmean`, as the trainer does) therefore
gives exactly the full-batch gradient.
"""

from tfnp_trax import debug
from tfnp_trax import fastmath
from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.layers import base

__all__ = ['as_array', 'result_dtype', 'leading_size',
           'check_targets_fit_output', 'check_same_shape',
           'check_broadcastable', 'safe_divide', 'global_ratio',
           'global_weighted_mean', 'global_mean', 'WeightedMean',
           'WeightedSum']

_TARGETS_MSG = (
    '{metric}: targets shape {targets} does not fit model_output shape '
    '{output}: expected targets of shape {expected} (one integer category per '
    'output vector, i.e. model_output.shape[:-1]). If the targets are one-hot, '
    'pass jnp.argmax(targets, axis=-1) instead.')

_TARGET_DTYPE_MSG = (
    '{metric}: targets must be integer category ids, got dtype {dtype} '
    '(shape {shape}). Cast them with targets.astype(jnp.int32); if they are '
    'one-hot vectors or probabilities, pass jnp.argmax(targets, axis=-1).')

_TARGET_RANGE_HINT = (
    'model_output has {n} categories, so targets must be below {n}: is the '
    'output layer as wide as the vocabulary (e.g. Dense(vocab_size))?')

_BROADCAST_MSG = (
    '{metric}: {name} shape {got} does not broadcast against {ref_name} '
    'shape {ref}. {fix}')

_SAME_SHAPE_MSG = (
    '{metric}: {name} shape {got} does not match {ref_name} shape {ref}; '
    '{name} must have exactly the shape of {ref_name} (no implicit '
    'broadcasting). {fix}')


def as_array(x):
  """Converts an input (NumPy array, list or tensor) to a jnp array."""
  return jnp.asarray(x)


def result_dtype(x):
  """The dtype metrics compute in: float64 for float64 inputs, else float32.

  Low-precision inputs (bfloat16, float16) are promoted so that sums over a
  batch and counts stay exact enough.
  """
  return jnp.float64 if x.dtype == jnp.float64 else jnp.float32


def leading_size(x):
  """The size of axis 0: a Python int when static, else a scalar tensor."""
  n = x.shape[0]
  if n is not None:
    return n
  return jnp.size(x) // jnp.size(x[0])


def _dims(x):
  shape = x.shape
  if getattr(shape, 'rank', 0) is None:
    return None  # Unknown rank while tracing: nothing to check statically.
  return tuple(shape)


def _compatible(a, b):
  if a is None or b is None:
    return True
  return len(a) == len(b) and all(
      x is None or y is None or x == y for x, y in zip(a, b))


def check_targets_fit_output(metric, model_output, targets,
                             allow_float=False):
  """Checks integer category `targets` against `model_output`.

  Always: targets.shape == model_output.shape[:-1] (ValueError) and, unless
  `allow_float`, targets are not floats (TypeError: a fractional label would
  match no category and silently count as zero loss). Values: targets in
  [0, n_categories) when called eagerly or in debug mode, and a finite model
  output in debug mode (see `tfnp_trax.debug`).

  Args:
    metric: the layer's name, for messages.
    model_output: (..., n_categories) scores.
    targets: (...) category ids.
    allow_float: accept float targets, for layers that, as in Trax, compare
      them with each category index.
  """
  out, tgt = _dims(model_output), _dims(targets)
  if out is not None and tgt is not None and (
      not out or not _compatible(out[:-1], tgt)):
    raise ValueError(_TARGETS_MSG.format(
        metric=metric, targets=tgt, output=out, expected=out[:-1]))
  dtype = getattr(targets.dtype, 'name', str(targets.dtype))
  if not allow_float and dtype.startswith(('float', 'bfloat', 'complex')):
    raise TypeError(_TARGET_DTYPE_MSG.format(
        metric=metric, dtype=dtype, shape=tgt))
  n_categories = None if not out else out[-1]
  if n_categories is not None:
    debug.check_ids(metric, 'targets', targets, n_categories,
                    always_eager=True, hint=_TARGET_RANGE_HINT.format(
                        n=n_categories))
  debug.check_finite(metric, 'model_output', model_output)


def _broadcast_hint(name, got, ref):
  if got is not None and ref is not None and len(got) < len(ref) and (
      _compatible(tuple(ref[:len(got)]), got)):
    index = ', '.join([':'] * len(got) + ['None'] * (len(ref) - len(got)))
    return (f'To weight whole rows, broadcast explicitly: '
            f'jnp.broadcast_to({name}[{index}], {ref}).')
  return f'Reshape or broadcast {name} to {ref} before calling the metric.'


def check_same_shape(metric, name, x, ref_name, ref):
  """Raises ValueError unless `x` has exactly the shape of `ref`."""
  got, want = _dims(x), _dims(ref)
  if not _compatible(got, want):
    raise ValueError(_SAME_SHAPE_MSG.format(
        metric=metric, name=name, got=got, ref_name=ref_name, ref=want,
        fix=_broadcast_hint(name, got, want)))


def _broadcasts(a, b):
  if a is None or b is None:
    return True
  return all(x is None or y is None or x == y or x == 1 or y == 1
             for x, y in zip(reversed(a), reversed(b)))


def check_broadcastable(metric, name, x, ref_name, ref):
  """Raises ValueError unless `x` broadcasts against `ref` (NumPy rules)."""
  got, want = _dims(x), _dims(ref)
  if not _broadcasts(got, want):
    raise ValueError(_BROADCAST_MSG.format(
        metric=metric, name=name, got=got, ref_name=ref_name, ref=want,
        fix=_broadcast_hint(name, got, want)))


def safe_divide(numerator, denominator):
  """numerator / denominator, and 0 where the denominator is 0.

  The inner `where` keeps the untaken branch finite so gradients stay finite.
  """
  is_zero = jnp.equal(denominator, 0)
  safe_den = jnp.where(is_zero, jnp.ones_like(denominator), denominator)
  return jnp.where(is_zero, jnp.zeros_like(numerator), numerator / safe_den)


def global_ratio(numerator, denominator):
  """sum-over-replicas(numerator) / sum-over-replicas(denominator), safely."""
  numerator, denominator = fastmath.psum((numerator, denominator))
  return safe_divide(numerator, denominator)


def global_weighted_mean(values, weights):
  """sum(values * weights) / sum(weights) over the whole (replicated) batch.

  This is Trax's `_WeightedMean`: `weights` broadcast in the product, and the
  denominator sums them as given. Computed in `result_dtype(values)`.
  """
  dtype = result_dtype(values)
  values = values.astype(dtype)
  weights = weights.astype(dtype)
  return global_ratio(jnp.sum(values * weights), jnp.sum(weights))


def global_mean(values):
  """Mean of all entries of `values` over the whole (replicated) batch."""
  dtype = result_dtype(values)
  count = jnp.asarray(jnp.size(values), dtype)
  return global_ratio(jnp.sum(values.astype(dtype)), count)


def WeightedMean():  # pylint: disable=invalid-name
  """sum(values * weights) / sum(weights) over the whole batch.

  Trax's `_WeightedMean` (the layer's name; also `metrics._WeightedMean`),
  the reduction of `Accuracy`, `CrossEntropyLoss` and the other
  Serial-built losses. Weights broadcast in the product while the
  denominator sums them as given; 0.0 when they sum to zero.
  """
  def f(values, weights):
    values, weights = as_array(values), as_array(weights)
    check_broadcastable('_WeightedMean', 'weights', weights, 'values',
                        values)
    return global_weighted_mean(values, weights)
  return base.Fn('_WeightedMean', f)


def WeightedSum():  # pylint: disable=invalid-name
  """sum(values * weights) over the whole (replicated) batch.

  Inputs: `values` and `weights` that broadcast against each other.
  """
  def f(values, weights):
    values, weights = as_array(values), as_array(weights)
    check_broadcastable('WeightedSum', 'weights', weights, 'values', values)
    if fastmath.is_float(values) or fastmath.is_float(weights):
      dtype = result_dtype(values)
    else:
      # Trax sums integer values and weights in the integers.
      dtype = jnp.result_type(values, weights)
    return fastmath.psum(
        jnp.sum(values.astype(dtype) * weights.astype(dtype), dtype=dtype))
  return base.Fn('WeightedSum', f)
