"""Tests of `tfnp-trax train`'s progress: the bar, the lines, the loss."""

import io

import pytest

from tfnp_trax.cli import _progress


class _Clock:

  def __init__(self):
    self.now = 0.0

  def __call__(self):
    return self.now


class _Loop:
  last_loss = None


class _Terminal(io.StringIO):

  def isatty(self):
    return True


def test_loss_average_is_unbiased_and_skips_non_finite():
  average = _progress.LossAverage(decay=0.5)
  assert average.value is None
  average.add(4.0)
  assert average.value == 4.0  # Not pulled towards 0.
  average.add(float('nan'))
  average.add(None)
  average.add(1.0)
  # Weights 0.5 and 1: (0.5 * 4 + 1) / 1.5.
  assert average.value == pytest.approx(2.0)


def test_bar_text():
  assert (_progress.bar_text(50, 200, 1.23456, 4.0) ==
          '[======>                 ] 50/200 loss 1.235 4.0 steps/s ETA 38s')
  assert _progress.bar_text(200, 200).startswith('[' + '=' * 24 + '] 200')
  assert _progress.bar_text(7, None, None, None) == 'step 7'
  assert len(_progress.bar_text(50, 200, 1.0, 4.0, columns=20)) == 19


def test_a_terminal_gets_a_bar_redrawn_in_place():
  clock, loop, screen = _Clock(), _Loop(), _Terminal()
  lines = []
  progress = _progress.Progress(loop, total_steps=4, clock=clock,
                                stream=screen)
  assert progress.bar
  progress._out = lines.append  # pylint: disable=protected-access
  progress.on_step_begin(1)
  clock.now = 5.0
  loop.last_loss = 3.0
  progress.on_step_end(1)
  for step, loss in ((2, 2.0), (3, 2.0), (4, 1.0)):
    clock.now += 1.0
    loop.last_loss = loss
    progress.on_step_end(step)
  assert lines == ['Compiling the training step (step 1)...',
                   'Compiled; step 1 took 5s.']
  draws = screen.getvalue().split('\r')[1:]
  assert len(draws) == 3
  assert draws[0].startswith('[============>           ] 2/4 loss ')
  assert '1.0 steps/s ETA 2s' in draws[0]
  assert draws[-1].endswith('\n')  # The last step ends the bar's line.
  # decay 0.95: (3 * .95**3 + 2 * .95**2 + 2 * .95 + 1) / sum of weights.
  weights = [0.95 ** 3, 0.95 ** 2, 0.95, 1.0]
  expected = sum(w * x for w, x in zip(weights, (3, 2, 2, 1))) / sum(weights)
  assert f'loss {expected:.3f}' in draws[-1]
  progress.close()  # Nothing left to end.
  assert screen.getvalue().count('\n') == 1


def test_close_ends_a_bar_midway_and_pads_a_shorter_redraw():
  clock, screen = _Clock(), _Terminal()
  progress = _progress.Progress(_Loop(), total_steps=100, clock=clock,
                                stream=screen, out=lambda line: None,
                                bar=True)
  progress.on_step_begin(1)
  progress.on_step_end(1)
  clock.now = 1.0
  progress.on_step_end(2)
  first = screen.getvalue()
  progress.close()
  assert screen.getvalue() == first + '\n'


def test_not_a_terminal_gets_plain_lines_with_the_loss():
  clock, loop = _Clock(), _Loop()
  lines = []
  progress = _progress.Progress(loop, every_s=10.0, total_steps=30,
                                clock=clock, out=lines.append)
  assert not progress.bar
  progress.on_step_begin(1)
  progress.on_step_end(1)
  for step in range(2, 13):
    clock.now += 1.0
    loop.last_loss = 2.0
    progress.on_step_end(step)
  assert lines[2:] == ['Step 11/30: loss 2.000, 1.00 steps/s, ETA 19s']
  assert progress.loss == 2.0  # Step 1's missing loss is skipped.
