"""Non-blocking checkpoints: content, timing, waits, errors, kills.

The background write is slowed or broken by patching the functions the
writer's thread calls (only when called off the main thread), so the tests
can train while a write is in flight and check what ends up on disk.
"""

import errno
import hashlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
import weakref

import numpy as np
import pytest
import tensorflow as tf

from tests import _subprocess
from tfnp_trax import fastmath
from tfnp_trax import optimizers
import tfnp_trax.layers as tl
from tfnp_trax.supervised import async_checkpoints
from tfnp_trax.supervised import checkpoints
from tfnp_trax.supervised import trax_checkpoints
from tfnp_trax.supervised import training

_ENV = dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2',
            PYTHONPATH=_subprocess.REPO + os.pathsep +
            os.environ.get('PYTHONPATH', ''))


def _data():
  r = np.random.default_rng(0)
  while True:
    x = r.normal(size=(8, 5)).astype(np.float32)
    y = (x[:, :2].sum(-1) > 0).astype(np.int32)
    yield x, y, np.ones(8, np.float32)


def _loop(output_dir, callbacks=None, **kwargs):
  task = training.TrainTask(_data(), tl.WeightedCategoryCrossEntropy(),
                            optimizers.Adam(0.01))
  kwargs.setdefault('checkpoint_at', lambda step: step % 2 == 0)
  return training.Loop(
      tl.Serial(tl.Dense(8), tl.Relu(), tl.Dropout(0.1), tl.Dense(2)), task,
      output_dir=output_dir, random_seed=5, callbacks=callbacks,
      eval_at=lambda step: False, **kwargs)


def _weights(loop):
  return [np.asarray(w) for w in fastmath.tree_leaves(loop.model.weights)]


def _stored_arrays(folder):
  """Every array a checkpoint folder holds, by its key, read with TF only."""
  reader = tf.train.load_checkpoint(os.path.join(folder, 'state'))
  return {k: reader.get_tensor(k)
          for k in reader.get_variable_to_shape_map()
          if not k.startswith('_CHECKPOINTABLE_OBJECT_GRAPH')}


def _check_complete(folder):
  """The folder's manifest lists every data file with its SHA-256."""
  with open(os.path.join(folder, 'manifest.json')) as f:
    manifest = json.load(f)
  for name, digest in manifest['sha256'].items():
    with open(os.path.join(folder, name), 'rb') as f:
      assert hashlib.sha256(f.read()).hexdigest() == digest, name
  return manifest


def _comparable(manifest):
  """A manifest without what differs between two identical runs."""
  manifest = dict(manifest)
  manifest.pop('manifest_sha256')
  # The files' bytes hold the variables' own names, which differ between
  # the live variables and their copies; the arrays are compared apart.
  manifest['sha256'] = sorted(manifest['sha256'])
  train = manifest['extra']['history']['_values'].get('train', {})
  train.pop('training/steps per second', None)  # A timing.
  return manifest


class _Recorder:
  """A callback that keeps the weights after every step."""
  seen = {}

  def __init__(self, loop):
    self._loop = loop

  def call_at(self, step):
    return True

  def on_step_begin(self, step):
    pass

  def on_step_end(self, step):
    _Recorder.seen[step] = _weights(self._loop)


