"""Text encoders, as `trax.data.text_encoder` (from tensor2tensor) has them.

* `TextEncoder`: base class (whitespace-separated integers).
* `ByteTextEncoder`: UTF-8 bytes (`vocab_type='char'`).
* `TokenTextEncoder`: a user-supplied token list or file.
* `SubwordTextEncoder`: invertible subwords (`.subword` files).
* `BertEncoder`: BERT WordPiece (`vocab.txt` files).
* `ClassLabelEncoder`, `OneHotClassLabelEncoder`, `ImageEncoder`,
  `RealEncoder`: labels, images and floats.

Vocabulary files are read from local paths only; nothing is downloaded.

Trax's module-level helpers of the subword encoder keep their names:
`_escape_token`, `_unescape_token` and `_ESCAPE_CHARS`, the characters
escaping produces. `SubwordTextEncoder` reads `_ESCAPE_CHARS` from this
module whenever it builds an alphabet, as Trax's does, so replacing it here
(Trax's tests patch it to make text unencodable) takes effect.
"""

import math
import os
import tempfile

import numpy as np

from tfnp_trax.data._bert_tokenizer import BertBasicEncoder
from tfnp_trax.data._bert_tokenizer import BertEncoder
from tfnp_trax.data._bert_tokenizer import BertWordpieceTokenizer
from tfnp_trax.data._bert_tokenizer import whitespace_tokenize
from tfnp_trax.data._encoder_base import EOS
from tfnp_trax.data._encoder_base import EOS_ID
from tfnp_trax.data._encoder_base import is_unicode
from tfnp_trax.data._encoder_base import native_to_unicode
from tfnp_trax.data._encoder_base import NUM_RESERVED_TOKENS
from tfnp_trax.data._encoder_base import PAD
from tfnp_trax.data._encoder_base import PAD_ID
from tfnp_trax.data._encoder_base import RESERVED_TOKENS
from tfnp_trax.data._encoder_base import RESERVED_TOKENS_BYTES
from tfnp_trax.data._encoder_base import strip_ids
from tfnp_trax.data._encoder_base import TextEncoder
from tfnp_trax.data._encoder_base import to_unicode
from tfnp_trax.data._encoder_base import to_unicode_ignore_errors
from tfnp_trax.data._encoder_base import to_unicode_utf8
from tfnp_trax.data import _subword

__all__ = [
    'BertBasicEncoder', 'BertEncoder', 'BertWordpieceTokenizer',
    'ByteTextEncoder', 'ClassLabelEncoder', 'EOS', 'EOS_ID', 'ImageEncoder',
    'NUM_RESERVED_TOKENS', 'OneHotClassLabelEncoder', 'PAD', 'PAD_ID',
    'RESERVED_TOKENS', 'RESERVED_TOKENS_BYTES', 'RealEncoder',
    'SubwordTextEncoder', 'TextEncoder', 'TokenTextEncoder', 'is_unicode',
    'native_to_unicode', 'strip_ids', 'to_unicode', 'to_unicode_ignore_errors',
    'to_unicode_utf8', 'whitespace_tokenize',
]


_ESCAPE_CHARS = set(_subword._ESCAPE_CHARS)  # pylint: disable=protected-access
_escape_token = _subword._escape  # pylint: disable=protected-access
_unescape_token = _subword._unescape  # pylint: disable=protected-access


class SubwordTextEncoder(_subword.SubwordTextEncoder):
  __doc__ = _subword.SubwordTextEncoder.__doc__

  def _escape_chars(self):
    # Looked up at each call, so a replaced `text_encoder._ESCAPE_CHARS`
    # applies (see the module docstring).
    return _ESCAPE_CHARS


class ByteTextEncoder(TextEncoder):
  """Encodes text as its UTF-8 bytes, shifted by `num_reserved_ids`.

  Example:
    >>> ByteTextEncoder(num_reserved_ids=0).encode('hé')
    [104, 195, 169]
  """

  def encode(self, s):
    data = s if isinstance(s, bytes) else s.encode('utf-8')
    return [b + self._num_reserved_ids for b in data]

  def decode(self, ids, strip_extraneous=False):
    if strip_extraneous:
      ids = strip_ids(ids, list(range(self._num_reserved_ids or 0)))
    return b''.join(self.decode_list(ids)).decode('utf-8', 'replace')

  def decode_list(self, ids):
    n = self._num_reserved_ids
    ids = [int(i) for i in ids]
    for i in ids:
      if not 0 <= i < self.vocab_size:
        raise ValueError(
            f'ByteTextEncoder: id {i} is not a byte id: expected ids in '
            f'[0, {self.vocab_size}) ({n} reserved, then 256 bytes); were the '
            f'ids made with another vocabulary or n_reserved_ids?')
    return [RESERVED_TOKENS_BYTES[i] if i < n else bytes([i - n])
            for i in ids]

  @property
  def vocab_size(self):
    return 2**8 + self._num_reserved_ids


