"""Tests for CheckpointManager: damaged manifests and the fallback."""

import os

import numpy as np
import pytest
import tensorflow as tf

from tfnp_trax.supervised import checkpoints


def _manager(directory, value=1.0):
  variables = [tf.Variable(np.full((3, 2), value, np.float32))]
  manager = checkpoints.CheckpointManager(
      str(directory), {'weights': variables},
      {'weights': [('Dense/0', [3, 2])]})
  return manager, variables


def _truncate_manifest(path):
  name = os.path.join(path, 'manifest.json')
  with open(name, 'rb') as f:
    data = f.read()
  with open(name, 'wb') as f:
    f.write(data[:len(data) // 2])


def test_truncated_manifest_is_an_io_error_naming_the_file(tmp_path):
  manager, _ = _manager(tmp_path)
  path = manager.save(1)
  _truncate_manifest(path)
  with pytest.raises(IOError, match=r'manifest .*ckpt-1/manifest.json is '
                     r'corrupt or truncated \('):
    manager.restore(path)


def test_truncated_newest_manifest_falls_back_to_the_previous(tmp_path):
  manager, variables = _manager(tmp_path, value=1.0)
  manager.save(1)
  variables[0].assign(np.full((3, 2), 2.0, np.float32))
  _truncate_manifest(manager.save(2))
  variables[0].assign(np.zeros((3, 2), np.float32))
  with pytest.warns(RuntimeWarning, match=r'ckpt-2 is unusable \(manifest '
                    r'.*corrupt or truncated.*resuming from the previous'):
    manifest = manager.restore_latest()
  assert manifest['step'] == 1
  np.testing.assert_array_equal(variables[0].numpy(), np.ones((3, 2)))


def test_all_manifests_truncated_raises_no_valid_checkpoint(tmp_path):
  manager, _ = _manager(tmp_path)
  _truncate_manifest(manager.save(1))
  with pytest.warns(RuntimeWarning):
    with pytest.raises(checkpoints.NoValidCheckpointError,
                       match=r'(?s)No usable checkpoint in .*ckpt-1: '
                       r'manifest .*corrupt or truncated'):
      manager.restore_latest()


# -- What a killed writer leaves ---------------------------------------------
def _leftovers(directory, manager):
  """Fakes a writer killed at three points of the protocol."""
  path = manager.save(1)
  os.makedirs(os.path.join(directory, '.tmp-ckpt-2-0123abcd'))
  with open(os.path.join(directory, '.tmp-ckpt-2-0123abcd', 'state.index'),
            'w') as f:
    f.write('half')
  with open(os.path.join(path, '.manifest.json.89abcdef'), 'w') as f:
    f.write('{"step"')
  return path


def test_writer_removes_temp_folders_and_files_of_a_killed_write(tmp_path):
  manager, _ = _manager(tmp_path)
  path = _leftovers(tmp_path, manager)
  reader = checkpoints.CheckpointManager(
      str(tmp_path), {'weights': []}, {'weights': []}, writer=False)
  done = reader.clean_stale()
  assert sorted(done) == [
      ('removed', os.path.join(str(tmp_path), '.tmp-ckpt-2-0123abcd')),
      ('removed', os.path.join(path, '.manifest.json.89abcdef'))]
  assert sorted(os.listdir(tmp_path)) == ['ckpt-1']
  assert sorted(os.listdir(path)) == sorted(
      ['manifest.json', 'state.index', 'state.data-00000-of-00001'])


def test_writer_cleans_up_when_built_but_a_reader_does_not(tmp_path):
  manager, _ = _manager(tmp_path)
  _leftovers(tmp_path, manager)
  checkpoints.CheckpointManager(
      str(tmp_path), {'weights': []}, {'weights': []}, writer=False)
  assert '.tmp-ckpt-2-0123abcd' in os.listdir(tmp_path)
  _manager(tmp_path)  # writer=True by default.
  assert os.listdir(tmp_path) == ['ckpt-1']


def test_temp_folder_is_never_listed_as_a_checkpoint(tmp_path):
  manager, _ = _manager(tmp_path)
  manager.save(1)
  os.makedirs(os.path.join(tmp_path, '.tmp-ckpt-9-0123abcd'))
  assert [c.step for c in manager.list()] == [1]


def test_half_replaced_named_checkpoint_is_put_back(tmp_path):
  manager, variables = _manager(tmp_path, value=3.0)
  path = manager.save(4, name='lowest_loss')
  # Killed between renaming the old one aside and the new one into place.
  os.rename(path, os.path.join(tmp_path, '.old-lowest_loss-0123abcd'))
  fresh, fresh_vars = _manager(tmp_path, value=0.0)
  assert os.listdir(tmp_path) == ['lowest_loss']
  assert fresh.restore(path)['step'] == 4
  np.testing.assert_array_equal(fresh_vars[0].numpy(), np.full((3, 2), 3.0))
  del manager, variables


def test_old_copy_is_dropped_once_its_replacement_exists(tmp_path):
  manager, _ = _manager(tmp_path)
  path = manager.save(4, name='lowest_loss')
  os.makedirs(os.path.join(tmp_path, '.old-lowest_loss-0123abcd'))
  _manager(tmp_path)
  assert os.listdir(tmp_path) == ['lowest_loss']
  assert os.path.isdir(path)


def test_copy_makes_a_permanent_checkpoint_with_the_same_content(tmp_path):
  manager, variables = _manager(tmp_path, value=5.0)
  manager.save(6, extra={'note': 'x'})
  copy = manager.copy(os.path.join(tmp_path, 'ckpt-6'), permanent=True)
  assert copy == os.path.join(str(tmp_path), 'ckpt-6-permanent')
  assert [(c.step, c.permanent) for c in manager.list()] == [
      (6, False), (6, True)]
  variables[0].assign(np.zeros((3, 2), np.float32))
  manifest = manager.restore(copy)
  assert (manifest['step'], manifest['extra']) == (6, {'note': 'x'})
  np.testing.assert_array_equal(variables[0].numpy(), np.full((3, 2), 5.0))
  assert not [n for n in os.listdir(tmp_path) if n.startswith('.')]


def test_copy_of_a_corrupt_checkpoint_is_refused(tmp_path):
  manager, _ = _manager(tmp_path)
  path = manager.save(2)
  with open(os.path.join(path, 'state.index'), 'ab') as f:
    f.write(b'x')
  with pytest.raises(IOError, match=r'file state.index does not match its '
                     r'checksum'):
    manager.copy(path, permanent=True)
  assert sorted(os.listdir(tmp_path)) == ['ckpt-2']


def test_edited_manifest_fails_its_own_checksum(tmp_path):
  manager, _ = _manager(tmp_path)
  path = manager.save(3)
  name = os.path.join(path, 'manifest.json')
  with open(name) as f:
    text = f.read()
  with open(name, 'w') as f:  # Valid JSON, one digit changed.
    f.write(text.replace('"step": 3', '"step": 8'))
  with pytest.raises(IOError, match=r'manifest .*ckpt-3/manifest.json does '
                     r'not match its checksum'):
    manager.restore(path)
