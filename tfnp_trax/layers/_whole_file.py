"""A weight file's bytes, read whole and checked, and the one pickle in them.

`data` reads a file to its end (through `_gzip_whole` when gzipped) and
`unpickle` reads it with the restricted unpickler, requiring the pickle to
fill the bytes exactly. Every failure is a WeightFileError naming the file,
what is wrong and the likely fix: callers never see the zlib.error,
EOFError, KeyError or IndexError a damaged file raises deep inside.
"""

import io
import os

from tfnp_trax.layers import _gzip_whole
from tfnp_trax.layers import _safe_pickle

__all__ = ['data', 'unpickle']

WeightFileError = _safe_pickle.WeightFileError


def data(file_path, gzip, kind):
  """All the bytes of `file_path`, decompressed and checked if `gzip`."""
  if os.path.isdir(file_path):
    raise WeightFileError(
        f'{file_path}: is a directory, expected a {kind}. Pass the file '
        f'itself (a Trax checkpoint directory holds model.pkl.gz).')
  try:
    with open(file_path, 'rb') as f:
      return _gzip_whole.read(f) if gzip else f.read()
  except _gzip_whole.GzipDataError as e:
    raise WeightFileError(
        f'{file_path}: cannot read this {kind} ({e.reason}). The file is '
        f'truncated, corrupt or not a Trax weight file: {e.hint}.') from None
  except OSError as e:
    raise WeightFileError(
        f'{file_path}: cannot read this {kind} ({type(e).__name__}: '
        f'{e.strerror or e}); check the path and its permissions.') from e


def unpickle(data, file_path, kind):
  """The one pickle that fills `data`, read by the restricted unpickler."""
  buffer = io.BytesIO(data)
  try:
    obj = _safe_pickle.load(buffer, file_path, max_bytes=len(data))
  except (_safe_pickle.UnsafePickleError, MemoryError):
    raise
  except Exception as e:  # pylint: disable=broad-except
    # A damaged pickle fails in any of a dozen ways (KeyError on a memo,
    # IndexError on the stack, TypeError in a constructor, ...): all of
    # them mean the same thing to the caller.
    # Cut short: the unpickler ran out of bytes (it read up to the end, or
    # says so) before the pickle's STOP.
    cut = (isinstance(e, EOFError) or buffer.tell() >= len(data) or
           any(word in str(e) for word in ('truncated', 'exhausted')))
    what = ('the pickle ends early' if cut else
            f'the pickle is malformed ({type(e).__name__}: {e})')
    hint = ('copy the file again or re-save it' if cut else
            'it was not written by pickle_to_file, save_to_file or Trax')
    raise WeightFileError(
        f'{file_path}: cannot read this {kind} ({what}). The file is '
        f'truncated, corrupt or not a Trax weight file: {hint}.') from e
  if buffer.tell() != len(data):
    raise WeightFileError(
        f'{file_path}: cannot read this {kind} ({len(data) - buffer.tell()} '
        f'bytes follow the end of the pickle at byte {buffer.tell()}). The '
        f'file is corrupt or not a Trax weight file: Trax writes one pickle '
        f'per file.')
  return obj
