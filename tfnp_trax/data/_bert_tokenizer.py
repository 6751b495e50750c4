"""BERT's WordPiece tokenizer over a `vocab.txt` file (`vocab_type='bert'`).

Behaves as the original BERT tokenizer that Trax 1.4.1 vendors: clean the
text, put spaces around CJK ideographs, split on whitespace and punctuation
(optionally lower-casing and stripping accents), then cut each word greedily
into the longest vocabulary pieces, continuation pieces prefixed by `##`; a
word that cannot be cut becomes `[UNK]`.
"""

import collections
import unicodedata

from tfnp_trax.data import _encoder_base as base

__all__ = ['BertBasicEncoder', 'BertEncoder', 'BertWordpieceTokenizer',
           'whitespace_tokenize']

# CJK Unified Ideograph blocks (and compatibility ideographs); Hangul, kana
# and other scripts are written with spaces and are not split per character.
_CJK_RANGES = ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF),
               (0x2A700, 0x2B73F), (0x2B740, 0x2B81F), (0x2B820, 0x2CEAF),
               (0xF900, 0xFAFF), (0x2F800, 0x2FA1F))


def whitespace_tokenize(text):
  """Splits stripped `text` on whitespace."""
  return text.split()


def _is_whitespace(c):
  return c in ' \t\n\r' or unicodedata.category(c) == 'Zs'


def _is_control(c):
  # Tab, newline and carriage return count as whitespace, not control.
  return c not in '\t\n\r' and unicodedata.category(c) in ('Cc', 'Cf')


def _is_punctuation(c):
  cp = ord(c)
  # BERT treats every ASCII symbol that is not a letter or digit as
  # punctuation, even `^`, `$` and backtick which Unicode does not.
  if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
    return True
  return unicodedata.category(c).startswith('P')


def _is_cjk(cp):
  return any(lo <= cp <= hi for lo, hi in _CJK_RANGES)


class BertBasicEncoder:
  """Cleans text and splits it on whitespace and punctuation."""

  def __init__(self, do_lower_case=True):
    self.do_lower_case = do_lower_case

  def tokenize(self, text):
    """Returns the basic tokens of `text` (`str` or UTF-8 `bytes`)."""
    text = self._clean_text(base.native_to_unicode(text))
    text = ''.join(f' {c} ' if _is_cjk(ord(c)) else c for c in text)
    pieces = []
    for token in whitespace_tokenize(text):
      if self.do_lower_case:
        token = self._strip_accents(token.lower())
      pieces.extend(self._split_on_punctuation(token))
    return whitespace_tokenize(' '.join(pieces))

  @staticmethod
  def _clean_text(text):
    out = []
    for c in text:
      if c in ('\0', '\ufffd') or _is_control(c):
        continue
      out.append(' ' if _is_whitespace(c) else c)
    return ''.join(out)

  @staticmethod
  def _strip_accents(text):
    decomposed = unicodedata.normalize('NFD', text)
    return ''.join(c for c in decomposed if unicodedata.category(c) != 'Mn')

  @staticmethod
  def _split_on_punctuation(text):
    words = []
    new_word = True
    for c in text:
      if _is_punctuation(c):
        words.append(c)
        new_word = True
      else:
        if new_word:
          words.append('')
        words[-1] += c
        new_word = False
    return words


class BertWordpieceTokenizer:
  """Greedy longest-match-first WordPiece split of whitespace tokens."""

  def __init__(self, vocab, unk_token='[UNK]', max_input_chars_per_word=200):
    self.vocab = vocab
    self.unk_token = unk_token
    self.max_input_chars_per_word = max_input_chars_per_word

  def tokenize(self, text):
    """Returns the word pieces of the whitespace tokens of `text`."""
    out = []
    for word in whitespace_tokenize(base.native_to_unicode(text)):
      out.extend(self._split_word(word))
    return out

  def _split_word(self, word):
    if len(word) > self.max_input_chars_per_word:
      return [self.unk_token]
    pieces = []
    start = 0
    while start < len(word):
      for end in range(len(word), start, -1):
        piece = word[start:end] if start == 0 else '##' + word[start:end]
        if piece in self.vocab:
          pieces.append(piece)
          start = end
          break
      else:
        return [self.unk_token]
    return pieces


