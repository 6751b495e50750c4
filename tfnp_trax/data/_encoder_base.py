"""Reserved tokens, text helpers and the `TextEncoder` base class.

These follow tensor2tensor's `text_encoder` module as Trax 1.4.1 vendors it
(`trax.data.text_encoder`): id 0 is padding, id 1 is end-of-sequence, and an
encoder maps a string to a list of int ids and back.
"""

from absl import logging

__all__ = [
    'EOS', 'EOS_ID', 'NUM_RESERVED_TOKENS', 'PAD', 'PAD_ID', 'RESERVED_TOKENS',
    'RESERVED_TOKENS_BYTES', 'TextEncoder', 'is_unicode', 'native_to_unicode',
    'strip_ids', 'to_unicode', 'to_unicode_ignore_errors', 'to_unicode_utf8',
]

PAD = '<pad>'
EOS = '<EOS>'
RESERVED_TOKENS = [PAD, EOS]
NUM_RESERVED_TOKENS = len(RESERVED_TOKENS)
PAD_ID = RESERVED_TOKENS.index(PAD)
EOS_ID = RESERVED_TOKENS.index(EOS)
RESERVED_TOKENS_BYTES = [t.encode('ascii') for t in RESERVED_TOKENS]


def is_unicode(s):
  """Whether `s` is a Python `str`."""
  return isinstance(s, str)


def to_unicode(s, ignore_errors=False):
  """Decodes UTF-8 `bytes` to `str` (a `str` is returned unchanged)."""
  if is_unicode(s):
    return s
  return bytes(s).decode('utf-8', errors='ignore' if ignore_errors else
                         'strict')


def to_unicode_ignore_errors(s):
  """`to_unicode` that drops byte sequences that are not valid UTF-8."""
  return to_unicode(s, ignore_errors=True)


def to_unicode_utf8(s):
  """Decodes `bytes` as strict UTF-8."""
  return s.decode('utf-8')


def native_to_unicode(s):
  """`to_unicode`, falling back to dropping invalid bytes (logged)."""
  if is_unicode(s):
    return s
  try:
    return to_unicode(s)
  except UnicodeDecodeError:
    text = to_unicode(s, ignore_errors=True)
    logging.info('Dropped bytes that are not UTF-8, kept: %s', text)
    return text


def strip_ids(ids, ids_to_strip):
  """Returns `ids` as a list without the trailing ids in `ids_to_strip`."""
  ids = list(ids)
  while ids and ids[-1] in ids_to_strip:
    ids.pop()
  return ids


class TextEncoder:
  """Base encoder: whitespace-separated integers, shifted past reserved ids.

  Subclasses map text to ids in `[num_reserved_ids, vocab_size)`; ids below
  `num_reserved_ids` stand for `RESERVED_TOKENS`.
  """

  def __init__(self, num_reserved_ids=NUM_RESERVED_TOKENS):
    self._num_reserved_ids = num_reserved_ids

  @property
  def num_reserved_ids(self):
    return self._num_reserved_ids

  def encode(self, s):
    """Maps a string of whitespace-separated integers to shifted ids."""
    return [int(w) + self._num_reserved_ids for w in s.split()]

  def decode(self, ids, strip_extraneous=False):
    """Maps ids to a space-joined string; see `decode_list`."""
    if strip_extraneous:
      ids = strip_ids(ids, list(range(self._num_reserved_ids or 0)))
    return ' '.join(self.decode_list(ids))

  def decode_list(self, ids):
    """Maps each id to its string: a reserved token or the unshifted id."""
    out = []
    for i in ids:
      if 0 <= i < self._num_reserved_ids:
        out.append(RESERVED_TOKENS[int(i)])
      else:
        out.append(i - self._num_reserved_ids)
    return [str(t) for t in out]

  @property
  def vocab_size(self):
    raise NotImplementedError()
