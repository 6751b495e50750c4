"""Tests for distribute._procs."""

import io
import sys
import threading
import time

from distribute import _procs


def test_describe_exit():
  assert _procs.describe_exit(3) == 'exited with code 3'
  assert _procs.describe_exit(-9) == (
      'was killed by signal SIGKILL (exit code -9)')


def test_child_prefixes_output_and_stop_ends_it():
  stream = io.StringIO()
  child = _procs.Child(
      [sys.executable, '-c',
       'import time; print("hello", flush=True); time.sleep(60)'],
      env=None, prefix='[w 5] ', stream=stream, lock=threading.Lock())
  deadline = time.monotonic() + 30
  while 'hello' not in stream.getvalue() and time.monotonic() < deadline:
    assert child.poll() is None
    time.sleep(0.05)
  assert child.stop() < 0  # stopped by a signal
  child.join_output()
  assert stream.getvalue() == '[w 5] hello\n'
