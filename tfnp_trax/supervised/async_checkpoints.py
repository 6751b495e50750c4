"""Non-blocking checkpoints: an on-device copy, then a background write.

`AsyncCheckpointWriter.snapshot` copies the checkpointed variables into
shadow variables of the same dtypes and shapes, on the same devices, in one
compiled function; that copy (and the manifest data the caller gathers) is
all a save blocks training for. `submit` then runs the write of the shadows
(the usual atomic, checksummed `CheckpointManager.save`, and anything else
the caller adds, e.g. Trax's files) on one background thread while training
goes on.

At most one write is in flight: `wait` joins it, and `snapshot` refuses to
run while one is (the shadows are being read), so the owner waits first.
An exception raised in the thread is kept and raised by the next `wait`,
never only printed. A hook run at interpreter exit waits for the last write,
so a script that ends normally never loses it; a process killed mid-write
leaves only the hidden `.tmp-*` folder, which the next writer removes.
"""

import atexit
import sys
import threading
import weakref

from absl import logging
import tensorflow as tf

__all__ = ['AsyncCheckpointWriter']


class AsyncCheckpointWriter:
  """Copies variables on device and writes the copies on a thread.

  Args:
    owner: the trainer's name, used in messages (e.g. 'Loop').

  Example:
    >>> import tensorflow as tf
    >>> v = tf.Variable([1.0, 2.0])
    >>> writer = AsyncCheckpointWriter('Example')
    >>> shadows = writer.snapshot({'weights': [v]})
    >>> _ = v.assign([5.0, 6.0])  # Training goes on; the copy is kept.
    >>> seen = []
    >>> writer.submit(lambda: seen.append(shadows['weights'][0].numpy()),
    ...               'a write')
    >>> writer.wait()
    >>> seen[0].tolist()
    [1.0, 2.0]
  """

  def __init__(self, owner):
    self.owner = owner
    self._sources = None  # The variables the shadows were made for.
    self._shadows = None
    self._by_id = {}
    self._copy = None
    self._thread = None
    self._what = None
    self._error = None
    self._lock = threading.Lock()
    atexit.register(_wait_at_exit, weakref.ref(self))

  @property
  def in_flight(self):
    """Whether a background write is running."""
    return self._thread is not None and self._thread.is_alive()

  def snapshot(self, variables):
    """Copies `variables` into their shadows; returns the shadows.

    The shadows are made on the first call (and again if the variables
    changed): one per variable, same dtype and shape, on that variable's
    device, outside any tf.function or strategy scope. A distributed
    variable's shadow gets the value a cross-replica read gives.

    Args:
      variables: dict group -> list of tf.Variables.

    Returns:
      dict group -> list of shadow tf.Variables, in the same layout.

    Raises:
      RuntimeError: a write is still in flight (call `wait` first).
    """
    if self._thread is not None:
      raise RuntimeError(
          f'{self.owner}: AsyncCheckpointWriter.snapshot was called while '
          f'the write of {self._what} is in flight; call wait() first (the '
          f'thread is reading the copies).')
    layout = {k: [(id(v), v.dtype, tuple(v.shape)) for v in vs]
              for k, vs in variables.items()}
    if layout != self._sources:
      self._make_shadows(variables)
      self._sources = layout
    self._copy()
    return self._shadows

  def _make_shadows(self, variables):
    with tf.init_scope():
      shadows = {}
      for group, vs in variables.items():
        shadows[group] = []
        for v in vs:
          with tf.device(v.device):
            shadows[group].append(tf.Variable(
                tf.zeros(v.shape, v.dtype), trainable=False,
                name=f'async_copy_{group}'))
    pairs = [(s, v) for g in variables
             for s, v in zip(shadows[g], variables[g])]

    @tf.function(autograph=False)
    def copy():
      # One program: every assign is an on-device copy, none waits for
      # the host. A distributed variable read here (cross-replica) gives
      # its primary copy, which every replica agrees with.
      for shadow, source in pairs:
        shadow.assign(source.read_value())

    self._shadows = shadows
    self._by_id = {id(v): s for s, v in pairs}
    self._copy = copy

  def shadow_of(self, variable):
    """The shadow of `variable` made by the last `snapshot`."""
    return self._by_id[id(variable)]

  def submit(self, write, what):
    """Runs `write()` on the background thread.

    Args:
      write: () -> None, the write of the shadows; what it raises is kept
        and raised by the next `wait`.
      what: a description for messages (e.g. the checkpoint's folder).

    Raises:
      RuntimeError: a write is still in flight (call `wait` first).
    """
    if self._thread is not None:
      raise RuntimeError(
          f'{self.owner}: AsyncCheckpointWriter.submit of {what} while the '
          f'write of {self._what} is in flight; call wait() first.')

    def run():
      try:
        write()
      except BaseException as e:  # pylint: disable=broad-except
        with self._lock:
          self._error = e

    self._what = what
    # Not a daemon: the interpreter finishes the write before it exits.
    self._thread = threading.Thread(
        target=run, name=f'{self.owner}-checkpoint-writer', daemon=False)
    self._thread.start()

  def wait(self):
    """Waits for the write in flight (if any); raises what it raised."""
    thread = self._thread
    if thread is not None:
      thread.join()
      self._thread = None
    with self._lock:
      error, self._error = self._error, None
    if error is not None:
      raise error


def _wait_at_exit(ref):
  """At interpreter exit: finish the last write; report a failure."""
  writer = ref()
  if writer is None:
    return
  try:
    writer.wait()
  except Exception as e:  # pylint: disable=broad-except
    # Nothing is left to raise into at exit; say it where it is seen.
    message = (f'{writer.owner}: the last checkpoint write failed as the '
               f'program exited: {type(e).__name__}: {e}')
    logging.error(message)
    print(message, file=sys.stderr, flush=True)
