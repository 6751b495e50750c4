"""Tests for `distribute.launch --max_restarts`: restart the group, resume.

The launcher mechanics run workers without TensorFlow. The end-to-end test
runs a two-worker `Loop` (tests/distribute/_restart_script.py) whose worker 1
SIGKILLs itself once, and checks the restarted run ends with weights bitwise
equal to an uninterrupted run. Every run has a hard timeout.
"""

import sys

import numpy as np
import pytest

from distribute import launch as launch_lib
from tests import _subprocess

# Worker 1 fails on the first start of the group only; every worker prints
# which start it is in.
_FAIL_FIRST_START = (
    'import json, os, sys; '
    'i = json.loads(os.environ["TF_CONFIG"])["task"]["index"]; '
    'a = int(os.environ["TFNP_LAUNCH_ATTEMPT"]); '
    'print("worker", i, "start", a, os.environ["TF_CONFIG"]); '
    'sys.exit(5 if (i == 1 and a == 0) else 0)')

_ALWAYS_FAIL_ON_1 = (
    'import json, os, sys; '
    'i = json.loads(os.environ["TF_CONFIG"])["task"]["index"]; '
    'print("line before the failure", i); '
    'print("disk on fire", i); '
    'sys.exit(7 if i == 1 else 0)')


def test_failed_worker_restarts_the_whole_group(capfd):
  status = launch_lib.main(['--workers', '2', '--timeout', '60',
                            '--max_restarts', '2', '--', sys.executable, '-c',
                            _FAIL_FIRST_START])
  captured = capfd.readouterr()
  assert status == 0, captured.err
  lines = [line for line in captured.out.splitlines() if 'start' in line]
  starts = sorted(line.split()[2:6] for line in lines)
  # Both workers ran twice: the whole group restarted, not just worker 1.
  assert [s[:4] for s in starts] == [
      ['worker', '0', 'start', '0'], ['worker', '0', 'start', '1'],
      ['worker', '1', 'start', '0'], ['worker', '1', 'start', '1']]
  assert ('distribute.launch: worker 1 exited with code 5; stopping'
          in captured.err)
  assert ('distribute.launch: restarting all 2 worker(s) (restart 1 of 2); '
          'they resume from their last checkpoint.') in captured.err
  # The restarted group listens on fresh ports.
  configs = {line.split(' ', 6)[6] for line in lines}
  assert len(configs) == 4


def test_giving_up_after_max_restarts_names_the_worker(capfd):
  status = launch_lib.main(['--workers', '2', '--timeout', '60',
                            '--max_restarts', '1', '--', sys.executable, '-c',
                            _ALWAYS_FAIL_ON_1])
  err = capfd.readouterr().err
  assert status == 7
  assert err.count('restarting all 2 worker(s)') == 1
  assert ('distribute.launch: giving up: worker 1 exited with code 7 after 1 '
          'restart(s) (--max_restarts 1). Its last lines:\n'
          '  line before the failure 1\n  disk on fire 1') in err


def test_without_max_restarts_a_failure_is_final(capfd):
  status = launch_lib.main(['--workers', '2', '--timeout', '60', '--',
                            sys.executable, '-c', _ALWAYS_FAIL_ON_1])
  err = capfd.readouterr().err
  assert status == 7
  assert 'restarting' not in err and 'giving up' not in err


def test_bad_max_restarts():
  with pytest.raises(ValueError, match=r'launch: max_restarts must be an int '
                     r'>= 0, got -1\.'):
    launch_lib.launch(['true'], workers=1, max_restarts=-1)


_LAUNCH = """
import subprocess, sys
proc = subprocess.run(
    [sys.executable, '-m', 'distribute.launch', '--workers', '2',
     '--timeout', '150', '--collective_timeout', '60', '--max_restarts',
     '{restarts}', '--', sys.executable, '-m',
     'tests.distribute._restart_script', {out!r}, '7', {result!r}] + {extra},
    capture_output=True, text=True, timeout=170)
print('RC', proc.returncode)
print(proc.stdout[-4000:])
print(proc.stderr[-4000:])
"""


def _launch(out, result, restarts, extra):
  return _subprocess.run_python(
      _LAUNCH.format(out=str(out), result=str(result), restarts=restarts,
                     extra=extra), timeout=200)


def test_sigkilled_worker_restarts_and_ends_bitwise_equal(tmp_path):
  plain = _launch(tmp_path / 'plain', tmp_path / 'plain.npz', 0, [])
  assert 'RC 0' in plain, plain
  killed = _launch(tmp_path / 'killed', tmp_path / 'killed.npz', 1,
                   ['--die_worker', '1', '--die_at_step', '5'])
  assert 'RC 0' in killed, killed
  assert '[worker 1] worker 1 dies after step 5' in killed
  assert 'restarting all 2 worker(s) (restart 1 of 1)' in killed
  # The restarted group resumed from the step-4 checkpoint, not from zero.
  assert '[worker 0] resumed at step 4' in killed
  assert '[worker 1] resumed at step 4' in killed
  want = np.load(tmp_path / 'plain.npz')
  got = np.load(tmp_path / 'killed.npz')
  assert len(want.files) == 4
  for key in want.files:
    np.testing.assert_array_equal(got[key], want[key])
