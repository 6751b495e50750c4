"""RunBookkeeping: who may clean up after a killed checkpoint writer."""

import json
import os
import re
import signal

import numpy as np
import pytest
import tensorflow as tf

import distribute
from tfnp_trax.supervised import checkpoints
from tfnp_trax.supervised.loop import bookkeeping


def _leave_a_killed_write(output_dir):
  inner = os.path.join(output_dir, 'checkpoints')
  os.makedirs(os.path.join(inner, '.tmp-ckpt-4-0123abcd'))
  return inner


def _books(output_dir):
  books = bookkeeping.RunBookkeeping('PPO', str(output_dir))
  books.track({'weights': [tf.Variable(np.ones(2, np.float32))]},
              {'weights': [('w', [2])]})
  return books


def test_chief_removes_the_temp_folder_of_a_killed_write(tmp_path):
  inner = _leave_a_killed_write(tmp_path)
  _books(tmp_path)
  assert os.listdir(inner) == []


def test_other_workers_leave_the_chiefs_temp_folders_alone(
    tmp_path, monkeypatch):
  inner = _leave_a_killed_write(tmp_path)
  monkeypatch.setattr(distribute, 'is_chief', lambda strategy: False)
  books = _books(tmp_path)
  assert not books.is_chief
  assert os.listdir(inner) == ['.tmp-ckpt-4-0123abcd']
  assert books.save() is None  # Nor do they write checkpoints.


def test_keep_checkpoints_names_the_owner(tmp_path):
  with pytest.raises(ValueError, match=r'PPO: keep_checkpoints must be an '
                     r'integer >= 0 .*got -3'):
    bookkeeping.RunBookkeeping('PPO', str(tmp_path), keep_checkpoints=-3)


def test_output_dir_that_is_a_file_names_the_owner(tmp_path):
  path = tmp_path / 'f'
  path.write_text('x')
  with pytest.raises(checkpoints.CheckpointWriteError,
                     match=r"PPO: output_dir '.*f' must be a writable "
                     r'folder'):
    bookkeeping.RunBookkeeping('PPO', str(path))


def _manifest(path):
  with open(os.path.join(path, 'manifest.json')) as f:
    return json.load(f)


def test_without_output_dir_nothing_is_written():
  books = bookkeeping.RunBookkeeping('Loop')
  books.track({'weights': [tf.Variable(np.ones(2, np.float32))]},
              {'weights': [('w', [2])]})
  assert (books.step, books.output_dir, books.checkpoint_dir) == (0, None,
                                                                   None)
  assert books.manager is None and books.is_chief
  assert books.save() is None
  assert books.list_checkpoints() == []
  assert books.newest_checkpoint() is None
  assert books.saved_at(0) == []
  assert books.recover_permanent(lambda step: True) == []


def test_checkpoint_errors_is_raise_or_warn():
  with pytest.raises(ValueError, match=r"Loop: checkpoint_errors must be one "
                     r"of \('raise', 'warn'\), got 'ignore'\."):
    bookkeeping.RunBookkeeping('Loop', checkpoint_errors='ignore')


@pytest.mark.parametrize('keep', [True, 1.5, '2'])
def test_keep_checkpoints_must_be_a_plain_integer(keep, tmp_path):
  with pytest.raises(ValueError, match=r'Loop: keep_checkpoints must be an '
                     rf'integer >= 0 .*got {re.escape(repr(keep))}\.'):
    bookkeeping.RunBookkeeping('Loop', str(tmp_path),
                                   keep_checkpoints=keep)


def test_output_dir_is_expanded_created_and_probed(tmp_path, monkeypatch):
  monkeypatch.setenv('HOME', str(tmp_path))
  books = bookkeeping.RunBookkeeping('Loop', '~/run')
  assert books.output_dir == str(tmp_path / 'run')
  assert books.checkpoint_dir == str(tmp_path / 'run' / 'checkpoints')
  assert os.listdir(tmp_path / 'run') == []  # The write probe is gone.