class BertEncoder:
  """Encoder compatible with the original BERT library's vocabulary files.

  Example:
    >>> enc = BertEncoder('tests/testdata/trax_vocab/bert_uncased_vocab.txt')
    >>> enc.encode('Hello world.')
    [7592, 2088, 1012]
  """

  def __init__(self, vocab_file, do_lower_case=True):
    self._vocab = self.load_vocab(vocab_file)
    self._inv_vocab = {i: t for t, i in self._vocab.items()}
    self._basic_tokenizer = BertBasicEncoder(do_lower_case=do_lower_case)
    self._wordpiece_tokenizer = BertWordpieceTokenizer(vocab=self._vocab)

  def load_vocab(self, vocab_file):
    """Reads `vocab_file` (one token per line) into an ordered dict."""
    vocab = collections.OrderedDict()
    try:
      with open(vocab_file, 'rb') as f:
        raw = f.read()
    except (FileNotFoundError, IsADirectoryError) as e:
      why = ('is a directory' if isinstance(e, IsADirectoryError)
             else 'does not exist')
      raise type(e)(f'BertEncoder: vocabulary file {vocab_file} {why}; give '
                    f'the path of a BERT vocab.txt (one WordPiece token per '
                    f'line).') from None
    try:
      lines = raw.decode('utf-8').split('\n')
    except UnicodeDecodeError as e:
      raise ValueError(
          f'BertEncoder: vocabulary file {vocab_file} is not UTF-8 text (byte '
          f'{e.start} is {raw[e.start:e.start + 1]!r}); expected a BERT '
          f'vocab.txt, one WordPiece token per line. Check vocab_type and '
          f'vocab_file.') from None
    if lines and not lines[-1]:
      lines.pop()
    for index, line in enumerate(lines):
      vocab[line.strip()] = index
    if not vocab:
      raise ValueError(
          f'BertEncoder: vocabulary file {vocab_file} is empty; expected a '
          f'BERT vocab.txt, one WordPiece token per line ([PAD], [UNK], ...).')
    return vocab

  def tokenize(self, text):
    """Returns the WordPiece tokens of `text`."""
    return [piece for token in self._basic_tokenizer.tokenize(text)
            for piece in self._wordpiece_tokenizer.tokenize(token)]

  def encode(self, text):
    tokens = self.tokenize(text)
    try:
      return [self._vocab[t] for t in tokens]
    except KeyError as e:
      # Only the unknown-word token can be missing: every other piece was
      # found in the vocabulary.
      raise ValueError(
          f'BertEncoder: a word of {text!r} is not in the vocabulary and the '
          f'vocabulary has no {e.args[0]!r} token to stand for it; use a '
          f'BERT vocab.txt that lists {e.args[0]}.') from None

  def decode(self, ids):
    """Joins the tokens of `ids`, gluing `##` pieces to the previous one.

    WordPiece is not invertible: punctuation comes back space-separated and
    case or accents lost to lower-casing stay lost.
    """
    ids = [int(i) for i in ids]
    for i in ids:
      if i not in self._inv_vocab:
        raise ValueError(
            f'BertEncoder.decode: id {i} is not in the vocabulary of '
            f'{self.vocab_size} tokens (ids 0..{self.vocab_size - 1}); were '
            f'the ids made with another vocabulary, or still offset by '
            f'n_reserved_ids?')
    tokens = [self._inv_vocab[i] for i in ids]
    if not tokens:
      return ''
    out = [tokens[0]]
    for token in tokens[1:]:
      out.append(token.lstrip('#') if token.startswith('##') else ' ' + token)
    return ''.join(out)

  @property
  def vocab_size(self):
    return len(self._vocab)
