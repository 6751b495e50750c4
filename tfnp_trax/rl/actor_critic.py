"""Actor-critic agents: lock-step ones, and Trax's Loop-based ones.

Two families live here.

* `ActorCriticAgent` and its algorithms `PPO`, `A2C` and `AWR`: this
  library's fast agents on `vector_agent.VectorAgent`, with separate policy
  and value networks. Each epoch: collect, compute values with the value
  network, estimate advantages (by default TD(lambda)), train the value
  network towards `values + advantages`, then train the policy with the
  algorithm's loss.
* `LoopActorCriticAgent` and `LoopAWR`, with Trax's signatures: trajectory
  agents (`training.Agent` on a `task.RLTask`) whose one network has a
  policy head and a value head (e.g. `models.PolicyAndValue`) and is
  trained by one `supervised.training.Loop` with two train tasks: each
  epoch runs `value_n_steps_per_epoch` steps of `value_tasks.ValueTrainTask`
  and then `policy_n_steps_per_epoch` steps of
  `policy_tasks.PolicyTrainTask`, whose log-likelihood weights are
  `policy_weight_fn(normalized advantages)`. `every(n)` makes the
  `step -> bool` schedules (`value_sync_at`, `network_eval_at`) of configs.
"""

import collections
import functools
import os

import numpy as onp

from tfnp_trax import layers as tl
from tfnp_trax import optimizers
from tfnp_trax import shapes
from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.rl import _compiled
from tfnp_trax.rl import _nets
from tfnp_trax.rl import _rollouts
from tfnp_trax.rl import advantages as advantages_lib
from tfnp_trax.rl import distributions
from tfnp_trax.rl import losses
from tfnp_trax.rl import policy_metrics
from tfnp_trax.rl import policy_tasks
from tfnp_trax.rl import training as rl_training
from tfnp_trax.rl import value_tasks
from tfnp_trax.rl import vector_agent
# Trax defines the AWR loss layers and weight helpers in actor_critic; they
# live in rl.awr here and are re-exported so Trax's import paths work.
from tfnp_trax.rl.awr import AWRLoss
from tfnp_trax.rl.awr import SamplingAWRLoss
from tfnp_trax.rl.awr import awr_metrics
from tfnp_trax.rl.awr import awr_weight_stat
from tfnp_trax.rl.awr import awr_weights
from tfnp_trax.supervised import lr_schedules as lr
from tfnp_trax.supervised import training as supervised_training

__all__ = ['ActorCriticAgent', 'PPO', 'A2C', 'AWR', 'AWRLoss',
           'SamplingAWRLoss', 'awr_metrics', 'awr_weight_stat', 'awr_weights',
           'every', 'LoopActorCriticAgent', 'LoopAWR']


