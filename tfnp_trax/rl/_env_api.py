"""One way to reset and step gym, gymnasium and dm_env environments.

Three interfaces reach the RL code:

* gymnasium (and gym >= 0.26): `reset(seed=...)` gives `(observation, info)`
  and `step` gives `(observation, reward, terminated, truncated, info)`;
* older gym, which Trax's own environments and tests use: `reset()` gives
  the observation and `step` gives `(observation, reward, done, info)`, a
  time limit flagged by `info['TimeLimit.truncated']`;
* DeepMind's dm_env (`dm_suite=True`): `reset()` and `step` give a
  `TimeStep` with `observation`, `reward` and `step_type.last()`.

The interface is read from what the calls return, so one environment class
may be written either way. `reset` and `step` below give every caller the
gymnasium form.
"""

__all__ = ['reset', 'step', 'StepResult']


class StepResult(tuple):
  """`(observation, reward, terminated, truncated, info)` of one step."""

  __slots__ = ()

  def __new__(cls, observation, reward, terminated, truncated, info):
    return super().__new__(
        cls, (observation, reward, terminated, truncated, info))

  observation = property(lambda self: self[0])
  reward = property(lambda self: self[1])
  terminated = property(lambda self: self[2])
  truncated = property(lambda self: self[3])
  info = property(lambda self: self[4])

  @property
  def done(self):
    return bool(self.terminated) or bool(self.truncated)


def _is_gymnasium_reset(result):
  return (isinstance(result, tuple) and len(result) == 2 and
          isinstance(result[1], dict))


def reset(env, seed=None, dm_suite=False):
  """Resets `env` and returns its first observation.

  Args:
    env: a gym, gymnasium or (with `dm_suite`) dm_env environment.
    seed: optional seed, passed where the environment's `reset` takes one.
    dm_suite: whether `env` follows the dm_env interface.

  Returns:
    The first observation.
  """
  if dm_suite:
    return env.reset().observation
  if seed is None:
    result = env.reset()
  else:
    try:
      result = env.reset(seed=int(seed))
    except TypeError:
      # Older environments take no seed; seed them the old way if they can.
      if hasattr(env, 'seed'):
        env.seed(int(seed))
      result = env.reset()
  return result[0] if _is_gymnasium_reset(result) else result


def step(env, action, dm_suite=False):
  """Steps `env` with `action`; returns a `StepResult` in gymnasium's form.

  Raises:
    TypeError: if the environment's `step` returns neither a 4-tuple nor a
      5-tuple.
  """
  if dm_suite:
    time_step = env.step(action)
    last = bool(time_step.step_type.last())
    # dm_env ends an episode early (truncation) with a discount of 1.
    discount = getattr(time_step, 'discount', 0.0)
    truncated = last and discount is not None and float(discount) > 0.0
    reward = 0.0 if time_step.reward is None else time_step.reward
    return StepResult(time_step.observation, reward, last and not truncated,
                      truncated, {})
  result = env.step(action)
  if isinstance(result, tuple) and len(result) == 5:
    observation, reward, terminated, truncated, info = result
    return StepResult(observation, reward, bool(terminated), bool(truncated),
                      dict(info or {}))
  if isinstance(result, tuple) and len(result) == 4:
    observation, reward, done, info = result
    info = dict(info or {})
    truncated = bool(info.get('TimeLimit.truncated', False)) and bool(done)
    return StepResult(observation, reward, bool(done) and not truncated,
                      truncated, info)
  raise TypeError(
      f'RL environment {type(env).__name__}.step returned '
      f'{type(result).__name__} {_short(result)}; expected gymnasium\'s '
      f'(observation, reward, terminated, truncated, info) or gym\'s '
      f'(observation, reward, done, info).')


def _short(value):
  text = repr(value)
  return text if len(text) < 80 else text[:77] + '...'

