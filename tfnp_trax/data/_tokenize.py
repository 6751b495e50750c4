"""Tokenizing streams of text: `Tokenize`, `detokenize`, `vocab_size`, ...

As in Trax, `Tokenize(...)` returns a function from a stream (a Python
iterator of strings, tuples or dicts) to a stream with the chosen strings
replaced by NumPy int64 id arrays. Here the same function also accepts a
`tf.data.Dataset` and returns the dataset mapped the same way, giving
identical ids: in TensorFlow ops for UTF-8 bytes (`vocab_type='char'`) and
subwords (`vocab_type='subword'`, see `_tf_subword.py`), through
`tf.py_function` for the vocabularies that need Python.
"""

import os

import numpy as np

from tfnp_trax.data import _tf_subword
from tfnp_trax.data import _vocab
from tfnp_trax.data._tf_path import is_dataset
from tfnp_trax.data._tf_path import Step

__all__ = ['ConvertToUnicode', 'SentencePieceTokenize', 'Tokenize',
           'T5_DEFAULT_SPM_PATH', 'detokenize', 'sentencepiece_tokenize',
           'tokenize', 'vocab_size']

# Where Trax (through t5) finds its default SentencePiece model. Remote, so
# it is only named in errors: pass a local `spm_path` instead.
T5_DEFAULT_SPM_PATH = 'gs://t5-data/vocabs/cc_all.32000/sentencepiece.model'


def _is_text(x):
  if isinstance(x, np.ndarray) and x.ndim == 0:
    x = x.item()
  return isinstance(x, (str, bytes))


def _encode(vocab, text, n_reserved_ids, caller='Tokenize'):
  if isinstance(text, np.ndarray) and text.ndim == 0:
    text = text.item()
  if not isinstance(text, (str, bytes)):
    # Subword and BERT encoders would tokenize the value's repr instead.
    raise ValueError(
        f'{caller}: a field chosen for tokenizing holds '
        f'{type(text).__name__} {text!r:.60}; only text (str or bytes) can '
        f'be tokenized. Choose the text fields with keys=[...] (positions '
        f'of tuples, names of dicts).')
  if isinstance(text, bytes):
    try:
      text = text.decode('utf-8')
    except UnicodeDecodeError as e:
      # The words of the tf.data path's check, so both paths read alike.
      raise ValueError(
          f'{caller}: a text is not valid UTF-8, so it has no characters to '
          f'tokenize; decode or clean the text first (byte {e.start} of '
          f'{text[:40]!r}).') from None
  # int64 even for an empty string (Trax gives float64 there, which breaks
  # batching with the non-empty examples).
  return np.asarray(vocab.encode(text), dtype=np.int64) + n_reserved_ids


def _map_fields(example, keys, fn):
  """Applies `fn` to the fields of `example` chosen by `keys` (None: all)."""
  if isinstance(example, (list, tuple)):
    return tuple(fn(x) if keys is None or i in keys else x
                 for i, x in enumerate(example))
  if isinstance(example, dict):
    return {k: fn(v) if keys is None or k in keys else v
            for k, v in example.items()}
  return fn(example)


def _check_text(caller, name, t, rank):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  if t.dtype != tf.string:
    raise ValueError(f'{caller}: field {name!r} of the dataset has dtype '
                     f'{t.dtype.name}; only tf.string fields can be '
                     'tokenized. Choose the text fields with keys=[...].')
  if t.shape.rank != rank:
    shape = t.shape if rank == 0 else t.shape[1:]
    raise ValueError(f'{caller}: field {name!r} has shape {shape}; '
                     'tokenize examples before batching them.')


def _chosen(keys, name, t):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  if keys is None:
    return t.dtype == tf.string  # keys=None: every string field.
  return name in keys


