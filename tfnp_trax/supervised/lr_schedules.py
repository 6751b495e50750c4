r"""Learning-rate schedules: pure functions `step -> learning rate`.

Every constructor here returns `schedule(step)`, which accepts a Python
number or a scalar tensor (int or float) and returns a float32 scalar. The
functions use only array ops, so they trace under `fastmath.jit` with a
tensor step and never retrace from step to step.

Steps count from 1 in the body-and-tail schedules, as in a training loop
that asks for the rate of step 1 first: `constant(v)` is `v` from step 1 on
(and 0 at step 0), `warmup(n, v)` rises on the line from `(0, 0)` to
`(n + 1, v)`.

Example:

>>> schedule = warmup_and_rsqrt_decay(n_warmup_steps=3, max_value=0.5)
>>> [round(float(schedule(s)), 4) for s in (0, 2, 4, 16)]
[0.0, 0.25, 0.5, 0.25]
"""

import math

from tfnp_trax.fastmath import numpy as jnp

__all__ = ['constant', 'warmup', 'warmup_and_rsqrt_decay',
           'cosine_sawtooth_tail', 'multifactor', 'MULTIFACTOR_FACTORS']

MULTIFACTOR_FACTORS = ('constant', 'two_constants', 'linear_warmup',
                       'rsqrt_decay', 'rsqrt_normalized_decay', 'decay_every',
                       'cosine_decay')


def _as_step(step):
  return jnp.asarray(step, jnp.float32)


def constant(value):
  """Returns a schedule equal to `value` from step 1 on (0 at step 0)."""
  return _body_and_tail(value, body_start=1)


def warmup(n_warmup_steps, max_value):
  """Returns a linear warm-up to `max_value`, then a constant.

  Args:
    n_warmup_steps: the rate rises on the line from `(0, 0)` to
      `(n_warmup_steps + 1, max_value)` and is `max_value` from step
      `n_warmup_steps + 1` on.
    max_value: the rate after warm-up.
  """
  return _body_and_tail(max_value, body_start=n_warmup_steps + 1)


def warmup_and_rsqrt_decay(n_warmup_steps, max_value):
  """Returns a linear warm-up, then `max_value * sqrt(n + 1) / sqrt(step)`.

  Args:
    n_warmup_steps: length `n` of the linear warm-up (as in `warmup`); the
      decay starts at step `n + 1` with value `max_value`.
    max_value: the peak rate.
  """
  return _body_and_tail(max_value, tail_start=n_warmup_steps + 1,
                        tail_fn=_rsqrt_tail)


def cosine_sawtooth_tail(n_warmup_steps, max_value, steps_per_cycle,
                         min_value=1e-5):
  """Returns a linear warm-up, then cosine cycles with warm restarts.

  After warm-up (as in `warmup_and_rsqrt_decay`), each cycle of
  `steps_per_cycle` steps falls along half a cosine from `max_value` to
  `min_value` and then restarts (Loshchilov & Hutter, 2017,
  https://arxiv.org/abs/1608.03983):

    rate = min + (max - min) * (1 + cos(pi * frac((step - n - 1) / cycle))) / 2

  Args:
    n_warmup_steps: length `n` of the linear warm-up.
    max_value: the rate at the start of each cycle.
    steps_per_cycle: the length of one cycle.
    min_value: the rate approached at the end of each cycle.
  """
  def tail(step, tail_start, body_value):
    position = jnp.mod((step - tail_start) / steps_per_cycle, 1.0)
    cosine = 0.5 * (1.0 + jnp.cos(math.pi * position))
    return min_value + (body_value - min_value) * cosine
  return _body_and_tail(max_value, tail_start=n_warmup_steps + 1,
                        tail_fn=tail)


def _rsqrt_tail(step, tail_start, body_value):
  # Scaled so that the tail starts at body_value, joining the body smoothly.
  return body_value * math.sqrt(tail_start) / jnp.sqrt(step)


