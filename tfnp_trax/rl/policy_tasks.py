"""Policy training and evaluation as Loop tasks.

A policy task turns a stream of trajectory batches (`task.TimeStepBatch`es
from `RLTask.trajectory_batch_stream`) into the labeled data of a
`supervised.training.Loop`, so a policy network trains like any supervised
model. Each batch becomes `(observations, actions, weights)`: the policy's
log loss (`distributions.LogLoss`) is `-sum(weights * log_prob(actions))`,
where a step's weight is

    weight_fn(normalize(advantage)) * m / sum(m),  m = mask * control_mask

with the advantages from `advantage_estimator` against the baseline
`value_fn(batch)`. The estimator's `margin` look-ahead steps have no
advantage, so observations, actions and masks are cut to the advantages'
length. `weight_fn` picks the algorithm: the identity for A2C-style policy
gradients, `exp` for AWR, a constant for behavioral cloning.

`PolicyEvalTask` evaluates on the same stream: the policy's entropy and
statistics of the advantages and weights. An agent builds both tasks, runs
the Loop in each epoch, and samples actions from the trained network.
"""

import numpy as onp

from tfnp_trax import layers as tl
from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.rl import _checks
from tfnp_trax.rl import awr
from tfnp_trax.rl import distributions
from tfnp_trax.supervised import training

__all__ = ['PolicyTrainTask', 'PolicyEvalTask']


def _check_trajectory_batch(component, trajectory_batch):
  """Returns `(batch_size, seq_len)`, checking actions and mask agree."""
  batch_size, seq_len = tuple(trajectory_batch.observation.shape[:2])
  _checks.expect_shape(component, 'trajectory_batch.action',
                tuple(trajectory_batch.action.shape[:2]),
                (batch_size, seq_len),
                'Its leading axes must be the observations\' '
                '(batch_size, seq_len).')
  _checks.expect_shape(component, 'trajectory_batch.mask',
                trajectory_batch.mask.shape, (batch_size, seq_len),
                'The mask has one entry per timestep.')
  return batch_size, seq_len


def _check_advantages(component, advantages, batch_size, seq_len):
  """Returns the advantages' length, at most `seq_len` (less the margin)."""
  shape = tuple(advantages.shape)
  if len(shape) != 2 or shape[0] != batch_size or shape[1] > seq_len:
    raise ValueError(
        f'{component}: advantage_estimator returned shape {shape}, expected '
        f'(batch_size, seq_len - margin) with batch_size {batch_size} and '
        f'seq_len {seq_len}.')
  return shape[1]


