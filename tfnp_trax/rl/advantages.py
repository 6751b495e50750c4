"""Advantage estimators over batches of trajectory slices (host NumPy).

Each factory `estimator_name(gamma, margin, ...)` returns a function
`(rewards, returns, values, dones, discount_mask=None) -> advantages` over
arrays of shape [batch, length]. Column `i` holds the reward for the action
at step `i`, `dones[:, i]` says the episode ended with that action, and
`values[:, i]` estimates the state before it. The last `margin` columns only
serve as look-ahead (e.g. a bootstrap value), so the advantages have shape
[batch, length - margin]. Where `discount_mask` is 0 the step is not
discounted (gamma and lambda act as 1), as in Trax.
"""

import numpy as onp

__all__ = ['mask_discount', 'discounted_returns', 'monte_carlo', 'td_k',
           'td_lambda', 'gae']


def _arrays(fn_name, rewards, returns, values, dones, discount_mask):
  """Float64 copies, checked to share one [batch, length] shape."""
  rewards = onp.array(rewards, dtype=onp.float64)
  values = onp.array(values, dtype=onp.float64)
  dones = onp.array(dones, dtype=bool)
  shape = rewards.shape
  if rewards.ndim != 2:
    raise ValueError(f'{fn_name}: rewards must have shape [batch, length], '
                     f'got {shape}.')
  named = [('values', values), ('dones', dones)]
  if returns is not None:
    returns = onp.array(returns, dtype=onp.float64)
    named.append(('returns', returns))
  if discount_mask is None:
    discount_mask = onp.ones(shape, dtype=bool)
  discount_mask = onp.asarray(discount_mask)
  named.append(('discount_mask', discount_mask))
  for name, x in named:
    if x.shape != shape:
      raise ValueError(f'{fn_name}: {name}.shape {x.shape} does not match '
                       f'rewards.shape {shape}; all inputs are [batch, '
                       f'length].')
  return rewards, returns, values, dones, discount_mask


def _check_margin(fn_name, margin, length, minimum=0):
  if not minimum <= margin < length:
    raise ValueError(f'{fn_name}: margin {margin} must be in [{minimum}, '
                     f'{length - 1}] for slices of length {length}, so that '
                     f'at least one advantage is left.')


def mask_discount(discount, discount_mask):
  """The discount to apply at each step: `discount` where the mask is set."""
  return onp.where(discount_mask, discount, 1.0)


def discounted_returns(rewards, gammas):
  """`G_i = r_i + gammas_i * G_{i+1}` along the last axis (G after end: 0)."""
  rewards = onp.asarray(rewards, dtype=onp.float64)
  gammas = onp.broadcast_to(onp.asarray(gammas, dtype=onp.float64),
                            rewards.shape)
  returns = onp.zeros_like(rewards)
  running = onp.zeros(rewards.shape[:-1])
  for i in reversed(range(rewards.shape[-1])):
    running = rewards[..., i] + gammas[..., i] * running
    returns[..., i] = running
  return returns


def monte_carlo(gamma, margin):
  """Advantage `return - value`, with value 0 where an episode ended.

  At a final step the return is just its reward and the baseline is
  dropped, as in Trax.
  """
  del gamma

  def estimator(rewards, returns, values, dones, discount_mask=None):
    rewards, returns, values, dones, _ = _arrays(
        'monte_carlo', rewards, returns, values, dones, discount_mask)
    length = rewards.shape[1]
    _check_margin('monte_carlo', margin, length)
    returns = onp.where(dones, rewards, returns)
    values = onp.where(dones, 0.0, values)
    return (returns - values)[:, :length - margin]
  return estimator


def td_k(gamma, margin):
  """TD-k advantage with k = margin.

  `A_i = r_i + g r_{i+1} + ... + g^{k-1} r_{i+k-1} + g^k V_{i+k} - V_i`;
  an episode that ends at step j < i + k stops the sum there (no later
  rewards, no bootstrap value).
  """
  def estimator(rewards, returns, values, dones, discount_mask=None):
    del returns
    rewards, _, values, dones, discount_mask = _arrays(
        'td_k', rewards, None, values, dones, discount_mask)
    length = rewards.shape[1]
    _check_margin('td_k', margin, length, minimum=1)
    n = length - margin
    gammas = mask_discount(gamma, discount_mask)
    target = onp.zeros_like(values[:, :n])
    discount = onp.ones_like(target)  # Product of gammas, 0 after a done.
    for j in range(margin):
      target += discount * rewards[:, j:j + n]
      discount = discount * gammas[:, j:j + n] * (1.0 - dones[:, j:j + n])
    target += discount * values[:, margin:margin + n]
    return target - values[:, :n]
  return estimator


def td_lambda(gamma, margin, lambda_=0.95):
  """TD(lambda) advantage: the lambda-return minus the value.

  `G_i = r_i + (1 - d_i) g ((1 - lambda) V_{i+1} + lambda G_{i+1})`, started
  from `G_{length-1} = V_{length-1}`.
  """
  def estimator(rewards, returns, values, dones, discount_mask=None):
    del returns
    rewards, _, values, dones, discount_mask = _arrays(
        'td_lambda', rewards, None, values, dones, discount_mask)
    length = rewards.shape[1]
    _check_margin('td_lambda', margin, length)
    gammas = mask_discount(gamma, discount_mask)
    lambdas = mask_discount(lambda_, discount_mask)
    lambda_returns = onp.zeros_like(values)
    lambda_returns[:, -1] = values[:, -1]
    for i in reversed(range(length - 1)):
      lam = lambdas[:, i]
      lambda_returns[:, i] = rewards[:, i] + (1.0 - dones[:, i]) * gammas[
          :, i] * ((1.0 - lam) * values[:, i + 1] + lam * lambda_returns[
              :, i + 1])
    return (lambda_returns - values)[:, :length - margin]
  return estimator


def gae(gamma, margin, lambda_=0.95):
  """Generalized Advantage Estimation (Schulman et al., 2015).

  `delta_i = r_i + (1 - d_i) g V_{i+1} - V_i` and
  `A_i = delta_i + (1 - d_i) g lambda A_{i+1}`, with `A_{length-1} = 0`.
  Equal to `td_lambda` with the same gamma and lambda.

  Example:
    >>> estimator = gae(gamma=0.5, margin=1, lambda_=1.0)
    >>> estimator(rewards=[[1.0, 1.0, 0.0]], returns=None,
    ...           values=[[0.0, 0.0, 4.0]], dones=[[0, 0, 0]])
    array([[2.5, 3. ]])
  """
  def estimator(rewards, returns, values, dones, discount_mask=None):
    del returns
    rewards, _, values, dones, discount_mask = _arrays(
        'gae', rewards, None, values, dones, discount_mask)
    length = rewards.shape[1]
    _check_margin('gae', margin, length)
    gammas = mask_discount(gamma, discount_mask)
    lambdas = mask_discount(lambda_, discount_mask)
    advantages = onp.zeros_like(values)
    for i in reversed(range(length - 1)):
      live = 1.0 - dones[:, i]
      delta = rewards[:, i] - values[:, i] + live * gammas[:, i] * values[
          :, i + 1]
      advantages[:, i] = delta + live * gammas[:, i] * lambdas[
          :, i] * advantages[:, i + 1]
    return advantages[:, :length - margin]
  return estimator
