"""From collected trajectories to training targets and minibatches."""

import collections

import numpy as onp

from tfnp_trax.rl import advantages as advantages_lib

__all__ = ['Targets', 'values_for', 'targets', 'steps_as_batch',
           'minibatch_indices', 'concat']


Targets = collections.namedtuple(
    'Targets', ['values', 'advantages', 'value_targets', 'rewards'])


def values_for(batch, value_fn):
  """Values of every observation and of every pre-reset final observation.

  `value_fn` maps [N, ...] observations to [N] values; both sets go in one
  call so the compiled function sees a single shape.
  """
  n_envs, n_steps = batch.reward.shape
  obs = batch.observation.reshape((-1,) + batch.observation.shape[2:])
  final = batch.final_observation.reshape(
      (-1,) + batch.final_observation.shape[2:])
  values = onp.asarray(value_fn(onp.concatenate([obs, final])),
                       dtype=onp.float64).reshape(-1)
  split = n_envs * (n_steps + 1)
  return (values[:split].reshape(n_envs, n_steps + 1),
          values[split:].reshape(n_envs, n_steps))


def targets(batch, value_fn, gamma, estimator):
  """Advantages and value targets for a TrajectoryBatch.

  An episode cut by a time limit did not end in a terminal state, so its
  last reward gets `gamma * V(final observation)` added; past the last step
  the value of the next observation is the bootstrap. The estimator runs
  with margin 1 over the steps plus that bootstrap column.

  Returns:
    Targets of float32 [n_envs, n_steps] arrays: `values`, `advantages`,
    `value_targets` (values + advantages, or the reward where an episode
    ended) and `rewards` (with the time-limit bootstrap added).
  """
  values, final_values = values_for(batch, value_fn)
  n_envs = batch.reward.shape[0]
  pad = onp.zeros((n_envs, 1))
  rewards = batch.reward + gamma * final_values * batch.truncated
  rewards = onp.concatenate([rewards, pad], axis=1)
  dones = onp.concatenate([batch.done, pad], axis=1)
  bootstrapped = rewards.copy()
  bootstrapped[:, -1] = values[:, -1]
  returns = advantages_lib.discounted_returns(
      bootstrapped, gamma * (1.0 - dones))
  advantages = estimator(rewards=rewards, returns=returns, values=values,
                         dones=dones, discount_mask=onp.ones_like(rewards))
  n_steps = batch.reward.shape[1]
  if advantages.shape != (n_envs, n_steps):
    raise ValueError(
        f'The advantage estimator returned shape {advantages.shape}; '
        f'expected {(n_envs, n_steps)}. Create it with margin=1.')
  values = values[:, :n_steps]
  rewards = rewards[:, :n_steps]
  # At a step that ended an episode the value target is its reward. For
  # td_k, td_lambda and gae that is already `values + advantages`; Trax's
  # monte_carlo gets there by zeroing the caller's values in place, which
  # ours does not do (its advantage there is the bare reward).
  value_targets = onp.where(batch.done > 0, rewards, values + advantages)
  f32 = lambda x: onp.asarray(x, dtype=onp.float32)
  return Targets(f32(values), f32(advantages), f32(value_targets),
                 f32(rewards))


def steps_as_batch(x):
  """[n_envs, n_steps, ...] -> [n_envs * n_steps, 1, ...] (time axis 1)."""
  x = onp.asarray(x)
  return x.reshape((-1, 1) + x.shape[2:])


def concat(arrays_list):
  """Concatenates parallel tuples of arrays along axis 0."""
  return tuple(onp.concatenate(parts) for parts in zip(*arrays_list))


def minibatch_indices(rng, n, batch_size, n_batches):
  """`n_batches` index batches of `batch_size`, walking shuffled passes."""
  needed = batch_size * n_batches
  n_passes = -(-needed // n)
  order = onp.concatenate([rng.permutation(n) for _ in range(n_passes)])
  return order[:needed].reshape(n_batches, batch_size)
