"""Value (critic) training and evaluation as Loop tasks.

A value task turns a stream of trajectory batches (`task.TimeStepBatch`es
from `RLTask.trajectory_batch_stream`) into regression data for a
`supervised.training.Loop`: `(observations, targets, mask)`, with the loss
`L2Loss` by default. The targets come from a *target network*: the
`target_model` architecture (by default the trained model's own) run on
weights of its own, a snapshot of the trained model's weights and state
taken only when `sync_at(step)` says so (and before the first batch):

    targets = (V_target + advantage_estimator(V_target)) * target_scale

so with a Monte-Carlo estimator they are the returns, and with TD-k they
are k-step bootstrapped returns. Bootstrapping from a network that holds
still between syncs is what keeps TD regression from chasing its own
moving outputs. The estimator's `margin` trailing steps only serve as
look-ahead, so the observations and mask are cut to the targets' length;
the targets and mask get a trailing axis of size 1, as the network's
single output has.

`ValueTrainTask.value` evaluates the target network on a batch (divided
by `target_scale`), so it can be the baseline `value_fn` of a
`policy_tasks.PolicyTrainTask` (an actor-critic). `ValueEvalTask` reports
`value_l2` and `value_l1` on the same stream.

The sync reads the trained model's `weights` and `state` attributes, so it
sees the weights the Loop last wrote into the model: the Loop writes them
at each eval, at each callback that reads weights and at the end of `run`,
so a sync at a step without one of those copies the weights of the last.
"""

import numpy as onp

from tfnp_trax import fastmath
from tfnp_trax import layers as tl
from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.rl import _checks
from tfnp_trax.supervised import training

__all__ = ['ValueTrainTask', 'ValueEvalTask']


def _every_100_steps(step):
  return step % 100 == 0


def _copy_if_numpy(x):
  return onp.array(x) if isinstance(x, onp.ndarray) else x


