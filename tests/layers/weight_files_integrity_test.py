"""Weight files are checked whole: every damaged copy fails, nothing changes.

The sweep flips each bit of a saved file, one copy at a time, and cuts it
at every length within its last 64 bytes; each copy must raise
WeightFileError and leave the model's weights bitwise as they were. Python's
gzip module (an independent reader) serves as the oracle for which flips
cannot change the data at all.
"""

import gzip
import io
import pathlib
import pickle
import time
import zlib

import numpy as np
import pytest

from tests import _fixtures
from tfnp_trax import fastmath
from tfnp_trax import layers as tl
from tfnp_trax import shapes
from tfnp_trax.layers import _gzip_whole
from tfnp_trax.layers import _whole_file
from tfnp_trax.layers import weight_files as wf
from tfnp_trax.supervised import trax_checkpoints

_DATA = _fixtures.path('trax_weights')
_FNAME = 0x08
_FTEXT_BIT = 0


def _model(d_in=4, widths=(3, 2)):
  # By default 4*3 + 3 + 3*2 + 2 = 23 weights, a file of about 300 bytes.
  model = tl.Serial(*[tl.Dense(n) for n in widths])
  model.init(shapes.ShapeDtype((1, d_in), np.float32))
  return model


def _bits(model):
  """The weights' bytes: bitwise, so NaN or -0.0 cannot hide a change."""
  return [np.asarray(x).tobytes() for x in fastmath.tree_flatten(
      model.weights)]


def _save(tmp_path_factory, **sizes):
  """A model, its weights' bytes and its saved file's bytes."""
  path = tmp_path_factory.mktemp('saved') / 'model.pkl.gz'
  model = _model(**sizes)
  model.save_to_file(str(path))
  return model, _bits(model), path.read_bytes()


@pytest.fixture(scope='module')
def saved(tmp_path_factory):
  return _save(tmp_path_factory)


@pytest.fixture(scope='module')
def saved_large(tmp_path_factory):
  # 1,584 weights: a file of about 6 KB, beyond the 4 KiB the sweep covers.
  return _save(tmp_path_factory, d_in=32, widths=(32, 16))


def _header_hint_bits(data):
  """(byte, bit) flips that no gzip check can see, by RFC 1952's layout.

  Without the optional header CRC (Python never writes one), nothing
  covers MTIME (bytes 4-7), XFL (8), OS (9), the FTEXT flag (bit 0 of byte
  3) or the bytes of FNAME, and none of them feeds the decompressed data:
  a copy with one of them flipped decodes to the very same bytes, so it
  loads the very same weights. The one FNAME flip that is seen is one that
  makes a byte NUL: the name then ends early and its tail is read as data.
  """
  assert data[3] == _FNAME, 'expected a header with FNAME only'
  name_end = data.index(b'\0', 10)
  hints = {(i, b) for i in range(4, 10) for b in range(8)}
  hints.add((3, _FTEXT_BIT))
  hints |= {(i, b) for i in range(10, name_end) for b in range(8)
            if data[i] ^ (1 << b)}
  return hints


def _flip(data, i, bit):
  damaged = bytearray(data)
  damaged[i] ^= 1 << bit
  return bytes(damaged)


@pytest.fixture
def in_memory(monkeypatch, tmp_path):
  """`serve(name, data)`: a path whose reads give `data`, without a write.

  The copies stay in memory: the readers' one `open` hands out the bytes
  last served (opening a file for writing costs milliseconds here, and the
  sweeps are thousands of loads). Everything after `open` is the real
  path; the other tests read damaged copies from disk.
  """
  current = {}
  monkeypatch.setattr(_whole_file, 'open',
                      lambda name, mode: io.BytesIO(current[name]),
                      raising=False)

  def serve(name, data):
    path = str(tmp_path / name)
    if not current:
      pathlib.Path(path).write_bytes(b'')  # For the existence checks.
    current[path] = data
    return path
  return serve


