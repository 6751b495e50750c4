"""Writing exported files so that a reader never sees half of one."""

import os

__all__ = ['write_atomically']


def write_atomically(path, data):
  """Writes bytes `data` to `path`: the old file or the whole new one.

  The bytes go to a file beside `path`, are flushed to disk, and the file
  is renamed over `path`; a crash at any moment leaves either the previous
  file or the complete new one, and at most a `.partial-<pid>` file.

  Returns:
    `path`.
  """
  partial = f'{path}.partial-{os.getpid()}'
  try:
    with open(partial, 'wb') as f:
      f.write(data)
      f.flush()
      os.fsync(f.fileno())
    os.replace(partial, path)
  finally:
    if os.path.exists(partial):
      os.remove(partial)
  return path
