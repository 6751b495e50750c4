"""Loop on SIGTERM/SIGINT: finish the step, checkpoint, exit, resume exactly.

The runs are subprocesses of tests/supervised/_loop_script.py (a slow
callback leaves time to signal them mid-run), each with a hard timeout.
"""

import os
import re
import signal
import subprocess
import sys
import threading

import numpy as np
import pytest

from tests import _subprocess
from tfnp_trax.supervised import training
from tfnp_trax.supervised.loop import bookkeeping

_ENV = dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2')
_STOPPED = re.compile(r'Loop: (received|another worker received) SIGTERM; '
                      r'stopped after step (\d+) and saved checkpoint '
                      r'(\S+)\. Run again')


def _script(output_dir, n_steps, result, *extra):
  return [sys.executable, '-m', 'tests.supervised._loop_script',
          str(output_dir), str(n_steps), str(result), *map(str, extra)]


def _run(cmd, timeout=240):
  out = subprocess.run(cmd, cwd=_subprocess.REPO, env=_ENV, timeout=timeout,
                       capture_output=True, text=True, check=False)
  assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
  return out.stdout


def _assert_bitwise_equal(want_path, got_path):
  want, got = np.load(want_path), np.load(got_path)
  assert want.files == got.files
  for key in want.files:
    np.testing.assert_array_equal(want[key], got[key])


def _signal_when(proc, marker, send):
  """Reads `proc`'s stdout; calls `send()` once `marker` appears.

  Returns all the output (read to the end in a thread, so a full pipe
  never blocks the child).
  """
  lines, seen = [], threading.Event()

  def read():
    for line in proc.stdout:
      lines.append(line)
      if marker in line and not seen.is_set():
        seen.set()
  reader = threading.Thread(target=read, daemon=True)
  reader.start()
  assert seen.wait(200), ''.join(lines)[-3000:]
  send()
  # The contract: the process is gone well within 30 s of the signal.
  proc.wait(timeout=30)
  reader.join(10)
  return ''.join(lines)


def test_sigterm_checkpoints_exits_and_resumes_bitwise(tmp_path):
  _run(_script(tmp_path / 'a', 20, tmp_path / 'full.npz'))
  proc = subprocess.Popen(
      _script(tmp_path / 'b', 20, tmp_path / 'x.npz', '--sleep', '0.2'),
      cwd=_subprocess.REPO, env=_ENV, stdout=subprocess.PIPE,
      stderr=subprocess.STDOUT, text=True)
  out = _signal_when(proc, 'Step      7',
                     lambda: proc.send_signal(signal.SIGTERM))
  # Exit status 128 + SIGTERM, as for a process the signal killed, but
  # after a checkpoint of the last finished step.
  assert proc.returncode == 128 + signal.SIGTERM, out[-3000:]
  match = _STOPPED.search(out)
  assert match, out[-3000:]
  assert match.group(1) == 'received'
  step, path = int(match.group(2)), match.group(3)
  assert 7 <= step < 20
  assert path == str(tmp_path / 'b' / 'checkpoints' / f'ckpt-{step}')
  assert os.path.isfile(os.path.join(path, 'manifest.json'))
  assert not (tmp_path / 'x.npz').exists()
  resumed = _run(_script(tmp_path / 'b', 20, tmp_path / 'resumed.npz'))
  assert f'at step {step}.' in resumed
  _assert_bitwise_equal(tmp_path / 'full.npz', tmp_path / 'resumed.npz')


def _launch(*args):
  return [sys.executable, '-m', 'distribute.launch', '--workers', '2',
          '--timeout', '200', '--collective_timeout', '60', '--'] + list(args)


