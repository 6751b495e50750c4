"""Usage errors of the command line: checks of flag values, and the report.

Every check here is plain Python (no TensorFlow, no NumPy), so a command can
run them before TensorFlow is imported (see `_preflight`) and a mistyped
flag costs a fraction of a second instead of TensorFlow's start-up. A
failed check raises `UsageError`, whose message names the flag, what it
expects and what it got; `report` prints it in two lines and the command
exits with status 2, as for an unknown flag.
"""

import math
import os
import sys

__all__ = ['UsageError', 'require', 'positive_number', 'writable_folder',
           'readable_file', 'gin_search_folders', 'quote_free', 'report', 'parse']


class UsageError(ValueError):
  """A flag value, or a combination of them, that the command cannot run."""


def require(condition, message):
  """Raises `UsageError(message)` unless `condition` holds."""
  if not condition:
    raise UsageError(message)


def positive_number(flag, value):
  """A float flag that must be finite and above 0 (None: not given)."""
  if value is None:
    return
  require(math.isfinite(value) and value > 0,
          f'--{flag} must be a positive finite number, got {value}.')


def _remote(path):
  # gs://..., s3://...: TensorFlow's file systems, checked when written.
  return '://' in path


def writable_folder(flag, path, default=False):
  """`path` is a folder this process can write, or can be created.

  Checks with `os.access`, walking up to the first folder that exists
  when `path` does not exist yet (it is created there). Remote paths
  (`gs://...`) are left to TensorFlow.

  Args:
    flag: the flag's name, for the message.
    path: the folder; None or '' is not checked.
    default: whether `path` is the flag's default (said in the message).

  Raises:
    UsageError: `path` or a parent is a file, or is not writable.
  """
  if not path or _remote(path):
    return
  shown = f'{path!r}' + (' (the default)' if default else '')
  fix = (f' Choose another folder with --{flag}.' if default else
         ' Choose a folder you can write.')
  full = os.path.abspath(os.path.expanduser(path))
  if os.path.exists(full):
    require(os.path.isdir(full),
            f'--{flag} must be a folder, got {shown}, which is a file.{fix}')
    require(os.access(full, os.W_OK | os.X_OK),
            f'--{flag} must be a folder this user can write, got {shown}, '
            f'which is not writable.{fix}')
    return
  parent = os.path.dirname(full)
  while not os.path.exists(parent):
    parent = os.path.dirname(parent)
  require(os.path.isdir(parent),
          f'--{flag} must be a folder path, got {shown}, but {parent!r} '
          f'on it is a file.{fix}')
  require(os.access(parent, os.W_OK | os.X_OK),
          f'--{flag} must be a folder this user can create, got {shown}, '
          f'but its parent {parent!r} is not writable.{fix}')


def gin_search_folders():
  """Where gin looks for a config file: '' and the folders added to it."""
  # Only if gin is loaded: importing it here would slow every usage error.
  gin_config = sys.modules.get('gin.config')
  return list(getattr(gin_config, '_LOCATION_PREFIXES', None) or [''])


def readable_file(flag, path, search_folders=None):
  """`path` names a readable file, here or in one of `search_folders`.

  Args:
    flag: the flag's name, for the message.
    path: the file.
    search_folders: folders a relative `path` may be in (default: gin's
      config search path, as for `--config_file`).
  """
  if _remote(path):
    return
  if search_folders is None:
    search_folders = gin_search_folders()
  candidates = [os.path.join(folder, path) for folder in search_folders]
  found = [c for c in candidates if os.path.isfile(c)]
  if found and os.access(found[0], os.R_OK):
    return
  # Worded as gin words it, with the flag and the reason added.
  why = ('this user cannot read it' if found else 'it is a folder' if
         os.path.isdir(os.path.expanduser(path)) else 'not found')
  raise UsageError(f'Unable to open file: {path} (--{flag} must name an '
                   f'existing, readable file; {why}).')


def quote_free(flag, value, expected):
  """`value` goes into a gin string: no quotes or line breaks in it."""
  if value is None:
    return
  require(not any(c in value for c in '\'"\n\r'),
          f'--{flag} must be {expected} (no quotes or line breaks), got '
          f'{value!r}.')


def parse(flag_values, argv, validate):
  """Parses `argv` into `flag_values`, then runs `validate(flag_values)`.

  Returns:
    None if the flags are good, else the message of the usage error (an
    absl parse error or a `UsageError`).
  """
  from absl import flags  # pylint: disable=g-import-not-at-top
  flag_values.unparse_flags()  # Each call starts from the defaults.
  try:
    flag_values(argv)
    validate(flag_values)
  except (flags.Error, UsageError) as e:
    return str(e)
  return None


def report(prog, message, help_hint=None):
  """Prints a usage error: `prog: message`, then where the flags are listed."""
  text = f'{prog}: {message}'
  if help_hint:
    text += f'\n{help_hint}'
  print(text, file=sys.stderr, flush=True)
