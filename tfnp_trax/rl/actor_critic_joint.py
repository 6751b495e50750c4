"""Actor-critic agents with one joint policy-and-value network.

The model maps observations to `(dist_inputs, values)` (see
`models.PolicyAndValue`); a shared trunk learns from both losses. Batches
are `(observations, returns, dones, rewards, actions, old_log_probs, mask)`
with one time step per row; `returns` are the value targets
`values + advantages` from the advantage estimator.
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
from tfnp_trax.rl import rl_layers
from tfnp_trax.rl import vector_agent

__all__ = ['ActorCriticJointAgent', 'PPOJoint', 'A2CJoint', 'AWRJoint']


class ActorCriticJointAgent(vector_agent.VectorAgent):
  """Trains a joint policy-and-value model with one optimizer.

  Args:
    task: a `vector_task.VectorTask` or a `task.RLTask` (see `vector_agent.VectorAgent`).
    joint_model: function `(policy_distribution, mode) -> layer` with
      outputs `(dist_inputs, values)` (default: a shared 64-64 tanh
      trunk with Dense heads).
    optimizer: the optimizer (default: Adam 3e-4, clipped at norm 0.5).
    lr_schedule: optional `step -> lr`.
    batch_size: minibatch size.
    train_steps_per_epoch: gradient steps per epoch.
    normalize_advantages: normalize advantages in each batch.
    advantage_estimator: a factory from `rl.advantages` (margin 1).
    n_replay_epochs: how many recent epochs to learn from (off-policy only).
    **kwargs: arguments of `vector_agent.VectorAgent`.
  """

  on_policy = None

  def __init__(self, task, joint_model=None, optimizer=None, lr_schedule=None,
               batch_size=64, train_steps_per_epoch=10,
               normalize_advantages=True,
               advantage_estimator=advantages_lib.td_lambda,
               n_replay_epochs=1, **kwargs):
    super().__init__(task, **kwargs)
    if self.on_policy and n_replay_epochs != 1:
      raise ValueError(f'{type(self).__name__} is on-policy: n_replay_epochs '
                       f'must be 1, got {n_replay_epochs}.')
    self._normalize_advantages = normalize_advantages
    self._advantage_estimator = advantage_estimator(gamma=task.gamma,
                                                    margin=1)
    self._batch_size = batch_size
    self._train_steps_per_epoch = train_steps_per_epoch
    self._lr_schedule = lr_schedule
    self._replay = collections.deque(maxlen=n_replay_epochs)
    joint_model = joint_model or _nets.default_joint_model
    dist = self._policy_dist

    obs = _nets.zeros_like_step(task.observation_space, (batch_size, 1))
    cube = onp.zeros((batch_size, 1, 1), onp.float32)
    column = onp.zeros((batch_size, 1), onp.float32)
    sample = (obs, cube, cube, cube,
              _nets.zeros_like_step(task.action_space, (batch_size, 1)),
              column, column)
    self._trainer = self._make_trainer(
        'joint', tl.Serial(joint_model(policy_distribution=dist,
                                       mode='train'), self.joint_loss),
        sample, optimizer or _nets.default_optimizer())
    self._collect = joint_model(policy_distribution=dist, mode='collect')
    self._collect.init(shapes.signature(obs))
    self._value_forward = _compiled.Forward(self._collect, head=1,
                                            jit_compile=self._jit_compile)
    self._metrics = _compiled.Metrics(self._collect, self.metrics, sample,
                                      jit_compile=self._jit_compile)
    self._init_checkpoints()

  @property
  def joint_loss(self):
    """Layer on `(dist_inputs, values, returns, dones, rewards, actions,
    old_log_probs, mask)`."""
    raise NotImplementedError

  @property
  def metrics(self):
    """Name -> metric layer on the joint loss's inputs."""
    dist = self._policy_dist

    def value_metric(fn):
      def f(dist_inputs, values, returns, dones, rewards, actions,
            old_log_probs, mask):
        del dist_inputs, dones, rewards, actions, old_log_probs, mask
        return fn(values, returns)
      return f

    def entropy(dist_inputs, values, returns, dones, rewards, actions,
                old_log_probs, mask):
      del values, returns, dones, rewards, actions, old_log_probs, mask
      return jnp.mean(dist.entropy(dist_inputs))

    def approx_kl(dist_inputs, values, returns, dones, rewards, actions,
                  old_log_probs, mask):
      del values, returns, dones, rewards, mask
      return rl_layers.ApproximateKLDivergence(dist_inputs, actions,
                                               old_log_probs, dist.log_prob)
    return {
        'joint_loss': self.joint_loss,
        'advantage_mean': tl.Fn('AdvantageMean', value_metric(
            lambda v, r: jnp.mean(r - v))),
        'value_loss': tl.Fn('ValueLoss', value_metric(
            lambda v, r: rl_layers.ValueLoss(v, r, 1.0))),
        'explained_variance': tl.Fn('ExplainedVariance', value_metric(
            rl_layers.ExplainedVariance)),
        'policy_entropy': tl.Fn('Entropy', entropy),
        'approximate_kl_divergence': tl.Fn('ApproximateKLDivergence',
                                           approx_kl),
    }

  def _collect_model(self):
    return self._collect, 0

  def _collect_weights(self):
    return self._trainer.model_weights[0], self._trainer.model_state[0]

  def _trainers(self):
    return {'joint': self._trainer}

  def _value_network(self):
    return (self._collect, 1) + tuple(self._collect_weights()) + (1.0,)

  def _values(self, observations):
    return onp.asarray(self._value_forward(observations))

  def _epoch_data(self):
    self._value_forward.set_weights(*self._collect_weights())
    parts = []
    as_batch = _rollouts.steps_as_batch
    for batch in self._replay:
      t = _rollouts.targets(batch, self._values, self._task.gamma,
                            self._advantage_estimator)
      old_log_probs = onp.asarray(self._policy_dist.log_prob(
          jnp.asarray(batch.dist_inputs), jnp.asarray(batch.action)))
      parts.append((as_batch(batch.observation[:, :-1]),
                    as_batch(t.value_targets[..., None]),
                    as_batch(batch.done[..., None]),
                    as_batch(t.rewards[..., None]), as_batch(batch.action),
                    as_batch(old_log_probs), as_batch(batch.mask)))
    return _rollouts.concat(parts)

  def train_epoch(self, trajectory_batch):
    self._replay.append(trajectory_batch)
    data = self._epoch_data()
    rng = onp.random.default_rng([self._seed, self._epoch])
    step_losses, last = [], None
    for idx in _rollouts.minibatch_indices(rng, len(data[0]),
                                           self._batch_size,
                                           self._train_steps_per_epoch):
      last = tuple(x[idx] for x in data)
      step_losses.append(self._train_step('joint', self._trainer, last,
                                          self._lr_schedule))
    if not step_losses:
      return {}
    metrics = self._metrics(last, *self._collect_weights())
    metrics['loss'] = float(onp.mean([float(x) for x in step_losses]))
    return {'joint': metrics}


