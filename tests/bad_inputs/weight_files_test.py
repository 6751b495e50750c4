"""Bad inputs to Trax weight files: damaged, cut short, foreign or misfit.

Each row damages a file that `save_to_file` wrote for a small model (or
writes a foreign one), then loads it; the error must be a WeightFileError
naming the file, what is wrong and the likely fix.
"""

import gzip
import os
import pickle

import numpy as np
import pytest

from tests.bad_inputs import _case
from tfnp_trax import shapes
import tfnp_trax.layers as tl
from tfnp_trax.layers import _safe_pickle
from tfnp_trax.layers import weight_files
from tfnp_trax.supervised import trax_checkpoints

Case = _case.Case
WeightFileError = weight_files.WeightFileError
F32 = np.float32


def _mlp(out=2):
  model = tl.Serial(tl.Dense(3), tl.Dense(out))
  model.init(shapes.ShapeDtype((1, 4), F32))
  return model


def _saved(tmp_path):
  path = str(tmp_path / 'model.pkl.gz')
  _mlp().save_to_file(path)
  with open(path, 'rb') as f:
    return path, f.read()


def _load_damaged(damage, model=_mlp):
  """Saves the model, rewrites its file as `damage(bytes)`, loads it."""
  def call(tmp_path):
    path, data = _saved(tmp_path)
    with open(path, 'wb') as f:
      f.write(damage(data))
    return model().init_from_file(path)
  return call


def _flip(i, bit):
  def damage(data):
    data = bytearray(data)
    data[i] ^= 1 << bit
    return bytes(data)
  return damage


def _gzip_of(obj=None, raw=None):
  """A gzip file of `obj` pickled (or of the bytes `raw`) in place of ours."""
  payload = raw if raw is not None else _safe_pickle.dumps(obj)
  return _load_damaged(lambda data: gzip.compress(payload))


def _with_contents(**entries):
  """A file that save_to_file's dict, with `entries` replacing its own."""
  def damage(data):
    contents = pickle.loads(gzip.decompress(data))
    contents.update(entries)
    return gzip.compress(_safe_pickle.dumps(contents))
  return _load_damaged(damage)


def _load_directory(tmp_path):
  os.mkdir(tmp_path / 'model.pkl.gz')
  return _mlp().init_from_file(str(tmp_path / 'model.pkl.gz'))


def _plain_pickle_cut(tmp_path):
  path = str(tmp_path / 'obj.pkl')
  weight_files.pickle_to_file({'step': 3, 'w': np.ones(8, F32)}, path)
  with open(path, 'rb') as f:
    data = f.read()
  with open(path, 'wb') as f:
    f.write(data[:-5])
  return weight_files.unpickle_from_file(path)


def _loop_checkpoint(history):
  def call(tmp_path):
    weight_files.pickle_to_file(
        {'step': 2, 'flat_weights': [np.ones(3, F32)], 'flat_state': [],
         'history': history, 'input_signature': None},
        str(tmp_path / 'model.pkl.gz'), gzip=True)
    return trax_checkpoints.load_trax_checkpoint(str(tmp_path))
  return call


def _npy_stream_with_object_array(tmp_path):
  path = str(tmp_path / 'w.npy.gz')
  with gzip.open(path, 'wb') as f:
    np.save(f, np.array([{'not': 'a weight'}], dtype=object))
  return weight_files.np_from_file(path, compresslevel=2)


_CUT = r'The file is truncated, corrupt or not a Trax weight file: '
_CORRUPT = r'the file is corrupt or was changed after writing'

