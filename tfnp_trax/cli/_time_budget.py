"""Fitting a training run to a wall-clock budget.

`tfnp-trax train --time_budget 4m` times the first steps after compilation
and then fixes how many steps the run takes so that everything (the steps,
their evals and checkpoints, the final eval, the sample and the export)
ends within the budget. The learning-rate schedule's decay is fitted to
that step count, so it must be fixed before the steps it governs run: the
warm-up is the same whatever the count, the speed is measured during the
warm-up, and the count is written to `<output_dir>/time_budget.json` so a
resumed run reuses it instead of measuring again (a resumed run must
follow the schedule the first run started, or it would not be the same
run).

Everything here is a pure function of the numbers it is given (no clocks),
so the sizing is tested with made-up timings.
"""

import math
import re
from typing import NamedTuple, Optional

from tfnp_trax.cli import _run_files

__all__ = ['parse_duration', 'format_duration', 'WarmupCosine',
           'Overheads', 'fit_steps', 'planned_seconds', 'BudgetPlan',
           'PLAN_FILE', 'write_plan', 'read_plan']

PLAN_FILE = 'time_budget.json'

_UNITS = {'h': 3600.0, 'm': 60.0, 's': 1.0}
_DURATION = re.compile(r'(\d+(?:\.\d*)?|\.\d+)([hms])')


def parse_duration(text):
  """Seconds in a duration: '240', '4m', '1m30s', '1.5h'; None when off.

  Args:
    text: a number of seconds or number-unit pairs (h, m, s), or '0',
      'off' or 'none' (no budget); None or '' is also no budget.

  Returns:
    The duration in seconds (a positive float), or None for no budget.

  Raises:
    ValueError: `text` is not a duration or is negative.
  """
  if text is None:
    return None
  spec = str(text).strip().lower().replace(' ', '')
  if spec in ('', 'off', 'none'):
    return None
  try:
    seconds = float(spec)
  except ValueError:
    pairs = _DURATION.findall(spec)
    if not pairs or ''.join(n + u for n, u in pairs) != spec:
      raise ValueError(
          f'--time_budget: {text!r} is not a duration; give seconds (240) '
          f'or number-unit pairs such as 4m, 90s or 1m30s (0 or off: no '
          f'budget).') from None
    seconds = sum(float(n) * _UNITS[u] for n, u in pairs)
  if seconds < 0 or not math.isfinite(seconds):
    raise ValueError(f'--time_budget: {text!r} must be a finite duration '
                     f'of 0 seconds or more (0 or off: no budget).')
  return seconds or None


def format_duration(seconds):
  """'1m05s', '42s': short and readable, for progress lines."""
  seconds = max(0, int(round(seconds)))
  if seconds < 60:
    return f'{seconds}s'
  minutes, seconds = divmod(seconds, 60)
  if minutes < 60:
    return f'{minutes}m{seconds:02d}s'
  hours, minutes = divmod(minutes, 60)
  return f'{hours}h{minutes:02d}m'


class WarmupCosine:
  """A linear warm-up to `peak`, then a half cosine down to about 0.

  With W = `warmup_steps` and T = `total_steps`, the rate of step s is

    peak * s / W                                     for s <= W,
    peak * (1 + cos(pi * min(1, (s - W) / (T - W + 1)))) / 2   after,

  so the last step still learns a little. The warm-up does not depend on
  T, so T may be set after steps 1..W ran (which is when `tfnp-trax train`
  knows its speed); asking for a step past the warm-up before T is set is
  an error, so no step can run under a schedule that changes later.

  Args:
    peak: the rate at the end of the warm-up.
    warmup_steps: W, at least 1.
    total_steps: T, or None to set it later with `set_total_steps`.
  """

  def __init__(self, peak, warmup_steps, total_steps=None):
    if warmup_steps < 1:
      raise ValueError(f'WarmupCosine: warmup_steps must be at least 1, got '
                       f'{warmup_steps}.')
    self._peak = float(peak)
    self._warmup = int(warmup_steps)
    self._total = None
    if total_steps is not None:
      self.set_total_steps(total_steps)

  warmup_steps = property(lambda self: self._warmup)
  total_steps = property(lambda self: self._total)

  def set_total_steps(self, total_steps):
    """Fixes T; setting it again to another value is an error."""
    total_steps = int(total_steps)
    if total_steps < 1:
      raise ValueError(f'WarmupCosine: total_steps must be at least 1, got '
                       f'{total_steps}.')
    if self._total is not None and self._total != total_steps:
      raise ValueError(
          f'WarmupCosine: total_steps is already {self._total}; steps may '
          f'have run under it, so it cannot become {total_steps}.')
    self._total = total_steps

  def __call__(self, step):
    step = float(step)
    if step <= self._warmup:
      return self._peak * max(step, 0.0) / self._warmup
    if self._total is None:
      raise RuntimeError(
          f'WarmupCosine: step {int(step)} is past the warm-up '
          f'({self._warmup} steps) but total_steps is not set; call '
          f'set_total_steps before running later steps.')
    span = max(self._total - self._warmup + 1, 1)
    progress = min(1.0, (step - self._warmup) / span)
    return self._peak * 0.5 * (1.0 + math.cos(math.pi * progress))

  def __repr__(self):
    return (f'WarmupCosine(peak={self._peak}, warmup_steps={self._warmup}, '
            f'total_steps={self._total})')