class PPOJoint(ActorCriticJointAgent):
  """PPO on a joint policy-and-value model."""

  on_policy = True

  def __init__(self, task, epsilon=0.2, value_loss_coeff=0.1,
               entropy_coeff=0.01, **kwargs):
    self._epsilon = epsilon
    self._value_loss_coeff = value_loss_coeff
    self._entropy_coeff = entropy_coeff
    super().__init__(task, **kwargs)

  @property
  def joint_loss(self):
    return losses.PPOJointLoss(self._policy_dist, self._epsilon,
                               self._value_loss_coeff, self._entropy_coeff,
                               self._normalize_advantages)


class A2CJoint(ActorCriticJointAgent):
  """A2C on a joint policy-and-value model."""

  on_policy = True

  def __init__(self, task, value_loss_coeff=0.1, entropy_coeff=0.01,
               **kwargs):
    self._value_loss_coeff = value_loss_coeff
    self._entropy_coeff = entropy_coeff
    super().__init__(task, **kwargs)

  @property
  def joint_loss(self):
    return losses.A2CJointLoss(self._policy_dist, self._value_loss_coeff,
                               self._entropy_coeff,
                               self._normalize_advantages)


class AWRJoint(ActorCriticJointAgent):
  """AWR on a joint policy-and-value model; off-policy."""

  on_policy = False

  def __init__(self, task, value_loss_coeff=0.1, beta=1.0, w_max=20.0,
               thresholds=None, **kwargs):
    self._value_loss_coeff = value_loss_coeff
    self._beta = beta
    self._w_max = w_max
    self._thresholds = thresholds
    super().__init__(task, **kwargs)

  @property
  def joint_loss(self):
    return losses.AWRJointLoss(self._policy_dist, self._beta, self._w_max,
                               self._thresholds, self._value_loss_coeff,
                               self._normalize_advantages)
