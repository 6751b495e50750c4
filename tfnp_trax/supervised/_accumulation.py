"""Gradient accumulation: k micro-batches, one update, one compiled step.

A training step with `k` accumulation steps takes a batch `k` times the
micro-batch, splits it along axis 0 into `k` micro-batches inside the
compiled step, and runs the forward and backward pass on one micro-batch
at a time in a `tf.while_loop` (one iteration live at once, so activation
memory is that of a single micro-batch; under several replicas the loop is
unrolled, since the losses' cross-replica sums cannot run inside one, and
each micro-batch waits for the previous one's gradients). The gradients and losses are
summed in float32 and divided by `k` once, and the optimizer then updates
once, as one step on the whole batch would: for a loss that is a mean over
examples and micro-batches of equal loss weight, the mean of the
micro-batch gradients is the gradient of the whole batch's loss. There is
no host round trip between micro-batches.

Model state (e.g. BatchNorm statistics) passes from one micro-batch to the
next, as it would between consecutive steps. Micro-batch `i` draws its
random numbers from `fold_in(rng, i)`.

The first micro-batch runs before the loop: its outputs fix the shapes and
structure the loop carries (state that changes shape on a layer's first
call, as Trax layers' may, is then already in its final shape).
"""

import numbers

import tensorflow as tf

from tfnp_trax import fastmath

__all__ = ['check_steps', 'check_batch', 'accumulate']


def check_steps(k, owner):
  """Returns `k` as an int after checking it is a positive integer."""
  if isinstance(k, bool) or not isinstance(k, numbers.Integral) or k < 1:
    raise ValueError(f'{owner}: gradient_accumulation_steps must be a '
                     f'positive integer (micro-batches per update; 1 for '
                     f'none), got {k!r}.')
  return int(k)


def check_batch(batch, k, n_replicas, owner):
  """Raises unless every leaf's batch size divides by `k` x `n_replicas`.

  Reads static shapes only (host arrays and tensors); distributed values
  are checked per replica inside the step.
  """
  if k == 1:
    return
  for x in fastmath.tree_flatten(batch):
    shape = getattr(x, 'shape', None)
    if shape is None or not len(shape) or shape[0] is None:
      continue
    if shape[0] % (k * n_replicas):
      per = f' per replica, {n_replicas} replicas' if n_replicas > 1 else ''
      raise ValueError(
          f'{owner}: batch size {shape[0]} does not divide into '
          f'gradient_accumulation_steps={k} micro-batches{per}; give a batch '
          f'of {k * n_replicas} x the micro-batch size (a Loop draws '
          f'{k} batches of its data per update and joins them).')


def _split(x, k, owner):
  """`x` of leading size n as `[k, n / k, ...]`."""
  x = tf.convert_to_tensor(x)
  n = x.shape[0]
  if n is not None and n % k:
    raise ValueError(f'{owner}: a replica got {n} examples, which do not '
                     f'divide into gradient_accumulation_steps={k} '
                     f'micro-batches.')
  return tf.reshape(x, tf.concat([[k, -1], tf.shape(x)[1:]], 0))


def accumulate(grad_fn, batch, rng, state, k, fold_rng=True,
               owner='Trainer'):
  """Mean loss and gradients of `grad_fn` over `k` micro-batches of `batch`.

  Args:
    grad_fn: `(micro_batch, rng, state) -> ((loss, new_state), grads)`.
    batch: a tree of tensors with the whole (per-replica) batch.
    rng: the step's key; micro-batch `i` gets `fold_in(rng, i)` (when
      `fold_rng`; else every micro-batch gets `rng` itself).
    state: the model state before the first micro-batch.
    k: the number of micro-batches (1 calls `grad_fn` on `batch` as is).
    fold_rng: whether to fold the micro-batch index into the key (a model
      that draws no random numbers skips the ops).
    owner: the component named in error messages.

  Returns:
    `((mean_loss, state_after_last), mean_grads)`, as `grad_fn` returns.
  """
  if k == 1:
    return grad_fn(batch, rng, state)
  leaves = fastmath.tree_leaves(batch)
  split = [_split(x, k, owner) for x in leaves]

  def micro(i):
    return fastmath.tree_unflatten([x[i] for x in split], batch)[0]

  def key(i):
    return fastmath.random.fold_in(rng, i) if fold_rng else rng

  (loss, new_state), grads = grad_fn(micro(0), key(0), state)
  loss = tf.cast(loss, tf.float32)
  grad_leaves = [tf.convert_to_tensor(g) for g in fastmath.tree_leaves(grads)]
  state_leaves = [tf.convert_to_tensor(s)
                  for s in fastmath.tree_leaves(new_state)]

  def body(i, loss_sum, grad_sums, state_leaves, after=()):
    with tf.control_dependencies(after):
      batch_i = micro(i)
    state_i = fastmath.tree_unflatten(list(state_leaves), new_state)[0]
    (loss_i, state_out), grads_i = grad_fn(batch_i, key(i), state_i)
    sums = [s + tf.cast(g, s.dtype)
            for s, g in zip(grad_sums, fastmath.tree_leaves(grads_i))]
    outs = [tf.cast(x, s.dtype)
            for s, x in zip(state_leaves, fastmath.tree_leaves(state_out))]
    return i + 1, loss_sum + tf.cast(loss_i, tf.float32), sums, outs

  carry = (tf.constant(1), loss, grad_leaves, state_leaves)
  context = tf.distribute.get_replica_context()
  if context is not None and context.num_replicas_in_sync > 1:
    # Under several replicas the losses sum over replicas with collectives,
    # which TensorFlow does not run inside a while_loop: the loop is
    # unrolled, each micro-batch starting after the last one's gradients.
    for i in range(1, k):
      carry = body(i, *carry[1:], after=carry[2])
  else:
    carry = tf.while_loop(lambda i, *_: i < k, body, carry,
                          parallel_iterations=1)
  _, loss_sum, grad_sums, state_leaves = carry
  scale = 1.0 / k
  mean_grads = [g * tf.cast(scale, g.dtype) for g in grad_sums]
  return ((loss_sum * scale,
           fastmath.tree_unflatten(list(state_leaves), new_state)[0]),
          fastmath.tree_unflatten(mean_grads, grads)[0])
