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
