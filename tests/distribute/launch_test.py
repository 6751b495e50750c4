"""Tests for distribute.launch: local multi-worker runs and their failures.

The TensorFlow runs use `tests/distribute/_mw_train_script.py`; each is
started through the command line, inside `run_python` with a hard timeout.
"""

import io
import json
import os
import sys
import time

import numpy as np
import pytest

from distribute import launch as launch_lib
from tests import _subprocess
from tests.distribute import _mw_train_script

_SCRIPT = os.path.join(os.path.dirname(__file__), '_mw_train_script.py')

# Runs the launcher's command line and reports its exit code, output and
# wall time as JSON.
_RUN_CLI = """
    import json, subprocess, sys, time
    start = time.monotonic()
    proc = subprocess.run([sys.executable, '-m', 'distribute.launch'] + {args},
                          capture_output=True, text=True, timeout={timeout})
    print(json.dumps({{'rc': proc.returncode, 'out': proc.stdout,
                      'err': proc.stderr,
                      'seconds': time.monotonic() - start,
                      'end': time.time()}}))
    """


def _cli(args, timeout):
  code = _RUN_CLI.format(args=repr(args), timeout=timeout)
  return json.loads(_subprocess.run_python(code, timeout=timeout + 30))


def _train_args(out, *extra):
  return [sys.executable, _SCRIPT, '--out', str(out), '--steps', '4', *extra]


def _numpy_sgd(steps, lr=0.1):
  x, y = _mw_train_script._data()  # pylint: disable=protected-access
  w, b = np.zeros(3), 0.0
  for _ in range(steps):
    err = x @ w + b - y
    w, b = w - lr * 2 * x.T @ err / len(y), b - lr * 2 * err.mean()
  return w, b


def test_two_workers_match_single_process(tmp_path):
  single = tmp_path / 'single.json'
  _subprocess.run_python(
      f'import runpy, sys\n'
      f'sys.argv = {_train_args(single)[1:]!r}\n'
      f"runpy.run_path(sys.argv[0], run_name='__main__')\n", timeout=120)
  multi = tmp_path / 'multi.json'
  res = _cli(['--workers', '2', '--timeout', '100', '--collective_timeout',
              '30', '--'] + _train_args(multi), timeout=110)
  assert res['rc'] == 0, res['err'][-3000:]
  assert '[worker 0] strategy CollectiveAllReduceStrategy with 2 replicas' in (
      res['out'])
  assert '[worker 1] step 4:' in res['out']
  want, got = json.loads(single.read_text()), json.loads(multi.read_text())
  assert (want['replicas'], got['replicas']) == (1, 2)
  np.testing.assert_allclose(got['w'], want['w'], rtol=1e-5)
  np.testing.assert_allclose(got['b'], want['b'], rtol=1e-5)
  w_ref, b_ref = _numpy_sgd(steps=4)
  np.testing.assert_allclose(want['w'], w_ref, rtol=1e-9)
  np.testing.assert_allclose(want['b'], b_ref, rtol=1e-9)
  print(f"two-worker run: {res['seconds']:.1f} s")


def test_killed_worker_fails_the_run(tmp_path):
  res = _cli(['--workers', '2', '--timeout', '100', '--collective_timeout',
              '30', '--'] + _train_args(tmp_path / 'w.json', '--die_worker',
                                        '1', '--die_after', '2'),
             timeout=110)
  assert res['rc'] == 1
  assert ('distribute.launch: worker 1 was killed by signal SIGKILL (exit '
          'code -9); stopping 1 other running worker(s) [0].') in res['err']
  killed_at = float(res['out'].split('killing myself at ')[1].split()[0])
  assert res['end'] - killed_at < 60
  assert not (tmp_path / 'w.json').exists()
  print(f"killed-worker run: {res['seconds']:.1f} s, "
        f"{res['end'] - killed_at:.1f} s after the kill")


def test_worker_that_never_joins_times_out(tmp_path):
  res = _cli(['--workers', '2', '--timeout', '100', '--collective_timeout',
              '5', '--'] + _train_args(tmp_path / 'w.json', '--hang_worker',
                                       '1'), timeout=110)
  assert res['rc'] == 1
  assert ("[worker 0] TimeoutError: get_strategy('multiworker'): the cluster "
          'did not form within 5 s') in res['out']
  assert ('distribute.launch: worker 0 exited with code 1; stopping 1 other '
          'running worker(s) [1].') in res['err']
  assert res['seconds'] < 100  # ended by the collective timeout, not --timeout
  print(f"never-joining-worker run: {res['seconds']:.1f} s")


# The launcher mechanics below need no TensorFlow in the workers, so they
# run the Python API in this process; each run has a hard `timeout`.

_PRINT_ENV = ('import json, os; c = json.loads(os.environ["TF_CONFIG"]); '
              'print(c["task"]["index"], c["cluster"]["worker"], '
              'os.environ.get("TFNP_COLLECTIVE_TIMEOUT"))')


def test_workers_get_tf_config_and_prefixed_output():
  stream = io.StringIO()
  codes = launch_lib.launch([sys.executable, '-c', _PRINT_ENV], workers=3,
                            timeout=60, collective_timeout=7.5, stream=stream)
  assert codes == [0, 0, 0]
  lines = sorted(stream.getvalue().splitlines())
  assert [line.split()[:3] for line in lines] == [
      ['[worker', '0]', '0'], ['[worker', '1]', '1'], ['[worker', '2]', '2']]
  clusters = {line.split(' ', 3)[3].rsplit(' ', 1)[0] for line in lines}
  assert len(clusters) == 1  # every worker sees the same cluster
  addresses = eval(clusters.pop())  # pylint: disable=eval-used
  assert len(set(addresses)) == 3
  assert all(a.startswith('127.0.0.1:') for a in addresses)
  assert all(line.endswith(' 7.5') for line in lines)


_EXIT_3_ON_WORKER_1 = (
    'import json, os, sys, time; '
    'i = json.loads(os.environ["TF_CONFIG"])["task"]["index"]; '
    'sys.exit(3) if i == 1 else time.sleep(60)')


def test_failing_worker_stops_the_others(capfd):
  start = time.monotonic()
  status = launch_lib.main(['--workers', '2', '--timeout', '50', '--',
                            sys.executable, '-c', _EXIT_3_ON_WORKER_1])
  assert status == 3
  assert time.monotonic() - start < 30
  assert ('distribute.launch: worker 1 exited with code 3; stopping 1 other '
          'running worker(s) [0].') in capfd.readouterr().err


def test_hard_timeout(capfd):
  start = time.monotonic()
  status = launch_lib.main(['--workers', '2', '--timeout', '1', '--',
                            sys.executable, '-c', 'import time; '
                            'time.sleep(60)'])
  assert status == launch_lib.TIMEOUT_EXIT_CODE
  assert time.monotonic() - start < 30
  assert ('distribute.launch: timed out after 1 s with worker(s) [0, 1] still '
          'running; stopping them. Raise --timeout if the job needs '
          'longer.') in capfd.readouterr().err


def test_usage_and_argument_errors():
  with pytest.raises(SystemExit, match=r'usage: python -m distribute\.launch '
                     r'--workers N'):
    launch_lib.main(['--workers', '2', 'python', 'x.py'])
  with pytest.raises(ValueError, match=r'launch: empty command'):
    launch_lib.launch([], workers=2)
  with pytest.raises(ValueError,
                     match=r'launch: workers must be a positive int, got 0\.'):
    launch_lib.launch(['true'], workers=0)
