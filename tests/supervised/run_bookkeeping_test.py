"""RunBookkeeping: who may clean up after a killed checkpoint writer."""

import os

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