def _map_dataset(dataset, keys, encode_tensor, caller):
  """Maps `encode_tensor` (scalar string -> ids) over a Dataset's fields."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top

  def select(name, t):
    if not _chosen(keys, name, t):
      return t
    _check_text(caller, name, t, 0)
    return encode_tensor(t)

  def fn(*args):
    if len(args) > 1:
      return tuple(select(i, t) for i, t in enumerate(args))
    (x,) = args
    if isinstance(x, dict):
      return {k: select(k, t) for k, t in x.items()}
    _check_text(caller, 0, x, 0)
    return encode_tensor(x)

  return dataset.map(tf.autograph.experimental.do_not_convert(fn),
                     num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)


def _map_blocks(blocks, keys, encode_block, caller):
  """Maps `encode_block` (`[k]` strings -> `[k, None]` ids) over `Blocks`.

  The ids are int64 examples, whatever narrower dtype `encode_block` stores
  them in.
  """
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  specs = blocks.positions(blocks.dataset.element_spec)
  chosen = [i for i, spec in enumerate(specs)
            if not blocks.tupled or _chosen(keys, i, spec)]
  for i in chosen:  # Fails now, on a field that cannot be tokenized.
    _check_text(caller, i, specs[i], 1)
  dtypes = [tf.int64 if i in chosen else d
            for i, d in enumerate(blocks.dtypes)]
  return blocks.map(lambda xs: tuple(encode_block(t) if i in chosen else t
                                     for i, t in enumerate(xs)),
                    dtypes=dtypes)


_INVALID = 0xD800


def _utf8_bytes(texts):
  """The bytes of `texts` (joined), once checked to be valid UTF-8.

  The Python path decodes each text, failing on invalid UTF-8; so does this
  one. ASCII, the usual case, is valid and needs no decoding.
  """
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  joined = texts if texts.shape.rank == 0 else tf.strings.reduce_join(texts)
  raw = tf.reshape(tf.io.decode_raw(joined, tf.uint8), [-1])

  def decodes():
    # A surrogate code point never comes out of valid UTF-8, so it can mark
    # where the decoder met invalid bytes.
    chars = tf.strings.unicode_decode(texts, 'UTF-8', errors='replace',
                                      replacement_char=_INVALID)
    if isinstance(chars, tf.RaggedTensor):
      chars = chars.flat_values
    return tf.reduce_all(chars != _INVALID)
  valid = tf.cond(tf.reduce_all(raw < 128), lambda: tf.constant(True),
                  decodes)
  check = tf.debugging.Assert(valid, [
      'Tokenize: a text is not valid UTF-8, so it has no characters to '
      'tokenize; decode or clean the text first.'])
  with tf.control_dependencies([check]):
    return tf.identity(raw)


def _storage_dtype(n_ids):
  """The dtype block ids are kept in: uint16 where `n_ids` ids fit."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  return tf.uint16 if n_ids <= 2**16 else tf.int64


def _char_encoders(n_reserved_ids):
  """In-graph UTF-8 byte ids: one string, and a block of strings."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top

  def ids_of(texts, dtype=tf.int64):
    ids = tf.cast(_utf8_bytes(texts), dtype)
    return ids + tf.cast(n_reserved_ids, dtype) if n_reserved_ids else ids

  def block(texts):
    # One copy of the block's bytes, cut back into rows by their lengths.
    return tf.RaggedTensor.from_row_lengths(
        ids_of(texts, _storage_dtype(256 + n_reserved_ids)),
        tf.cast(tf.strings.length(texts), tf.int64), validate=False)
  return ids_of, block


def _python_encoders(encode_fn, n_ids):
  """`encode_fn` run through `tf.py_function`: per string, and per block."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  storage = _storage_dtype(n_ids)

  def one(t):
    ids = tf.py_function(lambda s: encode_fn(s.numpy()), [t], tf.int64)
    ids.set_shape([None])
    return ids

  def encode_all(texts):
    rows = [encode_fn(s) for s in texts.numpy()]
    flat = np.concatenate(rows) if rows else np.zeros([0], np.int64)
    return (flat.astype(storage.as_numpy_dtype),
            np.array([len(r) for r in rows], np.int64))

  def block(texts):
    # One Python call per block, not per example.
    flat, lengths = tf.py_function(encode_all, [texts], [storage, tf.int64])
    flat.set_shape([None])
    lengths.set_shape([None])
    return tf.RaggedTensor.from_row_lengths(flat, lengths, validate=False)
  return one, block


def tokenize(stream, keys=None, vocab_type='subword', vocab_file=None,
             vocab_dir=None, n_reserved_ids=0):
  """Replaces strings in a stream by NumPy arrays of int64 token ids.

  Args:
    stream: an iterator of strings, or of tuples/dicts holding strings; or a
      `tf.data.Dataset` (then a mapped dataset is returned).
    keys: indices (tuples) or names (dicts) of the fields to tokenize; None
      tokenizes every text field (others pass through, on both paths). A
      chosen field that is not text raises ValueError.
    vocab_type: `'subword'`, `'sentencepiece'`, `'char'` (UTF-8 bytes),
      `'bert'` or `'bert-lowercase'`.
    vocab_file: vocabulary file name inside `vocab_dir`.
    vocab_dir: local directory of `vocab_file` (Trax's default
      `gs://trax-ml/vocabs/` is never downloaded from).
    n_reserved_ids: offset added to every id, leaving `0..n_reserved_ids-1`
      free (e.g. for padding and EOS).

  Yields:
    The examples, the chosen strings replaced by 1-D int64 arrays.

  Example:
    >>> ids = next(tokenize(iter(['hi']), vocab_type='char'))
    >>> ids.tolist()
    [104, 105]
  """
  vocab = _vocab.get_vocab(vocab_type, vocab_file, vocab_dir,
                           caller='Tokenize')
  encode = lambda text: _encode(vocab, text, n_reserved_ids)
  if is_dataset(stream):
    one, _ = _tensor_encoders(vocab, vocab_type, encode, n_reserved_ids)
    return _map_dataset(stream, keys, one, 'Tokenize')
  return (_encode_example(example, keys, encode) for example in stream)


