"""Reads a whole gzip file and checks every byte of it before returning data.

Python's `gzip.GzipFile` checks a member's CRC32 and length only when a
reader reads past the end of its data; an unpickler stops at the pickle's
STOP opcode, before that, so a corrupt or truncated weight file would load.
`read` decompresses every member to the end of the file, checks each
member's CRC32 and ISIZE, refuses bytes after the last member (gzip's own
reader skips zero padding silently), and only then hands back the data.

It also refuses nonzero padding bits after a member's last deflate code:
zlib never writes them and no decoder reads them, so a bit flipped there
would otherwise go unnoticed. (Header fields that describe rather than hold
data, MTIME, XFL, OS, FTEXT and FNAME, are not covered by any checksum in
gzip files written without FHCRC, which is all of Python's; they cannot
change the data either.)
"""

import struct
import zlib

__all__ = ['GzipDataError', 'read']

_MAGIC = b'\x1f\x8b'
_DEFLATE = 8
_FHCRC, _FEXTRA, _FNAME, _FCOMMENT = 2, 4, 8, 16
_RESERVED_FLAGS = 0xe0
_CHUNK = 1 << 20

_TRUNCATED = 'truncated copy? Copy or download the file again'
_CORRUPT = ('the file is corrupt or was changed after writing; copy it '
            'again from its source or save it again')


class GzipDataError(ValueError):
  """A gzip file is not whole: `reason` says what is wrong, `hint` the fix."""

  def __init__(self, reason, hint):
    super().__init__(f'{reason}: {hint}')
    self.reason = reason
    self.hint = hint


class _Input:
  """A binary file read in chunks, with bytes that can be pushed back."""

  def __init__(self, file_obj):
    self._file = file_obj
    self._pending = b''
    self.offset = 0  # File offset of the next byte handed out.

  def take(self, n):
    """Up to `n` bytes (fewer only at the end of the file)."""
    while len(self._pending) < n:
      chunk = self._file.read(max(_CHUNK, n - len(self._pending)))
      if not chunk:
        break
      self._pending += chunk
    out, self._pending = self._pending[:n], self._pending[n:]
    self.offset += len(out)
    return out

  def chunk(self):
    """The next bytes, at most a chunk; empty at the end of the file."""
    out, self._pending = self._pending or self._file.read(_CHUNK), b''
    self.offset += len(out)
    return out

  def take_through_nul(self):
    """The bytes up to and including the next NUL; None if there is none."""
    while b'\0' not in self._pending:
      chunk = self._file.read(_CHUNK)
      if not chunk:
        return None
      self._pending += chunk
    return self.take(self._pending.index(b'\0') + 1)

  def push_back(self, data):
    self._pending = data + self._pending
    self.offset -= len(data)

  def count_rest(self):
    n = len(self._pending)
    while True:
      chunk = self._file.read(_CHUNK)
      if not chunk:
        return n
      n += len(chunk)


def read(file_obj):
  """Decompresses every gzip member of `file_obj` and checks the whole file.

  Example:
    >>> import gzip, io
    >>> read(io.BytesIO(gzip.compress(b'abc')))
    b'abc'

  Args:
    file_obj: a binary file object positioned at the start of the file.

  Returns:
    The decompressed bytes of all members, concatenated.

  Raises:
    GzipDataError: if the file is empty, not gzip, truncated, fails a CRC
      or length check, or has bytes after its last member.
  """
  stream = _Input(file_obj)
  head = stream.take(2)
  if not head:
    raise GzipDataError('the file is empty (0 bytes)', 'an interrupted '
                        'write or copy? Save or copy it again')
  if head == _MAGIC[:1]:
    raise GzipDataError('file ends 1 byte into the gzip header', _TRUNCATED)
  if head != _MAGIC:
    raise GzipDataError(
        f'not a gzip file (it starts with {head + stream.take(6)!r}; gzip '
        f'files start with {_MAGIC!r})', 'pass the .pkl.gz file itself, or '
        'read a plain pickle with gzip=False')
  stream.push_back(head)
  parts = []
  member = 0
  while True:
    magic = stream.take(2)
    if not magic:
      return b''.join(parts)
    if member and magic != _MAGIC[:len(magic)]:
      extra = len(magic) + stream.count_rest()
      raise GzipDataError(
          f'{extra} bytes after the end of the gzip stream, from byte '
          f'{stream.offset - len(magic)}', _CORRUPT)
    stream.push_back(magic)
    parts.extend(_member(stream, member))
    member += 1


