"""Actor-critic agents with separate policy and value networks.

Each epoch: collect, compute values with the value network, estimate
advantages (by default TD(lambda)), train the value network towards
`values + advantages`, then train the policy with the algorithm's loss.
"""

import collections

import numpy as onp

from tfnp_trax import layers as tl
from tfnp_trax import shapes
from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.rl import _compiled
from tfnp_trax.rl import _nets
from tfnp_trax.rl import _rollouts
from tfnp_trax.rl import advantages as advantages_lib
from tfnp_trax.rl import losses
from tfnp_trax.rl import policy_metrics
from tfnp_trax.rl import vector_agent
# Trax defines the AWR loss layers and weight helpers in actor_critic; they
# live in rl.awr here and are re-exported so Trax's import paths work.
from tfnp_trax.rl.awr import AWRLoss
from tfnp_trax.rl.awr import SamplingAWRLoss
from tfnp_trax.rl.awr import awr_metrics
from tfnp_trax.rl.awr import awr_weight_stat
from tfnp_trax.rl.awr import awr_weights

__all__ = ['ActorCriticAgent', 'PPO', 'A2C', 'AWR', 'AWRLoss',
           'SamplingAWRLoss', 'awr_metrics', 'awr_weight_stat', 'awr_weights']


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
