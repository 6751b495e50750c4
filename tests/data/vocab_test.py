"""Where `Tokenize` finds vocabularies: `vocab_dir`, TFNP_TRAX_VOCAB_DIR and
remote paths read through tf.io.gfile (follows trax/data/tf_inputs.py
`_get_vocab`, whose default folder is gs://trax-ml/vocabs/).

No test here touches the network: remote reads use TensorFlow's in-memory
`ram://` file system, and Trax's gs:// default is tested with
TFNP_TRAX_OFFLINE set.
"""

import os
import shutil
import time

import pytest
import tensorflow as tf

from tests import _fixtures
from tfnp_trax.data import _vocab
from tfnp_trax.data import tf_inputs

VOCAB_DIR = str(_fixtures.path('trax_vocab'))
SUBWORD = 'en_8k.subword'


def _expected_ids(text):
  # The reference: the encoder built straight from the checked-in file.
  return _vocab.text_encoder.SubwordTextEncoder(
      os.path.join(VOCAB_DIR, SUBWORD)).encode(text)


def test_env_var_points_the_default_at_a_local_mirror(tmp_path, monkeypatch):
  shutil.copy(os.path.join(VOCAB_DIR, SUBWORD), tmp_path / SUBWORD)
  monkeypatch.setenv('TFNP_TRAX_VOCAB_DIR', str(tmp_path))
  assert _vocab.default_vocab_dir() == str(tmp_path)
  ids = next(tf_inputs.Tokenize(vocab_file=SUBWORD)(iter(['Hello world.'])))
  assert ids.tolist() == _expected_ids('Hello world.')
  assert tf_inputs.vocab_size(vocab_file=SUBWORD) == 8183
  # An explicit vocab_dir still wins over the variable.
  monkeypatch.setenv('TFNP_TRAX_VOCAB_DIR', str(tmp_path / 'elsewhere'))
  assert tf_inputs.vocab_size(vocab_file=SUBWORD, vocab_dir=VOCAB_DIR) == 8183


def test_missing_file_in_env_folder_names_the_variable(tmp_path, monkeypatch):
  monkeypatch.setenv('TFNP_TRAX_VOCAB_DIR', str(tmp_path))
  with pytest.raises(FileNotFoundError,
                     match=r'does not exist\. .*TFNP_TRAX_VOCAB_DIR'):
    tf_inputs.vocab_size(vocab_file=SUBWORD)


def test_remote_paths_are_read_through_gfile(monkeypatch):
  monkeypatch.delenv('TFNP_TRAX_OFFLINE', raising=False)
  remote_dir = f'ram://vocab_test_{os.getpid()}_{time.time_ns()}/'
  tf.io.gfile.makedirs(remote_dir)
  tf.io.gfile.copy(os.path.join(VOCAB_DIR, SUBWORD), remote_dir + SUBWORD)
  ids = next(tf_inputs.Tokenize(vocab_file=SUBWORD, vocab_dir=remote_dir)(
      iter(['Hello world.'])))
  assert ids.tolist() == _expected_ids('Hello world.')
  with pytest.raises(FileNotFoundError,
                     match=r'could not be read through tf\.io\.gfile'):
    tf_inputs.vocab_size(vocab_file='nope.subword', vocab_dir=remote_dir)


def test_trax_default_offline_fails_at_once_with_the_fix(monkeypatch):
  monkeypatch.setenv('TFNP_TRAX_OFFLINE', '1')
  monkeypatch.delenv('TFNP_TRAX_VOCAB_DIR', raising=False)
  start = time.monotonic()
  with pytest.raises(FileNotFoundError,
                     match=r'gs://trax-ml/vocabs/en_8k\.subword .*is a remote '
                     r'path .*TFNP_TRAX_VOCAB_DIR=<that directory>'):
    tf_inputs.vocab_size(vocab_file=SUBWORD)
  assert time.monotonic() - start < 1.0


def test_unreachable_gcs_is_probed_once_and_quickly(monkeypatch):
  monkeypatch.delenv('TFNP_TRAX_OFFLINE', raising=False)
  calls = []

  def refuse(address, timeout):
    calls.append((address, timeout))
    raise OSError('unreachable (test)')
  monkeypatch.setattr(_vocab.socket, 'create_connection', refuse)
  monkeypatch.setattr(_vocab, '_PROBED', {})
  for _ in range(2):
    with pytest.raises(FileNotFoundError, match='cannot reach it'):
      tf_inputs.vocab_size(vocab_file=SUBWORD,
                           vocab_dir='gs://trax-ml/vocabs/')
  assert calls == [(('storage.googleapis.com', 443), 1.0)]
