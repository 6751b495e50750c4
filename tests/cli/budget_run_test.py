"""Sizing a budgeted run: calibration on a fake Loop with a fake clock."""

import functools
import os

import pytest

from tfnp_trax.cli import _budget_run
from tfnp_trax.cli import _progress
from tfnp_trax.cli import _time_budget as tb


class FakeClock:

  def __init__(self):
    self.now = 0.0

  def __call__(self):
    return self.now


class FakeLoop:
  """Runs no model: each step advances the clock by a set time."""

  def __init__(self, clock, output_dir, step=0, compile_s=5.0, step_s=0.125,
               checkpoint_s=0.5):
    self.clock, self.output_dir, self.step = clock, output_dir, step
    self.compile_s, self.step_s, self.checkpoint_s = (compile_s, step_s,
                                                      checkpoint_s)
    self.lines = []
    self.progress = _progress.Progress(self, clock=clock,
                                       out=self.lines.append)
    self.ran = []
    self.saved = []

  def save_checkpoint(self):
    # A checkpoint after step 1's costs less: no first-time work.
    self.saved.append(self.step)
    self.clock.now += self.checkpoint_s / 2
    return os.path.join(self.output_dir, f'ckpt-{self.step}')

  def wait_for_checkpoints(self):
    pass

  def run(self, n):
    self.ran.append(n)
    for _ in range(n):
      self.step += 1
      first = self.progress.compile_s is None
      self.progress.on_step_begin(self.step)
      self.clock.now += self.compile_s if first else self.step_s
      self.progress.on_step_end(self.step)
      if self.step == 1:
        self.clock.now += self.checkpoint_s


_SHAPE = _budget_run.RunShape(eval_every=250, n_eval_batches=32,
                              checkpoint_every=250, sample_length=127,
                              export=False)


def _total(loop, schedule, budget_s, max_steps=2000, explicit_steps=None):
  lines = []
  total = _budget_run.total_steps(
      loop, schedule, loop.progress, _SHAPE, budget_s=budget_s,
      max_steps=max_steps, explicit_steps=explicit_steps, started_at=0.0,
      clock=loop.clock, out=lines.append)
  return total, lines


def test_estimate_overheads_from_measured_times():
  overheads = _budget_run.estimate_overheads(_SHAPE, step_s=0.1,
                                             compile_s=5.0, checkpoint_s=0.5)
  # Evals: 32 batches at half a step each. The end: exit (3 s), 127
  # sampled bytes at half a step, and compiling the eval (1x) and the
  # sampler (1.5x) at 5 s each.
  assert overheads == tb.Overheads(250, 1.6, 250, 0.5,
                                   pytest.approx(3 + 6.35 + 12.5))


def test_estimate_overheads_counts_a_final_held_out_eval():
  shape = _SHAPE._replace(final_eval_batches=300)
  overheads = _budget_run.estimate_overheads(shape, step_s=0.1,
                                             compile_s=5.0, checkpoint_s=0.5)
  # Besides the above: 300 batches at half a step (15 s) and compiling
  # that eval (5 s).
  assert overheads.final_s == pytest.approx(3 + 6.35 + 12.5 + 15 + 5)


def test_budget_calibrates_in_the_warm_up_then_fits_and_records(tmp_path):
  clock = FakeClock()
  loop = FakeLoop(clock, str(tmp_path))
  schedule = tb.WarmupCosine(5e-3, 100)
  total, lines = _total(loop, schedule, budget_s=100.0)
  # Compile (1 step), 2 rough steps, then 8 s of 1/8 s steps: 64 steps.
  assert _budget_run.CALIBRATION_S == 8.0
  assert loop.ran == [1, 2, 64] and loop.step == 67
  # ... and one more checkpoint, timed for the fit (0.25 s, below step
  # 1's 0.5 s with its first-time work).
  assert loop.saved == [67]
  assert clock.now == 5 + 0.5 + 0.25 + 8.0 + 0.25
  # The fit counts each step 10% slower than timed (SUSTAINED_SLOWDOWN).
  assert _budget_run.SUSTAINED_SLOWDOWN == 1.1
  step_s = 0.125 * 1.1
  overheads = _budget_run.estimate_overheads(_SHAPE, step_s, 5.0, 0.25)
  assert total == tb.fit_steps(100.0 - clock.now, 67, step_s, 2000,
                               overheads)
  # The prediction uses the whole budget and no more.
  end = clock.now + tb.planned_seconds(total, 67, step_s, overheads)
  assert 100.0 - step_s - overheads.eval_s - 0.5 < end <= 100.0
  # By hand, at 0.1375 s a step: 86 s left; the end costs 24.23 s
  # (3 + 127 * 0.1375 / 2 + 12.5), an eval 2.2 s (32 half steps); one eval
  # and checkpoint (step 250: 2.2 + 0.25 s) and the final eval leave
  # 57.12 s: 415 steps after step 67.
  assert total == 482
  plan = tb.read_plan(str(tmp_path))
  assert plan == tb.BudgetPlan(total, 100.0, step_s, 67, 100)
  assert lines == [f'Time budget: {total} steps fit the time budget of '
                   f'1m40s at 7.27 steps/s (compiling took 5s; predicted '
                   f'end {tb.format_duration(end)}).']
  # Only warm-up steps ran before the total was known.
  assert loop.step <= schedule.warmup_steps


