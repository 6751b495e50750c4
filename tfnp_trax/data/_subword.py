"""tensor2tensor's invertible subword encoder (`SubwordTextEncoder`).

Reads and writes the `.subword` vocabulary format Trax ships (one subtoken per
line, optionally quoted, e.g. `en_8k.subword`) and encodes text exactly as
Trax 1.4.1 does:

1. Split the text where letters/digits meet anything else; a single space
   between two such word tokens is dropped (it is implied).
2. Escape each token: `\\` -> `\\\\`, `_` -> `\\u`, characters outside the
   vocabulary's alphabet (and newlines) -> `\\<code point>;`, then append `_`.
3. Cut each escaped token greedily into the longest vocabulary subtokens.

Because every escaped token ends in `_`, decoding concatenates subtokens,
splits at `_` and undoes steps 2 and 1.
"""

import collections
import functools
import itertools
import re
import unicodedata

from absl import logging

from tfnp_trax.data import _encoder_base as base

__all__ = ['SubwordTextEncoder', 'UnencodableTextError', 'invertible_decode',
           'invertible_encode']

_UNESCAPE = re.compile(r'\\u|\\\\|\\([0-9]+);')
_ESCAPE_CHARS = frozenset('\\_u;0123456789')
_CACHE_LIMIT = 2**20


class UnencodableTextError(ValueError, AssertionError):
  """A token has a character its vocabulary cannot spell.

  An AssertionError too, as Trax raises (its t2t encoder asserts there).
  """


@functools.lru_cache(maxsize=None)
def _is_word_char(c):
  # Unicode letters (L*) and numbers (N*) form words; all else separates.
  return unicodedata.category(c)[0] in 'LN'


def invertible_encode(text):
  """Splits `text` into word and non-word tokens (step 1 above)."""
  if not text:
    return []
  tokens = []
  start = 0
  for pos in range(1, len(text)):
    if _is_word_char(text[pos]) != _is_word_char(text[pos - 1]):
      piece = text[start:pos]
      # A lone space between two words is implied by `invertible_decode`.
      if piece != ' ' or start == 0:
        tokens.append(piece)
      start = pos
  tokens.append(text[start:])
  return tokens


def invertible_decode(tokens):
  """Joins tokens, restoring the space between two adjacent word tokens."""
  out = []
  prev_word = False
  for token in tokens:
    is_word = _is_word_char(token[0])
    if prev_word and is_word:
      out.append(' ')
    out.append(token)
    prev_word = is_word
  return ''.join(out)


def _escape(token, alphabet):
  if not isinstance(token, str):
    raise ValueError(f'SubwordTextEncoder: expected a str token, got '
                     f'{type(token).__name__}.')
  token = token.replace('\\', '\\\\').replace('_', '\\u')
  chars = [c if c in alphabet and c != '\n' else f'\\{ord(c)};'
           for c in token]
  return ''.join(chars) + '_'


def _unescape_match(m):
  if m.group(1) is None:
    return '_' if m.group(0) == '\\u' else '\\'
  try:
    return chr(int(m.group(1)))
  except (ValueError, OverflowError):
    return '\u3013'  # GETA MARK: t2t's stand-in for an invalid code point.


def _unescape(escaped):
  if escaped.endswith('_'):
    escaped = escaped[:-1]
  return _UNESCAPE.sub(_unescape_match, escaped)


def _read_lines(filename):
  """Lines of a UTF-8 file split at '\\n' only, as `tf.io.gfile` splits."""
  with open(filename, 'rb') as f:
    raw = f.read()
  try:
    text = raw.decode('utf-8')
  except UnicodeDecodeError as e:
    raise ValueError(
        f'SubwordTextEncoder: vocabulary file {filename} is not UTF-8 text '
        f'(byte {e.start} is {raw[e.start:e.start + 1]!r}); expected a '
        f'.subword file, one quoted subtoken per line (e.g. en_8k.subword). '
        f'Check vocab_type and vocab_file.') from None
  lines = text.split('\n')
  if lines and not lines[-1]:
    lines.pop()
  return lines


