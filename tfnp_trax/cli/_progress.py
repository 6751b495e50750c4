"""Progress for `tfnp-trax train`: a bar in a terminal, lines elsewhere.

Loop prints its own summary at eval steps, which on a slow machine can be
minutes apart. This callback says when the first step starts compiling,
then shows the step, the training loss, the speed and an ETA: in a
terminal as one bar redrawn in place a few times a second, otherwise
(a log file, a pipe, a notebook cell) as a plain line every few seconds.
The speed is measured from the end of the first step this process ran, so
neither the speed nor the ETA counts compilation (nor TensorFlow's
start-up).
"""

import math
import shutil
import sys
import time

from tfnp_trax.cli import _time_budget
from tfnp_trax.supervised import callbacks

__all__ = ['Progress', 'LossAverage', 'bar_text']

# Seconds between redraws of the bar: smooth enough, and cheap.
_BAR_EVERY_S = 0.25
_BAR_WIDTH = 24


class LossAverage:
  """An exponential moving average of the loss, without the start-up bias.

  After values x_1..x_n it is sum_i w_i x_i / sum_i w_i with
  w_i = decay ** (n - i), so the first value is reported as itself rather
  than pulled towards 0; NaN and infinite values are skipped.
  """

  def __init__(self, decay=0.95):
    self._decay = decay
    self._sum = 0.0
    self._weight = 0.0

  def add(self, value):
    if value is None or not math.isfinite(value):
      return
    self._sum = self._decay * self._sum + value
    self._weight = self._decay * self._weight + 1.0

  @property
  def value(self):
    return self._sum / self._weight if self._weight else None


def bar_text(step, total, loss=None, rate=None, columns=80):
  """One line of the bar: `[=====>    ] step/total loss speed ETA`.

  Args:
    step: steps done.
    total: the run's step count, or None (no bar, no ETA yet).
    loss: the averaged training loss, or None.
    rate: steps per second, or None while unmeasured.
    columns: the terminal's width; the line never exceeds it.

  Returns:
    The line (no newline).
  """
  parts = []
  if total:
    done = min(1.0, step / total)
    filled = int(done * _BAR_WIDTH)
    arrow = '>' if filled < _BAR_WIDTH else ''
    parts.append('[' + '=' * filled + arrow +
                 ' ' * (_BAR_WIDTH - filled - len(arrow)) + ']')
    parts.append(f'{step}/{total}')
  else:
    parts.append(f'step {step}')
  if loss is not None:
    parts.append(f'loss {loss:.3f}')
  if rate:
    parts.append(f'{rate:.1f} steps/s')
    if total:
      parts.append('ETA ' + _time_budget.format_duration(
          max(0, total - step) / rate))
  line = ' '.join(parts)
  return line[:max(1, columns - 1)]


class Progress(callbacks.TrainingStepCallback):
  """Shows progress and keeps the end time of every step it sees.

  Loop builds callbacks as `cls(loop)`; bind the other arguments with
  `functools.partial`.

  Args:
    loop: the Loop (its `last_loss` is read after each step; None or an
      object without it shows no loss).
    every_s: seconds between plain progress lines.
    total_steps: the run's step count, if known (see `total_steps`).
    clock: a monotonic clock, `time.monotonic` unless a test fakes it.
    out: prints one line (default `print` with flush).
    bar: draw a bar redrawn in place; default: when `stream` is a
      terminal and `out` is not given.
    stream: where the bar is drawn (default sys.stdout).
  """

  def __init__(self, loop, every_s=10.0, total_steps=None,
               clock=time.monotonic, out=None, bar=None, stream=None):
    super().__init__(loop)
    self._every_s = every_s
    self.total_steps = total_steps
    self._clock = clock
    self._stream = stream or sys.stdout
    if bar is None:
      isatty = getattr(self._stream, 'isatty', None)
      bar = out is None and bool(isatty and isatty())
    self._bar = bar
    self._out = out or (lambda line: print(line, flush=True))
    self.end_times = {}  # step -> when it ended.
    self._first_step = None
    self._last_line = None
    self._loss = LossAverage()
    self._bar_len = 0  # Characters of the bar on screen now (0: none).

  bar = property(lambda self: self._bar,
                 doc='Whether progress is a bar redrawn in place.')

  @property
  def loss(self):
    """The moving average of the training loss, or None."""
    return self._loss.value

  # Only the step's loss and time are read: the Loop need not copy the
  # newest weights into the model for this callback at every step.
  reads_weights = False

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
    self._loss.add(getattr(self._loop, 'last_loss', None))
    if step == self._first_step:
      self._last_line = now
      self._out(f'Compiled; step {step} took '
                f'{_time_budget.format_duration(now - self._begin)}.')
      return
    if self._bar:
      last = bool(self.total_steps) and step >= self.total_steps
      if now - self._last_line >= _BAR_EVERY_S or last:
        self._last_line = now
        self._draw(step, end=last)
    elif now - self._last_line >= self._every_s:
      self._last_line = now
      self._out(self.line(step))

  def _draw(self, step, end=False):
    columns = shutil.get_terminal_size((80, 24)).columns
    text = bar_text(step, self.total_steps, self.loss,
                    self.steps_per_second(step), columns)
    # '\r' returns to the line's start; spaces wipe a longer old bar.
    pad = ' ' * max(0, self._bar_len - len(text))
    self._stream.write('\r' + text + pad + ('\n' if end else ''))
    self._stream.flush()
    self._bar_len = 0 if end else len(text)

  def close(self):
    """Ends the bar's line, so what is printed next starts on its own."""
    if self._bar and self._bar_len:
      self._stream.write('\n')
      self._stream.flush()
      self._bar_len = 0

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
    """The plain progress line after `step`: step, loss, speed and ETA."""
    rate = self.steps_per_second(step)
    total = self.total_steps
    text = f'Step {step}' + (f'/{total}' if total else '')
    details = []
    if self.loss is not None:
      details.append(f'loss {self.loss:.3f}')
    if rate:
      details.append(f'{rate:.2f} steps/s')
      if total:
        eta = _time_budget.format_duration(max(0, total - step) / rate)
        details.append(f'ETA {eta}')
      else:
        details.append('(measuring speed to fit the time budget)')
    if details:
      text += ': ' + ', '.join(details).replace(', (', ' (')
    return text