def test_a_respaced_run_is_fitted_with_the_evals_it_will_make(tmp_path):
  # Evals and checkpoints every 250 steps as planned, or every 1000 once
  # the run is long: the fit must count the 1000-step spacing.
  def respace(shape, total):
    return shape._replace(eval_every=1000 if total >= 2000 else 250,
                          checkpoint_every=1000 if total >= 2000 else 250)
  budget_s = 600.0

  def fitted(respace_fn):
    loop = FakeLoop(FakeClock(), str(tmp_path / str(bool(respace_fn))))
    total = _budget_run.total_steps(
        loop, tb.WarmupCosine(5e-3, 100), loop.progress, _SHAPE,
        budget_s=budget_s, max_steps=100_000, explicit_steps=None,
        started_at=0.0, clock=loop.clock, out=lambda line: None,
        respace=respace_fn)
    return total, loop
  plain, _ = fitted(None)
  total, loop = fitted(respace)
  step_s = 0.125 * _budget_run.SUSTAINED_SLOWDOWN
  spaced = respace(_SHAPE, total)
  overheads = _budget_run.estimate_overheads(spaced, step_s, 5.0, 0.25)
  # More steps than with evals every 250, and exactly what fits with
  # evals every 1000: one more step would not.
  assert total > plain and spaced.eval_every == 1000
  left = budget_s - loop.clock.now
  assert tb.planned_seconds(total, loop.step, step_s, overheads) <= left
  assert tb.planned_seconds(total + 1, loop.step, step_s, overheads) > left
  assert total == tb.fit_steps(left, loop.step, step_s, 100_000, overheads)


def test_calibration_stops_at_the_end_of_the_warm_up(tmp_path):
  loop = FakeLoop(FakeClock(), str(tmp_path), step_s=1 / 64)
  total, _ = _total(loop, tb.WarmupCosine(1.0, 20), budget_s=1e6)
  assert loop.ran == [1, 2, 17] and loop.step == 20
  assert total == 2000  # Everything fits: the cap.
  # No checkpoint is timed at the warm-up's last step: written before the
  # plan, it would leave a run killed in between past its warm-up.
  assert loop.saved == []


def test_resume_reuses_the_recorded_count_without_timing(tmp_path):
  plan = tb.BudgetPlan(total_steps=777, budget_s=240.0, step_s=0.2,
                       calibration_steps=60, warmup_steps=100)
  tb.write_plan(str(tmp_path), plan)
  loop = FakeLoop(FakeClock(), str(tmp_path), step=250)
  # A budget so small that a new fit would stop at once: it is not used.
  total, lines = _total(loop, tb.WarmupCosine(1.0, 100), budget_s=1.0)
  assert total == 777 and loop.ran == []
  assert lines == [f'Resuming with the 777 steps the time budget fixed in '
                   f'{os.path.join(str(tmp_path), tb.PLAN_FILE)}.']
  # An explicit --steps replaces it, and says so.
  total, lines = _total(loop, tb.WarmupCosine(1.0, 100), budget_s=None,
                        explicit_steps=900)
  assert total == 900 and 'replaces the 777 steps' in lines[0]


def test_a_stale_plan_of_an_unstarted_run_is_ignored(tmp_path):
  tb.write_plan(str(tmp_path), tb.BudgetPlan(777, 240.0, 0.2, 60, 100))
  loop = FakeLoop(FakeClock(), str(tmp_path))
  total, _ = _total(loop, tb.WarmupCosine(1.0, 100), budget_s=None,
                    max_steps=300)
  assert total == 300 and loop.ran == []


def test_no_budget_or_past_the_warm_up_runs_max_steps(tmp_path):
  loop = FakeLoop(FakeClock(), str(tmp_path))
  assert _total(loop, tb.WarmupCosine(1.0, 100), None, 300) == (300, [])
  loop = FakeLoop(FakeClock(), str(tmp_path), step=150)
  total, lines = _total(loop, tb.WarmupCosine(1.0, 100), 60.0, 300)
  assert total == 300 and loop.ran == []
  assert 'did not start with a time budget' in lines[0]


def test_tiny_warm_up_assumes_compile_time_per_step(tmp_path):
  loop = FakeLoop(FakeClock(), str(tmp_path))
  total, _ = _total(loop, tb.WarmupCosine(1.0, 2), budget_s=30.0,
                    max_steps=20)
  # After 5.5 s, each further step is taken to cost 5 s, and the end about
  # 3 + 63.5 * 5 ... which is over budget: no step after the first.
  assert loop.ran == [1] and total == 1


def test_progress_lines_and_eta_exclude_compilation():
  clock = FakeClock()
  lines = []
  progress = _progress.Progress(None, every_s=10.0, total_steps=None,
                                clock=clock, out=lines.append)
  progress.on_step_begin(1)
  clock.now = 30.0  # A slow compile.
  progress.on_step_end(1)
  assert progress.compile_s == 30.0
  for step in range(2, 26):  # 0.5 s steps.
    clock.now += 0.5
    progress.on_step_end(step)
  assert progress.steps_per_second(25) == pytest.approx(2.0)
  progress.total_steps = 125
  clock.now += 0.5
  progress.on_step_end(26)
  assert lines == ['Compiling the training step (step 1)...',
                   'Compiled; step 1 took 30s.',
                   'Step 21: 2.00 steps/s (measuring speed to fit the time '
                   'budget)',
                   ]
  # 99 steps left at 2 steps/s: 50 s, with the 30 s compile left out.
  assert progress.line(26) == 'Step 26/125: 2.00 steps/s, ETA 50s'
  assert progress.call_at(7)


def test_progress_is_built_by_loop_with_partial():
  factory = functools.partial(_progress.Progress, every_s=1.0)
  assert factory('loop')._loop == 'loop'  # pylint: disable=protected-access
