"""Usage errors before TensorFlow starts, in a command-line process.

`tfnp_trax/__init__.py` imports TensorFlow, which takes seconds; the
commands (`tfnp-trax train`, `tfnp-trax rl`, `python -m tfnp_trax.trainer`)
run inside that package. So `tfnp_trax/__init__.py` calls `check()` first:
in a command-line process it parses the command's flags and checks them
(`_train_flags`, `_rl_flags`, `_trainer_flags`, all free of TensorFlow),
and a bad flag ends the process at once with exit status 2 and two lines
on stderr. Good flags, `--help` and other processes (a library user's
script, the tests) go on as before; the command parses them again itself.
"""

import sys

from tfnp_trax.cli import _quiet
from tfnp_trax.cli import _usage

__all__ = ['check', 'usage_error']

_HELP = ('-h', '--help', '--helpfull', 'help')


def _commands():
  # pylint: disable=g-import-not-at-top
  from tfnp_trax.cli import _export_flags
  from tfnp_trax.cli import _rl_flags
  from tfnp_trax.cli import _train_flags
  from tfnp_trax.cli import _trainer_flags
  # pylint: enable=g-import-not-at-top
  return {
      'train': ('tfnp-trax train', _train_flags,
                'Run `tfnp-trax train --help` for the flags.'),
      'rl': ('tfnp-trax rl', _rl_flags,
             'Run `tfnp-trax rl --helpfull` for the flags.'),
      'export': ('tfnp-trax export', _export_flags,
                 'Run `tfnp-trax export --help` for the flags.'),
      'trainer': ('python -m tfnp_trax.trainer', _trainer_flags,
                  'Run `python -m tfnp_trax.trainer --help` for the flags.'),
  }


def usage_error(command, args):
  """The usage error of `command`'s flags `args`, or None if they are good.

  Args:
    command: 'train', 'rl', 'export' or 'trainer'.
    args: the command's arguments, without the program name.

  Returns:
    None, or `(prog, message, help_hint)` to report.
  """
  prog, module, hint = _commands()[command]
  message = _usage.parse(module.FLAGS, [prog] + list(args), module.validate)
  return None if message is None else (prog, message, hint)


def _command_and_args(argv, process):
  """(command, its arguments) of this process, or None to leave it alone."""
  args = list(argv[1:])
  if any(a in _HELP for a in args):
    return None
  if process == 'trainer':
    return 'trainer', args
  if args and not args[0].startswith('-'):
    if args[0] not in ('train', 'rl', 'export'):
      return None  # `run` names the unknown command.
    return args[0], args[1:]
  return 'train', args


def check(argv=None):
  """Exits with status 2 on a usage error in a command-line process."""
  process = _quiet.command_line()
  if process is None:
    return
  found = _command_and_args(sys.argv if argv is None else argv, process)
  if found is None:
    return
  error = usage_error(*found)
  if error is not None:
    _usage.report(*error)
    sys.exit(2)
