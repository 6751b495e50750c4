"""Saves an RL agent's policy as a SavedModel that loads without tfnp_trax.

The SavedModel maps a batch of observations to a batch of actions:

* `action` (also `serving_default`): `observations` -> `actions`, the
  greedy action (the distribution's mode: argmax for discrete actions, the
  mean for continuous ones, clipped to the action space's bounds as the
  environment would see it);
* `sample_action`: `observations`, `seed` (int32 scalar) -> `actions`,
  drawn at the saved temperature; the same seed gives the same actions;
* `value`: `observations` -> `values` [batch], where the agent has a value
  network (or head).

The weights are variables of the SavedModel, read at call time, so one
file serves the policy as it was when saved. Sampling uses TensorFlow's
stateless random ops, so it needs nothing beyond TensorFlow either.
"""

import numpy as onp
import tensorflow as tf

from tfnp_trax import fastmath
from tfnp_trax import shapes
from tfnp_trax.export import _args
from tfnp_trax.export import _module
from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.layers import forward_only

__all__ = ['save_policy']


def _parts(agent):
  exported = getattr(agent, 'policy_export', None)
  if not callable(exported):
    raise TypeError(
        f'save_policy: expected an RL agent with a policy_export() method '
        f'(rl.PPO, rl.A2C, rl.AWR, rl.PPOJoint, rl.PolicyGradient, rl.DQN, '
        f'...), got '
        f'{type(agent).__name__}.')
  return exported()


def _is_box(space):
  return (not hasattr(space, 'n') and not hasattr(space, 'nvec') and
          all(hasattr(space, a) for a in ('shape', 'low', 'high')))


def _observation_signature(space, observation_signature):
  if observation_signature is not None:
    if not isinstance(observation_signature, shapes.ShapeDtype):
      raise TypeError(
          f'save_policy: observation_signature must be a ShapeDtype of the '
          f'observation batch, e.g. ShapeDtype((None, 4)), got '
          f'{type(observation_signature).__name__}.')
    return observation_signature
  shape = tuple(getattr(space, 'shape', None) or ())
  # Agents see observations as float32 batches (see VectorTask.collect).
  return shapes.ShapeDtype((None,) + shape, onp.float32)


def _run_head(model, head, x, weights, state):
  with forward_only.forward_only():
    outputs, _ = model.pure_fn(x, weights, state, fastmath.random.get_prng(0))
  return outputs if head is None else outputs[head]


class _PolicyModule(tf.Module):
  """The policy's (and the value's) variables and signatures.

  With `time_axis`, the networks read [batch, time, ...] observations (as
  the trajectory agents' do): a call adds a time axis of one step and
  takes that step's outputs.
  """

  def __init__(self, policy, value, time_axis=False, policy_scale=1.0,
               value_reduce=None):
    super().__init__(name='policy')
    model, head, weights, state = policy
    self.policy_variables = _module.LayerModule(model, weights, state)
    self._policy = (model, head)
    self._time_axis = time_axis
    self._policy_scale = float(policy_scale)
    self._value_reduce = value_reduce
    self.value_variables = None
    if value is not None:
      model, head, weights, state, scale = value
      self.value_variables = _module.LayerModule(model, weights, state)
      self._value = (model, head, float(scale))

  def _run(self, model, head, observations, variables):
    x = observations[:, None] if self._time_axis else observations
    out = tf.convert_to_tensor(_run_head(
        model, head, x, variables.read_weights(), variables.read_state()))
    return out[:, -1] if self._time_axis else out

  def dist_inputs(self, observations):
    model, head = self._policy
    out = self._run(model, head, observations, self.policy_variables)
    return out * self._policy_scale if self._policy_scale != 1.0 else out

  def values(self, observations):
    model, head, scale = self._value
    values = self._run(model, head, observations, self.value_variables)
    if self._value_reduce == 'max':  # Q-values: the best action's.
      values = tf.reduce_max(values, axis=-1)
    elif values.shape.rank is not None and values.shape.rank > 1:
      values = tf.squeeze(values, axis=-1)
    return values * scale