def _encode_example(example, keys, encode):
  if keys is None and isinstance(example, (list, tuple, dict)):
    # keys=None picks every text field, as on a Dataset; Trax would fail on
    # the other fields.
    return _map_fields(example, None,
                       lambda x: encode(x) if _is_text(x) else x)
  return _map_fields(example, keys, encode)


def _tensor_encoders(vocab, vocab_type, encode, n_reserved_ids):
  if vocab_type == 'char':
    return _char_encoders(n_reserved_ids)
  if vocab_type == 'subword':
    return _tf_subword.subword_encoders(
        vocab, n_reserved_ids,
        _storage_dtype(vocab.vocab_size + n_reserved_ids))
  return _python_encoders(encode, vocab.vocab_size + n_reserved_ids)


def Tokenize(keys=None, vocab_type='subword', vocab_file=None,  # pylint: disable=invalid-name
             vocab_dir=None, n_reserved_ids=0):
  """Returns a function mapping text to int arrays; see `tokenize`.

  On a Dataset, `vocab_type='char'` and `'subword'` run as TensorFlow ops
  (giving the ids of the Python path); other vocabularies call Python
  through `tf.py_function`, once per block of examples inside `Serial`.
  """
  # Load (and check) the vocabulary now, so a missing file fails when the
  # pipeline is built rather than at its first example.
  vocab = _vocab.get_vocab(vocab_type, vocab_file, vocab_dir,
                           caller='Tokenize')
  run = lambda g: tokenize(g, keys=keys, vocab_type=vocab_type,
                           vocab_file=vocab_file, vocab_dir=vocab_dir,
                           n_reserved_ids=n_reserved_ids)

  def block_fn(blocks):
    _, block = _tensor_encoders(
        vocab, vocab_type, lambda text: _encode(vocab, text, n_reserved_ids),
        n_reserved_ids)
    return _map_blocks(blocks, keys, block, 'Tokenize')
  # On a Dataset, `tokenize` maps it with tf.data ops.
  return Step('Tokenize', run, run, block_fn)


def detokenize(x, vocab_type='subword', vocab_file=None, vocab_dir=None,
               n_reserved_ids=0):
  """Maps token ids back to text, the inverse of `tokenize`.

  Char and subword tokenizations are invertible; BERT's is not (see
  `text_encoder.BertEncoder.decode`).

  Args:
    x: a list or NumPy array of ints.
    vocab_type, vocab_file, vocab_dir, n_reserved_ids: as in `tokenize`.

  Returns:
    The decoded `str`.
  """
  vocab = _vocab.get_vocab(vocab_type, vocab_file, vocab_dir,
                           caller='detokenize')
  ids = (np.asarray(x) - n_reserved_ids).reshape(-1).tolist()
  return str(vocab.decode(ids))


def vocab_size(vocab_type='subword', vocab_file=None, vocab_dir=None,
               n_reserved_ids=0):
  """Number of ids the vocabulary uses, `n_reserved_ids` included."""
  vocab = _vocab.get_vocab(vocab_type, vocab_file, vocab_dir,
                           caller='vocab_size')
  return vocab.vocab_size + n_reserved_ids


def _to_unicode(s):
  if isinstance(s, str):
    return s
  # Invalid UTF-8 is dropped rather than failing the whole example.
  return str(bytes(s), encoding='utf-8', errors='ignore')


def ConvertToUnicode(keys=None):  # pylint: disable=invalid-name
  """Returns a stream function decoding UTF-8 bytes fields to `str`.

  Useful after `TFDS`, whose strings are bytes. Invalid UTF-8 is dropped.

  Args:
    keys: indices or names of the fields to convert (None: all).
  """
  def convert(stream):
    for example in stream:
      yield _map_fields(example, keys, _to_unicode)
  # Python path only: on a Dataset, `Step` reads it as NumPy first.
  return Step('ConvertToUnicode', convert)


def sentencepiece_tokenize(stream, spm_path=None, extra_ids=0):
  """Tokenizes a stream of strings (or 1-tuples) with a SentencePiece model.

  Args:
    stream: an iterator of `str`, or of tuples whose first field is text.
    spm_path: local path of the `.model` file. Trax defaults to t5's remote
      model, which is never downloaded here.
    extra_ids: sentinel ids counted after the model's pieces.

  Yields:
    int64 arrays of ids.
  """
  spm_path = spm_path or T5_DEFAULT_SPM_PATH
  vocab = _vocab.get_vocab('sentencepiece', os.path.basename(spm_path),
                           os.path.dirname(spm_path), extra_ids=extra_ids,
                           caller='SentencePieceTokenize')
  for example in stream:
    if isinstance(example, tuple):
      example = example[0]
    yield _encode(vocab, example, 0, 'SentencePieceTokenize')


def SentencePieceTokenize(spm_path=None, extra_ids=0):  # pylint: disable=invalid-name
  """Returns a stream function; see `sentencepiece_tokenize`."""
  run = lambda g: sentencepiece_tokenize(g, spm_path=spm_path,
                                         extra_ids=extra_ids)
  return Step('SentencePieceTokenize', run)

