"""`jit_forward`: a compiled, data-parallel model forward (prediction) pass."""

import tensorflow as tf

from distribute import collectives
from distribute import mapping
from distribute import sharding

__all__ = ['jit_forward']


def _combine(y):
  """Per-replica y -> all replicas' y joined along axis 0, on device.

  Scalars become a [n_replicas] vector; [b, ...] becomes [n_replicas * b, ...]
  (the batch put back together in replica order).
  """
  y = tf.convert_to_tensor(y)
  return collectives.all_gather(y[tf.newaxis] if y.shape.rank == 0 else y)


def _device_mean(y):
  """Mean over the whole batch (or over replicas for scalars), on device."""
  y = tf.convert_to_tensor(y)
  if y.shape.rank == 0:
    return collectives.pmean(y)
  # Replicas hold equal shares of the batch, so the mean of per-replica means
  # is the batch mean.
  return collectives.pmean(tf.experimental.numpy.mean(y, axis=0))


def jit_forward(forward, n_devices, do_mean=True, strategy=None):
  """Compiles `forward` and spreads it over `n_devices` replicas.

  `forward(x, weights, state, rng) -> (result, new_state)` is the pure model
  function (e.g. a layer's `pure_fn`). With `n_devices == 1` this just returns
  `forward` compiled with `tf.function`. With more devices the returned
  `predict(x, weights, state, rng)`:

  1. splits the batch of `x` over the devices (`shard_batch`);
  2. expects `weights` and `state` with a leading device axis, as
     `for_n_devices` makes them;
  3. splits `rng` (an int32 [2] key) into one key per device;
  4. runs `forward` on every replica, then joins the per-device outputs on
     device: leaves of per-device shape [b, ...] become [n_devices * b, ...]
     and scalars become [n_devices];
  5. with `do_mean`, instead averages each `result` leaf over axis 0 of that
     joined layout (the batch, or the devices for scalars) with a collective.

  Args:
    forward: the pure forward function.
    n_devices: number of devices; must equal the strategy's replica count.
    do_mean: average results over the batch/devices (state is never averaged).
    strategy: tf.distribute strategy; None uses `pmap`'s default strategy.

  Returns:
    `predict(x, weights, state, rng) -> (result, new_state)`, local tensors.

  Raises:
    ValueError (when called): the strategy does not have `n_devices` replicas,
      or the batch does not divide by `n_devices`.
  """
  if n_devices == 1:
    return tf.function(forward)

  def per_replica(x, weights, state, rng):
    result, new_state = forward(x, weights, state, rng)
    result = tf.nest.map_structure(_device_mean if do_mean else _combine,
                                   result)
    return result, tf.nest.map_structure(_combine, new_state)

  mapped = mapping.pmap(per_replica, strategy=strategy)

  def predict(x, weights, state, rng):
    strat = strategy or mapping.default_strategy()
    if strat.num_replicas_in_sync != n_devices:
      raise ValueError(
          f'jit_forward: n_devices={n_devices} but the strategy '
          f'{type(strat).__name__} runs {strat.num_replicas_in_sync} '
          f'replicas. Pass n_devices={strat.num_replicas_in_sync} or a '
          f'strategy with {n_devices} replicas.')
    rngs = tf.random.experimental.stateless_split(
        tf.convert_to_tensor(rng), num=n_devices)
    # All replicas hold the same joined result; take the first one's.
    return mapped(sharding.shard_batch(x, n_devices), weights, state, rngs)[0]

  return predict