class ValueTrainTask(training.TrainTask):
  """Trains a value network on targets computed by a target network.

  Args:
    trajectory_batch_stream: an iterator of `task.TimeStepBatch`es of
      arrays shaped [batch_size, seq_len, ...].
    optimizer: the optimizer of the value network.
    lr_schedule: a function step -> learning rate.
    advantage_estimator: a function `(rewards, returns, values, dones,
      discount_mask) -> advantages` from one of `advantages`' factories;
      the targets are the target network's values plus these advantages.
    model: the model the Loop trains (its weights are copied into the
      target network at syncs).
    target_model: the model that computes the targets (e.g. the Loop's
      eval model, for its eval mode), with the snapshot weights; `model` if
      None. It must have `model`'s weight structure; its own weights are
      neither used nor changed.
    target_scale: the targets are multiplied by it (and `value` divides by
      it), to bring returns to a range a network fits well.
    sync_at: a function step -> bool: when to copy the trained weights into
      the target network. The first batch always syncs.
    loss_layer: the regression loss (default `tl.L2Loss()`).
    head_selector: a layer (or `()` for none) picking the value head of a
      multi-head network, applied to both the trained and target outputs.

  Example (Monte-Carlo targets are the returns, times `target_scale`):
    >>> import itertools
    >>> from tfnp_trax import optimizers
    >>> from tfnp_trax.rl import advantages, task
    >>> batch = task.TimeStepBatch(
    ...     observation=onp.zeros((1, 3, 2), onp.float32),
    ...     action=onp.array([[0, 1, 0]]), reward=onp.array([[1., 3., 0.]]),
    ...     done=onp.array([[False, True, True]]), mask=onp.array([[1, 1, 0]]),
    ...     dist_inputs=None, return_=onp.array([[2.5, 3., 0.]]),
    ...     env_info=task.EnvInfo(onp.ones((1, 3)), onp.ones((1, 3))))
    >>> train_task = ValueTrainTask(
    ...     itertools.repeat(batch), optimizers.Adam(), lambda step: 1e-3,
    ...     advantages.monte_carlo(0.5, 1), model=tl.Dense(1),
    ...     target_scale=2.0)
    >>> observations, targets, mask = train_task.sample_batch
    >>> observations.shape, targets[..., 0].tolist(), mask[..., 0].tolist()
    ((1, 2, 2), [[5.0, 6.0]], [[1, 1]])
  """

  # Its target network copies the trained model: the Loop brings the
  # model's weights up to date before each batch (`Loop._run_one_step`).
  reads_model_weights = True

  def __init__(self, trajectory_batch_stream, optimizer, lr_schedule,
               advantage_estimator, model, target_model=None,
               target_scale=1.0, sync_at=_every_100_steps, loss_layer=None,
               head_selector=()):
    self._trajectory_batch_stream = trajectory_batch_stream
    self._advantage_estimator = advantage_estimator
    self._target_scale = target_scale
    self._user_sync_at = sync_at
    self._synced = False
    self._head_selector = head_selector
    self._train_model = tl.Serial(model, head_selector)
    # Only the architecture: it runs on the snapshot below, and pure_fn
    # leaves the layer's own weights as they were.
    self._target_model = tl.Serial(
        model if target_model is None else target_model, head_selector)
    self._target_weights_and_state = None
    # The number of the training batch being made, which `sync_at` reads.
    self._step = 0
    sample_batch = self.value_batch(next(trajectory_batch_stream),
                                    shape_only=True)
    loss_layer = tl.L2Loss() if loss_layer is None else loss_layer
    super().__init__(self._labeled_data(), tl.Serial(head_selector,
                                                     loss_layer),
                     optimizer, lr_schedule=lr_schedule,
                     loss_name='value_loss', sample_batch=sample_batch)

  @property
  def trajectory_batch_stream(self):
    return self._trajectory_batch_stream

  def _labeled_data(self):
    for trajectory_batch in self._trajectory_batch_stream:
      self._step += 1
      yield self.value_batch(trajectory_batch)

  def _sync_at(self, step):
    return self._user_sync_at(step) or not self._synced

  def _sync_target_model(self):
    # Tensors are immutable; NumPy leaves (set by hand or from a file) are
    # copied, so writing into the model's arrays leaves the snapshot as is.
    weights, state = (
        fastmath.nested_map(_copy_if_numpy, tree)
        for tree in (self._train_model.weights, self._train_model.state))
    self._target_weights_and_state = [weights, state]
    # A model without weights yet (before the Loop initializes it) leaves
    # the target unsynced, so the next batch syncs again.
    self._synced = bool(fastmath.tree_leaves(weights))

  def value_batch(self, trajectory_batch, shape_only=False):
    """A training batch `(observations, targets, mask)`.

    Args:
      trajectory_batch: a `task.TimeStepBatch` of [batch_size, seq_len, ...]
        arrays.
      shape_only: use zero values instead of running the target network
        (for the sample batch that initializes the network); no sync.

    Returns:
      observations [batch, n] + observation shape, float32 targets
      [batch, n, 1] and the mask [batch, n, 1], where n is seq_len less the
      estimator's margin.
    """
    if not shape_only and self._sync_at(self._step):
      self._sync_target_model()
    observation = trajectory_batch.observation
    batch_size, seq_len = tuple(observation.shape[:2])
    _checks.expect_shape('ValueTrainTask', 'trajectory_batch.action',
                  trajectory_batch.action.shape[:2], (batch_size, seq_len),
                  'Its leading axes must be the observations\' (batch_size, '
                  'seq_len).')
    _checks.expect_shape('ValueTrainTask', 'trajectory_batch.mask',
                  trajectory_batch.mask.shape, (batch_size, seq_len),
                  'The mask has one entry per timestep.')
    values = onp.array(self.value(trajectory_batch, shape_only=shape_only))
    _checks.expect_shape('ValueTrainTask', 'the target values', values.shape,
                  (batch_size, seq_len))
    advantages = onp.asarray(self._advantage_estimator(
        rewards=trajectory_batch.reward,
        returns=trajectory_batch.return_,
        dones=trajectory_batch.done,
        values=values,
        discount_mask=trajectory_batch.env_info.discount_mask))
    if (advantages.ndim != 2 or advantages.shape[0] != batch_size or
        advantages.shape[1] > seq_len):
      raise ValueError(
          f'ValueTrainTask: advantage_estimator returned shape '
          f'{advantages.shape}, expected (batch_size, seq_len - margin) with '
          f'batch_size {batch_size} and seq_len {seq_len}.')
    n = advantages.shape[1]
    # Where targets equal the target network's values, its TD errors (the
    # advantages) are zero.
    targets = (values[:, :n] + advantages) * self._target_scale
    return (observation[:, :n], targets[:, :, None].astype(onp.float32),
            trajectory_batch.mask[:, :n, None])

  def value(self, trajectory_batch, shape_only=False):
    """The target network's values of a batch's states, [batch, seq_len].

    Divided by `target_scale`, so they are on the scale of the returns;
    usable as a `PolicyTrainTask`'s `value_fn`. With `shape_only`, zeros.
    """
    observation = trajectory_batch.observation
    if shape_only:
      return onp.zeros(tuple(observation.shape[:2]))
    if not self._synced:
      self._sync_target_model()
    weights, state = self._target_weights_and_state
    try:
      values, new_state = self._target_model.pure_fn(
          observation, weights, state, self._target_model.rng)
    except Exception as e:  # pylint: disable=broad-except
      if self._synced:
        raise
      raise ValueError(
          'ValueTrainTask: the target network cannot run because the trained '
          'model has no weights yet. Build the Loop first (it initializes '
          'the model), or call model.init(...).') from e
    # Like a layer called on its own weights, the target keeps its state.
    self._target_weights_and_state[1] = new_state
    values = onp.asarray(values)
    if values.ndim < 1 or values.shape[-1] != 1:
      raise ValueError(
          f'ValueTrainTask: the value network gave outputs of shape '
          f'{values.shape} for observations of shape '
          f'{tuple(observation.shape)}; expected one value per step, '
          f'(batch_size, seq_len, 1). End the model (or its value head) '
          f'with Dense(1), or pass a head_selector.')
    return onp.squeeze(values, axis=-1) / self._target_scale


class ValueEvalTask(training.EvalTask):
  """Evaluates a `ValueTrainTask`'s network on its trajectory stream.

  Metrics: `value_l2` (`tl.L2Loss`) and `value_l1` (the masked mean
  absolute error) of the network's values against the targets.

  Args:
    train_task: the `ValueTrainTask` training the network.
    n_eval_batches: batches per evaluation.
    head_selector: a layer (or `()`) picking the value head.
  """

  def __init__(self, train_task, n_eval_batches=1, head_selector=()):
    metrics = [tl.L2Loss(), self.l1_loss]
    super().__init__(
        map(train_task.value_batch, train_task.trajectory_batch_stream),
        [tl.Serial(head_selector, metric) for metric in metrics],
        metric_names=['value_l2', 'value_l1'],
        n_eval_batches=n_eval_batches,
        sample_batch=train_task.sample_batch)

  @property
  def l1_loss(self):
    """Layer `(values, targets, weights) -> sum(|v - t| w) / sum(w)`."""
    def loss(values, targets, weights):
      weights = weights.astype(values.dtype)
      return (jnp.sum(jnp.abs(values - targets.astype(values.dtype)) *
                      weights) / jnp.sum(weights))
    return tl.Fn('L1Loss', loss)
