"""Tokenizing streams of text: `Tokenize`, `detokenize`, `vocab_size`, ...

As in Trax, `Tokenize(...)` returns a function from a stream (a Python
iterator of strings, tuples or dicts) to a stream with the chosen strings
replaced by NumPy int64 id arrays. Here the same function also accepts a
`tf.data.Dataset` and returns the dataset mapped the same way (through
`tf.py_function`), giving identical ids.
"""

import os

import numpy as np

from tfnp_trax.data import _vocab
from tfnp_trax.data._tf_path import is_dataset
from tfnp_trax.data._tf_path import Step

__all__ = ['ConvertToUnicode', 'SentencePieceTokenize', 'Tokenize',
           'T5_DEFAULT_SPM_PATH', 'detokenize', 'sentencepiece_tokenize',
           'tokenize', 'vocab_size']

# Where Trax (through t5) finds its default SentencePiece model. Remote, so
# it is only named in errors: pass a local `spm_path` instead.
T5_DEFAULT_SPM_PATH = 'gs://t5-data/vocabs/cc_all.32000/sentencepiece.model'


def _encode(vocab, text, n_reserved_ids):
  if isinstance(text, np.ndarray) and text.ndim == 0:
    text = text.item()
  if isinstance(text, bytes):
    text = text.decode('utf-8')
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


def _map_dataset(dataset, keys, encode_fn, caller):
  """Maps `encode_fn` over the string fields of a `tf.data.Dataset`."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top

  def encode_tensor(t):
    ids = tf.py_function(lambda s: encode_fn(s.numpy()), [t], tf.int64)
    ids.set_shape([None])
    return ids

  def check_and_encode(name, t):
    if t.dtype != tf.string:
      raise ValueError(f'{caller}: field {name!r} of the dataset has dtype '
                       f'{t.dtype.name}; only tf.string fields can be '
                       'tokenized. Choose the text fields with keys=[...].')
    if t.shape.rank != 0:
      raise ValueError(f'{caller}: field {name!r} has shape {t.shape}; '
                       'tokenize examples before batching them.')
    return encode_tensor(t)

  def select(name, t):
    chosen = keys is None or name in keys
    if keys is None and t.dtype != tf.string:
      return t  # With keys=None every string field is tokenized.
    return check_and_encode(name, t) if chosen else t

  def fn(*args):
    if len(args) > 1:
      return tuple(select(i, t) for i, t in enumerate(args))
    (x,) = args
    if isinstance(x, dict):
      return {k: select(k, t) for k, t in x.items()}
    return check_and_encode(0, x)

  return dataset.map(fn)


def tokenize(stream, keys=None, vocab_type='subword', vocab_file=None,
             vocab_dir=None, n_reserved_ids=0):
  """Replaces strings in a stream by NumPy arrays of int64 token ids.

  Args:
    stream: an iterator of strings, or of tuples/dicts holding strings; or a
      `tf.data.Dataset` (then a mapped dataset is returned).
    keys: indices (tuples) or names (dicts) of the fields to tokenize; None
      tokenizes all fields.
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
    return _map_dataset(stream, keys, encode, 'Tokenize')
  return (_map_fields(example, keys, encode) for example in stream)


def Tokenize(keys=None, vocab_type='subword', vocab_file=None,  # pylint: disable=invalid-name
             vocab_dir=None, n_reserved_ids=0):
  """Returns a function mapping text to int arrays; see `tokenize`."""
  # Load (and check) the vocabulary now, so a missing file fails when the
  # pipeline is built rather than at its first example.
  _vocab.get_vocab(vocab_type, vocab_file, vocab_dir, caller='Tokenize')
  run = lambda g: tokenize(g, keys=keys, vocab_type=vocab_type,
                           vocab_file=vocab_file, vocab_dir=vocab_dir,
                           n_reserved_ids=n_reserved_ids)
  # Both paths are `tokenize`, which maps a Dataset with tf.data ops.
  return Step('Tokenize', run, run)


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
    yield _encode(vocab, example, 0)


def SentencePieceTokenize(spm_path=None, extra_ids=0):  # pylint: disable=invalid-name
  """Returns a stream function; see `sentencepiece_tokenize`."""
  run = lambda g: sentencepiece_tokenize(g, spm_path=spm_path,
                                         extra_ids=extra_ids)
  return Step('SentencePieceTokenize', run)

