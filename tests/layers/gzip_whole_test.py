"""The whole-file gzip reader, on members built by hand from RFC 1952.

Python's `gzip.decompress` reads every member too and serves as the
independent reference for what a valid file decodes to.
"""

import gzip
import io
import struct
import zlib

import pytest

from tfnp_trax.layers import _gzip_whole

_PAYLOAD = b'weights ' * 50 + bytes(range(256))


def _member(payload=_PAYLOAD, extra=None, name=None, comment=None,
            header_crc=False, level=2, flag_bits=0):
  """One gzip member, every optional header field as asked."""
  flags = flag_bits
  fields = b''
  if extra is not None:
    flags |= 4
    fields += struct.pack('<H', len(extra)) + extra
  if name is not None:
    flags |= 8
    fields += name + b'\0'
  if comment is not None:
    flags |= 16
    fields += comment + b'\0'
  if header_crc:
    flags |= 2
  header = b'\x1f\x8b\x08' + bytes([flags]) + struct.pack('<I', 7) + b'\0\3'
  header += fields
  if header_crc:
    header += struct.pack('<H', zlib.crc32(header) & 0xffff)
  deflate = zlib.compressobj(level, zlib.DEFLATED, -zlib.MAX_WBITS)
  body = deflate.compress(payload) + deflate.flush()
  return header + body + struct.pack('<II', zlib.crc32(payload),
                                     len(payload))


def _read(data):
  return _gzip_whole.read(io.BytesIO(data))


@pytest.mark.parametrize('fields', [
    {}, {'name': b'model.pkl.gz._tmp_'}, {'extra': b'AB\2\0xy'},
    {'comment': b'saved by hand'}, {'header_crc': True},
    {'extra': b'', 'name': b'n', 'comment': b'c', 'header_crc': True},
    {'level': 0}, {'level': 9}, {'flag_bits': 1},  # FTEXT: only a hint.
])
def test_reads_what_python_reads(fields):
  data = _member(**fields)
  assert gzip.decompress(data) == _PAYLOAD
  assert _read(data) == _PAYLOAD


def test_reads_every_member_in_order():
  data = _member(b'first ') + _member(b'') + _member(b'third')
  assert gzip.decompress(data) == b'first third'
  assert _read(data) == b'first third'


def test_reads_across_chunks(monkeypatch):
  # Members and trailers that straddle the reader's chunks.
  monkeypatch.setattr(_gzip_whole, '_CHUNK', 7)
  data = _member(name=b'x' * 20) + _member(b'tail', comment=b'c' * 9)
  assert _read(data) == _PAYLOAD + b'tail'


@pytest.mark.parametrize('data, match', [
    (_member(header_crc=True)[:11], r'file ends inside the header CRC'),
    (_member(extra=b'ABCDEF')[:14], r'file ends inside the extra field'),
    (_member(name=b'model')[:13], r'file ends inside the file name'),
    (_member(comment=b'note')[:13], r'file ends inside the comment'),
    (_member()[:9], r'file ends inside the fixed part of the gzip stream '
     r'header'),
    (_member()[:-3], r'file ends 3 bytes early, inside the CRC32/length '
     r'trailer'),
    (_member() + b'\x1f', r'file ends inside the fixed part of the gzip '
     r'member 1 at byte \d+ header'),
    (_member() + b'\x1f\x8b\x07' + _member()[3:], r'the gzip member 1 at '
     r'byte \d+ header names compression method 7, not deflate'),
    (_member(flag_bits=0x40), r'reserved flag bits 0x40 are set'),
    (b'\x1f\x8b', r'file ends inside the fixed part'),
    (_member() + b'\0', r'1 bytes after the end of the gzip stream, from '
     r'byte \d+'),
])
def test_refuses_broken_files(data, match):
  with pytest.raises(_gzip_whole.GzipDataError, match=match):
    _read(data)


def test_refuses_a_wrong_header_crc():
  data = bytearray(_member(name=b'model', header_crc=True))
  data[10] ^= 1  # In the name, which the header CRC covers.
  with pytest.raises(_gzip_whole.GzipDataError,
                     match=r'header CRC check failed on the gzip stream'):
    _read(bytes(data))


def test_error_carries_reason_and_hint():
  with pytest.raises(_gzip_whole.GzipDataError) as info:
    _read(_member()[:-8])
  assert info.value.reason == ('file ends 8 bytes early, inside the '
                               'CRC32/length trailer of the gzip stream')
  assert info.value.hint.startswith('truncated copy?')
