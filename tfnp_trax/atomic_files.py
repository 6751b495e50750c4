"""Writing files so that a reader never sees half of one.

Every file the library writes (weights, checkpoints' pickles, exported
models, run records, cached vocabularies, RL trajectories) goes through
`write_atomically`: the bytes go to a partial file beside the target, are
flushed to disk, and the partial file is renamed over the target. A crash
at any moment leaves the previous file or the whole new one; the partial
file of a failed write is removed.
"""

import os
import threading

__all__ = ['write_atomically', 'partial_path']


def partial_path(path, suffix=None):
  """The partial file `write_atomically` writes beside `path`."""
  if suffix is None:
    suffix = f'.partial-{os.getpid()}-{threading.get_ident()}'
  return path + suffix


def write_atomically(path, data, partial_suffix=None):
  """Writes `data` to `path`: readers see the old file or the whole new one.

  Example:
    >>> os.makedirs(export_dir, exist_ok=True)
    >>> path = write_atomically(os.path.join(export_dir, 'a.txt'), b'hello')
    >>> with open(path, 'rb') as f:
    ...   f.read()
    b'hello'

  Args:
    path: the file to write.
    data: bytes, or a function that writes to the binary file it is given.
    partial_suffix: the partial file's suffix (default
      `.partial-<pid>-<thread>`, so concurrent writers never share one).

  Returns:
    `path`.
  """
  partial = partial_path(path, partial_suffix)
  try:
    with open(partial, 'wb') as f:
      if callable(data):
        data(f)
      else:
        f.write(data)
      f.flush()
      os.fsync(f.fileno())
    os.replace(partial, path)
  finally:
    if os.path.exists(partial):
      os.remove(partial)
  return path