def _body_and_tail(body_value, body_start=None, tail_start=None,
                   tail_fn=None):
  """A linear ramp from 0, a constant body, and an optional tail.

  Args:
    body_value: the rate of the body; also the top of the ramp and the
      reference value of the tail.
    body_start: first step of the body; steps before it follow the line from
      `(0, 0)` to `(body_start, body_value)`. Defaults to `tail_start`.
    tail_start: first step of the tail, or None for no tail.
    tail_fn: `tail_fn(step, tail_start, body_value) -> rate`.

  Returns:
    The schedule function.
  """
  if body_start is None and tail_start is None:
    raise ValueError('lr_schedules: body_start and tail_start are both None; '
                     'give at least one of them.')
  if tail_start is not None and tail_fn is None:
    raise ValueError(f'lr_schedules: tail_start is {tail_start} but tail_fn '
                     f'is None; give a tail function.')
  if body_start is None:
    body_start = tail_start

  def schedule(step):
    step = _as_step(step)
    body = jnp.asarray(body_value, jnp.float32)
    ramp = step / body_start * body
    rate = body
    if tail_start is not None:
      # Clamp to the tail's domain so the branch not taken stays finite.
      tail = tail_fn(jnp.maximum(step, tail_start), tail_start, body)
      rate = jnp.where(step >= tail_start, tail, rate)
    return jnp.where(step < body_start, ramp, rate).astype(jnp.float32)
  return schedule


def multifactor(factors='constant * linear_warmup * rsqrt_decay',
                constant=0.1,  # pylint: disable=redefined-outer-name
                warmup_steps=400,
                decay_factor=0.5,
                steps_per_decay=20000,
                steps_per_cycle=100000,
                second_constant=0.01,
                second_constant_step=10000,
                minimum=0):
  """Returns the product of named factors, floored at `minimum`.

  `factors` names factors separated by `*`; with `s` the step:

  * `constant`: `constant`;
  * `two_constants`: `constant` before `second_constant_step`, then
    `second_constant`;
  * `linear_warmup`: `min(1, s / warmup_steps)`;
  * `rsqrt_decay`: `1 / sqrt(max(s, warmup_steps))`;
  * `rsqrt_normalized_decay`: `sqrt(warmup_steps) / sqrt(max(s,
    warmup_steps))`;
  * `decay_every`: `decay_factor ** floor(s / steps_per_decay)`;
  * `cosine_decay`: `(1 + cos(pi * frac(p))) / 2` with
    `p = max(0, (s - warmup_steps) / steps_per_cycle)`.

  Args:
    factors: the factor names, e.g. `'constant * linear_warmup'`.
    constant: the base rate.
    warmup_steps: warm-up length, also the floor of the rsqrt decays and the
      start of the cosine decay.
    decay_factor: factor applied every `steps_per_decay` steps.
    steps_per_decay: period of `decay_every`.
    steps_per_cycle: period of `cosine_decay`.
    second_constant: the rate of `two_constants` from
      `second_constant_step` on.
    second_constant_step: the step where `two_constants` switches.
    minimum: the returned rate is at least this.

  Returns:
    The schedule function.

  Raises:
    ValueError: if a factor name is unknown.

  Example:

  >>> schedule = multifactor('constant * linear_warmup', constant=0.5,
  ...                        warmup_steps=10)
  >>> [round(float(schedule(s)), 4) for s in (0, 5, 100)]
  [0.0, 0.25, 0.5]
  """
  names = [n.strip() for n in factors.split('*')]
  unknown = [n for n in names if n not in MULTIFACTOR_FACTORS]
  if unknown:
    raise ValueError(
        f'multifactor: unknown factor {unknown[0]!r} in {factors!r}; known '
        f'factors: {list(MULTIFACTOR_FACTORS)}.')

  def factor(name, step):
    if name == 'constant':
      return constant
    if name == 'two_constants':
      return jnp.where(step < second_constant_step, constant, second_constant)
    if name == 'linear_warmup':
      return jnp.minimum(1.0, step / warmup_steps)
    if name == 'rsqrt_decay':
      return 1.0 / jnp.sqrt(jnp.maximum(step, warmup_steps))
    if name == 'rsqrt_normalized_decay':
      return math.sqrt(warmup_steps) / jnp.sqrt(jnp.maximum(step,
                                                            warmup_steps))
    if name == 'decay_every':
      return decay_factor ** jnp.floor(step / steps_per_decay)
    # cosine_decay: cycles restart every steps_per_cycle after warm-up.
    progress = jnp.maximum(0.0, (step - warmup_steps) / steps_per_cycle)
    return 0.5 * (1.0 + jnp.cos(math.pi * jnp.mod(progress, 1.0)))

  def schedule(step):
    step = _as_step(step)
    rate = jnp.ones((), jnp.float32)
    for name in names:
      rate = rate * factor(name, step)
    return jnp.maximum(rate, minimum).astype(jnp.float32)
  return schedule