def test_async_checkpoints_hold_what_sync_ones_hold(tmp_path):
  runs = {}
  for mode in ('sync', 'async'):
    loop = _loop(str(tmp_path / mode), async_checkpoints=mode == 'async')
    loop.run(4)
    runs[mode] = loop
  for name in ('ckpt-2', 'ckpt-4'):
    folders = [str(tmp_path / m / 'checkpoints' / name)
               for m in ('sync', 'async')]
    sync_arrays, async_arrays = map(_stored_arrays, folders)
    assert sorted(sync_arrays) == sorted(async_arrays)
    assert len(sync_arrays) > 10
    for key, value in sync_arrays.items():
      np.testing.assert_array_equal(value, async_arrays[key], err_msg=key)
    sync_manifest, async_manifest = map(_check_complete, folders)
    assert _comparable(sync_manifest) == _comparable(async_manifest)
  # Trax's files, written on the thread from the copies, as well.
  sync_trax, async_trax = (trax_checkpoints.load_trax_checkpoint(
      str(tmp_path / m)) for m in ('sync', 'async'))
  assert sync_trax.step == async_trax.step == 4
  for field in ('flat_weights', 'flat_state', 'flat_eval_state'):
    for a, b in zip(getattr(sync_trax, field), getattr(async_trax, field)):
      np.testing.assert_array_equal(a, b)
  assert len(sync_trax.slots_per_task[0]) == 8  # Adam: m and v of 4 leaves.
  for a, b in zip(sync_trax.slots_per_task[0], async_trax.slots_per_task[0]):
    np.testing.assert_array_equal(a, b)
  # Interchangeable: each kind resumes a Loop of the other kind.
  for written, reader_async in (('async', False), ('sync', True)):
    fresh = _loop(str(tmp_path / written), async_checkpoints=reader_async)
    assert fresh.step == 4
    for a, b in zip(_weights(runs[written]), _weights(fresh)):
      np.testing.assert_array_equal(a, b)


def _slowed_save(monkeypatch, before_write):
  """Makes the background thread call `before_write()` before each write."""
  real = checkpoints.CheckpointManager.save

  def save(self, *args, **kwargs):
    if threading.current_thread() is not threading.main_thread():
      before_write()
    return real(self, *args, **kwargs)
  monkeypatch.setattr(checkpoints.CheckpointManager, 'save', save)


def test_save_returns_at_once_and_the_next_save_waits(tmp_path, monkeypatch):
  release = threading.Event()
  _slowed_save(monkeypatch, lambda: release.wait(60))
  _Recorder.seen = {}
  in_flight = {}

  class Watch(_Recorder):

    def on_step_end(self, step):
      super().on_step_end(step)
      in_flight[step] = os.path.isdir(tmp_path / 'checkpoints' / 'ckpt-2')
      if step == 3:  # Steps 3 and 4 run while ckpt-2 is being written.
        threading.Timer(2.0, release.set).start()

  loop = _loop(str(tmp_path), callbacks=[Watch])
  save = loop.save_checkpoint
  returned = {}

  def timed_save(basename='model'):
    path = save(basename)
    returned[loop.step] = (time.monotonic(), release.is_set())
    return path
  loop.save_checkpoint = timed_save
  loop.run(4)
  # The save of step 2 returned while its write was blocked, steps 3 and
  # 4 trained with no ckpt-2 on disk, and the save of step 4 waited.
  assert returned[2][1] is False
  assert in_flight == {1: False, 2: False, 3: False, 4: False}
  assert returned[4][1] is True
  # What was written is step 2's weights, not those trained meanwhile.
  stored = _stored_arrays(str(tmp_path / 'checkpoints' / 'ckpt-2'))
  restored = [stored[f'weights/v{i}/.ATTRIBUTES/VARIABLE_VALUE']
              for i in range(4)]
  for want, got in zip(_Recorder.seen[2], restored):
    np.testing.assert_array_equal(want, got)
  assert any(not np.array_equal(a, b)
             for a, b in zip(_Recorder.seen[2], _Recorder.seen[4]))


def test_run_returns_only_after_the_write_is_complete(tmp_path, monkeypatch):
  _slowed_save(monkeypatch, lambda: time.sleep(0.5))
  loop = _loop(str(tmp_path), checkpoint_at=lambda step: step == 3)
  loop.run(3)
  manifest = _check_complete(str(tmp_path / 'checkpoints' / 'ckpt-3'))
  assert manifest['step'] == 3
  assert os.path.exists(tmp_path / 'model.pkl.gz')


def _failing_fsync(monkeypatch):
  """The thread's first fsync of a data file fails as on a full disk."""
  real = checkpoints._fsync_file  # pylint: disable=protected-access

  def fsync(path):
    if threading.current_thread() is not threading.main_thread():
      raise OSError(errno.ENOSPC, 'No space left on device', path)
    return real(path)
  monkeypatch.setattr(checkpoints, '_fsync_file', fsync)


