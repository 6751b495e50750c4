"""Runs Python code in a fresh interpreter where tfnp_trax cannot be imported.

Exported models must load with TensorFlow alone. tfnp_trax may be installed
(e.g. `pip install -e`), so removing the repository from the path is not
enough: the child also blocks the package names in `sys.meta_path` and
`sys.modules`, and checks that `import tfnp_trax` really fails before running
the code.
"""

import os
import subprocess
import sys
import tempfile
import textwrap

__all__ = ['run_without_tfnp_trax']

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
_BLOCKED = ('tfnp_trax', 'distribute')

_PRELUDE = f'''
import sys

BLOCKED = {_BLOCKED!r}
REPO = {REPO!r}


class _Blocker:
  def find_spec(self, name, path=None, target=None):
    if name.split('.')[0] in BLOCKED:
      raise ImportError(f'{{name}} is blocked in this process')
    return None


sys.meta_path.insert(0, _Blocker())
for _name in BLOCKED:
  sys.modules[_name] = None
sys.path[:] = [p for p in sys.path if p not in ('', '.', REPO)]
try:
  import tfnp_trax  # pylint: disable=unused-import
except ImportError:
  pass
else:
  raise SystemExit('tfnp_trax is importable; the isolation failed')
'''


def run_without_tfnp_trax(code, timeout=300):
  """Runs `code` (after the blocking prelude); returns its stdout."""
  env = dict(os.environ)
  env['PYTHONPATH'] = os.pathsep.join(
      p for p in env.get('PYTHONPATH', '').split(os.pathsep)
      if p and os.path.abspath(p) != REPO)
  env.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')
  with tempfile.TemporaryDirectory() as cwd:
    proc = subprocess.run(
        [sys.executable, '-c', _PRELUDE + textwrap.dedent(code)],
        capture_output=True, text=True, timeout=timeout, env=env, cwd=cwd,
        check=False)
  if proc.returncode != 0:
    raise AssertionError(f'isolated subprocess failed ({proc.returncode}):\n'
                         f'STDOUT:\n{proc.stdout[-5000:]}\n'
                         f'STDERR:\n{proc.stderr[-5000:]}')
  return proc.stdout
