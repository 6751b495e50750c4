"""Runs a Python snippet in a fresh interpreter with a hard timeout.

Multi-device tests need logical CPU devices configured before TensorFlow
initialises, so each runs in its own process.
"""

import os
import subprocess
import sys
import textwrap

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_python(code, timeout=300, env=None):
  """Runs `code` in a new interpreter; returns stdout, raises on failure."""
  full_env = dict(os.environ)
  full_env['PYTHONPATH'] = REPO + os.pathsep + full_env.get('PYTHONPATH', '')
  full_env.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')
  if env:
    full_env.update(env)
  proc = subprocess.run([sys.executable, '-c', textwrap.dedent(code)],
                        capture_output=True, text=True, timeout=timeout,
                        env=full_env, cwd=REPO, check=False)
  if proc.returncode != 0:
    raise AssertionError(f'subprocess failed ({proc.returncode}):\n'
                         f'STDOUT:\n{proc.stdout[-5000:]}\n'
                         f'STDERR:\n{proc.stderr[-5000:]}')
  return proc.stdout
