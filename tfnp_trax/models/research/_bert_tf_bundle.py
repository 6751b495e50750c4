"""Reads TensorFlow checkpoints (tensor bundles) with NumPy only.

The original BERT releases are TensorFlow 1 checkpoints: a prefix such as
`bert_model.ckpt` with `<prefix>.index` and `<prefix>.data-00000-of-00001`.
Models may not import TensorFlow (see tests/dependency_test.py), so this
module reads the format directly; it is small and stable:

- `.index` is a LevelDB-style sorted table of uncompressed blocks. Its
  48-byte footer holds the index block's handle and a magic number; the
  index block maps keys to data-block handles; each block is a list of
  prefix-compressed `(key, value)` entries followed by a restart array.
- The entry with the empty key is the bundle header (number of shards);
  every other key is a variable name whose value is a `BundleEntryProto`
  (dtype, shape, shard id, byte offset and size in the data shard).
- `.data-<shard>-of-<n>` files hold each tensor's raw little-endian bytes.

Only the protobuf fields needed here are decoded; sliced (partitioned)
variables and string tensors are refused with a clear error.
"""

import os
import struct

import numpy as onp

from tfnp_trax.fastmath import numpy as jnp

__all__ = ['CheckpointFormatError', 'read_tensor_bundle']

_TABLE_MAGIC = 0xdb4775248b80fb57
_FOOTER_SIZE = 48
_BLOCK_TRAILER_SIZE = 5  # One compression-type byte and a crc32c.
# TensorFlow's DataType enum values for the dtypes a model checkpoint holds.
_DTYPES = {1: onp.float32, 2: onp.float64, 3: onp.int32, 4: onp.uint8,
           5: onp.int16, 6: onp.int8, 9: onp.int64, 10: onp.bool_,
           17: onp.uint16, 19: onp.float16, 22: onp.uint32, 23: onp.uint64}
_DT_BFLOAT16 = 14


class CheckpointFormatError(ValueError):
  """A file is not a readable TensorFlow checkpoint."""


def _varint(buf, pos):
  result, shift = 0, 0
  while True:
    if pos >= len(buf):
      raise CheckpointFormatError('truncated varint')
    byte = buf[pos]
    pos += 1
    result |= (byte & 0x7f) << shift
    if not byte & 0x80:
      return result, pos
    shift += 7


def _proto_fields(buf):
  """Yields `(field_number, value)` of a serialized protobuf message.

  Varint fields give ints, length-delimited fields give bytes, fixed
  fields give their raw bytes.
  """
  pos = 0
  while pos < len(buf):
    key, pos = _varint(buf, pos)
    field, wire_type = key >> 3, key & 7
    if wire_type == 0:
      value, pos = _varint(buf, pos)
    elif wire_type == 2:
      size, pos = _varint(buf, pos)
      value, pos = buf[pos:pos + size], pos + size
    elif wire_type in (1, 5):
      size = 8 if wire_type == 1 else 4
      value, pos = buf[pos:pos + size], pos + size
    else:
      raise CheckpointFormatError(f'unsupported protobuf wire type '
                                  f'{wire_type}')
    yield field, value


def _block(data, handle, path):
  """The contents of the block at `handle` (offset, size), trailer checked."""
  offset, size = handle
  if offset + size + _BLOCK_TRAILER_SIZE > len(data):
    raise CheckpointFormatError(f'{path}: block past the end of the file')
  if data[offset + size] != 0:
    raise CheckpointFormatError(
        f'{path}: compressed table blocks (type {data[offset + size]}) are '
        f'not supported; TensorFlow writes checkpoints uncompressed.')
  return data[offset:offset + size]


def _block_entries(block):
  """Yields the `(key, value)` entries of one table block."""
  n_restarts = struct.unpack_from('<I', block, len(block) - 4)[0]
  end = len(block) - 4 * (n_restarts + 1)
  pos, key = 0, b''
  while pos < end:
    shared, pos = _varint(block, pos)
    non_shared, pos = _varint(block, pos)
    value_size, pos = _varint(block, pos)
    key = key[:shared] + block[pos:pos + non_shared]
    pos += non_shared
    yield key, block[pos:pos + value_size]
    pos += value_size


def _handle(buf, pos=0):
  offset, pos = _varint(buf, pos)
  size, pos = _varint(buf, pos)
  return (offset, size), pos


