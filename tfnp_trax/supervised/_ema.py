"""An exponential moving average of the weights, updated inside the step.

After every update, each float weight's average `a` moves towards the new
weight `w`:

    a <- a - (1 - d_n) * (a - w)        (that is, d_n * a + (1 - d_n) * w)

starting from the weights the trainer was built with. `n` counts the
updates already averaged (0 at the first). With `warmup=False` the decay
is fixed, `d_n = decay` (Keras's `ema_momentum`); with `warmup=True` it is
`tf.train.ExponentialMovingAverage`'s `d_n = min(decay, (1 + n) / (10 + n))`,
so early averages follow the weights closely instead of staying near the
initial ones. Non-float weights are copied. The average and its count are
variables like the weights (mirrored under a strategy, written per replica
with the replicas' identical values), so checkpoints hold them.
"""

import numbers

import tensorflow as tf

from tfnp_trax.supervised import _variables

__all__ = ['WeightAverage', 'check_decay', 'decay_at']


def check_decay(decay, owner):
  """Returns `decay` as a float after checking it is in [0, 1)."""
  if (isinstance(decay, bool) or not isinstance(decay, numbers.Real) or
      not 0.0 <= decay < 1.0):
    raise ValueError(f'{owner}: ema_decay must be a number in [0, 1) (e.g. '
                     f'0.999), or None for no moving average; got '
                     f'{decay!r}.')
  return float(decay)


def decay_at(decay, n, warmup):
  """The decay of the update after `n` averaged ones (a float32 tensor)."""
  d = tf.constant(decay, tf.float32)
  if not warmup:
    return d
  n = tf.cast(n, tf.float32)
  return tf.minimum(d, (1.0 + n) / (10.0 + n))


class WeightAverage:
  """The moving average of a tree of weights, as variables.

  Args:
    weights: the tree of initial weights (the average starts from them).
    strategy: the tf.distribute strategy the variables live under.
    decay: the decay `d` in [0, 1).
    warmup: use `min(decay, (1 + n) / (10 + n))` (see the module docstring).
  """

  def __init__(self, weights, strategy, decay, warmup=True):
    self.decay = decay
    self.warmup = bool(warmup)
    self.tree = _variables.VariableTree(weights, strategy, 'ema')
    with strategy.scope():
      self.count = tf.Variable(
          0, dtype=tf.int64, trainable=False, name='ema_count',
          aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA)

  @property
  def variables(self):
    """The averages' variables, then the update count."""
    return self.tree.variables + [self.count]

  def updates(self, new_weights):
    """Inside a replica function: the writes that average in `new_weights`.

    Args:
      new_weights: the flat list of updated weight values, in the order of
        `tree.variables` (identical on every replica).

    Returns:
      The write ops, for control dependencies.
    """
    n = self.count.read_value()
    d = decay_at(self.decay, n, self.warmup)
    values = []
    for v, w in zip(self.tree.variables, new_weights):
      a = v.read_value()
      if v.dtype.is_floating:
        w = tf.cast(w, v.dtype)
        values.append(a - tf.cast(1.0 - d, v.dtype) * (a - w))
      else:
        values.append(w)
    return _variables.assign_local(self.tree.variables + [self.count],
                                   values + [n + 1])

  def reset(self, weights):
    """Restarts the average from `weights` (a tree like the initial one)."""
    self.tree.assign(weights)
    self.count.assign(0)