class PolicyTrainTask(training.TrainTask):
  """Trains a policy on advantage-weighted log-likelihood of its actions.

  Args:
    trajectory_batch_stream: an iterator of `task.TimeStepBatch`es of
      arrays shaped [batch_size, seq_len, ...].
    optimizer: the optimizer of the policy network.
    lr_schedule: a function step -> learning rate.
    policy_distribution: the distribution over actions the network's
      outputs parametrize (`distributions.create_distribution(space)`).
    advantage_estimator: a function `(rewards, returns, values, dones,
      discount_mask) -> advantages`, made by one of `advantages`'
      factories; its margin sets how many trailing steps are look-ahead.
    value_fn: a function TimeStepBatch -> [batch_size, seq_len] array, the
      baseline of the advantages (a critic's `ValueTrainTask.value`, a
      batch mean, or zeros).
    weight_fn: maps the (normalized) advantages to weights, elementwise:
      the identity (A2C), `jnp.exp` (AWR), `jnp.ones_like` (behavioral
      cloning).
    advantage_normalization: shift the batch's advantages to mean 0 and
      divide them by their standard deviation before `weight_fn`.
    advantage_normalization_epsilon: added to the standard deviation.
    head_selector: a layer (or `()` for none) applied to the network's
      outputs before the loss, to pick the policy head of a multi-head
      network.

  Example (one slice of 3 steps whose last is padding, so margin 1 leaves
  two; Monte-Carlo advantages against a zero baseline):
    >>> import itertools
    >>> from tfnp_trax import optimizers
    >>> from tfnp_trax.rl import advantages, task
    >>> batch = task.TimeStepBatch(
    ...     observation=onp.zeros((1, 3, 2), onp.float32),
    ...     action=onp.array([[0, 1, 0]]), reward=onp.array([[1., 3., 0.]]),
    ...     done=onp.array([[False, True, True]]), mask=onp.array([[1, 1, 0]]),
    ...     dist_inputs=None, return_=onp.array([[2.5, 3., 0.]]),
    ...     env_info=task.EnvInfo(onp.ones((1, 3)), onp.ones((1, 3))))
    >>> train_task = PolicyTrainTask(
    ...     itertools.repeat(batch), optimizers.Adam(), lambda step: 1e-3,
    ...     distributions.Categorical(2), advantages.monte_carlo(0.5, 1),
    ...     value_fn=lambda b: onp.zeros(b.reward.shape),
    ...     advantage_normalization=False)
    >>> observations, actions, weights = train_task.sample_batch
    >>> actions.tolist(), weights.tolist()
    ([[0, 1]], [[1.25, 1.5]])
  """

  def __init__(self, trajectory_batch_stream, optimizer, lr_schedule,
               policy_distribution, advantage_estimator, value_fn,
               weight_fn=(lambda x: x), advantage_normalization=True,
               advantage_normalization_epsilon=1e-5, head_selector=()):
    self.trajectory_batch_stream = trajectory_batch_stream
    self.policy_distribution = policy_distribution
    self._value_fn = value_fn
    self._advantage_estimator = advantage_estimator
    self._weight_fn = weight_fn
    self._advantage_normalization = advantage_normalization
    self._advantage_normalization_epsilon = advantage_normalization_epsilon
    # The sample batch is taken from the stream, so it is not trained on.
    sample_batch = self.policy_batch(next(trajectory_batch_stream),
                                     shape_only=True)
    loss_layer = tl.Serial(head_selector,
                           distributions.LogLoss(policy_distribution))
    super().__init__(map(self.policy_batch, trajectory_batch_stream),
                     loss_layer, optimizer, lr_schedule=lr_schedule,
                     loss_name='policy_loss', sample_batch=sample_batch)

  def calculate_advantages(self, trajectory_batch, shape_only=False):
    """The estimator's advantages, [batch_size, seq_len - margin].

    With `shape_only` the baseline is zeros and `value_fn` is not called
    (the network it may run is not initialized yet).
    """
    batch_size, seq_len = _check_trajectory_batch('PolicyTrainTask',
                                                  trajectory_batch)
    if shape_only:
      values = onp.zeros((batch_size, seq_len))
    else:
      values = onp.array(self._value_fn(trajectory_batch))
      _checks.expect_shape('PolicyTrainTask', 'value_fn(trajectory_batch)',
                    values.shape, (batch_size, seq_len),
                    'value_fn must give one value per timestep.')
    return self._advantage_estimator(
        rewards=trajectory_batch.reward,
        returns=trajectory_batch.return_,
        dones=trajectory_batch.done,
        values=values,
        discount_mask=trajectory_batch.env_info.discount_mask)

  def calculate_weights(self, advantages):
    """`weight_fn` of the (optionally normalized) advantages, same shape."""
    return awr.calculate_weights(
        advantages, self._weight_fn, self._advantage_normalization,
        self._advantage_normalization_epsilon)

  def trim_and_mask_batch(self, trajectory_batch, advantages):
    """`(observations, actions, mask)` cut to the advantages' length.

    The mask is the padding mask times the control mask, so steps where
    the agent's action did not matter carry no loss.
    """
    batch_size, seq_len = _check_trajectory_batch('PolicyTrainTask',
                                                  trajectory_batch)
    n = _check_advantages('PolicyTrainTask', advantages, batch_size, seq_len)
    control_mask = onp.broadcast_to(
        onp.asarray(trajectory_batch.env_info.control_mask),
        (batch_size, seq_len))
    # A new array: the caller's batch keeps its own mask.
    mask = trajectory_batch.mask[:, :n] * control_mask[:, :n]
    return (trajectory_batch.observation[:, :n],
            trajectory_batch.action[:, :n], mask)

  def policy_batch(self, trajectory_batch, shape_only=False):
    """A training batch `(observations, actions, weights)`.

    Args:
      trajectory_batch: a `task.TimeStepBatch` of [batch_size, seq_len, ...]
        arrays.
      shape_only: compute the weights with a zero baseline, without calling
        `value_fn` (for the sample batch that initializes the network).

    Returns:
      observations [batch, n] + observation shape, actions [batch, n] +
      action shape and float32 weights [batch, n], where n is seq_len less
      the estimator's margin. Steps masked out (padding, or no control)
      weigh 0 and the rest are divided by their number, so the loss is a
      mean over the steps that count.
    """
    advantages = self.calculate_advantages(trajectory_batch,
                                           shape_only=shape_only)
    observations, actions, mask = self.trim_and_mask_batch(
        trajectory_batch, advantages)
    weights = self.calculate_weights(advantages) * mask / jnp.sum(mask)
    return (observations, actions, onp.asarray(weights, onp.float32))


