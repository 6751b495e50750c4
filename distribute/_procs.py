"""Child processes for the launcher: prefixed output, whole-group kills."""

import collections
import os
import signal
import subprocess
import threading
import time

__all__ = ['Child', 'describe_exit']

# TensorFlow processes blocked inside the runtime can ignore SIGTERM, so a
# stop escalates to SIGKILL after this grace period.
_TERM_GRACE_S = 2.0
# Lines of each worker's output kept for the launcher's failure message.
TAIL_LINES = 20


def describe_exit(code):
  """'exited with code 3' or 'was killed by signal SIGKILL (exit code -9)'."""
  if code is not None and code < 0:
    try:
      name = signal.Signals(-code).name
    except ValueError:
      name = f'signal {-code}'
    return f'was killed by signal {name} (exit code {code})'
  return f'exited with code {code}'


class Child:
  """One worker process in its own process group, output prefixed."""

  def __init__(self, command, env, prefix, stream, lock):
    self._tail = collections.deque(maxlen=TAIL_LINES)
    self._proc = subprocess.Popen(
        command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL, start_new_session=True)
    self._reader = threading.Thread(
        target=self._forward, args=(prefix, stream, lock), daemon=True)
    self._reader.start()

  @property
  def pid(self):
    return self._proc.pid

  def _forward(self, prefix, stream, lock):
    for raw in iter(self._proc.stdout.readline, b''):
      line = raw.decode('utf-8', errors='replace').rstrip('\n')
      self._tail.append(line)
      with lock:
        stream.write(f'{prefix}{line}\n')
        stream.flush()
    self._proc.stdout.close()

  def tail(self):
    """The last `TAIL_LINES` lines this worker printed."""
    return list(self._tail)

  def poll(self):
    return self._proc.poll()

  def _signal_group(self, sig):
    try:
      os.killpg(self._proc.pid, sig)
    except (ProcessLookupError, PermissionError):
      pass

  def stop(self):
    """SIGTERM to the process group, then SIGKILL; returns the exit code.

    Signals go only to a worker not yet reaped, so its process-group id is
    still its own.
    """
    if self._proc.poll() is None:
      self._signal_group(signal.SIGTERM)
      deadline = time.monotonic() + _TERM_GRACE_S
      while self._proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
      if self._proc.poll() is None:
        self._signal_group(signal.SIGKILL)
    return self._proc.wait()

  def join_output(self, timeout=5.0):
    self._reader.join(timeout)