def test_saves_rotate_and_the_newest_step_remembers_its_folders(tmp_path):
  books = bookkeeping.RunBookkeeping('Loop', str(tmp_path),
                                         keep_checkpoints=2)
  books.track({'weights': [tf.Variable(np.ones(2, np.float32))]},
              {'weights': [('w', [2])]})
  inner = str(tmp_path / 'checkpoints')
  paths = {}
  for step in (1, 2, 3):
    books.step = step
    paths[step] = books.save()
    assert paths[step] == os.path.join(inner, f'ckpt-{step}')
  permanent = books.save(permanent=True)
  assert permanent == os.path.join(inner, 'ckpt-3-permanent')
  # keep_checkpoints=2: ckpt-1 was pruned; the permanent one is extra.
  assert books.list_checkpoints() == [
      checkpoints.CheckpointInfo(2, paths[2], False),
      checkpoints.CheckpointInfo(3, paths[3], False),
      checkpoints.CheckpointInfo(3, permanent, True)]
  assert books.newest_checkpoint() == permanent
  assert books.saved_at(3) == [paths[3], permanent]
  assert books.saved_at(2) == []  # Only the newest step is remembered.
  books.step = 4
  books.save()
  assert books.saved_at(3) == []
  assert [c.step for c in books.list_checkpoints()] == [3, 3, 4]


def test_the_manifest_holds_extra_and_the_history_as_json(tmp_path):
  books = _books(tmp_path)
  books.step = 2
  books.history.append('train', 'metrics/loss', 1, np.float32(0.5))
  books.history.append('eval', 'metrics/pair', 2, np.array([1.0, 2.0]))
  path = books.save(extra={'data_position': 7})
  assert _manifest(path)['step'] == 2
  assert _manifest(path)['extra'] == {
      'data_position': 7,
      'history': {'_values': {'train': {'metrics/loss': [[1, 0.5]]},
                              'eval': {'metrics/pair': [[2, [1.0, 2.0]]]}}}}


def test_restore_takes_step_history_and_the_checkpoints_of_that_step(
    tmp_path):
  books = _books(tmp_path)
  books.step = 6
  books.history.append('train', 'metrics/loss', 6, 0.25)
  written = [books.save(), books.save(permanent=True)]
  again = _books(tmp_path)
  manifest = again.manager.restore(again.newest_checkpoint())
  again.restore(manifest)
  assert again.step == 6
  assert again.history.get('train', 'metrics/loss') == [(6, 0.25)]
  assert again.saved_at(6) == written
  # A manifest read from another run's folder names none of this run's.
  other = _books(tmp_path / 'other')
  other.restore(manifest)
  assert other.step == 6 and other.saved_at(6) == []


def _write_error():
  return checkpoints.CheckpointWriteError(
      'Writing checkpoint ckpt-3 into /run/checkpoints failed: No space left '
      'on device.', '/run/checkpoints', 'ckpt-3', 'No space left on device',
      28)


def test_a_failed_write_raises_with_the_owner_and_the_fix(tmp_path):
  books = _books(tmp_path)
  with pytest.raises(checkpoints.CheckpointWriteError) as raised:
    books.write_failed(_write_error())
  assert str(raised.value) == (
      'PPO: Writing checkpoint ckpt-3 into /run/checkpoints failed: No space '
      'left on device. Free space in (or fix) that folder, or pass '
      "checkpoint_errors='warn' to keep training and retry at the next "
      'checkpoint.')
  error = raised.value
  assert (error.directory, error.name, error.cause, error.errno) == (
      '/run/checkpoints', 'ckpt-3', 'No space left on device', 28)


def test_a_failed_write_under_warn_warns_and_save_returns_none(
    tmp_path, monkeypatch):
  books = bookkeeping.RunBookkeeping('PPO', str(tmp_path),
                                         checkpoint_errors='warn')
  books.track({'weights': [tf.Variable(np.ones(2, np.float32))]},
              {'weights': [('w', [2])]})
  with pytest.warns(RuntimeWarning, match=r'^PPO: Writing checkpoint ckpt-3 '
                    r'.*device\. Training goes on; the next checkpoint tries '
                    r'again\.$'):
    books.write_failed(_write_error())

  def full_disk(*args, **kwargs):
    raise _write_error()
  monkeypatch.setattr(books.manager, 'save', full_disk)
  books.step = 3
  with pytest.warns(RuntimeWarning, match='Training goes on'):
    assert books.save() is None
  assert books.saved_at(3) == []