def test_sigterm_to_one_worker_stops_both_at_the_same_step(tmp_path):
  """SIGTERM goes to worker 1 only, the non-chief.

  That is the harder case: the chief, which alone writes checkpoints, never
  sees the signal; the per-step all-reduce of the stop flag makes it stop
  and save after the same step as worker 1. (A signal to both, as a cluster
  manager sends, gives the same agreement trivially.)
  """
  n = 12
  _run(_launch(*_script(tmp_path / 'plain', n, tmp_path / 'plain.npz',
                        '--multiworker')))
  pids = tmp_path / 'pids'
  pids.mkdir()
  proc = subprocess.Popen(
      _launch(*_script(tmp_path / 'b', n, tmp_path / 'x.npz', '--multiworker',
                       '--sleep', '0.2', '--pid_dir', pids)),
      cwd=_subprocess.REPO, env=_ENV, stdout=subprocess.PIPE,
      stderr=subprocess.STDOUT, text=True)
  out = _signal_when(proc, '[worker 1] Step      4', lambda: os.kill(
      int((pids / 'pid1').read_text()), signal.SIGTERM))
  assert proc.returncode != 0, out[-3000:]
  found = {}
  for line in out.splitlines():
    match = _STOPPED.search(line)
    if match:
      found[line.split(']')[0] + ']'] = match.groups()
  assert set(found) == {'[worker 0]', '[worker 1]'}, out[-4000:]
  assert found['[worker 1]'][0] == 'received'
  assert found['[worker 0]'][0] == 'another worker received'
  step = found['[worker 0]'][1]
  assert found['[worker 1]'][1] == step
  # Only the chief wrote; the checkpoint is whole.
  path = tmp_path / 'b' / 'checkpoints' / f'ckpt-{step}'
  assert (path / 'manifest.json').is_file()
  resumed = _run(_launch(*_script(tmp_path / 'b', n, tmp_path / 'two.npz',
                                  '--multiworker')))
  assert f'[worker 1] Resumed from {path} at step {step}.' in resumed
  _assert_bitwise_equal(tmp_path / 'plain.npz', tmp_path / 'two.npz')


def test_handlers_are_installed_only_while_run_is_active(tmp_path):
  seen = []

  class Check:  # Records the SIGTERM handler in force during a step.

    def __init__(self, loop):
      del loop

    def call_at(self, step):
      return True

    def on_step_begin(self, step):
      seen.append(signal.getsignal(signal.SIGTERM))

    def on_step_end(self, step):
      pass

  before = signal.getsignal(signal.SIGTERM)
  task = training.TrainTask(_data(), _loss(), _sgd())
  loop = training.Loop(_model(), task, output_dir=str(tmp_path),
                       callbacks=[Check])
  loop.run(2)
  assert signal.getsignal(signal.SIGTERM) is before
  assert seen and all(h is not before for h in seen)


def test_sigint_in_process_raises_preempted_naming_the_checkpoint(tmp_path):

  class Interrupt:  # Presses Ctrl-C during step 3.

    def __init__(self, loop):
      del loop

    def call_at(self, step):
      return step == 3

    def on_step_begin(self, step):
      os.kill(os.getpid(), signal.SIGINT)

    def on_step_end(self, step):
      pass

  task = training.TrainTask(_data(), _loss(), _sgd(),
                            n_steps_per_checkpoint=100)
  loop = training.Loop(_model(), task, output_dir=str(tmp_path),
                       callbacks=[Interrupt])
  with pytest.raises(bookkeeping.Preempted,
                     match=r'Loop: received SIGINT; stopped after step 3 and '
                     r'saved checkpoint .*ckpt-3\. Run again') as info:
    loop.run(10)
  assert info.value.code == 128 + signal.SIGINT
  assert info.value.checkpoint == str(tmp_path / 'checkpoints' / 'ckpt-3')
  assert loop.step == 3
  assert [c.step for c in loop._books.list_checkpoints()] == [1, 3]  # pylint: disable=protected-access
  # Handlers are back: a later run is not stopped by the old request.
  loop.run(1)
  assert loop.step == 4


def _data():
  r = np.random.default_rng(0)
  while True:
    x = r.normal(size=(4, 3)).astype(np.float32)
    yield x, x[:, :1], np.ones((4, 1), np.float32)


def _model():
  import tfnp_trax.layers as tl  # pylint: disable=g-import-not-at-top
  return tl.Serial(tl.Dense(1))


def _loss():
  import tfnp_trax.layers as tl  # pylint: disable=g-import-not-at-top
  return tl.L2Loss()


def _sgd():
  from tfnp_trax import optimizers  # pylint: disable=g-import-not-at-top
  return optimizers.SGD(0.01)
