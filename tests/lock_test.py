"""The lock file pins every dependency, and the README's commands use it."""

import importlib.metadata
import pathlib
import re
import runpy

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

_ROOT = pathlib.Path(__file__).resolve().parent.parent
_LOCK = _ROOT / '.ci' / 'requirements.lock'


def _lock():
  pins = {}
  for line in _LOCK.read_text().splitlines():
    line = line.split('#', 1)[0].strip()
    if not line:
      continue
    name, sep, version = line.partition('==')
    assert sep and version and not line.startswith('-'), (
        f'{_LOCK.name}: every line must be name==version, got {line!r}')
    pins[canonicalize_name(name)] = version
  return pins


def _commands():
  module = runpy.run_path(str(_ROOT / '.ci' / 'readme_command.py'))
  return module['readme_commands']((_ROOT / 'README.md').read_text())


def test_readme_opens_with_the_two_commands_and_both_use_the_lock():
  commands = _commands()
  assert commands['main'].endswith('tfnp-trax train')
  assert commands['test'].endswith('python -m pytest -q tests')
  for command in commands.values():
    assert '-c .ci/requirements.lock' in command, command


def test_lock_pins_every_declared_requirement_within_its_range():
  pins = _lock()
  declared = importlib.metadata.requires('tfnp-trax')
  assert declared, 'tfnp-trax is not installed (pip install -e ".[test]")'
  checked = 0
  for text in declared:
    req = Requirement(text)
    marker = req.marker
    if marker and not (marker.evaluate({'extra': 'test'})
                       or marker.evaluate({'extra': ''})):
      continue  # Another extra (bench, notebooks-only, ...).
    name = canonicalize_name(req.name)
    assert name in pins, f'{req.name} is not in {_LOCK.name}: run .ci/relock'
    assert req.specifier.contains(pins[name], prereleases=True), (
        f'{_LOCK.name} pins {req.name}=={pins[name]}, outside {req.specifier}')
    checked += 1
  assert checked >= 10


def test_lock_has_no_editable_or_local_lines():
  text = _LOCK.read_text()
  assert not re.search(r'^\s*(-e|\S+ @ )', text, re.M)
  assert 'tfnp' not in text.lower().split('# remade by')[-1]
