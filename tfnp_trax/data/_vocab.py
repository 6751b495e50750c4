"""Finds and loads a vocabulary for `Tokenize`.

Trax reads vocabularies from `gs://trax-ml/vocabs/` by default, and so does
tfnp_trax, through `tf.io.gfile`, when Cloud Storage answers a quick probe
(one TCP connection with a 1-second timeout, asked once per process). The
environment variable `TFNP_TRAX_VOCAB_DIR` replaces that default folder,
e.g. with a local mirror (`export TFNP_TRAX_VOCAB_DIR=~/trax_vocabs`);
`TFNP_TRAX_OFFLINE=1` never reads a remote path. A remote file is copied
into a temporary folder first (the encoders read local files). A vocabulary
that is neither local nor reachable fails at once with the path that was
looked in and how to fix it.
"""

import functools
import hashlib
import os
import re
import socket
import tempfile
import threading

from tfnp_trax import atomic_files
from tfnp_trax.data import text_encoder

__all__ = ['DEFAULT_VOCAB_DIR', 'OFFLINE_ENV', 'SentencePieceVocabulary',
           'VOCAB_DIR_ENV', 'VOCAB_TYPES', 'default_vocab_dir', 'get_vocab']

DEFAULT_VOCAB_DIR = 'gs://trax-ml/vocabs/'
VOCAB_DIR_ENV = 'TFNP_TRAX_VOCAB_DIR'
OFFLINE_ENV = 'TFNP_TRAX_OFFLINE'
VOCAB_TYPES = ('char', 'subword', 'sentencepiece', 'bert', 'bert-lowercase')
_GCS_HOST = ('storage.googleapis.com', 443)
_PROBE_TIMEOUT_S = 1.0
_PROBED = {}  # host -> whether it answered (one probe per process).
_PROBE_LOCK = threading.Lock()


def default_vocab_dir():
  """The folder used without `vocab_dir`: $TFNP_TRAX_VOCAB_DIR, else Trax's."""
  return os.path.expanduser(os.environ.get(VOCAB_DIR_ENV) or
                            DEFAULT_VOCAB_DIR)


def _has_scheme(path):
  # `gs://...`, `ram://...`: a path for tf.io.gfile, not the local disk.
  return bool(re.match(r'[A-Za-z][A-Za-z0-9+.-]*://', path))


def _reachable(path):
  """Whether `path`'s file system may be read now (quick; never hangs)."""
  if os.environ.get(OFFLINE_ENV, '') not in ('', '0'):
    return False
  if not path.startswith('gs://'):
    return True  # Local to tf.io.gfile (ram://) or its own quick error.
  with _PROBE_LOCK:
    if _GCS_HOST not in _PROBED:
      result = []

      def probe():
        try:
          socket.create_connection(_GCS_HOST, timeout=_PROBE_TIMEOUT_S).close()
          result.append(True)
        except OSError:
          pass
      # In a thread with a deadline: a name lookup may outlast the
      # connection timeout.
      thread = threading.Thread(target=probe, daemon=True)
      thread.start()
      thread.join(2 * _PROBE_TIMEOUT_S)
      _PROBED[_GCS_HOST] = bool(result)
    return _PROBED[_GCS_HOST]