def test_recover_permanent_copies_the_rotating_checkpoint_of_its_step(
    tmp_path, capsys):
  books = _books(tmp_path)
  for step in (5, 10):
    books.step = step
    books.save()
  books.step = 12
  books.manager.save(12)  # Written by the manager alone: not in saved_at.
  books.step = 10
  made = books.recover_permanent(lambda step: step in (5, 12))
  inner = str(tmp_path / 'checkpoints')
  # Step 12 lies beyond the current step, so it is left alone.
  assert made == [os.path.join(inner, 'ckpt-5-permanent')]
  assert 'wrote the missing permanent checkpoint' in capsys.readouterr().out
  copy, source = _manifest(made[0]), _manifest(os.path.join(inner, 'ckpt-5'))
  assert copy['sha256'] == source['sha256'] and copy['step'] == 5
  assert books.recover_permanent(lambda step: step in (5, 12)) == []
  # At the current step the copy joins the folders saved at it.
  made = books.recover_permanent(lambda step: step == 10)
  assert books.saved_at(10) == [os.path.join(inner, 'ckpt-10')] + made


def test_stop_requested_only_while_watching_and_after_a_signal(tmp_path):
  books = _books(tmp_path)
  assert not books.stop_requested()
  before = signal.getsignal(signal.SIGTERM)
  with books.watch_signals():
    assert not books.stop_requested()
    with books.watch_signals():  # Nested: the outer watch stays.
      pass
    os.kill(os.getpid(), signal.SIGTERM)
    assert books.stop_requested()
  assert not books.stop_requested()
  assert signal.getsignal(signal.SIGTERM) is before


def test_stop_saves_then_raises_preempted_with_the_checkpoint(tmp_path):
  books = _books(tmp_path)
  books.step = 4
  with books.watch_signals():
    os.kill(os.getpid(), signal.SIGTERM)
    with pytest.raises(bookkeeping.Preempted) as raised:
      books.stop(books.save)
  path = os.path.join(str(tmp_path), 'checkpoints', 'ckpt-4')
  stopped = raised.value
  assert (stopped.code, stopped.signum, stopped.step, stopped.checkpoint) == (
      143, signal.SIGTERM, 4, path)
  assert str(stopped) == (
      f'PPO: received SIGTERM; stopped after step 4 and saved checkpoint '
      f'{path}. Run again with the same output_dir to resume.')


def test_stop_reuses_a_checkpoint_already_saved_at_the_step(tmp_path):
  books = _books(tmp_path)
  books.step = 2
  path = books.save()

  def must_not_save():
    raise AssertionError('saved twice')
  with pytest.raises(bookkeeping.Preempted) as raised:
    books.stop(must_not_save)
  assert raised.value.checkpoint == path
  # No signal arrived here (another worker's stop request).
  assert 'another worker received SIGTERM' in str(raised.value)


def test_stop_without_output_dir_says_nothing_was_saved():
  books = bookkeeping.RunBookkeeping('Loop')
  books.step = 1
  with pytest.raises(bookkeeping.Preempted,
                     match=r'^Loop: another worker received SIGTERM; stopped '
                     r'after step 1 and saved no checkpoint \(no output_dir, '
                     r'or the write failed\)\.'):
    books.stop(books.save)


def test_summaries_are_written_by_the_chief_only(tmp_path, monkeypatch):
  books = _books(tmp_path)
  writer = books.summary_writer(str(tmp_path / 'logs'))
  writer.scalar('metrics/loss', 0.5, 1)
  books.summary_writers().write('eval', 1, {'loss': 0.25})
  books.flush()
  assert os.listdir(tmp_path / 'logs')
  assert os.listdir(tmp_path / 'eval')
  monkeypatch.setattr(distribute, 'is_chief', lambda strategy: False)
  other = bookkeeping.RunBookkeeping('PPO', str(tmp_path / 'worker'))
  assert other.summary_writer(str(tmp_path / 'other_logs')).log_dir is None
  other.summary_writers().write('eval', 1, {'loss': 0.25})
  other.flush()
  assert not os.path.exists(tmp_path / 'other_logs')
  assert not os.path.exists(tmp_path / 'worker')