class Overheads(NamedTuple):
  """What a run costs besides its training steps, in seconds.

  Attributes:
    eval_every: steps between evals (0: none).
    eval_s: one eval.
    checkpoint_every: steps between checkpoints (0: none).
    checkpoint_s: one checkpoint.
    final_s: the work after the last step: the final eval where the last
      step is not an eval step is added by `planned_seconds`; this is the
      rest (sample, export, exit).
  """
  eval_every: int = 0
  eval_s: float = 0.0
  checkpoint_every: int = 0
  checkpoint_s: float = 0.0
  final_s: float = 0.0


def _multiples(period, first, last):
  """How many multiples of `period` lie in [first, last]."""
  if not period or last < first:
    return 0
  return last // period - (first - 1) // period


def planned_seconds(total_steps, steps_done, step_s, overheads):
  """Seconds from now until a run of `total_steps` steps has ended.

  Args:
    total_steps: the run's step count.
    steps_done: steps already run.
    step_s: seconds per training step.
    overheads: an `Overheads`.

  Returns:
    The predicted seconds, steps plus evals, checkpoints and the end.
  """
  first, last = steps_done + 1, total_steps
  seconds = max(0, last - steps_done) * step_s
  seconds += _multiples(overheads.eval_every, first, last) * overheads.eval_s
  seconds += (_multiples(overheads.checkpoint_every, first, last) *
              overheads.checkpoint_s)
  if not overheads.eval_every or total_steps % overheads.eval_every:
    seconds += overheads.eval_s  # The run ends with an eval either way.
  return seconds + overheads.final_s


def fit_steps(seconds_left, steps_done, step_s, max_steps, overheads):
  """The most steps whose run ends within `seconds_left` seconds.

  Args:
    seconds_left: the budget less the time spent so far.
    steps_done: steps already run (the result is never below it).
    step_s: measured seconds per training step (after compilation).
    max_steps: the most steps the run may take.
    overheads: an `Overheads`.

  Returns:
    An int in [steps_done, max(steps_done, max_steps)].
  """
  if step_s <= 0:
    raise ValueError(f'fit_steps: step_s must be positive, got {step_s}.')
  fits = lambda n: planned_seconds(n, steps_done, step_s,
                                   overheads) <= seconds_left
  low, high = steps_done, max(steps_done, max_steps)
  if fits(high):
    return high
  # planned_seconds grows with the step count: bisect for the last fit.
  while high - low > 1:
    middle = (low + high) // 2
    low, high = (middle, high) if fits(middle) else (low, middle)
  return low


class BudgetPlan(NamedTuple):
  """A budgeted run's fixed step count and how it was chosen."""
  total_steps: int
  budget_s: float
  step_s: float
  calibration_steps: int
  warmup_steps: int

  def describe(self):
    return (f'{self.total_steps} steps fit the time budget of '
            f'{format_duration(self.budget_s)} at {1 / self.step_s:.2f} '
            f'steps/s')


def write_plan(output_dir, plan):
  """Writes `plan` to `<output_dir>/time_budget.json` atomically."""
  return _run_files.write_json(output_dir, PLAN_FILE, plan._asdict())


def read_plan(output_dir) -> Optional[BudgetPlan]:
  """The plan written by `write_plan` in `output_dir`, or None."""
  return _run_files.read_json(
      output_dir, PLAN_FILE, lambda d: BudgetPlan(**d),
      'is not a time-budget plan', 'the step count of the run')