@pytest.mark.parametrize('size', ['small', 'large'])
def test_every_flip_and_cut_fails_and_changes_nothing(request, size,
                                                      in_memory):
  model, before, data = request.getfixturevalue(
      'saved' if size == 'small' else 'saved_large')
  n = len(data)
  positions = sorted(set(range(min(n, 4096))) | set(range(max(0, n - 64), n)))
  hints = _header_hint_bits(data)
  path = in_memory('copy.pkl.gz', data)
  reasons = {}
  identical = 0

  def load(damaged):
    in_memory('copy.pkl.gz', damaged)
    try:
      model.init_from_file(str(path))
    except wf.WeightFileError as e:
      return str(e)
    finally:
      assert _bits(model) == before
    return None

  start, cpu_start = time.perf_counter(), time.process_time()
  for i in positions:
    for bit in range(8):
      message = load(_flip(data, i, bit))
      if (i, bit) in hints:
        assert message is None, (i, bit, message)
        identical += 1
      else:
        assert message is not None, f'byte {i} bit {bit} loaded'
        reasons[i, bit] = message
  for cut in range(1, min(n, 64) + 1):
    message = load(data[:-cut])
    assert message is not None, f'cut by {cut} loaded'
    reasons['cut', cut] = message
  seconds = time.perf_counter() - start
  cpu = time.process_time() - cpu_start
  print(f'{len(positions) * 8 + min(n, 64)} loads of a {n}-byte file in '
        f'{seconds:.2f} s ({cpu:.2f} s CPU); {identical} flips decode to '
        f'the same data')

  for message in reasons.values():
    assert message.startswith(f'{path}: cannot read this gzipped pickle (')
  # The trailer: CRC32 then ISIZE, each checked; cuts say how much is gone.
  for i in range(n - 8, n):
    check = 'CRC check failed' if i < n - 4 else 'length check failed'
    assert all(check in reasons[i, b] for b in range(8)), i
  for cut in range(1, 9):
    assert f'file ends {cut} bytes early' in reasons['cut', cut]
    assert 'truncated copy?' in reasons['cut', cut]
  for cut in range(9, min(n, 64) + 1):
    assert 'file ends inside the compressed data' in reasons['cut', cut]
  assert all('not a gzip file' in reasons[i, b] for i in (0, 1)
             for b in range(8))
  assert all('compression method' in reasons[2, b] for b in range(8))
  assert all('reserved flag bits' in reasons[3, b] for b in (5, 6, 7))
  assert len(reasons) == len(positions) * 8 - len(hints) + min(n, 64)


def test_python_gzip_misses_only_hints_reserved_flags_and_padding(saved):
  # Python's own reader, asked for the whole stream, is the oracle: a flip
  # it decodes to the same bytes leaves the data as it was. Those must be
  # the header hints above, the reserved flag bits (which it ignores and
  # RFC 1952 says to refuse) and padding bits after the last deflate code
  # (top bits of the byte before the trailer), which zlib never sets. The
  # reader under test refuses the last two kinds.
  _, _, data = saved
  payload = gzip.decompress(data)
  unseen = set()
  for i in range(len(data)):
    for bit in range(8):
      try:
        if gzip.decompress(_flip(data, i, bit)) == payload:
          unseen.add((i, bit))
      except (OSError, EOFError, ValueError, zlib.error):
        pass
  hints = _header_hint_bits(data)
  reserved = {(3, bit) for bit in (5, 6, 7)}
  assert hints | reserved <= unseen
  padding = unseen - hints - reserved
  assert all(i == len(data) - 9 and bit > 0 for i, bit in padding), padding
  print(f'padding bits Python does not read: {sorted(padding)}')
  for i, bit in sorted(padding | reserved):
    with pytest.raises(_gzip_whole.GzipDataError,
                       match=r'padding bit|reserved flag bits'):
      _gzip_whole.read(io.BytesIO(_flip(data, i, bit)))


@pytest.mark.parametrize('name, damage, match', [
    ('empty', lambda d: b'', r'the file is empty \(0 bytes\)'),
    ('trailing_zeros', lambda d: d + b'\0' * 4,
     r'4 bytes after the end of the gzip stream'),
    ('two_members_one_bad', lambda d: d + _flip(d, len(d) - 6, 3),
     r'CRC check failed on the gzip member 1 at byte \d+ \(stored'),
    ('header_crc', lambda d: d[:3] + bytes([d[3] | 2]) + d[4:],
     r'header CRC check failed|compressed data .* is invalid'),
])
def test_gzip_damage_beyond_single_flips(saved, tmp_path, name, damage,
                                         match):
  model, before, data = saved
  path = tmp_path / f'{name}.pkl.gz'
  path.write_bytes(damage(data))
  with pytest.raises(wf.WeightFileError, match=match):
    model.init_from_file(str(path))
  assert _bits(model) == before


def test_a_file_of_two_gzip_members_loads(saved, tmp_path):
  # gzip allows members back to back; the pickle may span them.
  model, before, data = saved
  payload = gzip.decompress(data)
  path = tmp_path / 'two.pkl.gz'
  path.write_bytes(gzip.compress(payload[:100]) + gzip.compress(payload[100:]))
  fresh = tl.Serial(tl.Dense(3), tl.Dense(2))
  fresh.init(shapes.ShapeDtype((1, 4), np.float32))
  fresh.init_from_file(str(path))
  assert _bits(fresh) == before


# Flipped bytes make odd dtype arguments, which NumPy warns about.
@pytest.mark.filterwarnings(
    'ignore::numpy.exceptions.VisibleDeprecationWarning')
