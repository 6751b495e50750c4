"""Stopping a training run cleanly on SIGTERM or SIGINT (preemption).

A cluster manager that preempts a job sends SIGTERM and, after a grace
period, SIGKILL. While a run is active, `SignalWatch` turns SIGTERM and
SIGINT into a request: the run finishes the step it is in, writes a
checkpoint, flushes its summaries and raises `Preempted`. The handlers are
installed only for the duration of the run, and only from the main thread
(Python allows signal handlers nowhere else); the previous ones come back
afterwards.
"""

import signal
import threading

__all__ = ['Preempted', 'SignalWatch', 'SIGNALS']

SIGNALS = (signal.SIGTERM, signal.SIGINT)


class Preempted(SystemExit):
  """A run stopped on a signal after saving a checkpoint.

  A SystemExit, so an uncaught one ends the program without a traceback,
  with exit status 128 + the signal number (143 for SIGTERM, 130 for
  SIGINT), as a process killed by the signal reports; the message was
  printed before it was raised.

  Attributes:
    signum: the signal received (on this worker, or on another one).
    step: the step the run stopped after.
    checkpoint: the checkpoint written, or None if none could be.
    message: the printed message.
  """

  def __init__(self, message, signum, step, checkpoint):
    super().__init__(128 + int(signum))
    self.message = message
    self.signum = int(signum)
    self.step = step
    self.checkpoint = checkpoint

  def __str__(self):
    return self.message


class SignalWatch:
  """Context manager: while active, SIGTERM/SIGINT only set `signum`.

  A second SIGINT while one is pending raises KeyboardInterrupt at once (a
  person pressing Ctrl-C twice means it); further SIGTERMs are ignored so
  that the checkpoint being written completes.
  """

  def __init__(self):
    self.signum = None
    self._previous = {}

  @property
  def requested(self):
    return self.signum is not None

  def _handle(self, signum, frame):
    del frame
    if self.signum is not None and signum == signal.SIGINT:
      raise KeyboardInterrupt
    if self.signum is None:
      self.signum = signum

  def __enter__(self):
    self.signum = None
    if threading.current_thread() is threading.main_thread():
      for sig in SIGNALS:
        self._previous[sig] = signal.signal(sig, self._handle)
    return self

  def __exit__(self, *exc_info):
    for sig, handler in self._previous.items():
      # None: the old handler was not set from Python; the default is
      # the closest thing to put back.
      signal.signal(sig, signal.SIG_DFL if handler is None else handler)
    self._previous = {}
    return False
