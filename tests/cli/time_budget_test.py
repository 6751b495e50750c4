"""The time-budget arithmetic of `tfnp-trax train`, with made-up timings."""

import json
import math

import numpy as np
import pytest

from tfnp_trax.cli import _time_budget as tb


@pytest.mark.parametrize('text, seconds', [
    ('240', 240.0), ('4m', 240.0), ('1m30s', 90.0), ('1.5h', 5400.0),
    (' 90 S ', 90.0), ('2.5', 2.5), ('0', None), ('off', None),
    ('none', None), ('', None), (None, None), ('0s', None)])
def test_parse_duration(text, seconds):
  assert tb.parse_duration(text) == seconds


@pytest.mark.parametrize('text', ['4 minutes', 'm', '4x', '1m30', '-5',
                                  'inf'])
def test_parse_duration_rejects_non_durations(text):
  with pytest.raises(ValueError, match=r'--time_budget: .* (is not a '
                     r'duration|must be a finite duration)'):
    tb.parse_duration(text)


def test_format_duration():
  assert [tb.format_duration(s) for s in (0, 42.4, 65, 3599.6, 3725)] == [
      '0s', '42s', '1m05s', '1h00m', '1h02m']


def _reference_rate(step, peak, warmup, total):
  """Warm-up then half cosine, in float64, written out independently."""
  step = np.float64(step)
  if step <= warmup:
    return peak * step / warmup
  fraction = np.clip((step - warmup) / (total - warmup + 1), 0.0, 1.0)
  return peak * (1 + np.cos(np.pi * fraction)) / 2


def test_warmup_cosine_matches_reference():
  schedule = tb.WarmupCosine(5e-3, 100, total_steps=1000)
  steps = [0, 1, 50, 100, 101, 400, 999, 1000, 1200]
  got = [schedule(s) for s in steps]
  want = [_reference_rate(s, 5e-3, 100, 1000) for s in steps]
  np.testing.assert_allclose(got, want, rtol=1e-12, atol=0)
  # Hand-checked landmarks: half-way through the warm-up and the decay,
  # and the last step still learns a little.
  assert got[2] == pytest.approx(2.5e-3)
  assert schedule(100 + 901 / 2) == pytest.approx(2.5e-3)
  assert 0 < got[7] < 1e-7 and got[8] == 0


def test_warmup_cosine_total_is_fixed_before_the_steps_it_governs():
  schedule = tb.WarmupCosine(1.0, 10)
  assert schedule(10) == 1.0  # The warm-up needs no total.
  with pytest.raises(RuntimeError, match=r'step 11 is past the warm-up '
                     r'\(10 steps\) but total_steps is not set'):
    schedule(11)
  schedule.set_total_steps(50)
  schedule.set_total_steps(50)  # The same value again is fine.
  with pytest.raises(ValueError, match='total_steps is already 50; steps '
                     'may have run under it, so it cannot become 60'):
    schedule.set_total_steps(60)
  with pytest.raises(ValueError, match='warmup_steps must be at least 1, '
                     'got 0'):
    tb.WarmupCosine(1.0, 0)


def _simulate(total, done, step_s, overheads):
  """Seconds to finish, walking the steps one by one (the reference)."""
  seconds = 0.0
  for step in range(done + 1, total + 1):
    seconds += step_s
    if overheads.checkpoint_every and step % overheads.checkpoint_every == 0:
      seconds += overheads.checkpoint_s
    if overheads.eval_every and step % overheads.eval_every == 0:
      seconds += overheads.eval_s
  if not (overheads.eval_every and total % overheads.eval_every == 0):
    seconds += overheads.eval_s  # The final eval.
  return seconds + overheads.final_s


_OVERHEADS = tb.Overheads(eval_every=250, eval_s=1.6, checkpoint_every=100,
                          checkpoint_s=0.5, final_s=21.85)


@pytest.mark.parametrize('total, done', [(43, 43), (44, 43), (250, 43),
                                         (669, 43), (1000, 0), (1001, 999)])
def test_planned_seconds_matches_step_by_step_walk(total, done):
  got = tb.planned_seconds(total, done, 0.1, _OVERHEADS)
  assert got == pytest.approx(_simulate(total, done, 0.1, _OVERHEADS))


def test_planned_seconds_by_hand():
  # 10 steps of 1 s from step 0, an eval (2 s) at 5 and 10, a checkpoint
  # (0.5 s) at 4 and 8, then 7 s at the end: 10 + 4 + 1 + 7.
  overheads = tb.Overheads(5, 2.0, 4, 0.5, 7.0)
  assert tb.planned_seconds(10, 0, 1.0, overheads) == 22.0
  # Ending off an eval step adds the final eval: 11 + 4 + 1 + 2 + 7.
  assert tb.planned_seconds(11, 0, 1.0, overheads) == 25.0


@pytest.mark.parametrize('seconds_left', [0.0, 25.0, 61.03, 90.07, 500.0])
def test_fit_steps_is_the_last_count_that_fits(seconds_left):
  got = tb.fit_steps(seconds_left, 43, 0.1, 1000, _OVERHEADS)
  fits = [n for n in range(43, 1001, 7)
          if _simulate(n, 43, 0.1, _OVERHEADS) <= seconds_left]
  # Sampled every 7 steps: `got` fits, and 7 more steps do not.
  best = max(fits) if fits else 43
  assert best <= got < best + 7
  assert got == 1000 or _simulate(got + 1, 43, 0.1,
                                  _OVERHEADS) > seconds_left
  assert got == 43 or _simulate(got, 43, 0.1, _OVERHEADS) <= seconds_left


def test_fit_steps_by_hand_and_caps():
  overheads = tb.Overheads(5, 2.0, 4, 0.5, 7.0)
  assert tb.fit_steps(22.0, 0, 1.0, 100, overheads) == 10  # See above.
  assert tb.fit_steps(24.9, 0, 1.0, 100, overheads) == 10
  assert tb.fit_steps(1e9, 0, 1.0, 100, overheads) == 100  # max_steps.
  assert tb.fit_steps(-5.0, 7, 1.0, 100, overheads) == 7  # Over budget.
  with pytest.raises(ValueError, match='step_s must be positive, got 0'):
    tb.fit_steps(10.0, 0, 0, 100, overheads)


def test_plan_round_trips_atomically(tmp_path):
  plan = tb.BudgetPlan(total_steps=986, budget_s=240.0, step_s=0.05,
                       calibration_steps=100, warmup_steps=100)
  assert tb.read_plan(str(tmp_path)) is None
  path = tb.write_plan(str(tmp_path / 'run'), plan)
  assert tb.read_plan(str(tmp_path / 'run')) == plan
  assert json.loads(open(path).read())['total_steps'] == 986
  assert [p.name for p in (tmp_path / 'run').iterdir()] == [tb.PLAN_FILE]
  assert plan.describe() == ('986 steps fit the time budget of 4m00s at '
                             '20.00 steps/s')
  (tmp_path / 'run' / tb.PLAN_FILE).write_text('{"steps": 3}')
  with pytest.raises(ValueError, match='is not a time-budget plan'):
    tb.read_plan(str(tmp_path / 'run'))


def test_reference_schedule_is_not_trivially_constant():
  # Guards the reference above: it decays, so the comparison can fail.
  rates = [_reference_rate(s, 1.0, 10, 100) for s in (10, 50, 100)]
  assert rates[0] == 1.0 and rates[1] < 0.75 and rates[2] < 1e-3
  assert math.isclose(_reference_rate(5, 1.0, 10, 100), 0.5)