def test_failed_background_write_raises_at_the_next_wait(tmp_path,
                                                           monkeypatch):
  loop = _loop(str(tmp_path), checkpoint_at=lambda step: False)
  loop.run(1)
  good = loop.save_checkpoint()
  loop.wait_for_checkpoints()
  _failing_fsync(monkeypatch)
  loop.run(1)
  loop.save_checkpoint()  # Returns: the failure is in the thread.
  with pytest.raises(checkpoints.CheckpointWriteError,
                     match=r'Loop: Writing checkpoint ckpt-2 into .*'
                           r'checkpoints failed: \[ENOSPC\] No space left'):
    loop.wait_for_checkpoints()
  loop.wait_for_checkpoints()  # Raised once, then forgotten.
  assert sorted(os.listdir(tmp_path / 'checkpoints')) == ['ckpt-1']
  assert good == str(tmp_path / 'checkpoints' / 'ckpt-1')
  _check_complete(good)


def test_failed_background_write_warns_and_training_goes_on(tmp_path,
                                                            monkeypatch):
  _failing_fsync(monkeypatch)
  loop = _loop(str(tmp_path), checkpoint_errors='warn')
  with pytest.warns(RuntimeWarning, match=r'ckpt-2 .* \[ENOSPC\].* Training '
                                          r'goes on'):
    loop.run(4)  # Step 2's write fails; step 4's save waits and warns.
  assert loop.step == 4
  assert [n for n in os.listdir(tmp_path / 'checkpoints')] == []


def test_error_that_is_no_write_error_is_raised_as_it_is():
  writer = async_checkpoints.AsyncCheckpointWriter('Test')
  writer.submit(lambda: 1 / 0, 'a write')
  with pytest.raises(ZeroDivisionError):
    writer.wait()
  writer.wait()


def test_snapshot_while_a_write_is_in_flight_is_refused():
  writer = async_checkpoints.AsyncCheckpointWriter('Test')
  v = tf.Variable([1.0, 2.0])
  shadows = writer.snapshot({'w': [v]})
  release = threading.Event()
  writer.submit(lambda: release.wait(10), 'ckpt-1')
  with pytest.raises(RuntimeError, match=r'Test: .*snapshot was called '
                                         r'while the write of ckpt-1'):
    writer.snapshot({'w': [v]})
  v.assign([3.0, 4.0])
  np.testing.assert_array_equal(shadows['w'][0].numpy(), [1.0, 2.0])
  release.set()
  writer.wait()
  assert writer.snapshot({'w': [v]}) is shadows
  np.testing.assert_array_equal(shadows['w'][0].numpy(), [3.0, 4.0])


_CHILD = textwrap.dedent('''
    import sys, threading, time
    import numpy as np
    from tests.supervised import async_checkpoints_test as t
    from tfnp_trax.supervised import checkpoints
    block_from = int(sys.argv[2])
    real = checkpoints._fsync_file
    calls = []
    def fsync(path):
      if threading.current_thread() is not threading.main_thread():
        calls.append(path)
        if '.tmp-ckpt-' + str(block_from) in path:
          print('BLOCKED', path, flush=True)
          time.sleep(float(sys.argv[3]))
      return real(path)
    checkpoints._fsync_file = fsync
    class Tell(t._Recorder):
      def on_step_end(self, step):
        print('STEP', step, flush=True)
        time.sleep(0.05)
    loop = t._loop(sys.argv[1], callbacks=[Tell])
    loop.run(int(sys.argv[4]) - loop.step)
''')