class SubwordTextEncoder(base.TextEncoder):
  """Invertible text encoder over a limited subword vocabulary.

  Example:
    >>> enc = SubwordTextEncoder('tests/testdata/trax_vocab/en_8k.subword')
    >>> enc.decode(enc.encode('Hello world.'))
    'Hello world.'
  """

  def __init__(self, filename=None):
    """Creates an encoder, loading `filename` (a `.subword` file) if given."""
    self._alphabet = set()
    self._all_subtoken_strings = []
    self._subtoken_string_to_id = {}
    self._max_subtoken_len = 0
    self._cache = {}
    self.filename = filename
    if filename is not None:
      self._load_from_file(filename)
    super().__init__()

  def encode(self, s):
    """Maps a `str` (or UTF-8 `bytes`) to a list of subtoken ids."""
    tokens = invertible_encode(base.native_to_unicode(s))
    return self._tokens_to_subtoken_ids(tokens)

  def encode_without_tokenizing(self, token_text):
    """Encodes `token_text` as a single token (skips the word splitting)."""
    return self._tokens_to_subtoken_ids([base.native_to_unicode(token_text)])

  def decode(self, ids, strip_extraneous=False):
    """Maps subtoken ids back to the text; unknown ids decode to ''."""
    if strip_extraneous:
      ids = base.strip_ids(ids, list(range(self._num_reserved_ids or 0)))
    return invertible_decode(self._subtoken_ids_to_tokens(ids))

  def decode_list(self, ids):
    return [self._subtoken_string(i) for i in ids]

  @property
  def vocab_size(self):
    return len(self._all_subtoken_strings)

  @property
  def all_subtoken_strings(self):
    return tuple(self._all_subtoken_strings)

  def dump(self):
    """Prints `id : 'subtoken'` for the whole vocabulary."""
    pairs = sorted((i, s) for s, i in self._subtoken_string_to_id.items())
    print(', '.join(f"{i} : '{s}'" for i, s in pairs))

  # Encoding and decoding.

  def _tokens_to_subtoken_ids(self, tokens):
    ids = []
    for token in tokens:
      ids.extend(self._token_to_subtoken_ids(token))
    return ids

  def _token_to_subtoken_ids(self, token):
    cached = self._cache.get(token)
    if cached is not None:
      return cached
    ids = [self._subtoken_string_to_id[s] for s in
           self._split_escaped(_escape(token, self._alphabet))]
    if len(self._cache) >= _CACHE_LIMIT:
      self._cache.clear()
    self._cache[token] = ids
    return ids

  def _split_escaped(self, escaped):
    """Greedy longest-match split of an escaped token into subtokens."""
    pieces = []
    start = 0
    n = len(escaped)
    while start < n:
      for end in range(min(n, start + self._max_subtoken_len), start, -1):
        piece = escaped[start:end]
        if piece in self._subtoken_string_to_id:
          pieces.append(piece)
          start = end
          break
      else:
        raise UnencodableTextError(
            f'SubwordTextEncoder: no subtoken matches {escaped[start:]!r}; '
            'the vocabulary lacks a character of its own alphabet.')
    return pieces

  def _subtoken_string(self, i):
    if 0 <= i < self.vocab_size:
      return self._all_subtoken_strings[i]
    return ''

  def _subtoken_ids_to_tokens(self, ids):
    joined = ''.join(self._subtoken_string(i) for i in ids)
    tokens = []
    for piece in joined.split('_'):
      if piece:
        token = _unescape(piece + '_')
        if token:
          tokens.append(token)
    return tokens

  # Vocabulary set-up, loading and saving.

  def _init_subtokens_from_list(self, subtoken_strings, reserved_tokens=None):
    reserved_tokens = reserved_tokens or []
    self._all_subtoken_strings = list(reserved_tokens) + list(subtoken_strings)
    self._max_subtoken_len = max(len(s) for s in subtoken_strings)
    offset = len(reserved_tokens)
    self._subtoken_string_to_id = {
        s: i + offset for i, s in enumerate(subtoken_strings) if s}
    self._cache = {}

  def _init_alphabet_from_tokens(self, tokens):
    # Every character of every token, plus those escaping can produce, so
    # that any text can be encoded.
    self._alphabet = {c for token in tokens for c in token}
    self._alphabet |= self._escape_chars()

  def _escape_chars(self):
    """The characters escaping produces, always part of the alphabet."""
    return _ESCAPE_CHARS

  def _load_from_file(self, filename):
    try:
      lines = _read_lines(filename)
    except FileNotFoundError:
      # t2t's ValueError and words, with the component and the fix.
      raise ValueError(f'SubwordTextEncoder: File {filename} not found; give '
                       f'the path of a .subword vocabulary file.') from None
    except IsADirectoryError:
      raise ValueError(f'SubwordTextEncoder: {filename} is a directory; give '
                       f'the path of a .subword vocabulary file.') from None
    self._load_from_lines(lines, filename)

  def _load_from_file_object(self, f):
    """Loads the vocabulary from an open text file (Trax's method)."""
    lines = f.read().split('\n')
    if lines and not lines[-1]:
      lines.pop()
    self._load_from_lines(lines, getattr(f, 'name', repr(f)))

  def _load_from_lines(self, lines, filename):
    subtokens = []
    for line in lines:
      s = line.rstrip()
      # Vocabulary files may quote each subtoken with ' or ".
      if len(s) >= 2 and s[0] == s[-1] and s[0] in '\'"':
        s = s[1:-1]
      elif s in ("'", '"'):
        s = ''
      subtokens.append(s)
    if not any(subtokens):
      # Nothing could be encoded; t2t fails on max() of no lengths here.
      raise ValueError(
          f'SubwordTextEncoder: vocabulary file {filename} holds no '
          f'subtokens ({len(lines)} line(s), all empty); expected a .subword '
          f'file, one quoted subtoken per line (e.g. en_8k.subword).')
    self._init_subtokens_from_list(subtokens)
    self._init_alphabet_from_tokens(subtokens)

  def store_to_file(self, filename, add_single_quotes=True):
    """Writes the vocabulary, one (quoted) subtoken per line."""
    with open(filename, 'w', encoding='utf-8', newline='\n') as f:
      for s in self._all_subtoken_strings:
        f.write(f"'{s}'\n" if add_single_quotes else s + '\n')

  # Building a vocabulary from a corpus.

  @classmethod
  def build_from_generator(cls, generator, target_size,
                           max_subtoken_length=None, reserved_tokens=None):
    """Builds an encoder of about `target_size` subtokens from text."""
    counts = collections.Counter()
    for text in generator:
      counts.update(invertible_encode(base.native_to_unicode(text)))
    return cls.build_to_target_size(
        target_size, counts, 1, 1e3, max_subtoken_length=max_subtoken_length,
        reserved_tokens=reserved_tokens)

  @classmethod
  def build_to_target_size(cls, target_size, token_counts, min_val, max_val,
                           max_subtoken_length=None, reserved_tokens=None,
                           num_iterations=4):
    """Bisects the minimum subtoken count to get near `target_size`.

    A vocabulary within 1% of `target_size` is accepted at once; otherwise
    the closest one found by the bisection over `[min_val, max_val]` is
    returned.
    """
    if min_val > max_val:
      raise ValueError('Lower bound for the minimum token count is greater '
                       'than the upper bound.')
    if target_size < 1:
      raise ValueError('Target size must be positive.')
    reserved_tokens = (base.RESERVED_TOKENS if reserved_tokens is None
                       else reserved_tokens)

    def bisect(lo, hi):
      min_count = (lo + hi) // 2
      encoder = cls()
      encoder.build_from_token_counts(
          token_counts, min_count, num_iterations,
          max_subtoken_length=max_subtoken_length,
          reserved_tokens=reserved_tokens)
      size = encoder.vocab_size
      if abs(size - target_size) * 100 < target_size or lo >= hi or (
          min_count < 2):
        return encoder
      if size > target_size:
        other = bisect(min_count + 1, hi)
      else:
        other = bisect(lo, min_count - 1)
      if abs(other.vocab_size - target_size) < abs(size - target_size):
        return other
      return encoder

    return bisect(min_val, max_val)

  def build_from_token_counts(self, token_counts, min_count, num_iterations=4,
                              reserved_tokens=None, max_subtoken_length=None):
    """Learns the vocabulary from a `{token: count}` dict.

    Each iteration splits every token with the current vocabulary, counts
    each substring that starts at a split point, keeps those seen at least
    `min_count` times (longest first, discounting their prefixes) plus the
    whole alphabet, and orders them by count.

    Raises:
      ValueError: if `reserved_tokens` does not start with `RESERVED_TOKENS`.
    """
    if reserved_tokens is None:
      reserved_tokens = base.RESERVED_TOKENS
    elif any(a != b for a, b in zip(base.RESERVED_TOKENS, reserved_tokens)):
      raise ValueError('RESERVED_TOKENS must be a prefix of reserved_tokens.')
    reserved_tokens = list(reserved_tokens)
    self._init_alphabet_from_tokens(itertools.chain(
        token_counts, [base.native_to_unicode(t) for t in reserved_tokens]))
    self._init_subtokens_from_list(sorted(self._alphabet),
                                   reserved_tokens=reserved_tokens)
    min_count = max(min_count, 1)
    for iteration in range(num_iterations):
      counts = self._count_candidates(token_counts, max_subtoken_length)
      by_length = collections.defaultdict(list)
      for s, c in counts.items():
        if c >= min_count:
          by_length[len(s)].append(s)
      kept = []
      for length in sorted(by_length, reverse=True):
        for s in by_length[length]:
          c = counts[s]
          if c < min_count:
            continue
          if s not in self._alphabet:
            kept.append((c, s))
          # Occurrences inside a kept longer subtoken no longer count for
          # its prefixes.
          for k in range(1, length):
            counts[s[:k]] -= c
      kept.extend((counts.get(a, 0), a) for a in self._alphabet)
      kept.sort(reverse=True)
      strings = [s for _, s in kept]
      escaped_reserved = [_escape(base.native_to_unicode(t), self._alphabet)
                          for t in reserved_tokens]
      self._init_subtokens_from_list(escaped_reserved + strings)
      logging.info('Subword iteration %d: vocab_size = %d', iteration,
                   self.vocab_size)

  def _count_candidates(self, token_counts, max_subtoken_length):
    counts = collections.defaultdict(int)
    for token, count in token_counts.items():
      escaped = _escape(token, self._alphabet)
      start = 0
      for piece in self._split_escaped(escaped):
        stop = len(escaped) + 1
        if max_subtoken_length is not None:
          stop = min(stop, start + max_subtoken_length)
        for end in range(start + 1, stop):
          counts[escaped[start:end]] += count
        start += len(piece)
    return counts