class PolicyEvalTask(training.EvalTask):
  """Evaluates a `PolicyTrainTask`'s network on its trajectory stream.

  Metrics: `policy_entropy` (the mean entropy of the action distribution),
  `advantage_mean` and `advantage_std` (of the estimator's advantages, over
  all steps of the batch, padding included), and `weight_mean`,
  `weight_std`, `weight_min`, `weight_max` (of `calculate_weights`, before
  masking). Each eval batch is `(observations, actions, advantages, mask)`.

  Args:
    train_task: the `PolicyTrainTask` training the network.
    n_eval_batches: batches per evaluation.
    head_selector: a layer (or `()`) picking the policy head from the
      network's outputs.
  """

  def __init__(self, train_task, n_eval_batches=1, head_selector=()):
    self._train_task = train_task
    self._policy_dist = train_task.policy_distribution
    stream = train_task.trajectory_batch_stream
    sample_batch = self._eval_batch(next(stream), shape_only=True)
    metrics = {'policy_entropy': self.entropy_metric}
    metrics.update(self.advantage_metrics)
    metrics.update(self.weight_metrics)
    super().__init__(
        map(self._eval_batch, stream),
        [tl.Serial(head_selector, metric) for metric in metrics.values()],
        metric_names=list(metrics), n_eval_batches=n_eval_batches,
        sample_batch=sample_batch)

  def _eval_batch(self, trajectory_batch, shape_only=False):
    advantages = self._train_task.calculate_advantages(
        trajectory_batch, shape_only=shape_only)
    observations, actions, mask = self._train_task.trim_and_mask_batch(
        trajectory_batch, advantages)
    # float32, as the device sees them in training.
    return (observations, actions, onp.asarray(advantages, onp.float32),
            mask)

  @property
  def entropy_metric(self):
    """Layer: the mean entropy of the policy over the batch."""
    def Entropy(policy_inputs, actions, advantages, mask):  # pylint: disable=invalid-name
      del actions, advantages, mask
      return jnp.mean(self._policy_dist.entropy(policy_inputs))
    return tl.Fn('Entropy', Entropy)

  @property
  def advantage_metrics(self):
    """`{'advantage_mean': layer, 'advantage_std': layer}`."""
    def make_metric(aggregate):
      def AdvantageMetric(policy_inputs, actions, advantages, mask):  # pylint: disable=invalid-name
        del policy_inputs, actions, mask
        return aggregate(advantages)
      return tl.Fn('AdvantageMetric', AdvantageMetric)
    return {'advantage_' + name: make_metric(fn)
            for name, fn in [('mean', jnp.mean), ('std', jnp.std)]}

  @property
  def weight_metrics(self):
    """`{'weight_mean', 'weight_std', 'weight_min', 'weight_max'}` layers."""
    def make_metric(aggregate):
      def WeightMetric(policy_inputs, actions, advantages, mask):  # pylint: disable=invalid-name
        del policy_inputs, actions, mask
        return aggregate(self._train_task.calculate_weights(advantages))
      return tl.Fn('WeightMetric', WeightMetric)
    return {'weight_' + name: make_metric(fn)
            for name, fn in [('mean', jnp.mean), ('std', jnp.std),
                             ('min', jnp.min), ('max', jnp.max)]}
