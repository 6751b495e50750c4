"""Advantage estimators over batches of trajectory slices, as in Trax.

Each factory `estimator_name(gamma, margin, ...)` returns a function
`(rewards, returns, values, dones, discount_mask=None) -> advantages` over
arrays of shape [batch, length]. Column `i` holds the reward for the action
at step `i`, `dones[:, i]` says the episode ended with that action, and
`values[:, i]` estimates the state before it. The last `margin` columns only
serve as look-ahead (e.g. a bootstrap value), so the advantages have shape
[batch, length - margin]. Where `discount_mask` is 0 the step is not
discounted (gamma and lambda act as 1); the mask may be [1, length] and is
then shared by every row. At a step where an episode ended, the target
return is that step's reward (nothing later is added), as in Trax; see
`td_k` for the one place where Trax lets later steps leak in.

Inputs may be NumPy arrays (the estimators then run on the host in NumPy
and return NumPy) or TensorFlow tensors (they then run as `jnp` ops and
work inside `tf.function`). Inputs are never modified. The length must be
static; the recursions are unrolled over it.
"""

import numpy as onp
import tensorflow as tf

from tfnp_trax.fastmath import numpy as jnp

__all__ = ['common_args', 'mask_discount', 'discounted_returns',
           'monte_carlo', 'td_k', 'td_lambda', 'gae']

# The factory arguments the agents fill in themselves (Trax keeps them out
# of gin configuration under this name).
common_args = ['gamma', 'margin']


def _is_tensor(x):
  return isinstance(x, (tf.Tensor, tf.Variable))


def _backend(*xs):
  """`jnp` if any input is a TensorFlow tensor (graph-safe), else NumPy."""
  return jnp if any(_is_tensor(x) for x in xs) else onp


def _numpy_dtype(x):
  dtype = x.dtype
  return onp.dtype(dtype.as_numpy_dtype if isinstance(dtype, tf.DType)
                   else dtype)


def _float_dtype(*xs):
  """The common float dtype of the float inputs (float32 if there is none)."""
  floats = [d for d in map(_numpy_dtype, xs)
            if onp.issubdtype(d, onp.floating)]
  return onp.result_type(*floats) if floats else onp.dtype(onp.float32)


def _shape(x):
  return tuple(None if d is None else int(d) for d in x.shape)


def _shapes_match(shape, reference):
  """Equal shapes; an unknown (None) dimension matches anything."""
  return len(shape) == len(reference) and all(
      a is None or b is None or a == b for a, b in zip(shape, reference))


def _arrays(fn_name, rewards, returns, values, dones, discount_mask,
            margin, min_margin):
  """Checks the inputs and brings them to one backend and float dtype.

  Returns:
    `(xp, rewards, returns, values, dones, discount_mask)`: `xp` is NumPy
    or `jnp`; the floats share one dtype (`returns` is None if given so),
    `dones` and `discount_mask` are bool, the mask [1 or batch, length].
  """
  xp = _backend(rewards, returns, values, dones, discount_mask)
  rewards, values = xp.asarray(rewards), xp.asarray(values)
  dones = xp.asarray(dones)
  if returns is not None:
    returns = xp.asarray(returns)
  shape = _shape(rewards)
  if len(shape) != 2 or shape[1] is None or shape[1] < 1:
    raise ValueError(f'{fn_name}: rewards must have shape [batch, length] '
                     f'with a static length of at least 1, got {shape}.')
  named = [('values', values), ('dones', dones)]
  if returns is not None:
    named.append(('returns', returns))
  for name, x in named:
    if not _shapes_match(_shape(x), shape):
      raise ValueError(f'{fn_name}: {name}.shape {_shape(x)} does not match '
                       f'rewards.shape {shape}; all inputs are [batch, '
                       f'length].')
  length = shape[1]
  if not min_margin <= margin <= length:
    raise ValueError(f'{fn_name}: margin {margin} must be in [{min_margin}, '
                     f'{length}] for slices of length {length}.')
  if discount_mask is None:
    discount_mask = xp.ones((1, length), dtype=bool)
  discount_mask = xp.asarray(discount_mask)
  mask_shape = _shape(discount_mask)
  rows_ok = mask_shape[:1] in ((1,), (None,), shape[:1]) or shape[0] is None
  if len(mask_shape) != 2 or mask_shape[1] not in (length, None) or (
      not rows_ok):
    raise ValueError(f'{fn_name}: discount_mask.shape {mask_shape} does not '
                     f'broadcast to rewards.shape {shape}; use [batch, '
                     f'length] or [1, length].')
  dtype = _float_dtype(*[x for x in (rewards, returns, values)
                         if x is not None])
  rewards, values = rewards.astype(dtype), values.astype(dtype)
  if returns is not None:
    returns = returns.astype(dtype)
  return (xp, rewards, returns, values, dones.astype(bool),
          discount_mask.astype(bool))


