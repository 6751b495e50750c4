"""The default output folders live in the user's cache, not in the temp dir."""

import os
import tempfile

import gin

from tfnp_trax.cli import trainer
from tfnp_trax.cli import _cache_dir
from tfnp_trax.cli import _rl_flags
from tfnp_trax.cli import _train_flags


def test_xdg_cache_home_is_honoured(monkeypatch, tmp_path):
  monkeypatch.setenv('XDG_CACHE_HOME', str(tmp_path / 'xdg'))
  assert _cache_dir.cache_dir() == str(tmp_path / 'xdg' / 'tfnp_trax')
  assert _cache_dir.default_output_dir('rl', 'x') == str(
      tmp_path / 'xdg' / 'tfnp_trax' / 'rl' / 'x')


def test_without_xdg_cache_home_it_is_dot_cache_in_home(monkeypatch):
  monkeypatch.delenv('XDG_CACHE_HOME', raising=False)
  monkeypatch.setenv('HOME', '/home/someone')
  assert _cache_dir.cache_dir() == '/home/someone/.cache/tfnp_trax'
  # The XDG convention ignores a relative XDG_CACHE_HOME.
  assert _cache_dir.cache_dir({'XDG_CACHE_HOME': 'cache'}) == (
      '/home/someone/.cache/tfnp_trax')


def test_defaults_are_not_under_the_temp_dir_nor_in_home(monkeypatch):
  monkeypatch.delenv('XDG_CACHE_HOME', raising=False)
  monkeypatch.setenv('HOME', '/home/someone')
  temp = os.path.realpath(tempfile.gettempdir())
  train_flags = _train_flags.FLAGS
  train_flags.unparse_flags()
  train_flags(['tfnp-trax train', '--task', 'digits', '--model', 'mlp'])
  rl_flags = _rl_flags.FLAGS
  rl_flags.unparse_flags()
  rl_flags(['tfnp-trax rl', '--joint'])
  gin.clear_config()
  folders = {
      'train': _train_flags.output_dir(),
      'rl': _rl_flags.output_dir(),
      'trainer': trainer._default_output_dir(),  # pylint: disable=protected-access
  }
  assert folders['train'] == '/home/someone/.cache/tfnp_trax/digits_mlp'
  assert folders['rl'] == (
      '/home/someone/.cache/tfnp_trax/rl/ppo_joint_CartPole-v1')
  assert folders['trainer'].startswith(
      '/home/someone/.cache/tfnp_trax/trainer/model_random_')
  for name, folder in folders.items():
    assert not folder.startswith(temp + os.sep), (name, folder)
    # A `tfnp_trax` folder right in ~ would shadow the library there too.
    assert not folder.startswith('/home/someone/tfnp_trax'), (name, folder)
  train_flags.unparse_flags()
  rl_flags.unparse_flags()


def test_help_says_where_runs_go():
  for flag_values in (_train_flags.FLAGS, _rl_flags.FLAGS):
    text = flag_values['output_dir'].help
    assert '$XDG_CACHE_HOME/tfnp_trax' in text and '~/.cache' in text
    assert 'temp' not in text
