"""Progress lines for `tfnp-trax train`, and the step times they measure.

Loop prints its own summary at eval steps, which on a slow machine can be
minutes apart. This callback says when the first step starts compiling,
then prints a line every few seconds with the speed and an ETA. The speed
is measured from the end of the first step this process ran, so neither
the speed nor the ETA counts compilation (nor TensorFlow's start-up).
"""

import time

from tfnp_trax.cli import _time_budget
from tfnp_trax.supervised import callbacks

__all__ = ['Progress']


class Progress(callbacks.TrainingStepCallback):
  """Prints progress and keeps the end time of every step it sees.

  Loop builds callbacks as `cls(loop)`; bind the other arguments with
  `functools.partial`.

  Args:
    loop: the Loop.
    every_s: seconds between progress lines.
    total_steps: the run's step count, if known (see `total_steps`).
    clock: a monotonic clock, `time.monotonic` unless a test fakes it.
    out: prints one line (default `print` with flush).
  """

  def __init__(self, loop, every_s=10.0, total_steps=None,
               clock=time.monotonic, out=None):
    super().__init__(loop)
    self._every_s = every_s
    self.total_steps = total_steps
    self._clock = clock
    self._out = out or (lambda line: print(line, flush=True))
    self.end_times = {}  # step -> when it ended.
    self._first_step = None
    self._last_line = None

  def call_at(self, step):
    del step
    return True

  def on_step_begin(self, step):
    if self._first_step is None:
      self._first_step = step
      self._begin = self._clock()
      self._out(f'Compiling the training step (step {step})...')

  def on_step_end(self, step):
    now = self._clock()
    self.end_times[step] = now
    if step == self._first_step:
      self._last_line = now
      self._out(f'Compiled; step {step} took '
                f'{_time_budget.format_duration(now - self._begin)}.')
      return
    if now - self._last_line >= self._every_s:
      self._last_line = now
      self._out(self.line(step))

  @property
  def compile_s(self):
    """Seconds of the first step this process ran (it compiles)."""
    if self._first_step not in self.end_times:
      return None
    return self.end_times[self._first_step] - self._begin

  def steps_per_second(self, step):
    """The speed since the first (compiling) step; None before 2 steps."""
    first = self._first_step
    if first is None or step <= first or step not in self.end_times:
      return None
    elapsed = self.end_times[step] - self.end_times[first]
    return (step - first) / elapsed if elapsed > 0 else None

  def line(self, step):
    """The progress line after `step`: step, speed and ETA if known."""
    rate = self.steps_per_second(step)
    total = self.total_steps
    text = f'Step {step}' + (f'/{total}' if total else '')
    if rate:
      text += f': {rate:.2f} steps/s'
      if total:
        eta = _time_budget.format_duration(max(0, total - step) / rate)
        text += f', ETA {eta}'
      else:
        text += ' (measuring speed to fit the time budget)'
    return text