CASES = [
    Case('weight_file_bit_flipped_in_crc', _load_damaged(
        lambda d: _flip(len(d) - 7, 2)(d)), WeightFileError,
         r'model\.pkl\.gz: cannot read this gzipped pickle \(CRC check failed '
         rf'on the gzip stream \(stored 0x[0-9a-f]+, data 0x[0-9a-f]+\)\)\. '
         rf'{_CUT}{_CORRUPT}'),
    Case('weight_file_bit_flipped_in_length',
         _load_damaged(lambda d: _flip(len(d) - 2, 0)(d)), WeightFileError,
         r'length check failed on the gzip stream \(stored \d+ bytes, data '
         r'\d+\)'),
    Case('weight_file_cut_by_8_bytes', _load_damaged(lambda d: d[:-8]),
         WeightFileError, r'model\.pkl\.gz: cannot read this gzipped pickle '
         r'\(file ends 8 bytes early, inside the CRC32/length trailer of the '
         rf'gzip stream\)\. {_CUT}truncated copy\? Copy or download'),
    Case('weight_file_cut_in_the_data', _load_damaged(lambda d: d[:-20]),
         WeightFileError, r'file ends inside the compressed data of the gzip '
         r'stream, after \d+ compressed bytes\).*truncated copy\?'),
    Case('weight_file_empty', _load_damaged(lambda d: b''), WeightFileError,
         r'model\.pkl\.gz: cannot read this gzipped pickle \(the file is '
         r'empty \(0 bytes\)\).*an interrupted write or copy\?'),
    Case('weight_file_not_gzip', _load_damaged(lambda d: b'PK\x03\x04zip'),
         WeightFileError, r"not a gzip file \(it starts with b'PK\\x03\\x04"
         r"zip'; gzip files start with b'\\x1f\\x8b'\).*read a plain pickle "
         r'with gzip=False'),
    Case('weight_file_trailing_garbage',
         _load_damaged(lambda d: d + b'\n# appended'), WeightFileError,
         rf'11 bytes after the end of the gzip stream, from byte \d+\)\. '
         rf'{_CUT}{_CORRUPT}'),
    Case('weight_file_second_member_corrupt',
         _load_damaged(lambda d: d + _flip(len(d) - 7, 2)(d)),
         WeightFileError,
         r'CRC check failed on the gzip member 1 at byte \d+ \(stored'),
    Case('weight_file_gzip_of_text', _gzip_of(raw=b'weights: 1 2 3\n'),
         WeightFileError, r'cannot read this gzipped pickle \(the pickle is '
         r"malformed \(UnpicklingError: invalid load key b'w': no pickle "
         r'opcode; .*not written by pickle_to_file, '
         r'save_to_file or Trax'),
    Case('weight_file_gzip_of_empty', _gzip_of(raw=b''), WeightFileError,
         r'cannot read this gzipped pickle \(it holds no data once '
         r'decompressed\)'),
    Case('weight_file_two_pickles', _gzip_of(raw=pickle.dumps(
        {'flat_weights': []}) + pickle.dumps(1)), WeightFileError,
         r'\d+ bytes follow the end of the pickle at byte \d+\).*Trax writes '
         r'one pickle per file'),
    Case('weight_file_pickle_of_a_list', _gzip_of([np.ones(3, F32)]),
         WeightFileError, r"model\.pkl\.gz: expected a dict with "
         r"'flat_weights' \(a Trax weight file\), found a list"),
    Case('weight_file_dict_without_flat_weights', _gzip_of({'w': [1.0]}),
         WeightFileError, r"expected a dict with 'flat_weights' .*found a "
         r"dict with keys \[\"'w'\"\]"),
    Case('weight_file_string_as_weight',
         _with_contents(flat_weights=['kernel', np.ones(3, F32)]),
         WeightFileError, r"flat_weights\[0\] is a str \('kernel'\), expected "
         r'a NumPy array of numbers.*not written by Trax'),
    Case('weight_file_flat_state_not_a_list', _with_contents(flat_state=7),
         WeightFileError, r'flat_state is an int \(7\), expected a list of '
         r'arrays'),
    Case('weight_file_bad_compress_level', _with_contents(flat_weights=12),
         WeightFileError, r'flat_weights is 12; where Trax stores arrays in a '
         r'separate .npy.gz file it writes the gzip level \(0 to 9\)'),
    Case('weight_file_signature_not_a_shape', _with_contents(
        input_signature='(1, 4)'), WeightFileError,
         r"input_signature is a str \('\(1, 4\)'\), expected a ShapeDtype"),
    Case('weight_file_directory', _load_directory, WeightFileError,
         r'model\.pkl\.gz: is a directory, expected a gzipped pickle\. Pass '
         r'the file itself'),
    Case('weight_file_wrong_shapes_for_model',
         _load_damaged(lambda d: d, model=lambda: _mlp(out=5)),
         WeightFileError, r'weights\[1\]\[0\] \(in Serial/1:Dense_5\) has '
         r'shape \(3, 2\) in the file but the model expects \(3, 5\)'),
    Case('weight_file_integer_weights',
         _with_contents(flat_weights=[np.ones((4, 3), np.int32)] + [
             np.ones(s, F32) for s in ((3,), (3, 2), (2,))]),
         WeightFileError, r'weights\[0\]\[0\] \(in Serial/0:Dense_3\) has '
         r'dtype int32 in the file but the model expects float32 \(float '
         r'values, not int\)'),
    Case('weight_file_none_as_weight',
         _with_contents(flat_weights=[np.ones((4, 3), F32), None] + [
             np.ones(s, F32) for s in ((3, 2), (2,))]), WeightFileError,
         r'weights\[0\]\[1\] \(in Serial/0:Dense_3\) is None in the file but '
         r'the model expects an array of shape \(3,\)'),
    Case('weight_file_asks_to_run_code',
         _gzip_of(raw=b'cos\nsystem\n(Vecho hi\ntR.'), WeightFileError,
         r'model\.pkl\.gz: refusing to load os\.system'),
    Case('plain_pickle_cut_short', _plain_pickle_cut, WeightFileError,
         r'obj\.pkl: cannot read this pickle \(the pickle ends early\).*copy '
         r'the file again or re-save it'),
    Case('npy_stream_with_object_array', _npy_stream_with_object_array,
         WeightFileError, r'w\.npy\.gz: cannot read array 0 of this \.npy\.gz '
         r'weight file \(ValueError: Object arrays cannot be loaded'),
    Case('trax_checkpoint_history_not_pairs',
         _loop_checkpoint({'_values': {'train': {'loss': [1.5]}}}),
         WeightFileError, r'model\.pkl\.gz: the history is not a Trax History '
         r'dict .*TypeError: cannot unpack'),
]


@pytest.mark.parametrize('case', _case.params(CASES))
def test_bad_input_raises_clear_error(case, tmp_path):
  _case.check(case, tmp_path)