def _local_copy(caller, vocab_type, path):
  """Copies a `tf.io.gfile` path to a temporary file; returns its path."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  try:
    with tf.io.gfile.GFile(path, 'rb') as f:
      data = f.read()
  except (tf.errors.OpError, OSError) as e:
    raise FileNotFoundError(
        f"{caller}: vocabulary file {path} for vocab_type='{vocab_type}' "
        f'could not be read through tf.io.gfile ({type(e).__name__}: '
        f'{str(e).strip()[:200]}). Check the path, or copy the file to a '
        f'local directory and pass vocab_dir=<that directory> (or set '
        f'{VOCAB_DIR_ENV}).') from None
  folder = os.path.join(tempfile.gettempdir(), 'tfnp_trax_vocabs',
                        hashlib.sha256(path.encode()).hexdigest()[:16])
  os.makedirs(folder, exist_ok=True)
  local = os.path.join(folder, os.path.basename(path))
  # Written whole, then renamed: a concurrent reader never sees part of it.
  return atomic_files.write_atomically(local, data)


class SentencePieceVocabulary:
  """A SentencePiece `.model` file, encoded as t5/seqio's vocabulary does.

  `vocab_size` counts `extra_ids` sentinel ids after the model's pieces.
  Decoding stops after the first EOS and maps ids past the model's pieces
  to the unknown piece.
  """

  def __init__(self, sentencepiece_model_file, extra_ids=0):
    import sentencepiece  # pylint: disable=g-import-not-at-top
    self.sentencepiece_model_file = sentencepiece_model_file
    self._extra_ids = extra_ids
    with open(sentencepiece_model_file, 'rb') as f:
      self._model_proto = f.read()
    try:
      self.tokenizer = sentencepiece.SentencePieceProcessor(
          model_proto=self._model_proto)
    except RuntimeError as e:  # sentencepiece's error for any bad proto.
      raise ValueError(
          f'SentencePieceVocabulary: {sentencepiece_model_file} is not a '
          f'SentencePiece model (it does not parse as one: '
          f'{str(e).strip()[:120]}); expected the binary .model file that '
          f'spm_train writes, not its .vocab or another vocabulary. Check '
          f'vocab_type and vocab_file.') from None

  @property
  def sp_model(self):
    """The serialized model (what tf_text's SentencepieceTokenizer takes)."""
    return self._model_proto

  @property
  def extra_ids(self):
    return self._extra_ids

  @property
  def vocab_size(self):
    return self.tokenizer.GetPieceSize() + self._extra_ids

  @property
  def eos_id(self):
    return self.tokenizer.eos_id()

  @property
  def unk_id(self):
    return self.tokenizer.unk_id()

  def encode(self, s):
    if isinstance(s, bytes):
      s = s.decode('utf-8')
    return self.tokenizer.EncodeAsIds(s)

  def decode(self, ids):
    ids = [int(i) for i in ids]
    if any(i < 0 for i in ids):
      raise ValueError(
          f'SentencePieceVocabulary: cannot decode id {min(ids)}: piece ids '
          f'are >= 0; were the ids made with a smaller n_reserved_ids than '
          f'the one given to detokenize?')
    if self.eos_id in ids:
      ids = ids[:ids.index(self.eos_id) + 1]
    n = self.tokenizer.GetPieceSize()
    return self.tokenizer.DecodeIds([i if i < n else self.unk_id
                                     for i in ids])


def _missing_file_error(caller, vocab_type, path, vocab_dir_given):
  remote = _has_scheme(path)
  why = ('is a remote path and tfnp_trax never downloads while it cannot '
         f'reach it (offline, or {OFFLINE_ENV} set)'
         if remote else 'does not exist')
  fix = ('Copy the vocabulary file to a local directory and pass '
         'vocab_dir=<that directory>')
  if not vocab_dir_given:
    fix += (f' or set {VOCAB_DIR_ENV}=<that directory> (vocab_dir '
            f'defaults to {default_vocab_dir()})')
  return FileNotFoundError(
      f"{caller}: vocabulary file {path} for vocab_type='{vocab_type}' "
      f'{why}. {fix}.')


@functools.lru_cache(maxsize=16)
def _load(vocab_type, path, extra_ids, mtime):
  del mtime  # Part of the cache key only: a rewritten file is reloaded.
  if vocab_type == 'subword':
    return text_encoder.SubwordTextEncoder(path)
  if vocab_type in ('bert', 'bert-lowercase'):
    return text_encoder.BertEncoder(
        path, do_lower_case=vocab_type == 'bert-lowercase')
  return SentencePieceVocabulary(path, extra_ids=extra_ids)


def get_vocab(vocab_type='subword', vocab_file=None, vocab_dir=None,
              extra_ids=0, caller='Tokenize'):
  """Returns the encoder for `vocab_type`, reading a local vocabulary file.

  Args:
    vocab_type: one of `VOCAB_TYPES`.
    vocab_file: file name inside `vocab_dir` (not used for `'char'`).
    vocab_dir: directory of `vocab_file` (any `tf.io.gfile` path); default
      `default_vocab_dir()`: $TFNP_TRAX_VOCAB_DIR, else Trax's
      `gs://trax-ml/vocabs/` (read only when reachable, see the module
      docstring).
    extra_ids: sentinel ids added after a SentencePiece vocabulary.
    caller: name used in error messages.

  Raises:
    ValueError: for an unknown `vocab_type` or a missing `vocab_file`.
    FileNotFoundError: when the file is neither a local file nor a
      readable one on a reachable remote file system.
  """
  if vocab_type not in VOCAB_TYPES:
    raise ValueError(
        f'{caller}: vocab_type must be "subword", "char", "sentencepiece", '
        f'"bert" or "bert-lowercase" but got {vocab_type}')
  if vocab_type == 'char':
    # Reserved ids are added by the caller (`n_reserved_ids`), as in Trax.
    return text_encoder.ByteTextEncoder(num_reserved_ids=0)
  if not vocab_file:
    raise ValueError(f"{caller}: vocab_type='{vocab_type}' needs vocab_file "
                     '(a file name inside vocab_dir), got None.')
  path = os.path.join(vocab_dir or default_vocab_dir(), vocab_file)
  if _has_scheme(path):
    if not _reachable(path):
      raise _missing_file_error(caller, vocab_type, path, bool(vocab_dir))
    path = _local_copy(caller, vocab_type, path)
  path = os.path.expanduser(path)
  if os.path.isdir(path):
    raise IsADirectoryError(
        f"{caller}: vocabulary file {path} for vocab_type='{vocab_type}' is "
        f'a directory; vocab_file names a file inside vocab_dir (e.g. '
        f"vocab_file='en_8k.subword').")
  if not os.path.isfile(path):
    raise _missing_file_error(caller, vocab_type, path, bool(vocab_dir))
  return _load(vocab_type, os.path.abspath(path), extra_ids,
               os.path.getmtime(path))