class ActorCriticAgent(vector_agent.VectorAgent):
  """Trains a policy network and a value network (baseline).

  Args:
    task: a `vector_task.VectorTask` or a `task.RLTask` (see `vector_agent.VectorAgent`).
    policy_model: function `(policy_distribution, mode) -> layer` mapping
      observations to distribution inputs (default: 64-64 tanh MLP).
    value_model: function `mode -> layer` mapping observations to [.., 1].
    policy_optimizer, value_optimizer: optimizers (default: Adam 3e-4 with
      gradient clipping at norm 0.5).
    policy_lr_schedule, value_lr_schedule: optional `step -> lr`.
    policy_batch_size, value_batch_size: minibatch sizes.
    policy_train_steps_per_epoch, value_train_steps_per_epoch: gradient
      steps per epoch; minibatches walk shuffled passes over the data.
    advantage_estimator: a factory from `rl.advantages`, called with
      `gamma` and `margin=1`.
    advantage_normalization: normalize advantages in each policy batch.
    advantage_normalization_epsilon: added to their std.
    n_replay_epochs: how many recent epochs to learn from (off-policy only).
    scale_value_targets: if True the value network predicts values divided
      by `1 / (1 - gamma)`.
    **kwargs: arguments of `vector_agent.VectorAgent`.
  """

  on_policy = None

  def __init__(self, task, policy_model=None, value_model=None,
               policy_optimizer=None, value_optimizer=None,
               policy_lr_schedule=None, value_lr_schedule=None,
               policy_batch_size=64, policy_train_steps_per_epoch=10,
               value_batch_size=64, value_train_steps_per_epoch=10,
               advantage_estimator=advantages_lib.td_lambda,
               advantage_normalization=True,
               advantage_normalization_epsilon=1e-5, n_replay_epochs=1,
               scale_value_targets=False, **kwargs):
    super().__init__(task, **kwargs)
    if self.on_policy and n_replay_epochs != 1:
      raise ValueError(f'{type(self).__name__} is on-policy: n_replay_epochs '
                       f'must be 1, got {n_replay_epochs}.')
    self._advantage_estimator = advantage_estimator(gamma=task.gamma,
                                                    margin=1)
    self._advantage_normalization = advantage_normalization
    self._advantage_normalization_epsilon = advantage_normalization_epsilon
    self._policy_batch_size = policy_batch_size
    self._policy_train_steps_per_epoch = policy_train_steps_per_epoch
    self._value_batch_size = value_batch_size
    self._value_train_steps_per_epoch = value_train_steps_per_epoch
    self._policy_lr_schedule = policy_lr_schedule
    self._value_lr_schedule = value_lr_schedule
    self._value_scale = 1.0 / (1.0 - task.gamma) if scale_value_targets \
        else 1.0
    self._replay = collections.deque(maxlen=n_replay_epochs)
    policy_model = policy_model or _nets.default_policy_model
    value_model = value_model or _nets.default_value_model

    obs_space, dist = task.observation_space, self._policy_dist
    obs = _nets.zeros_like_step(obs_space, (policy_batch_size, 1))
    column = onp.zeros((policy_batch_size, 1), onp.float32)
    policy_sample = (obs, _nets.zeros_like_step(task.action_space,
                                                (policy_batch_size, 1)),
                     column, column, column)
    self._policy_model = policy_model(policy_distribution=dist, mode='train')
    self._policy_trainer = self._make_trainer(
        'policy', tl.Serial(self._policy_model, self.policy_loss),
        policy_sample, policy_optimizer or _nets.default_optimizer())
    value_obs = _nets.zeros_like_step(obs_space, (value_batch_size, 1))
    value_column = onp.zeros((value_batch_size, 1, 1), onp.float32)
    self._value_trainer = self._make_trainer(
        'value', tl.Serial(value_model(mode='train'), tl.L2Loss()),
        (value_obs, value_column, value_column),
        value_optimizer or _nets.default_optimizer())

    self._policy_collect_model = policy_model(policy_distribution=dist,
                                              mode='collect')
    self._policy_collect_model.init(shapes.signature(obs))
    value_eval_model = value_model(mode='eval')
    value_eval_model.init(shapes.signature(obs))
    self._value_eval_model = value_eval_model
    self._value_forward = _compiled.Forward(value_eval_model,
                                            jit_compile=self._jit_compile)
    self._metrics = _compiled.Metrics(
        self._policy_collect_model,
        policy_metrics.policy_metrics(dist, self._extra_policy_metrics()),
        policy_sample, jit_compile=self._jit_compile)
    self._init_checkpoints()

  # -- What subclasses define ------------------------------------------------
  @property
  def policy_loss(self):
    """Layer on `(dist_inputs, actions, advantages, old_log_probs, mask)`."""
    raise NotImplementedError

  def _extra_policy_metrics(self):
    return {}

  # -- Agent hooks -------------------------------------------------------------
  def _collect_model(self):
    return self._policy_collect_model, None

  def _collect_weights(self):
    return (self._policy_trainer.model_weights[0],
            self._policy_trainer.model_state[0])

  def _trainers(self):
    return {'policy': self._policy_trainer, 'value': self._value_trainer}

  def _value_network(self):
    return (self._value_eval_model, None,
            self._value_trainer.model_weights[0],
            self._value_trainer.model_state[0], self._value_scale)

  def _values(self, observations):
    return onp.asarray(self._value_forward(observations)) * self._value_scale

  def _epoch_data(self):
    """Policy and value training arrays over the replayed epochs."""
    self._value_forward.set_weights(self._value_trainer.model_weights[0],
                                    self._value_trainer.model_state[0])
    policy_parts, value_parts = [], []
    for batch in self._replay:
      t = _rollouts.targets(batch, self._values, self._task.gamma,
                            self._advantage_estimator)
      old_log_probs = onp.asarray(self._policy_dist.log_prob(
          jnp.asarray(batch.dist_inputs), jnp.asarray(batch.action)))
      obs = _rollouts.steps_as_batch(batch.observation[:, :-1])
      as_batch = _rollouts.steps_as_batch
      policy_parts.append((obs, as_batch(batch.action),
                           as_batch(t.advantages), as_batch(old_log_probs),
                           as_batch(batch.mask)))
      value_parts.append((obs, as_batch(t.value_targets[..., None] /
                                        self._value_scale),
                          as_batch(batch.mask[..., None])))
    return _rollouts.concat(policy_parts), _rollouts.concat(value_parts)

  def train_epoch(self, trajectory_batch):
    self._replay.append(trajectory_batch)
    policy_data, value_data = self._epoch_data()
    rng = onp.random.default_rng([self._seed, self._epoch])
    value_losses = [
        self._train_step('value', self._value_trainer,
                         tuple(x[idx] for x in value_data),
                         self._value_lr_schedule)
        for idx in _rollouts.minibatch_indices(
            rng, len(value_data[0]), self._value_batch_size,
            self._value_train_steps_per_epoch)]
    policy_losses, last = [], None
    for idx in _rollouts.minibatch_indices(
        rng, len(policy_data[0]), self._policy_batch_size,
        self._policy_train_steps_per_epoch):
      last = tuple(x[idx] for x in policy_data)
      policy_losses.append(self._train_step(
          'policy', self._policy_trainer, last, self._policy_lr_schedule))
    metrics = {'policy': {}, 'value': {}}
    if value_losses:
      metrics['value']['value_loss'] = float(onp.mean(
          [float(x) for x in value_losses]))
    if policy_losses:
      metrics['policy']['policy_loss'] = float(onp.mean(
          [float(x) for x in policy_losses]))
      metrics['policy'].update(self._metrics(
          last, self._policy_trainer.model_weights[0],
          self._policy_trainer.model_state[0]))
    return metrics


