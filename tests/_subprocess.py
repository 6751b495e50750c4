"""Runs a Python snippet in a fresh interpreter with a hard timeout.

Multi-device tests need logical CPU devices configured before TensorFlow
initialises, so each runs in its own process (see tests/_multi_device.py,
which builds on `run_python`).
"""

import os
import subprocess
import sys
import textwrap

__all__ = ['REPO', 'run_python', 'run_process', 'tail']

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_TAIL = 5000  # Characters of each stream a failure message shows.


def tail(text, n=_TAIL):
  """The last `n` characters of a child's output (bytes or str, or None)."""
  if text is None:
    return ''
  if isinstance(text, bytes):
    text = text.decode(errors='replace')
  return text[-n:]


def run_process(code, timeout=300, env=None):
  """Runs `code` in a new interpreter; returns its `CompletedProcess`.

  Args:
    code: Python source; it is dedented first, so it may be indented.
    timeout: seconds; the child is killed after that many.
    env: extra environment variables for the child.

  Returns:
    The finished child (text `stdout` and `stderr`), which exited with 0.

  Raises:
    AssertionError: the child exited non-zero or ran past `timeout`; the
      message holds the tail of its stdout and stderr.
  """
  full_env = dict(os.environ)
  full_env['PYTHONPATH'] = REPO + os.pathsep + full_env.get('PYTHONPATH', '')
  full_env.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')
  if env:
    full_env.update(env)
  try:
    proc = subprocess.run([sys.executable, '-c', textwrap.dedent(code)],
                          capture_output=True, text=True, timeout=timeout,
                          env=full_env, cwd=REPO, check=False)
  except subprocess.TimeoutExpired as e:
    raise AssertionError(f'subprocess ran past its {timeout}s timeout and '
                         f'was killed:\nSTDOUT:\n{tail(e.stdout)}\n'
                         f'STDERR:\n{tail(e.stderr)}') from None
  if proc.returncode != 0:
    raise AssertionError(f'subprocess failed ({proc.returncode}):\n'
                         f'STDOUT:\n{tail(proc.stdout)}\n'
                         f'STDERR:\n{tail(proc.stderr)}')
  return proc


def run_python(code, timeout=300, env=None):
  """Like `run_process`, but returns only the child's stdout."""
  return run_process(code, timeout=timeout, env=env).stdout
