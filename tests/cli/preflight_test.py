"""Usage errors of the commands come before TensorFlow is imported.

Each case runs a fresh interpreter (TensorFlow must not be loaded yet);
a usage error exits within about a second there, so these stay cheap.
"""

import json
import os
import re
import subprocess
import sys
import time

import pytest

from tests import _subprocess
from tfnp_trax.cli import _preflight

# Generous: a usage error takes well under a second; TensorFlow's import
# alone takes several on a loaded 2-core machine.
_TIMEOUT = 60


def _python(*args, code=None):
  env = dict(os.environ)
  env['PYTHONPATH'] = _subprocess.REPO + os.pathsep + env.get('PYTHONPATH',
                                                              '')
  command = [sys.executable, *args] + (['-c', code] if code else [])
  return subprocess.run(command, capture_output=True, text=True, env=env,
                        cwd=_subprocess.REPO, timeout=_TIMEOUT, check=False)


# In-process imports of the package, as each command's process does them:
# `tfnp-trax` by its program name, `python -m` by sys.orig_argv.
_IMPORT = '''
import json, sys
sys.argv = {argv!r}
sys.orig_argv = {orig_argv!r}
try:
  import tfnp_trax
  code = None
except SystemExit as e:
  code = e.code
print(json.dumps([code, 'tensorflow' in sys.modules]))
'''


@pytest.mark.parametrize('argv, orig_argv, first_line', [
    (['tfnp-trax', 'train', '--task', 'digits', '--batch_size', '-8'], [],
     'tfnp-trax train: flag --batch_size=-8: -8 is not a positive integer'),
    (['tfnp-trax', '--d_model', '6'], [],
     'tfnp-trax train: --d_model must be a multiple of --n_heads (4)'),
    (['tfnp-trax', 'rl', '--n_envs', '7'], [],
     'tfnp-trax rl: --n_envs must divide the 256 env steps'),
    (['-m', '--config=train.steps = 3', '--output_dir=/dev/null'],
     ['python', '-m', 'tfnp_trax.trainer', '--config=train.steps = 3',
      '--output_dir=/dev/null'],
     "python -m tfnp_trax.trainer: --output_dir must be a folder, got "
     "'/dev/null', which is a file."),
], ids=['train', 'default_command', 'rl', 'trainer'])
def test_usage_error_exits_2_without_importing_tensorflow(argv, orig_argv,
                                                          first_line):
  out = _python(code=_IMPORT.format(argv=argv, orig_argv=orig_argv))
  assert json.loads(out.stdout.strip().splitlines()[-1]) == [2, False], (
      out.stdout, out.stderr)
  lines = out.stderr.strip().splitlines()
  assert len(lines) <= 2 and lines[0].startswith(first_line), out.stderr


def test_the_real_command_imports_no_tensorflow_on_a_usage_error():
  # -X importtime lists every module the process imported on stderr.
  start = time.monotonic()
  out = _python('-X', 'importtime', '-m', 'tfnp_trax.cli', 'train',
                '--seq_len', '0')
  seconds = time.monotonic() - start
  assert out.returncode == 2, out.stderr[-2000:]
  imported = re.findall(r'^import time:.*\|\s*(\S+)$', out.stderr, re.M)
  assert 'absl.flags' in imported  # The listing works...
  assert not [m for m in imported if m.split('.')[0] in (
      'tensorflow', 'numpy', 'gin')], imported  # ...and holds none of them.
  said = [l for l in out.stderr.splitlines()
          if not l.startswith('import time:')]
  assert said == ['tfnp-trax train: flag --seq_len=0: 0 is not a positive '
                  'integer', 'Run `tfnp-trax train --help` for the flags.']
  assert out.stdout == ''  # Not even "starting TensorFlow...".
  assert seconds < _TIMEOUT


def test_good_flags_help_and_other_commands_pass_through(tmp_path):
  assert _preflight.usage_error('train', ['--steps', '5', '--task', 'copy',
                                          '--output_dir', str(tmp_path)
                                          ]) is None
  assert _preflight.usage_error('rl', ['--n_envs', '16']) is None
  assert _preflight.usage_error('trainer', ['--config=train.steps = 3'
                                            ]) is None
  prog, message, hint = _preflight.usage_error('train', ['--steps', '0'])
  assert (prog, hint) == ('tfnp-trax train',
                          'Run `tfnp-trax train --help` for the flags.')
  assert message == 'flag --steps=0: 0 is not a positive integer'
  find = _preflight._command_and_args  # pylint: disable=protected-access
  assert find(['tfnp-trax', 'train', '--help'], 'tfnp-trax') is None
  assert find(['tfnp-trax', 'serve'], 'tfnp-trax') is None  # run() says so.
  assert find(['tfnp-trax', '--steps', '3'], 'tfnp-trax') == (
      'train', ['--steps', '3'])
  assert find(['-m', 'rl', '--joint'], 'tfnp-trax') == ('rl', ['--joint'])
  assert find(['-m', '--model=MLP'], 'trainer') == ('trainer',
                                                    ['--model=MLP'])


def test_check_does_nothing_outside_a_command_line_process():
  # pytest is no command: even a bad command line is left alone.
  assert _preflight.check(['tfnp-trax', 'train', '--steps', '0']) is None
