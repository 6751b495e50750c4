"""A quiet start for the command line: TensorFlow's C++ start-up logging.

Importing TensorFlow prints C++ log lines a user of `tfnp-trax train` cannot
act on: CUDA probing on a machine without a GPU (`cudart_stub`,
`cuInit`), CPU feature notes (`cpu_feature_guard`), the oneDNN notice, XLA
service lines, and absl's "All log messages before absl::InitializeLog()"
warning. Most are written before TensorFlow reads `TF_CPP_MIN_LOG_LEVEL`,
so the level alone does not hide them; they go straight to file
descriptor 2. Hence, in a command-line process only:

* `TF_CPP_MIN_LOG_LEVEL=3` is set before TensorFlow is imported, which
  hides the lines written after absl's logging starts;
* while `tfnp_trax` imports TensorFlow, descriptor 2 goes to a temporary
  file; afterwards every line of it that is not a C++ log line is written
  to the real stderr (Python warnings and errors are never lost), and all
  of it if the import failed.

`tfnp_trax/__init__.py` calls `begin()` first and `end()` last. Nothing
happens in other processes (a library user's script, the tests), with
`--verbose` on the command line, or when the user set
`TF_CPP_MIN_LOG_LEVEL=0` (which asks for every line).
"""

import os
import re
import sys
import tempfile
import time

__all__ = ['command_line', 'wants_quiet', 'begin', 'end', 'is_log_noise',
           'process_start']

# A C++ log line of absl (TF >= 2.16): "I0000 00:00:1796.72 7916 port.cc:153]"
# or of TF's older logger: "2024-05-01 10:00:00.123: W tensorflow/...".
# Fatal (F) lines are kept: they explain a crash.
_ABSL_LINE = re.compile(r'^[IWE]\d{4} \d\d:\d\d:\d+\.\d+\s+\d+ \S+:\d+\]')
_TF_LINE = re.compile(r'^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+: [IWE] ')
_ABSL_PREINIT = 'WARNING: All log messages before absl::InitializeLog()'

_COMMANDS = {'tfnp-trax': 'tfnp-trax', 'tfnp_trax.cli': 'tfnp-trax',
             'tfnp_trax.trainer': 'trainer'}

_state = {'capture': None, 'saved_fd': None, 'started': False}
_IMPORTED_AT = time.monotonic()


def command_line(argv=None, orig_argv=None):
  """Which command this process runs: 'tfnp-trax', 'trainer' or None.

  Args:
    argv: sys.argv (default); `tfnp-trax` is recognised by its name.
    orig_argv: sys.orig_argv (default); `python -m tfnp_trax.cli` and
      `python -m tfnp_trax.trainer` are recognised there, since sys.argv[0]
      is only '-m' while their package imports.
  """
  argv = sys.argv if argv is None else argv
  orig_argv = getattr(sys, 'orig_argv', []) if orig_argv is None else orig_argv
  if argv and os.path.basename(argv[0]) in ('tfnp-trax', 'tfnp-trax.exe'):
    return 'tfnp-trax'
  for flag, module in zip(orig_argv, orig_argv[1:]):
    if flag == '-m' and module in _COMMANDS:
      return _COMMANDS[module]
  return None


def wants_quiet(argv=None, environ=None):
  """Whether the start-up lines are hidden: not --verbose, not level 0."""
  argv = sys.argv if argv is None else argv
  environ = os.environ if environ is None else environ
  verbose = any(a in ('--verbose', '--verbose=true', '--verbose=1')
                for a in argv[1:])
  return not verbose and environ.get('TF_CPP_MIN_LOG_LEVEL') != '0'


def is_log_noise(line):
  """Whether a stderr line is TensorFlow/absl C++ start-up logging."""
  return bool(_ABSL_LINE.match(line) or _TF_LINE.match(line) or
              line.startswith(_ABSL_PREINIT))


def begin():
  """Starts the quiet import in a command-line process (see the module)."""
  command = command_line()
  if command == 'tfnp-trax' and not _state['started'] and not any(
      a in ('-h', '--help', '--helpfull', 'help') for a in sys.argv[1:]):
    # TensorFlow takes seconds to import on a slow machine: show life now.
    print('tfnp-trax: starting TensorFlow...', flush=True)
  _state['started'] = True
  if _state['capture'] is not None or not command or not wants_quiet():
    return
  os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '3')
  try:
    sys.stderr.flush()
    capture = tempfile.TemporaryFile(mode='w+b')
    _state['saved_fd'] = os.dup(2)
    os.dup2(capture.fileno(), 2)
  except OSError:  # No descriptor 2 to redirect (e.g. a closed stderr).
    return
  _state['capture'] = capture
  # An import that fails never reaches end(): restore stderr before Python
  # prints the traceback, and show everything captured.
  previous_hook = sys.excepthook

  def hook(*exc_info):
    end(show_all=True)
    previous_hook(*exc_info)
  sys.excepthook = hook


def end(show_all=False):
  """Restores stderr and writes what it got, less the C++ log lines."""
  capture = _state['capture']
  if capture is None:
    return
  _state['capture'] = None
  sys.stderr.flush()
  os.dup2(_state['saved_fd'], 2)
  os.close(_state['saved_fd'])
  capture.seek(0)
  text = capture.read().decode('utf-8', errors='replace')
  capture.close()
  kept = [line for line in text.splitlines(keepends=True)
          if show_all or not is_log_noise(line)]
  if kept:
    sys.stderr.write(''.join(kept))
    sys.stderr.flush()


def process_start():
  """This process's start on the `time.monotonic()` clock (best effort).

  Linux gives the start time in /proc; elsewhere this is when this module
  was imported, which `tfnp_trax` does first.
  """
  try:
    with open('/proc/self/stat', encoding='ascii') as f:
      # Field 22 (starttime, in clock ticks since boot) follows the command
      # name, which may hold spaces: split after its closing parenthesis.
      fields = f.read().rsplit(')', 1)[1].split()
    with open('/proc/uptime', encoding='ascii') as f:
      uptime = float(f.read().split()[0])
    age = uptime - int(fields[19]) / os.sysconf('SC_CLK_TCK')
  except (OSError, ValueError, IndexError):
    return _IMPORTED_AT
  now = time.monotonic()
  # A clock that disagrees wildly (containers may fake uptime): fall back.
  return now - age if 0 <= age <= now - _IMPORTED_AT + 60 else _IMPORTED_AT