class PPO(ActorCriticAgent):
  """Proximal Policy Optimization (Schulman et al., 2017)."""

  on_policy = True

  def __init__(self, task, epsilon=0.2, entropy_coeff=0.01, **kwargs):
    self._epsilon = epsilon
    self._entropy_coeff = entropy_coeff
    super().__init__(task, **kwargs)

  @property
  def policy_loss(self):
    return losses.PPOLoss(self._policy_dist, self._epsilon,
                          self._entropy_coeff, self._advantage_normalization,
                          self._advantage_normalization_epsilon)

  def _extra_policy_metrics(self):
    return policy_metrics.ppo_metrics(self._policy_dist, self._epsilon)


class A2C(ActorCriticAgent):
  """Advantage Actor-Critic (Mnih et al., 2016), synchronous."""

  on_policy = True

  def __init__(self, task, entropy_coeff=0.01, **kwargs):
    self._entropy_coeff = entropy_coeff
    super().__init__(task, **kwargs)

  @property
  def policy_loss(self):
    return losses.A2CLoss(self._policy_dist, self._entropy_coeff,
                          self._advantage_normalization,
                          self._advantage_normalization_epsilon)


class AWR(ActorCriticAgent):
  """Advantage Weighted Regression (Peng et al., 2019); off-policy."""

  on_policy = False

  def __init__(self, task, beta=1.0, w_max=20.0, thresholds=None, **kwargs):
    self._beta = beta
    self._w_max = w_max
    self._thresholds = thresholds
    super().__init__(task, **kwargs)

  @property
  def policy_loss(self):
    return losses.AWRPolicyLoss(self._policy_dist, self._beta, self._w_max,
                                self._thresholds,
                                self._advantage_normalization,
                                self._advantage_normalization_epsilon)

  def _extra_policy_metrics(self):
    return policy_metrics.awr_policy_metrics(
        self._beta, self._thresholds, self._advantage_normalization,
        self._advantage_normalization_epsilon)


# -- Loop-based actor-critic agents (Trax's signatures) -----------------------


def every(n_steps):
  """A schedule `step -> bool` that is true at the multiples of `n_steps`.

  For the `*_at` arguments of Loop agents, e.g. `value_sync_at` (in a gin
  config: `LoopAWR.value_sync_at = @value_sync_at/trax.rl.every()` with
  `value_sync_at/every.n_steps = 100`).

  Example:
    >>> at = every(3)
    >>> [step for step in range(8) if at(step)]
    [0, 3, 6]

  Raises:
    ValueError: if `n_steps` is not positive.
  """
  if not n_steps > 0:
    raise ValueError(f'every: n_steps must be positive (a number of steps), '
                     f'got {n_steps!r}.')

  def at_multiples(step):
    return step % n_steps == 0
  return at_multiples


def _identity(x):
  return x