def _child(output_dir, block_from, block_s, n_steps):
  return subprocess.Popen(
      [sys.executable, '-c', _CHILD, str(output_dir), str(block_from),
       str(block_s), str(n_steps)], cwd=_subprocess.REPO, env=_ENV,
      stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _signal_at(proc, marker, signum):
  lines, seen = [], threading.Event()

  def read():
    for line in proc.stdout:
      lines.append(line)
      if line.startswith(marker):
        seen.set()
  reader = threading.Thread(target=read, daemon=True)
  reader.start()
  assert seen.wait(120), ''.join(lines)[-3000:]
  proc.send_signal(signum)
  proc.wait(timeout=60)
  reader.join(10)
  return ''.join(lines)


def test_sigterm_waits_for_the_write_then_exits(tmp_path):
  # Step 4's write takes 2 s; SIGTERM arrives while it is in flight.
  proc = _child(tmp_path, 4, 2.0, 50)
  out = _signal_at(proc, 'BLOCKED', signal.SIGTERM)
  assert proc.returncode == 128 + signal.SIGTERM, out[-3000:]
  stopped = [line for line in out.splitlines() if 'received SIGTERM' in line]
  assert stopped, out[-3000:]
  path = stopped[0].split('saved checkpoint ')[1].split('. Run again')[0]
  manifest = _check_complete(path)
  step = int(stopped[0].split('stopped after step ')[1].split()[0])
  assert manifest['step'] == step >= 4
  _check_complete(str(tmp_path / 'checkpoints' / 'ckpt-4'))
  assert not [n for n in os.listdir(tmp_path / 'checkpoints')
              if n.startswith('.')]


def test_sigkill_mid_write_leaves_a_tmp_folder_and_resumes_exactly(tmp_path):
  reference = _child(tmp_path / 'reference', -1, 0, 6)  # Uninterrupted.
  proc = _child(tmp_path / 'killed', 4, 600, 50)
  out = _signal_at(proc, 'BLOCKED', signal.SIGKILL)
  assert proc.returncode == -signal.SIGKILL, out[-3000:]
  left = sorted(os.listdir(tmp_path / 'killed' / 'checkpoints'))
  assert left[0].startswith('.tmp-ckpt-4-') and left[1:] == ['ckpt-2'], left
  # The next Loop removes the hidden folder and resumes from ckpt-2; its
  # ckpt-6 equals an uninterrupted run's (both runs in fresh processes, as
  # the killed one was).
  resumed = _child(tmp_path / 'killed', -1, 0, 6)
  outs = [proc.communicate(timeout=120)[0] for proc in (resumed, reference)]
  for proc, out in zip((resumed, reference), outs):
    assert proc.returncode == 0, out[-3000:]
  assert (f'Resumed from {tmp_path}/killed/checkpoints/ckpt-2 at step 2'
          in outs[0]), outs[0][-3000:]
  assert sorted(os.listdir(tmp_path / 'killed' / 'checkpoints')) == [
      'ckpt-2', 'ckpt-4', 'ckpt-6']
  want = _stored_arrays(str(tmp_path / 'reference' / 'checkpoints' / 'ckpt-6'))
  got = _stored_arrays(str(tmp_path / 'killed' / 'checkpoints' / 'ckpt-6'))
  assert sorted(want) == sorted(got)
  for key, value in want.items():
    np.testing.assert_array_equal(value, got[key], err_msg=key)


def test_exit_hook_finishes_the_last_write_and_reports_a_failure(capsys):
  writer = async_checkpoints.AsyncCheckpointWriter('Test')
  done = []
  writer.submit(lambda: (time.sleep(0.3), done.append(True)), 'ckpt-1')
  async_checkpoints._wait_at_exit(weakref.ref(writer))  # pylint: disable=protected-access
  assert done == [True]

  def fail():
    raise checkpoints.CheckpointWriteError('Writing checkpoint ckpt-2 '
                                           'failed', '/d', 'ckpt-2', 'full')
  writer.submit(fail, 'ckpt-2')
  async_checkpoints._wait_at_exit(weakref.ref(writer))  # pylint: disable=protected-access
  assert ('Test: the last checkpoint write failed as the program exited: '
          'CheckpointWriteError: Writing checkpoint ckpt-2 failed'
          in capsys.readouterr().err)
