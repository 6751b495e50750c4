"""The `tfnp-trax` command: `tfnp-trax train ...`, `rl ...` and `export ...`.

Each command's flags live in a module free of TensorFlow (`_train_flags`,
`_rl_flags`, `_export_flags`; `_trainer_flags` for
`python -m tfnp_trax.trainer`) with a
`validate` that checks ranges, combinations and folders, so that a bad
value is a usage error (exit 2, two lines naming the flag) before
TensorFlow is imported (`_preflight`). Without --output_dir, runs go to the
user's cache folder (`_cache_dir`). `python -m tfnp_trax.trainer` is
`cli.trainer`.

`import tfnp_trax` calls `before_tensorflow_import()` first and
`after_tensorflow_import()` last; both do nothing outside a command-line
process.
"""

import importlib
import sys

from absl import flags

from tfnp_trax.cli import _preflight
from tfnp_trax.cli import _quiet

__all__ = ['run', 'before_tensorflow_import', 'after_tensorflow_import']

_COMMANDS = {'train': 'tfnp_trax.cli.train', 'rl': 'tfnp_trax.cli.rl',
             'export': 'tfnp_trax.cli.export_run'}


def before_tensorflow_import():
  """In a command-line process: usage errors now, then a quiet start.

  A bad flag ends the process with exit status 2 before TensorFlow's
  seconds-long import (`_preflight`); then TensorFlow's C++ start-up
  logging is hidden until `after_tensorflow_import()` (`_quiet`), which
  only works if it starts before TensorFlow does.
  """
  _preflight.check()
  _quiet.begin()


def after_tensorflow_import():
  """Ends the quiet start: stderr as before, less TensorFlow's C++ lines."""
  _quiet.end()


def run(argv=None):
  """Dispatches to a subcommand; `tfnp-trax` alone runs `train`."""
  this_process = argv is None
  argv = list(sys.argv if argv is None else argv)
  prog = 'tfnp-trax'
  if len(argv) > 1 and argv[1] in ('-h', '--help', 'help'):
    print(f'usage: {prog} {{{",".join(_COMMANDS)}}} [--flags]\n'
          f'  {prog} train --help   lists the training flags.')
    return 0
  command = 'train'
  rest = argv[1:]
  if rest and not rest[0].startswith('-'):
    command, rest = rest[0], rest[1:]
  if command not in _COMMANDS:
    print(f'{prog}: unknown command {command!r}; choose one of '
          f'{sorted(_COMMANDS)}.', file=sys.stderr)
    return 2
  module = importlib.import_module(_COMMANDS[command])
  if '--help' in rest or '--helpfull' in rest or '-h' in rest:
    print(f'usage: {prog} {command} [--flags]\n')
    print(module.FLAGS.get_help())
    return 0
  kwargs = {}
  if command == 'train' and this_process:
    # The time budget counts from the process start, TensorFlow's import
    # included (tfnp_trax imports it before this runs).
    kwargs['started_at'] = _quiet.process_start()
  try:
    return module.main([f'{prog} {command}'] + rest, **kwargs)
  except flags.Error as e:
    # A bad flag value (an unknown enum choice, 'ten' for an integer) is a
    # usage error: say which and exit 2, as for unknown flags, not a crash.
    print(f'{prog} {command}: {e}\nRun `{prog} {command} --help` for the '
          f'flags.', file=sys.stderr)
    return 2


if __name__ == '__main__':
  sys.exit(run())