def _table_entries(path):
  with open(path, 'rb') as f:
    data = f.read()
  if len(data) < _FOOTER_SIZE:
    raise CheckpointFormatError(f'{path}: too short for a checkpoint index')
  footer = data[-_FOOTER_SIZE:]
  if struct.unpack('<Q', footer[-8:])[0] != _TABLE_MAGIC:
    raise CheckpointFormatError(f'{path}: not a TensorFlow checkpoint index '
                                f'(bad magic number)')
  _, pos = _handle(footer)  # The metaindex block is not used.
  index_handle, _ = _handle(footer, pos)
  for _, value in _block_entries(_block(data, index_handle, path)):
    data_handle, _ = _handle(value)
    yield from _block_entries(_block(data, data_handle, path))


def _entry(name, value):
  """Decodes a BundleEntryProto into dtype, shape, shard, offset, size."""
  entry = dict(dtype=0, shape=(), shard=0, offset=0, size=0)
  for field, v in _proto_fields(value):
    if field == 1:
      entry['dtype'] = v
    elif field == 2:
      entry['shape'] = tuple(
          next((s for f, s in _proto_fields(dim) if f == 1), 0)
          for f, dim in _proto_fields(v) if f == 2)
    elif field in (3, 4, 5):
      entry[{3: 'shard', 4: 'offset', 5: 'size'}[field]] = v
    elif field == 7:
      raise CheckpointFormatError(
          f'variable {name!r} is stored in slices (a partitioned variable); '
          f'that is not supported.')
  return entry


def _numpy_dtype(name, code):
  if code == _DT_BFLOAT16:
    return onp.dtype(jnp.bfloat16)
  if code not in _DTYPES:
    raise CheckpointFormatError(
        f'variable {name!r} has TensorFlow dtype enum {code}, which this '
        f'reader does not support (numeric tensors only).')
  return onp.dtype(_DTYPES[code])


def read_tensor_bundle(prefix, names=None):
  """Reads variables of a TensorFlow checkpoint into NumPy arrays.

  Args:
    prefix: the checkpoint prefix, e.g. `/models/bert/bert_model.ckpt`
      (the files are `<prefix>.index` and `<prefix>.data-*`).
    names: variable names to read; None reads them all.

  Returns:
    A dict from variable name to NumPy array.

  Raises:
    FileNotFoundError: if `<prefix>.index` does not exist.
    CheckpointFormatError: if the files are not a readable checkpoint.
    KeyError: if one of `names` is not in the checkpoint.
  """
  index = prefix + '.index'
  if not os.path.exists(index):
    raise FileNotFoundError(
        f'{index} not found: pass the checkpoint prefix (the path without '
        f'.index or .data-*), e.g. .../bert_model.ckpt.')
  n_shards, entries = 1, {}
  for key, value in _table_entries(index):
    if not key:
      header = dict(_proto_fields(value))
      if header.get(2, 0):  # BundleHeaderProto.endianness: 1 is BIG.
        raise CheckpointFormatError(
            f'{index}: big-endian checkpoints are not supported.')
      n_shards = header.get(1, 1)
    else:
      entries[key.decode('utf-8')] = value
  wanted = sorted(entries) if names is None else list(names)
  missing = [n for n in wanted if n not in entries]
  if missing:
    raise KeyError(f'{prefix}: no variables {missing} in the checkpoint; it '
                   f'has {len(entries)} variables, e.g. {sorted(entries)[:5]}')
  arrays, shards = {}, {}
  for name in wanted:
    e = _entry(name, entries[name])
    dtype = _numpy_dtype(name, e['dtype'])
    if e['shard'] not in shards:
      shard_path = f'{prefix}.data-{e["shard"]:05d}-of-{n_shards:05d}'
      with open(shard_path, 'rb') as f:
        shards[e['shard']] = f.read()
    raw = shards[e['shard']][e['offset']:e['offset'] + e['size']]
    if len(raw) != e['size'] or e['size'] != (
        dtype.itemsize * int(onp.prod(e['shape'], dtype=onp.int64))):
      raise CheckpointFormatError(
          f'{prefix}: variable {name!r} ({dtype}, shape {e["shape"]}) has '
          f'{len(raw)} bytes in its data file; the file is truncated or '
          f'not from this checkpoint.')
    arrays[name] = onp.frombuffer(raw, dtype.newbyteorder('<')).astype(
        dtype).reshape(e['shape'])
  return arrays
