"""Choosing a `tfnp-trax train` run's step count: flags, plan or budget.

With a time budget the first steps of the warm-up are run and timed here
(after the one that compiles), the costs of the rest of the run are
estimated from them, and the step count that fits is written down (see
`_time_budget`) before any step after the warm-up runs.
"""

import math
import os
import time
from typing import NamedTuple

from tfnp_trax.cli import _time_budget

__all__ = ['RunShape', 'total_steps', 'estimate_overheads',
           'CALIBRATION_S', 'SUSTAINED_SLOWDOWN']

# Seconds of steps timed after compilation (within the warm-up): long
# enough to average out a slow stretch, short against a 4-minute budget.
# 4 s once timed a shared 2-core machine at 9.3 steps/s that then ran at
# 11.6, and the run ended a minute early.
CALIBRATION_S = 8.0

# Steps timed in the warm-up run faster than the run's average: on a
# 2-core CPU the default pylm run timed 14.5 steps/s there and averaged
# 12.7 over its 3000 steps (evals and checkpoints between them, a CPU that
# slows under sustained load), which overran a 4-minute budget by 12 s.
SUSTAINED_SLOWDOWN = 1.1

# An eval batch runs the model forward only, about a third of a training
# step (forward and backward); a half leaves room for the metric layers.
_EVAL_BATCH_FRACTION = 0.5
# What compiling the eval, the sampling (predict mode) and the export cost,
# as multiples of compiling the training step (measured on 2-core CPUs:
# each is below 1); an export also traces the model twice.
_EVAL_COMPILES = 1.0
_SAMPLE_COMPILES = 1.5
_EXPORT_COMPILES = 3.0
# A sampled byte runs one position through the model with its cache.
_SAMPLE_BYTE_FRACTION = 0.5
# Closing the summary writers and the interpreter.
_EXIT_S = 3.0


class RunShape(NamedTuple):
  """The parts of a run that cost time besides its training steps."""
  eval_every: int
  n_eval_batches: int
  checkpoint_every: int
  sample_length: int
  export: bool
  # An eval after the last step over this many batches (the training
  # batch's size) besides the regular ones: pylm's held-out eval.
  final_eval_batches: int = 0


def estimate_overheads(shape, step_s, compile_s, checkpoint_s):
  """The `Overheads` of a run from its measured step and compile times.

  Args:
    shape: a RunShape.
    step_s: seconds per training step.
    compile_s: seconds the compiling step took.
    checkpoint_s: seconds one checkpoint took.

  Returns:
    A `_time_budget.Overheads`.
  """
  compiles = _EVAL_COMPILES
  final_s = _EXIT_S
  if shape.final_eval_batches:
    compiles += _EVAL_COMPILES
    final_s += shape.final_eval_batches * step_s * _EVAL_BATCH_FRACTION
  if shape.sample_length:
    compiles += _SAMPLE_COMPILES
    final_s += shape.sample_length * step_s * _SAMPLE_BYTE_FRACTION
  if shape.export:
    compiles += _EXPORT_COMPILES
  return _time_budget.Overheads(
      eval_every=shape.eval_every,
      eval_s=shape.n_eval_batches * step_s * _EVAL_BATCH_FRACTION,
      checkpoint_every=shape.checkpoint_every, checkpoint_s=checkpoint_s,
      final_s=final_s + compiles * compile_s)


