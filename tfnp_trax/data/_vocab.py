"""Finds and loads a vocabulary for `Tokenize`, offline.

Trax reads vocabularies from `gs://trax-ml/vocabs/` by default. tfnp_trax
never downloads: a vocabulary must be a local file, and a missing one fails
at once with the path that was looked in and how to fix it.
"""

import functools
import os

from tfnp_trax.data import text_encoder

__all__ = ['DEFAULT_VOCAB_DIR', 'SentencePieceVocabulary', 'VOCAB_TYPES',
           'get_vocab']

DEFAULT_VOCAB_DIR = 'gs://trax-ml/vocabs/'
VOCAB_TYPES = ('char', 'subword', 'sentencepiece', 'bert', 'bert-lowercase')
_REMOTE_PREFIXES = ('gs://', 'http://', 'https://', 's3://', 'hdfs://')


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
  remote = path.startswith(_REMOTE_PREFIXES)
  why = ('is a remote path and tfnp_trax never downloads'
         if remote else 'does not exist')
  fix = ('Copy the vocabulary file to a local directory and pass '
         'vocab_dir=<that directory>')
  if not vocab_dir_given:
    fix += f" (vocab_dir defaults to Trax's {DEFAULT_VOCAB_DIR})"
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
    vocab_dir: directory of `vocab_file`; Trax's default is the remote
      `gs://trax-ml/vocabs/`, which is never read here.
    extra_ids: sentinel ids added after a SentencePiece vocabulary.
    caller: name used in error messages.

  Raises:
    ValueError: for an unknown `vocab_type` or a missing `vocab_file`.
    FileNotFoundError: when the file is not a local, existing file.
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
  path = os.path.join(vocab_dir or DEFAULT_VOCAB_DIR, vocab_file)
  if path.startswith(_REMOTE_PREFIXES):
    raise _missing_file_error(caller, vocab_type, path, bool(vocab_dir))
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