def _masked(xp, discount, discount_mask, dtype):
  """`discount` where the mask is on, 1 elsewhere, in `dtype`."""
  return xp.where(discount_mask, xp.asarray(discount, dtype=dtype),
                  xp.asarray(1.0, dtype=dtype))


def mask_discount(discount, discount_mask):
  """The discount to apply at each step: `discount` where the mask is on.

  Args:
    discount: a float, e.g. gamma or lambda.
    discount_mask: array; where it is 0 (False) the step gets 1 instead.

  Returns:
    An array shaped like `discount_mask` (NumPy, or `jnp` for tensors).
  """
  xp = _backend(discount_mask)
  return xp.where(xp.asarray(discount_mask).astype(bool), discount, 1.0)


def discounted_returns(rewards, gammas):
  """`G_i = r_i + gammas_i * G_{i+1}` along the last axis (G after end: 0).

  Args:
    rewards: [..., length] rewards.
    gammas: per-step discounts broadcastable to `rewards` (e.g. from
      `mask_discount`).

  Returns:
    The returns, shaped like `rewards`, in their float dtype (float64 for
    integer rewards).
  """
  xp = _backend(rewards, gammas)
  rewards = xp.asarray(rewards)
  dtype = _numpy_dtype(rewards)
  if not onp.issubdtype(dtype, onp.floating):
    dtype = onp.dtype(onp.float64)
  rewards = rewards.astype(dtype)
  gammas = xp.broadcast_to(xp.asarray(gammas).astype(dtype), rewards.shape)
  columns = []
  running = xp.zeros_like(rewards[..., 0])
  for i in reversed(range(rewards.shape[-1])):
    running = rewards[..., i] + gammas[..., i] * running
    columns.append(running)
  if not columns:
    return rewards
  return xp.stack(columns[::-1], axis=-1)


def monte_carlo(gamma, margin):
  """Monte Carlo advantage: `return - value` (Trax's `monte_carlo`).

  Where an episode ended the return is replaced by the reward and the value
  by 0, so the advantage there is just the reward. As in Trax, NumPy
  `returns` and `values` are changed in place to those values. `gamma` is unused (the
  returns are given) and so is `discount_mask`.

  Args:
    gamma: the discount (unused; kept for a common signature).
    margin: look-ahead columns to drop from the end.

  Returns:
    `estimator(rewards, returns, values, dones, discount_mask=None)` giving
    [batch, length - margin] advantages.
  """
  del gamma

  def estimator(rewards, returns, values, dones, discount_mask=None):
    if returns is None:
      raise ValueError('monte_carlo: needs returns (e.g. from '
                       'discounted_returns), got None.')
    given_returns, given_values = returns, values
    xp, rewards, returns, values, dones, _ = _arrays(
        'monte_carlo', rewards, returns, values, dones, discount_mask,
        margin, 0)
    length = rewards.shape[1]
    returns = xp.where(dones, rewards, returns)
    values = xp.where(dones, xp.zeros_like(values), values)
    # Trax writes these into the caller's arrays (`returns[dones] = ...`),
    # and its callers may read them afterwards; NumPy arrays get the same.
    for given, new in ((given_returns, returns), (given_values, values)):
      if isinstance(given, onp.ndarray) and given.flags.writeable and (
          given.shape == new.shape):
        given[...] = new
    return (returns - values)[:, :length - margin]
  return estimator


def td_k(gamma, margin, stop_at_done=False):
  """TD-k advantage with k = margin (Trax's `td_k`).

  With `d_i = prod(gammas[i:i+j])` the running discount,
  `A_i = sum_{j<k} d_j r_{i+j} + d_k V_{i+k} - V_i`, except that where
  `dones[i]` the target is just `r_i`, so `A_i = r_i - V_i`.

  By default this is Trax's definition: the k-step window is summed whole
  even when an episode ends inside it at a later step `i < j < i + k`, so
  rewards after that end (the next episode, or padding) and the value
  `V_{i+k}` leak into `A_i`. With `stop_at_done=True` the window stops at
  the first done instead: no later rewards and no bootstrap value, the
  usual n-step return truncated at termination. Both agree whenever no
  episode ends strictly inside a window (always for k = 1).

  Args:
    gamma: the discount.
    margin: k, the number of steps to look ahead (at least 1).
    stop_at_done: cut each window at its first done (see above).

  Returns:
    `estimator(rewards, returns, values, dones, discount_mask=None)` giving
    [batch, length - margin] advantages.
  """
  def estimator(rewards, returns, values, dones, discount_mask=None):
    del returns
    xp, rewards, _, values, dones, discount_mask = _arrays(
        'td_k', rewards, None, values, dones, discount_mask, margin, 1)
    n = rewards.shape[1] - margin
    gammas = _masked(xp, gamma, discount_mask, rewards.dtype)
    live = 1.0 - dones.astype(rewards.dtype)
    target = xp.zeros_like(values[:, :n])
    discount = xp.ones_like(target)
    for j in range(margin):
      target = target + discount * rewards[:, j:j + n]
      discount = discount * gammas[:, j:j + n]
      if stop_at_done:
        discount = discount * live[:, j:j + n]
    target = target + discount * values[:, margin:margin + n]
    # Trax's way of ending an episode: overwrite the target at done steps.
    target = xp.where(dones[:, :n], rewards[:, :n], target)
    return target - values[:, :n]
  return estimator