def test_plain_pickles_fail_cleanly_when_cut_or_damaged(saved, in_memory):
  _, _, data = saved
  pickled = gzip.decompress(data)
  path = in_memory('plain.pkl', pickled)
  assert wf.unpickle_from_file(path)['flat_weights'][1].shape == (3,)
  for cut in range(1, len(pickled) + 1):
    in_memory('plain.pkl', pickled[:-cut])
    with pytest.raises(wf.WeightFileError, match=(
        r'plain\.pkl: cannot read this pickle \((the pickle ends early|'
        r'it is empty)')):
      wf.unpickle_from_file(path)
  # No CRC guards a plain pickle, so a flipped bit may still decode; what
  # it must never do is escape as a bare KeyError, IndexError, EOFError...
  outcomes = {'loaded': 0, 'refused': 0}
  for i in range(len(pickled)):
    for bit in range(8):
      in_memory('plain.pkl', _flip(pickled, i, bit))
      try:
        wf.unpickle_from_file(path)
        outcomes['loaded'] += 1
      except wf.WeightFileError:
        outcomes['refused'] += 1
  assert outcomes['refused'] > outcomes['loaded'] > 0, outcomes
  in_memory('plain.pkl', b'\xff' + pickled[1:])
  with pytest.raises(wf.WeightFileError, match=r'the pickle is malformed '
                     r'\(UnpicklingError: invalid load key'):
    wf.unpickle_from_file(path)
  in_memory('plain.pkl', pickled + pickle.dumps(1))
  with pytest.raises(wf.WeightFileError, match=r'\d+ bytes follow the end of '
                     r'the pickle at byte \d+.*Trax writes one pickle'):
    wf.unpickle_from_file(path)


def test_a_trax_written_file_still_loads_and_is_checked():
  # Written by Trax 1.4.1 (see tests/testdata/trax_weights/README.md); its
  # outputs there were computed by Trax.
  recorded = _fixtures.arrays('trax_weights', 'outputs.npz')
  x, want = recorded['serial_x'], recorded['serial_y']
  model = tl.Serial(tl.Embedding(10, 4), tl.Dense(3), tl.LayerNorm())
  model.init_from_file(str(_DATA / 'serial.pkl.gz'))
  np.testing.assert_allclose(np.asarray(model(x)), want, rtol=1e-6,
                             atol=1e-6)
  ckpt = trax_checkpoints.load_trax_checkpoint(str(_DATA / 'loop'))
  assert ckpt.step == 4 and len(ckpt.flat_weights) == 6


def test_a_damaged_trax_file_changes_nothing(tmp_path):
  data = (_DATA / 'serial.pkl.gz').read_bytes()
  model = tl.Serial(tl.Embedding(10, 4), tl.Dense(3), tl.LayerNorm())
  model.init(shapes.ShapeDtype((2, 5), np.int32))
  before = _bits(model)
  path = tmp_path / 'serial.pkl.gz'
  for i in (40, len(data) // 2, len(data) - 9, len(data) - 2):
    path.write_bytes(_flip(data, i, 4))
    with pytest.raises(wf.WeightFileError, match=r'serial\.pkl\.gz: cannot '
                       r'read this gzipped pickle'):
      model.init_from_file(str(path))
    assert _bits(model) == before


class _FailingDense(tl.Dense):
  """A Dense whose `fail_at`-th weights assignment from now on raises."""

  fail_at = None

  @property
  def weights(self):
    return tl.Dense.weights.fget(self)

  @weights.setter
  def weights(self, weights):
    cls = type(self)
    if cls.fail_at is not None:
      cls.fail_at -= 1
      if not cls.fail_at:
        raise RuntimeError('cannot set weights now')
    tl.Dense.weights.fset(self, weights)


# Full load of a file without a signature: the model's own weights are the
# signature, and the first assignment is the load's. Weights only, with a
# signature: the one fresh init (whose shapes the file is checked against)
# sets weights twice (its own and Serial's), then the load assigns the
# file's (the 3rd).
@pytest.mark.parametrize('weights_only, fail_at', [(False, 1), (True, 3)])
def test_a_failing_assignment_puts_every_weight_back(tmp_path, monkeypatch,
                                                     weights_only, fail_at):
  # The first sublayer is assigned before the second one fails: the load
  # must put the first one's weights (and the state) back as they were.
  path = str(tmp_path / 'model.pkl.gz')
  signature = shapes.ShapeDtype((1, 4), np.float32)
  _model().save_to_file(path, input_signature=signature if weights_only
                        else None)
  model = tl.Serial(tl.Dense(3), _FailingDense(2))
  model.init(signature)
  before, state = _bits(model), model.state
  monkeypatch.setattr(_FailingDense, 'fail_at', fail_at)
  with pytest.raises(RuntimeError, match='cannot set weights now') as info:
    model.init_from_file(path, weights_only=weights_only)
  assert '_assign' in [entry.name for entry in info.traceback]
  assert _bits(model) == before
  assert model.state == state
  monkeypatch.setattr(_FailingDense, 'fail_at', None)
  model.init_from_file(path, weights_only=weights_only)
  assert _bits(model) != before
