"""The export path check: what it lets through, and what it stops."""

import os

import pytest

from tfnp_trax.export import _args


def test_new_nested_directories_existing_ones_and_remote_paths_pass(tmp_path):
  nested = tmp_path / 'runs' / 'v1'
  assert _args.check_export_dir(nested, 'save_model') == str(nested)
  assert _args.check_export_dir(str(tmp_path), 'save_model') == str(tmp_path)
  # TensorFlow's file systems write these; nothing local to check.
  assert _args.check_export_dir('gs://bucket/m', 'save_model') == (
      'gs://bucket/m')
  assert not nested.exists()  # Checking creates nothing.


def test_a_file_on_the_path_is_named(tmp_path):
  blocker = tmp_path / 'blocker'
  blocker.write_text('')
  with pytest.raises(NotADirectoryError, match=r'export_loop: path .*blocker '
                     r'is a file'):
    _args.check_export_dir(blocker, 'export_loop')
  with pytest.raises(NotADirectoryError, match=r'blocker above it is a file'):
    _args.check_export_dir(blocker / 'a' / 'b', 'save_model')


@pytest.mark.skipif(os.name != 'posix' or os.geteuid() == 0,
                    reason='root writes to read-only directories')
def test_a_read_only_directory_is_named(tmp_path):
  locked = tmp_path / 'locked'
  locked.mkdir()
  locked.chmod(0o500)
  try:
    with pytest.raises(PermissionError, match=r'directory .*locked is not '
                       r'writable'):
      _args.check_export_dir(locked / 'model', 'save_model')
  finally:
    locked.chmod(0o700)


def test_names_must_be_distinct_tensorflow_names():
  _args.check_names(('inputs', 'mask.0', 'a/b'), 'input_names', 'save_model')
  with pytest.raises(ValueError, match=r"got '_hidden'"):
    _args.check_names(('_hidden',), 'input_names', 'save_model')
  with pytest.raises(ValueError, match=r"repeat \['x'\]"):
    _args.check_names(('x', 'y', 'x'), 'output_names', 'save_model')