class LoopActorCriticAgent(rl_training.Agent):
  """An actor-critic whose policy-and-value network one `Loop` trains.

  The network (`model_fn`) maps observations to `(dist_inputs, values)`,
  like `models.PolicyAndValue`. One `supervised.training.Loop` trains it
  with two tasks on the same stream of trajectory slices from the last
  `n_replay_epochs` epochs: a `value_tasks.ValueTrainTask` (targets from a
  target network that copies the trained one at `value_sync_at` and at
  epoch boundaries, scaled by `1 - gamma`) and a
  `policy_tasks.PolicyTrainTask` (baseline: the target network's values;
  weights: `policy_weight_fn` of the normalized advantages). Each epoch
  runs `value_n_steps_per_epoch + policy_n_steps_per_epoch` Loop steps,
  value steps first: Loop step `s` (1-based) trains the value head when
  `s % n < value_n_steps_per_epoch`, for `n` steps per epoch, else the
  policy head. The Loop checkpoints at each epoch's last step, under
  `<output_dir>/model`.

  Subclasses set `on_policy` (on-policy algorithms replay only the last
  epoch) and pick `policy_weight_fn`.

  Args:
    task: the `task.RLTask` to play in.
    model_fn: function `(policy_distribution, mode) -> layer` with outputs
      `(dist_inputs, values)`.
    optimizer: the optimizer class; the policy and the value task each get
      an instance.
    policy_lr_schedule: function returning the policy task's schedule.
    policy_n_steps_per_epoch: policy Loop steps per epoch.
    policy_weight_fn: maps the normalized advantages to log-likelihood
      weights, elementwise.
    value_lr_schedule: function returning the value task's schedule.
    value_n_steps_per_epoch: value Loop steps per epoch (at least 1).
    value_sync_at: function step -> bool (the value task's batch count):
      when the target network copies the trained one.
    advantage_estimator: a factory from `rl.advantages`, called with
      `gamma` and `margin=margin`.
    batch_size: slices per training batch.
    network_eval_at: function step -> bool: when the Loop runs its eval
      tasks (None: the Loop's default, step 1 and every 100 steps).
    n_eval_batches: batches per Loop evaluation.
    max_slice_length: the length of the slices trained on, and of the
      history the policy sees.
    margin: look-ahead steps added to each slice for the advantages.
    n_replay_epochs: how many of the last epochs to train on.
    **kwargs: arguments of `training.Agent` (n_trajectories_per_epoch,
      n_eval_episodes, output_dir, ...).

  Raises:
    TypeError: for a class that does not set `on_policy`.
    ValueError: for an on-policy agent with `n_replay_epochs != 1`, for
      `value_n_steps_per_epoch < 1`, or when a resumed Loop's step does
      not match the resumed epoch (an `rl.pkl` out of step with the model
      checkpoint).
  """

  on_policy = None

  def __init__(self, task, model_fn, optimizer=optimizers.Adam,
               policy_lr_schedule=lr.multifactor,
               policy_n_steps_per_epoch=1000, policy_weight_fn=_identity,
               value_lr_schedule=lr.multifactor,
               value_n_steps_per_epoch=1000, value_sync_at=every(100),
               advantage_estimator=advantages_lib.monte_carlo,
               batch_size=64, network_eval_at=None, n_eval_batches=1,
               max_slice_length=1, margin=0, n_replay_epochs=1, **kwargs):
    name = type(self).__name__
    if self.on_policy is None:
      raise TypeError(f'{name}: set the class attribute on_policy (True or '
                      f'False); LoopActorCriticAgent is a base class, e.g. '
                      f'of LoopAWR.')
    if self.on_policy and n_replay_epochs != 1:
      raise ValueError(f'{name} is on-policy: n_replay_epochs must be 1, got '
                       f'{n_replay_epochs}.')
    if value_n_steps_per_epoch < 1 or policy_n_steps_per_epoch < 0:
      raise ValueError(
          f'{name}: value_n_steps_per_epoch must be at least 1 and '
          f'policy_n_steps_per_epoch at least 0, got '
          f'{value_n_steps_per_epoch} and {policy_n_steps_per_epoch}.')
    super().__init__(task, **kwargs)
    self._max_slice_length = max_slice_length
    self._policy_dist = distributions.create_distribution(task.action_space)
    model_fn = functools.partial(model_fn,
                                 policy_distribution=self._policy_dist)
    train_model, eval_model = model_fn(mode='train'), model_fn(mode='eval')

    task.set_n_replay_epochs(n_replay_epochs)
    # The margin's extra steps serve only as look-ahead for the estimator.
    batches = task.trajectory_batch_stream(
        batch_size, epochs=[-(ep + 1) for ep in range(n_replay_epochs)],
        min_slice_length=1 + margin,
        max_slice_length=max_slice_length + margin, margin=margin)
    estimator = advantage_estimator(task.gamma, margin=margin)

    def value_sync(step):
      # Also at each epoch's last value batch and the next epoch's first.
      return (value_sync_at(step) or
              step % value_n_steps_per_epoch in (0, 1))

    value_head = tl.Select([1])
    value_train_task = value_tasks.ValueTrainTask(
        batches, optimizer(), value_lr_schedule(),
        advantage_estimator=estimator, model=train_model,
        target_model=eval_model, target_scale=1 - task.gamma,
        sync_at=value_sync, head_selector=value_head)
    value_eval_task = value_tasks.ValueEvalTask(
        value_train_task, n_eval_batches, value_head)
    policy_head = tl.Select([0], n_in=2)
    policy_train_task = policy_tasks.PolicyTrainTask(
        batches, optimizer(), policy_lr_schedule(), self._policy_dist,
        advantage_estimator=estimator, value_fn=value_train_task.value,
        weight_fn=policy_weight_fn, head_selector=policy_head)
    policy_eval_task = policy_tasks.PolicyEvalTask(
        policy_train_task, n_eval_batches, policy_head)
    self._policy_train_task = policy_train_task
    self._value_train_task = value_train_task

    steps_per_epoch = policy_n_steps_per_epoch + value_n_steps_per_epoch
    self._n_train_steps_per_epoch = steps_per_epoch

    def which_task(step):
      # Task 0 is the policy's, task 1 the value's.
      return 1 if step % steps_per_epoch < value_n_steps_per_epoch else 0

    model_dir = (None if self._output_dir is None else
                 os.path.join(self._output_dir, 'model'))
    self._loop = supervised_training.Loop(
        model=train_model, tasks=[policy_train_task, value_train_task],
        eval_model=eval_model, eval_tasks=[policy_eval_task, value_eval_task],
        output_dir=model_dir, eval_at=network_eval_at,
        checkpoint_at=lambda step: step % steps_per_epoch == 0,
        which_task=which_task)
    if self._loop.step != self._epoch * steps_per_epoch:
      raise ValueError(
          f'The number of Loop steps must equal the number of Agent epochs '
          f'times the number of steps per epoch, got {self._loop.step}, '
          f'{self._epoch} and {steps_per_epoch}.')
    self._collect_model = model_fn(mode='collect')
    self._collect_model.init(shapes.signature(policy_train_task.sample_batch))

  @property
  def loop(self):
    """The Loop that trains the network."""
    return self._loop

  def policy_export(self):
    """The policy and value heads for `export.save_policy`."""
    weights, state = self._loop.model.weights, self._collect_model.state
    model = self._loop.eval_model
    return rl_training._trajectory_policy_export(  # pylint: disable=protected-access
        self, model, 0, weights, state,
        (model, 1, weights, state, 1.0 / (1.0 - self.task.gamma)))

  def policy(self, trajectory, temperature=1.0):
    """`(action, dist_inputs)` from the policy head, on the last steps."""
    piece = trajectory.suffix(self._max_slice_length)
    return rl_training.network_policy(
        collect_model=self._collect_model,
        policy_distribution=self._policy_dist, loop=self._loop,
        trajectory_np=piece.to_np(timestep_to_np=self.task.timestep_to_np),
        head_index=0, temperature=temperature)

  def train_epoch(self):
    # Statistics gathered while collecting go to the trained model.
    self._loop.update_weights_and_state(state=self._collect_model.state)
    self._loop.run(n_steps=self._n_train_steps_per_epoch)


class LoopAWR(LoopActorCriticAgent):
  """Advantage Weighted Regression (Peng et al., 2019) on a `Loop`.

  Off-policy: the policy regresses onto the replayed actions, each
  weighted by `min(exp(a / beta), w_max)` for its normalized advantage `a`.

  Args:
    task: the `task.RLTask` to play in.
    model_fn: function `(policy_distribution, mode) -> layer` with outputs
      `(dist_inputs, values)`, e.g. `models.PolicyAndValue`.
    beta: the temperature of the weights.
    w_max: the largest weight.
    **kwargs: arguments of `LoopActorCriticAgent`, except
      `policy_weight_fn`.
  """

  on_policy = False

  def __init__(self, task, model_fn, beta=1.0, w_max=20, **kwargs):
    self._beta = beta
    self._w_max = w_max
    super().__init__(task, model_fn, policy_weight_fn=self._awr_weight,
                     **kwargs)

  def _awr_weight(self, advantages):
    return jnp.minimum(jnp.exp(advantages / self._beta), self._w_max)