def save_policy(agent, path, observation_signature=None, temperature=1.0):
  """Writes `agent`'s current policy (and value network) as a SavedModel.

  Example:
    >>> agent = rl.PPO(rl.VectorTask('CartPole-v1'))  # doctest: +SKIP
    >>> agent.run(10)  # doctest: +SKIP
    >>> _ = save_policy(agent, export_dir)  # doctest: +SKIP
    >>> loaded = tf.saved_model.load(export_dir)  # doctest: +SKIP
    >>> loaded.signatures['action'](observations=obs)  # doctest: +SKIP

  Args:
    agent: an RL agent: the lock-step ones (rl.PPO, rl.A2C, rl.AWR and the
      joint ones) or Trax's trajectory agents (rl.PolicyGradient,
      rl.ExpertIteration, rl.LoopAWR; rl.DQN, whose `action` is the argmax
      of its Q-values, `sample_action` draws from their softmax and
      `value` is their maximum).
    path: the directory to write.
    observation_signature: ShapeDtype of an observation batch; by default
      float32 [None] + the observation space's shape.
    temperature: the temperature of `sample_action` (> 0).

  Returns:
    `path`.

  Raises:
    TypeError: if `agent` is no RL agent, or the signature no ShapeDtype.
    ValueError: if `temperature` is not positive.
  """
  if not temperature > 0:
    raise ValueError(f'save_policy: temperature must be > 0 (it is the '
                     f'temperature of sample_action; action is greedy), got '
                     f'{temperature!r}.')
  parts = _parts(agent)
  path = _args.check_export_dir(path, 'save_policy')
  distribution = parts['distribution']
  action_space = parts['action_space']
  sig = _observation_signature(parts['observation_space'],
                               observation_signature)
  module = _PolicyModule(parts['policy'], parts['value'],
                         time_axis=parts.get('time_axis', False),
                         policy_scale=parts.get('policy_scale', 1.0),
                         value_reduce=parts.get('value_reduce'))
  where = 'save_policy'
  spec = _module.relaxed_spec(sig, 'observations')
  clip = None
  if _is_box(action_space):
    clip = (onp.asarray(action_space.low, onp.float32),
            onp.asarray(action_space.high, onp.float32))

  def env_actions(actions):
    actions = tf.convert_to_tensor(actions)
    if clip is not None:
      actions = tf.clip_by_value(actions, clip[0], clip[1])
    return actions

  def action(observations):
    x = _module.checked_input(observations, sig, 'observations', where)
    dist_inputs = module.dist_inputs(x)
    return {'actions': env_actions(distribution.sample(dist_inputs, 0.0))}

  def sample_action(observations, seed):
    x = _module.checked_input(observations, sig, 'observations', where)
    dist_inputs = module.dist_inputs(x)
    key = tf.stack([tf.zeros_like(seed), seed])
    actions = distribution.sample(dist_inputs, float(temperature),
                                  key=jnp.asarray(key))
    return {'actions': env_actions(actions)}

  def value(observations):
    x = _module.checked_input(observations, sig, 'observations', where)
    return {'values': module.values(x)}

  seed_spec = tf.TensorSpec([], tf.int32, name='seed')
  functions = {
      'action': tf.function(action, input_signature=[spec],
                            autograph=False),
      'sample_action': tf.function(sample_action,
                                   input_signature=[spec, seed_spec],
                                   autograph=False),
  }
  if parts['value'] is not None:
    functions['value'] = tf.function(value, input_signature=[spec],
                                     autograph=False)
  concrete = {name: fn.get_concrete_function()
              for name, fn in functions.items()}
  concrete['serving_default'] = concrete['action']
  for name, fn in concrete.items():
    if name != 'serving_default':
      setattr(module, name, fn)
  tf.saved_model.save(module, path, signatures=concrete)
  return path
