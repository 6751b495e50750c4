"""The flag checks shared by the commands, and how a usage error reads."""

import math
import os

from absl import flags
import pytest

from tfnp_trax.cli import _usage

UsageError = _usage.UsageError


def test_writable_folder_accepts_existing_and_creatable_folders(tmp_path):
  _usage.writable_folder('output_dir', str(tmp_path))
  _usage.writable_folder('output_dir', str(tmp_path / 'new' / 'deeper'))
  _usage.writable_folder('output_dir', 'gs://bucket/run')  # Left to TF.
  _usage.writable_folder('output_dir', None)
  _usage.writable_folder('output_dir', '')


def test_writable_folder_rejects_a_file_and_a_path_through_one(tmp_path):
  path = tmp_path / 'f'
  path.write_text('')
  with pytest.raises(UsageError, match=(
      rf"^--output_dir must be a folder, got '{path}', which is a file\. "
      r"Choose a folder you can write\.$")):
    _usage.writable_folder('output_dir', str(path))
  with pytest.raises(UsageError, match=(
      rf"^--export must be a folder path, got '{path}/a/b', but '{path}' on "
      r"it is a file\.")):
    _usage.writable_folder('export', str(path / 'a' / 'b'))


def test_writable_folder_names_the_default(tmp_path):
  path = tmp_path / 'f'
  path.write_text('')
  with pytest.raises(UsageError, match=(
      r"got '.*f' \(the default\), which is a file\. Choose another folder "
      r"with --output_dir\.")):
    _usage.writable_folder('output_dir', str(path), default=True)


def test_writable_folder_asks_os_access(tmp_path, monkeypatch):
  locked = str(tmp_path / 'locked')
  os.mkdir(locked)
  asked = []

  def access(path, mode):
    asked.append((path, mode))
    return path != locked
  monkeypatch.setattr(os, 'access', access)
  with pytest.raises(UsageError, match=(
      r"^--output_dir must be a folder this user can write, got '.*locked', "
      r"which is not writable\.")):
    _usage.writable_folder('output_dir', locked)
  with pytest.raises(UsageError, match=(
      r"can create, got '.*locked/a/b', but its parent '.*locked' is not "
      r"writable")):
    _usage.writable_folder('output_dir', os.path.join(locked, 'a', 'b'))
  assert asked[-1] == (locked, os.W_OK | os.X_OK)


@pytest.mark.skipif(os.geteuid() == 0, reason='root may write anywhere')
def test_writable_folder_rejects_a_read_only_folder(tmp_path):
  locked = tmp_path / 'locked'
  locked.mkdir()
  locked.chmod(0o500)
  try:
    with pytest.raises(UsageError, match='is not writable'):
      _usage.writable_folder('output_dir', str(locked / 'run'))
  finally:
    locked.chmod(0o700)


def test_readable_file(tmp_path):
  config = tmp_path / 'a.gin'
  config.write_text('')
  _usage.readable_file('config_file', str(config))
  _usage.readable_file('config_file', 'a.gin', [str(tmp_path)])
  with pytest.raises(UsageError, match=(
      r'^Unable to open file: a.gin \(--config_file must name an existing, '
      r'readable file; not found\)\.$')):
    _usage.readable_file('config_file', 'a.gin', [''])
  with pytest.raises(UsageError, match='; it is a folder'):
    _usage.readable_file('config_file', str(tmp_path))


@pytest.mark.parametrize('value', [0.0, -1.0, math.inf, math.nan])
def test_positive_number_rejects(value):
  with pytest.raises(UsageError, match=(
      rf'^--learning_rate must be a positive finite number, got {value}\.$')):
    _usage.positive_number('learning_rate', value)


def test_positive_number_accepts():
  for value in (None, 1e-8, 3.0):
    _usage.positive_number('learning_rate', value)


def test_quote_free():
  _usage.quote_free('dataset', 'mnist', 'a dataset name')
  _usage.quote_free('dataset', None, 'a dataset name')
  for bad in ('a"b', "it's", 'a\nb'):
    with pytest.raises(UsageError, match=r'^--dataset must be a dataset name'
                       r' \(no quotes or line breaks\), got '):
      _usage.quote_free('dataset', bad, 'a dataset name')


def test_parse_returns_the_message_and_report_prints_two_lines(capsys):
  flag_values = flags.FlagValues()
  flags.DEFINE_integer('n', 1, 'n', lower_bound=1, flag_values=flag_values)

  def validate(f):
    _usage.require(f.n != 3, f'--n must not be 3, got {f.n}.')
  assert _usage.parse(flag_values, ['prog', '--n', '2'], validate) is None
  assert flag_values.n == 2
  assert _usage.parse(flag_values, ['prog', '--n', '3'], validate) == (
      '--n must not be 3, got 3.')
  assert _usage.parse(flag_values, ['prog', '--n', '0'], validate) == (
      'flag --n=0: 0 is not a positive integer')
  assert _usage.parse(flag_values, ['prog'], validate) is None
  assert flag_values.n == 1  # Each parse starts from the defaults.
  _usage.report('prog', 'bad.', 'Run `prog --help`.')
  assert capsys.readouterr().err == 'prog: bad.\nRun `prog --help`.\n'