def _member(stream, index):
  """Reads one member (header, deflate data, trailer); returns its data."""
  where = (f'gzip member {index} at byte {stream.offset}' if index else
           'gzip stream')
  _header(stream, where)
  parts, crc, size, last_input = _deflate(stream, where)
  trailer = stream.take(8)
  if len(trailer) < 8:
    raise GzipDataError(f'file ends {8 - len(trailer)} bytes early, inside '
                        f'the CRC32/length trailer of the {where}', _TRUNCATED)
  stored_crc, stored_size = struct.unpack('<II', trailer)
  if stored_crc != crc:
    raise GzipDataError(
        f'CRC check failed on the {where} (stored {stored_crc:#010x}, data '
        f'{crc:#010x})', _CORRUPT)
  if stored_size != size & 0xffffffff:
    raise GzipDataError(
        f'length check failed on the {where} (stored {stored_size} bytes, '
        f'data {size})', _CORRUPT)
  # Last: only a member whose data checks out can hide a flip there.
  _check_padding(*last_input, where)
  return parts


def _header(stream, where):
  """Reads and checks a member header, leaving `stream` at its data."""
  header = stream.take(10)

  def short(what):
    return GzipDataError(f'file ends inside the {what} of the {where} '
                         f'header', _TRUNCATED)
  if len(header) < 10:
    raise short('fixed part')
  if header[:2] != _MAGIC:
    raise GzipDataError(f'bad magic bytes {header[:2]!r} in the {where} '
                        f'header', _CORRUPT)
  method, flags = header[2], header[3]
  if method != _DEFLATE:
    raise GzipDataError(f'the {where} header names compression method '
                        f'{method}, not deflate (8)', _CORRUPT)
  if flags & _RESERVED_FLAGS:
    raise GzipDataError(f'reserved flag bits {flags & _RESERVED_FLAGS:#04x} '
                        f'are set in the {where} header', _CORRUPT)
  if flags & _FEXTRA:
    length = stream.take(2)
    if len(length) < 2:
      raise short('extra field')
    extra = stream.take(struct.unpack('<H', length)[0])
    if len(extra) < struct.unpack('<H', length)[0]:
      raise short('extra field')
    header += length + extra
  for flag, what in ((_FNAME, 'file name'), (_FCOMMENT, 'comment')):
    if flags & flag:
      field = stream.take_through_nul()
      if field is None:
        raise short(what)
      header += field
  if flags & _FHCRC:
    stored = stream.take(2)
    if len(stored) < 2:
      raise short('header CRC')
    if struct.unpack('<H', stored)[0] != zlib.crc32(header) & 0xffff:
      raise GzipDataError(f'header CRC check failed on the {where}', _CORRUPT)


def _deflate(stream, where):
  """Decompresses one raw deflate stream.

  Returns:
    `(parts, crc32, size, last_input)`: the data in pieces, its CRC32 and
    length, and `(decoder, used, data)` for `_check_padding`.
  """
  decoder = zlib.decompressobj(-zlib.MAX_WBITS)
  parts, crc, size, start = [], 0, 0, stream.offset
  while not decoder.eof:
    before = decoder.copy()  # To re-read the last byte's padding bits.
    chunk = stream.chunk()
    if not chunk:
      raise GzipDataError(
          f'file ends inside the compressed data of the {where}, after '
          f'{stream.offset - start} compressed bytes', _TRUNCATED)
    try:
      data = decoder.decompress(chunk)
    except zlib.error as e:
      raise GzipDataError(
          f'the compressed data of the {where} is invalid ({e})',
          _CORRUPT) from e
    if decoder.eof:
      used = len(chunk) - len(decoder.unused_data)
      last_input = (before, chunk[:used], data)
      stream.push_back(decoder.unused_data)
    parts.append(data)
    crc = zlib.crc32(data, crc)
    size += len(data)
  return parts, crc, size, last_input


def _check_padding(decoder, used, data, where):
  """Refuses set bits after the last deflate code in the final byte.

  Bits fill a byte from the lowest up, so the padding is the top bits of
  the last byte. A set bit there is padding exactly when clearing it still
  decodes to the same data and the same end of stream.

  Args:
    decoder: the decoder's state before `used` was fed to it.
    used: the bytes it took, up to and including its last.
    data: what it gave for them.
    where: the member, for the error.
  """
  last = used[-1]
  for bit in range(7, 0, -1):
    if not last & (1 << bit):
      continue
    trial = decoder.copy()
    try:
      same = (trial.decompress(used[:-1] + bytes([last & ~(1 << bit)]))
              == data and trial.eof and not trial.unused_data)
    except zlib.error:
      same = False
    if not same:
      return  # Bit `bit` is read; every lower bit is then read too.
    raise GzipDataError(
        f'padding bit {bit} after the end of the compressed data of the '
        f'{where} is set (writers leave it 0)', _CORRUPT)