def total_steps(loop, schedule, progress, shape, *, budget_s, max_steps,
                explicit_steps, started_at, clock=time.monotonic,
                out=print, respace=None):
  """The run's step count; with a budget, runs and times the first steps.

  Args:
    loop: the Loop (maybe resumed).
    schedule: its `WarmupCosine`, total steps not set yet.
    progress: the Loop's `Progress` callback (it keeps step end times).
    shape: a RunShape.
    budget_s: the time budget in seconds, or None.
    max_steps: the most steps to run.
    explicit_steps: --steps if given, else None.
    started_at: when the budget started, on `clock`.
    clock: a monotonic clock.
    out: prints a line.
    respace: optional (shape, total) -> the RunShape a run of `total`
      steps will have, for a run whose evals and checkpoints are spaced to
      its step count once that is known: the fit then counts the evals
      and checkpoints the run will make, not those of `shape`'s spacing.

  Returns:
    The total step count (never below `loop.step`).
  """
  output_dir = loop.output_dir
  plan = _time_budget.read_plan(output_dir) if (
      loop.step and output_dir) else None
  if plan is not None:
    path = os.path.join(output_dir, _time_budget.PLAN_FILE)
    if explicit_steps and explicit_steps != plan.total_steps:
      out(f'--steps {explicit_steps} replaces the {plan.total_steps} steps '
          f'the time budget fixed in {path}; the learning-rate decay '
          f'follows the new count.')
      return max(explicit_steps, loop.step)
    out(f'Resuming with the {plan.total_steps} steps the time budget '
        f'fixed in {path}.')
    return plan.total_steps
  if budget_s is None:
    return max_steps
  if loop.step >= schedule.warmup_steps:
    out(f'The run in {output_dir} did not start with a time budget and is '
        f'past its warm-up, so its step count cannot change: it runs to '
        f'{max_steps} steps.')
    return max(max_steps, loop.step)
  step_s, compile_s, checkpoint_s = _calibrate(loop, schedule, progress,
                                               clock)
  step_s *= SUSTAINED_SLOWDOWN
  seconds_left = budget_s - (clock() - started_at)
  total, overheads = _fit(shape, respace, seconds_left, loop.step, step_s,
                          compile_s, checkpoint_s, max_steps)
  plan = _time_budget.BudgetPlan(
      total_steps=total, budget_s=budget_s, step_s=step_s,
      calibration_steps=loop.step, warmup_steps=schedule.warmup_steps)
  if output_dir:
    _time_budget.write_plan(output_dir, plan)
  if total >= max_steps:
    out(f'All {total} steps fit the time budget of '
        f'{_time_budget.format_duration(budget_s)} at '
        f'{1 / step_s:.2f} steps/s.')
  else:
    out(f'Time budget: {plan.describe()} (compiling took '
        f'{_time_budget.format_duration(compile_s)}; predicted end '
        f'{_time_budget.format_duration(budget_s - seconds_left + _time_budget.planned_seconds(total, loop.step, step_s, overheads))}).')
  return total


def _fit(shape, respace, seconds_left, steps_done, step_s, compile_s,
         checkpoint_s, max_steps):
  """(total, overheads): the most steps that fit, with the overheads of
  the spacing the run will have at that step count (`respace`)."""
  def fit(run_shape):
    overheads = estimate_overheads(run_shape, step_s, compile_s,
                                   checkpoint_s)
    return _time_budget.fit_steps(seconds_left, steps_done, step_s,
                                  max_steps, overheads), overheads
  total, overheads = fit(shape)
  if respace is None:
    return total, overheads
  # A longer run spaces its evals and checkpoints wider, so it costs less
  # per step: each count fitted with the spacing of a shorter run fits its
  # own spacing too, and the counts only grow. A few rounds settle them.
  for _ in range(5):
    more, _ = fit(respace(shape, total))
    if more <= total:
      break
    total = more
  return total, estimate_overheads(respace(shape, total), step_s, compile_s,
                                   checkpoint_s)


def _calibrate(loop, schedule, progress, clock):
  """Runs steps of the warm-up; returns (step_s, compile_s, checkpoint_s)."""
  first = loop.step + 1
  loop.run(1)
  compile_s = progress.compile_s
  # Step 1 is a checkpoint step: its checkpoint ran after the step ended.
  checkpoint_s = max(0.0, clock() - progress.end_times[first])
  room = schedule.warmup_steps - loop.step
  if room < 2:  # Too short a warm-up to time a step: assume the worst.
    return compile_s, compile_s, checkpoint_s
  loop.run(2)
  rough = progress.end_times[loop.step] - progress.end_times[loop.step - 1]
  room -= 2
  n = min(room, max(3, math.ceil(CALIBRATION_S / max(rough, 1e-3))))
  if n < 3:
    return max(rough, 1e-6), compile_s, checkpoint_s
  loop.run(n)
  last = loop.step
  step_s = (progress.end_times[last] -
            progress.end_times[last - n + 1]) / (n - 1)
  # A checkpoint at the warm-up's last step, written before the plan,
  # would leave a run killed in between unable to fit a step count on
  # resume (it would be past its warm-up): there step 1's time stands.
  if loop.step < schedule.warmup_steps:
    checkpoint_s = _time_checkpoint(loop, clock, checkpoint_s)
  return max(step_s, 1e-6), compile_s, checkpoint_s


def _time_checkpoint(loop, clock, first_s):
  """Seconds a checkpoint costs the run, timed on one written now.

  Step 1's checkpoint also paid for what only the first one does (it
  created the folders and wrote Trax's files before any background write
  ran): counted for every checkpoint of the run, it left a 4-minute run
  of the default pylm model 30 s of its budget unused. This one is timed
  with its whole write, so it never counts less than a save costs; where
  nothing is written (no output folder, not the chief), the first one's
  time stands.
  """
  start = clock()
  if loop.save_checkpoint() is None:
    return first_s
  loop.wait_for_checkpoints()
  return max(0.0, clock() - start)