class ClassLabelEncoder(TextEncoder):
  """Maps a class label string to its index in `class_labels`."""

  def __init__(self, class_labels=None, class_labels_fname=None):
    super().__init__(num_reserved_ids=0)
    if class_labels_fname:
      with open(class_labels_fname, encoding='utf-8') as f:
        class_labels = [label.strip() for label in f.readlines()]
    if not class_labels:
      raise ValueError('ClassLabelEncoder: give class_labels (a non-empty '
                       'list) or class_labels_fname (one label per line).')
    self._class_labels = class_labels

  def encode(self, s):
    return self._class_labels.index(s)

  def decode(self, ids, strip_extraneous=False):
    del strip_extraneous
    label_id = ids
    if isinstance(label_id, list):
      (label_id,) = label_id
    if isinstance(label_id, np.ndarray):
      label_id = np.squeeze(label_id)
    return self._class_labels[label_id]

  def decode_list(self, ids):
    return [self._class_labels[i] for i in ids]

  @property
  def vocab_size(self):
    return len(self._class_labels)


class OneHotClassLabelEncoder(ClassLabelEncoder):
  """Maps a class label string to a one-hot list."""

  def encode(self, label_str, on_value=1, off_value=0):  # pylint: disable=arguments-differ
    one_hot = [off_value] * self.vocab_size
    one_hot[self._class_labels.index(label_str)] = on_value
    return one_hot

  def decode(self, ids, strip_extraneous=False):
    del strip_extraneous
    if isinstance(ids, np.ndarray):
      ids = np.squeeze(ids).astype(np.int8).tolist()
    if not isinstance(ids, list) or len(ids) != self.vocab_size:
      raise ValueError(f'OneHotClassLabelEncoder.decode: expected a one-hot '
                       f'list of length {self.vocab_size}, got {ids!r}.')
    return self._class_labels[ids.index(1)]


class TokenTextEncoder(TextEncoder):
  """Encodes space-separated tokens by a fixed vocabulary (file or list).

  A vocabulary read from a file is used as is (reserved tokens included if
  the file has them); one given as a list gets `RESERVED_TOKENS` prepended.
  """

  def __init__(self, vocab_filename, reverse=False, vocab_list=None,
               replace_oov=None, num_reserved_ids=NUM_RESERVED_TOKENS):
    super().__init__(num_reserved_ids=num_reserved_ids)
    self._reverse = reverse
    self._replace_oov = replace_oov
    if vocab_filename:
      with open(vocab_filename, encoding='utf-8') as f:
        tokens = [t.strip() for t in f.readlines()]
      self._init_vocab(tokens, add_reserved_tokens=False)
    else:
      if vocab_list is None:
        raise ValueError('TokenTextEncoder: give vocab_filename or '
                         'vocab_list.')
      self._init_vocab([t for t in vocab_list if t not in RESERVED_TOKENS])

  def encode(self, s):
    tokens = s.strip().split()
    if self._replace_oov is not None:
      tokens = [t if t in self._token_to_id else self._replace_oov
                for t in tokens]
    ids = [self._token_to_id[t] for t in tokens]
    return ids[::-1] if self._reverse else ids

  def decode(self, ids, strip_extraneous=False):
    del strip_extraneous
    return ' '.join(self.decode_list(ids))

  def decode_list(self, ids):
    seq = reversed(ids) if self._reverse else ids
    return [self._id_to_token.get(i, f'ID_{i}') for i in seq]

  @property
  def vocab_size(self):
    return len(self._id_to_token)

  def _init_vocab(self, tokens, add_reserved_tokens=True):
    prefix = list(RESERVED_TOKENS) if add_reserved_tokens else []
    self._id_to_token = dict(enumerate(prefix + list(tokens)))
    self._token_to_id = {t: i for i, t in self._id_to_token.items()}

  def store_to_file(self, filename):
    """Writes one token per line, reserved tokens included."""
    with open(filename, 'w', encoding='utf-8') as f:
      for i in range(len(self._id_to_token)):
        f.write(self._id_to_token[i] + '\n')


class ImageEncoder:
  """Reads an image file to RGB values and writes ids back to a PNG."""

  def __init__(self, num_reserved_ids=0, height=None, width=None, channels=3):
    if num_reserved_ids != 0:
      raise ValueError('ImageEncoder: num_reserved_ids must be 0, got '
                       f'{num_reserved_ids}.')
    self._height = height
    self._width = width
    self._channels = channels

  @property
  def num_reserved_ids(self):
    return 0

  def encode(self, s):
    """Returns the pixel values of the image file `s`."""
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    return tf.io.decode_image(tf.io.read_file(s),
                              channels=self._channels).numpy()

  def decode(self, ids, strip_extraneous=False):
    """Writes `ids` as a PNG to a temporary file and returns its path."""
    del strip_extraneous
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    if self._height is None or self._width is None:
      size = int(math.sqrt(len(ids) / self._channels))
      shape = [size, size, self._channels]
    else:
      shape = [self._height, self._width, self._channels]
    if len(ids) != int(np.prod(shape)):
      raise ValueError(f'ImageEncoder.decode: {len(ids)} ids do not fill an '
                       f'image of shape {shape} (height x width x channels).')
    png = tf.io.encode_png(tf.reshape(tf.constant(ids, tf.uint8), shape))
    fd, path = tempfile.mkstemp('_decode.png')
    os.close(fd)
    tf.io.write_file(path, png)
    return path

  def decode_list(self, ids):
    return [self.decode(ids)]

  @property
  def vocab_size(self):
    return 256


class RealEncoder:
  """Encodes space-separated floats."""

  def encode(self, s):
    return [float(w) for w in s.split()]

  def decode(self, ids, strip_extraneous=False):
    del strip_extraneous
    return ' '.join(str(i) for i in ids)