def td_lambda(gamma, margin, lambda_=0.95):
  """TD(lambda) advantage: the lambda-return minus the value.

  `G_i = r_i + (1 - d_i) g_i ((1 - l_i) V_{i+1} + l_i G_{i+1})`, computed
  backwards from `G_{length-1} = V_{length-1}` (so with margin 0 the last
  advantage is 0), where `g`, `l` are gamma and lambda masked by
  `discount_mask` (Trax's `td_lambda`).

  Args:
    gamma: the discount.
    margin: look-ahead columns to drop from the end.
    lambda_: the TD(lambda) mixing parameter.

  Returns:
    `estimator(rewards, returns, values, dones, discount_mask=None)` giving
    [batch, length - margin] advantages.
  """
  def estimator(rewards, returns, values, dones, discount_mask=None):
    del returns
    xp, rewards, _, values, dones, discount_mask = _arrays(
        'td_lambda', rewards, None, values, dones, discount_mask, margin, 0)
    length = rewards.shape[1]
    gammas = _masked(xp, gamma, discount_mask, rewards.dtype)
    lambdas = _masked(xp, lambda_, discount_mask, rewards.dtype)
    live = 1.0 - dones.astype(rewards.dtype)
    lambda_return = values[:, -1]
    columns = [lambda_return]
    for i in reversed(range(length - 1)):
      lam = lambdas[:, i]
      lambda_return = rewards[:, i] + live[:, i] * gammas[:, i] * (
          (1.0 - lam) * values[:, i + 1] + lam * lambda_return)
      columns.append(lambda_return)
    lambda_returns = xp.stack(columns[::-1], axis=1)
    return (lambda_returns - values)[:, :length - margin]
  return estimator


def gae(gamma, margin, lambda_=0.95):
  """Generalized Advantage Estimation (Schulman et al., 2015; Trax's `gae`).

  `delta_i = r_i + (1 - d_i) g_i V_{i+1} - V_i` and
  `A_i = delta_i + (1 - d_i) g_i l_i A_{i+1}`, with `A_{length-1} = 0`;
  `g`, `l` are gamma and lambda masked by `discount_mask`. Equal to
  `td_lambda` with the same gamma and lambda.

  Args:
    gamma: the discount.
    margin: look-ahead columns to drop from the end.
    lambda_: the GAE lambda.

  Returns:
    `estimator(rewards, returns, values, dones, discount_mask=None)` giving
    [batch, length - margin] advantages.

  Example:
    >>> estimator = gae(gamma=0.5, margin=1, lambda_=1.0)
    >>> estimator(rewards=[[1.0, 1.0, 0.0]], returns=None,
    ...           values=[[0.0, 0.0, 4.0]], dones=[[0, 0, 0]])
    array([[2.5, 3. ]])
  """
  def estimator(rewards, returns, values, dones, discount_mask=None):
    del returns
    xp, rewards, _, values, dones, discount_mask = _arrays(
        'gae', rewards, None, values, dones, discount_mask, margin, 0)
    length = rewards.shape[1]
    gammas = _masked(xp, gamma, discount_mask, rewards.dtype)
    lambdas = _masked(xp, lambda_, discount_mask, rewards.dtype)
    live = 1.0 - dones.astype(rewards.dtype)
    advantage = xp.zeros_like(values[:, -1])
    columns = [advantage]
    for i in reversed(range(length - 1)):
      delta = rewards[:, i] - values[:, i] + live[:, i] * gammas[:, i] * (
          values[:, i + 1])
      advantage = delta + live[:, i] * gammas[:, i] * lambdas[:, i] * (
          advantage)
      columns.append(advantage)
    return xp.stack(columns[::-1], axis=1)[:, :length - margin]
  return estimator
