"""Checkpoint writes that fail: full disk, I/O errors, read-only folders.

A failed write must leave no partial checkpoint under a final name and
keep the last good one. The full-disk and read-only tests use a real
filesystem where the machine allows it: a 256 KiB tmpfs mounted (as root)
on the run's `checkpoints` folder, filled up or remounted read-only. Where
mounting is not permitted they inject the same OS error at `os.fsync` (the
call every checkpoint file goes through), which the docstring of each
fixture use says.
"""

import errno
import os
import subprocess

import numpy as np
import pytest

from tfnp_trax import optimizers
import tfnp_trax.layers as tl
from tfnp_trax.supervised import checkpoints
from tfnp_trax.supervised import training


def _data():
  r = np.random.default_rng(0)
  while True:
    x = r.normal(size=(4, 3)).astype(np.float32)
    yield x, x[:, :1], np.ones((4, 1), np.float32)


def _loop(output_dir, **kwargs):
  task = training.TrainTask(_data(), tl.L2Loss(), optimizers.Adam(0.01),
                            n_steps_per_checkpoint=2)
  return training.Loop(tl.Serial(tl.Dense(1)), task, output_dir=output_dir,
                       random_seed=0, **kwargs)


@pytest.fixture
def small_disk(tmp_path):
  """`(output_dir, mounted)`: output_dir/checkpoints is a 256 KiB tmpfs.

  mounted is False where mounting is not permitted; tests then inject the
  OS error instead.
  """
  out = tmp_path / 'run'
  ckpt = out / 'checkpoints'
  ckpt.mkdir(parents=True)
  mounted = subprocess.run(
      ['mount', '-t', 'tmpfs', '-o', 'size=256k', 'tmpfs', str(ckpt)],
      capture_output=True, check=False).returncode == 0
  yield str(out), mounted
  if mounted:
    subprocess.run(['umount', '-l', str(ckpt)], check=False)


def _fill(directory):
  """Writes a file until the disk is full."""
  try:
    with open(os.path.join(directory, 'filler'), 'wb') as f:
      while True:
        f.write(b'\0' * 4096)
        f.flush()
        os.fsync(f.fileno())
  except OSError as e:
    assert e.errno == errno.ENOSPC


def _fail_fsync(monkeypatch, number, times=None):
  calls = {'n': 0}
  real = os.fsync

  def fsync(fd):
    calls['n'] += 1
    if times is None or calls['n'] <= times:
      raise OSError(number, os.strerror(number))
    return real(fd)
  monkeypatch.setattr(os, 'fsync', fsync)


def _names(out):
  return sorted(os.listdir(os.path.join(out, 'checkpoints')))


def test_disk_full_stops_with_clear_error_and_keeps_last_good(
    small_disk, monkeypatch):
  out, mounted = small_disk
  loop = _loop(out)
  loop.run(2)  # Checkpoints at steps 1 and 2.
  good = [np.asarray(w).copy() for w in loop.model.weights[0]]
  if mounted:
    _fill(os.path.join(out, 'checkpoints'))
  else:
    _fail_fsync(monkeypatch, errno.ENOSPC)
  with pytest.raises(
      checkpoints.CheckpointWriteError,
      match=r'^Loop: Writing checkpoint ckpt-4 into \S+/run/checkpoints '
      r'failed: .*No space left on device.*\. No partial checkpoint was left '
      r'under that name and earlier checkpoints are kept \(newest: '
      r'\S+/ckpt-2\)\. Free space in \(or fix\) that folder, or pass '
      r"checkpoint_errors='warn'"):
    loop.run(2)
  monkeypatch.undo()
  names = [n for n in _names(out) if n != 'filler']
  assert names == ['ckpt-1', 'ckpt-2']  # Nothing partial, nothing lost.
  resumed = _loop(out)
  assert resumed.step == 2
  np.testing.assert_array_equal(np.asarray(resumed.model.weights[0][0]),
                                good[0])


def test_warn_keeps_training_and_retries_at_next_checkpoint(
    tmp_path, monkeypatch):
  """An EIO is injected at os.fsync for one checkpoint write."""
  out = str(tmp_path)
  loop = _loop(out, checkpoint_errors='warn')
  loop.run(2)
  _fail_fsync(monkeypatch, errno.EIO, times=1)
  with pytest.warns(RuntimeWarning,
                    match=r'Loop: Writing checkpoint ckpt-4 into .* failed: '
                    r'\[EIO\] Input/output error\..*Training goes on; the '
                    r'next checkpoint tries again'):
    loop.run(2)
  assert loop.step == 4
  assert _names(out) == ['ckpt-1', 'ckpt-2']
  loop.run(2)  # The retry at step 6 succeeds.
  assert _names(out) == ['ckpt-1', 'ckpt-2', 'ckpt-6']


def test_read_only_folder_is_a_clear_error(small_disk, monkeypatch):
  out, mounted = small_disk
  loop = _loop(out)
  loop.run(2)
  if mounted:
    subprocess.run(['mount', '-o', 'remount,ro',
                    os.path.join(out, 'checkpoints')], check=True)
  else:
    _fail_fsync(monkeypatch, errno.EROFS)
  with pytest.raises(checkpoints.CheckpointWriteError,
                     match=r'ckpt-4 into \S+/checkpoints failed: .*Read-only '
                     r'file system') as info:
    loop.run(2)
  assert info.value.directory == os.path.join(out, 'checkpoints')
  assert _names(out) == ['ckpt-1', 'ckpt-2']


def test_bad_checkpoint_errors_value():
  with pytest.raises(ValueError, match=r"Loop: checkpoint_errors must be one "
                     r"of \('raise', 'warn'\), got 'ignore'"):
    _loop(None, checkpoint_errors='ignore')
