"""Tests of choosing the pylm model size for a time budget."""

import numpy as onp
import pytest

from tfnp_trax.cli import _model_size as ms

_LADDER = (
    ms.Size('a', 1, 16, 2, 8, 2, 1e-3, 0),
    ms.Size('b', 1, 32, 2, 8, 2, 1e-3, 100),
    ms.Size('c', 2, 32, 2, 8, 2, 1e-3, 150),
)


def _timer(seconds):
  timed = []

  def step_seconds(size):
    timed.append(size.name)
    return seconds[size.name]
  return step_seconds, timed


def test_takes_the_biggest_size_that_gets_its_steps():
  step_seconds, timed = _timer({'a': 0.1, 'b': 0.5, 'c': 0.8})
  # 100 s: a gets 1000 steps, b 200 (needs 100), c 125 (needs 150).
  choice = ms.choose(_LADDER, step_seconds, 100.0)
  assert choice.size.name == 'b' and choice.steps == 200
  assert choice.step_s == 0.5
  assert timed == ['a', 'b', 'c']
  assert len(choice.reasons) == 3
  assert '~125 steps (needs 150)' in choice.reasons[2]


def test_stops_timing_at_the_first_size_that_does_not_fit():
  step_seconds, timed = _timer({'a': 0.1, 'b': 2.0, 'c': 0.01})
  choice = ms.choose(_LADDER, step_seconds, 100.0)
  assert choice.size.name == 'a' and choice.steps == 1000
  assert timed == ['a', 'b']  # c is never built.


def test_a_slow_machine_keeps_the_smallest_size():
  step_seconds, _ = _timer({'a': 10.0, 'b': 20.0, 'c': 30.0})
  choice = ms.choose(_LADDER, step_seconds, 100.0)
  assert choice.size.name == 'a' and choice.steps == 10


def test_a_size_is_not_timed_where_the_one_below_lacks_its_steps():
  step_seconds, timed = _timer({'a': 0.1, 'b': 0.8, 'c': 0.9})
  # 100 s: a gets 1000, b 125 (needs 100); c needs 150 > 125: not built.
  choice = ms.choose(_LADDER, step_seconds, 100.0)
  assert choice.size.name == 'b' and timed == ['a', 'b']
  assert choice.reasons[2] == ('c (2 layers x 32 wide, batches of 2 x 8 '
                               'bytes): not timed; it needs 150 steps, '
                               'more than b gets')
  step_seconds, timed = _timer({'a': 2.0, 'b': 0.01, 'c': 0.01})
  assert ms.choose(_LADDER, step_seconds, 100.0).size.name == 'a'
  assert timed == ['a']  # 50 steps < b's 100.


def test_a_fast_machine_climbs_to_the_top():
  step_seconds, _ = _timer({'a': 0.01, 'b': 0.02, 'c': 0.03})
  assert ms.choose(_LADDER, step_seconds, 100.0).size.name == 'c'


def test_bad_timings_and_empty_ladder_are_refused():
  with pytest.raises(ValueError, match='step time of a'):
    ms.choose(_LADDER, lambda size: 0.0, 10.0)
  with pytest.raises(ValueError, match='step time of a'):
    ms.choose(_LADDER, lambda size: float('nan'), 10.0)
  with pytest.raises(ValueError, match='empty'):
    ms.choose((), lambda size: 1.0, 10.0)


def test_the_ladder_grows_and_holds_the_default_sample():
  flops = [s.n_layers * s.d_model ** 2 * s.batch_size * s.seq_len
           for s in ms.LADDER]
  assert flops == sorted(flops) and len(set(flops)) == len(flops)
  assert ms.LADDER[0].min_steps == 0
  for size in ms.LADDER:
    assert size.d_model % size.n_heads == 0
    assert size.seq_len >= 128  # The 127-byte sample stays in trained positions.


def test_choice_round_trips_through_its_file(tmp_path):
  choice = ms.Choice(ms.LADDER[1], 0.25, 480, ('x', 'y'))
  path = ms.write_size(str(tmp_path), choice)
  assert path == str(tmp_path / ms.SIZE_FILE)
  assert ms.read_size(str(tmp_path)) == choice
  assert [p.name for p in tmp_path.iterdir()] == [ms.SIZE_FILE]
  assert ms.read_size(str(tmp_path / 'none')) is None
  (tmp_path / ms.SIZE_FILE).write_text('{"size": 3}')
  with pytest.raises(ValueError, match='does not describe a model size'):
    ms.read_size(str(tmp_path))


def test_probe_times_steps_after_compiling():
  ticks = iter(float(t) for t in range(100))
  size = ms.Size('p', 1, 8, 2, 4, 2, 1e-3, 0)
  x = onp.arange(8, dtype=onp.int32).reshape(2, 4) % 5
  batch = (x, x, onp.ones((2, 4), onp.float32))
  # The fake clock moves 1 per read. Reads: the start (0); none while
  # fewer than 3 steps ran; after steps 3 and 4 (1 and 2 s, under 2.5);
  # after step 5 (3 s: done); the end (4). 5 steps in 4 s.
  seconds = ms.probe_step_seconds(size, 5, batch, timed_s=2.5, min_steps=3,
                                  clock=lambda: next(ticks))
  assert seconds == pytest.approx(4 / 5)
