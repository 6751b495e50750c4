"""`SubwordTextEncoder.encode` as TensorFlow ops, vectorized over a block.

Gives exactly the ids of the Python encoder (`_subword.py`, whose docstring
lists the three steps), without a `tf.py_function`:

1. The texts are decoded to code points once (a byte pass only, when the
   block is ASCII); one lookup table over all code points says which are
   Unicode letters/numbers and how each is escaped. Tokens start where the
   row starts or the word-char test flips; a lone space token that is neither
   first nor last in its text is dropped, as in `invertible_encode`.
2. Each token is cut out of the joined texts as a string and deduplicated
   (`tf.unique`); most tokens of English text are one whole vocabulary
   entry, found in one hash lookup of the raw token (a table keyed by the
   unescaped form of each vocabulary entry that ends in `_`).
3. Only the distinct tokens that miss are escaped (vectorized over code
   points) and cut greedily into the longest subtokens. A `tf.while_loop`
   advances all of them at once, one subtoken per step, looking up the
   prefixes of what is left (no longer than the longest entry starting with
   the same character). The few tokens unfinished after `_STEPS` steps
   (runs of `#` or `-` in code take dozens) get their longest match at
   every offset at once, and pointer jumping finds their chains in
   log2(subtokens) rounds. No loop runs once per token or per subtoken.

The tables are built once per encoder (and kept while it lives): encoding
with an encoder whose vocabulary was changed afterwards uses the old one.
"""

import functools
import typing
import unicodedata
import weakref

import numpy as np

from tfnp_trax.data import _subword

__all__ = ['subword_encoders']

_N_CODE_POINTS = 0x110000
_INVALID = 0xD800  # A surrogate: never decoded from valid UTF-8.
_INVALID_UTF8 = ('Tokenize: a text is not valid UTF-8, so it has no characters '
                 'to tokenize; decode or clean the text first.')
# Escape classes (bits 1-2 of the code point table; bit 0 is "word char").
_PLAIN, _BACKSLASH, _UNDERSCORE, _NUMERIC, _TRAILING = 0, 1, 2, 3, 4
_POW10 = [10**i for i in range(7)]  # Code points have at most 7 digits.
# Greedy steps taken for all tokens at once, before the per-offset matches.
_STEPS = 6


@functools.lru_cache(maxsize=None)
def _word_chars():
  # The rule of `_subword._is_word_char`, over every code point, from the
  # same `unicodedata` the Python path uses.
  return np.fromiter(
      (unicodedata.category(chr(c))[0] in 'LN' for c in range(_N_CODE_POINTS)),
      dtype=np.uint8, count=_N_CODE_POINTS)


def _code_point_table(alphabet):
  """uint8 per code point: bit 0 word char, bits 1-2 its escape class."""
  escape = np.full(_N_CODE_POINTS, _NUMERIC, np.uint8)
  escape[[ord(c) for c in alphabet]] = _PLAIN
  escape[ord('\n')] = _NUMERIC  # Escaped even when in the alphabet.
  escape[ord('\\')] = _BACKSLASH
  escape[ord('_')] = _UNDERSCORE
  return (escape << 1) | _word_chars()


def _whole_token_entries(string_to_id, alphabet):
  """(raw token, id) for each entry that is one whole escaped token.

  An entry `s` is the escaped form of exactly one token `t` when `s` ends in
  `_` and escaping its unescaped form gives `s` back; then `t` encodes to
  the single id of `s`.
  """
  keys, ids = [], []
  for s, i in string_to_id.items():
    if not s.endswith('_'):
      continue
    # pylint: disable=protected-access
    token = _subword._unescape(s)
    if not token or _subword._escape(token, alphabet) != s:
      continue
    # pylint: enable=protected-access
    if _encodes(token):
      keys.append(token.encode('utf-8'))
      ids.append(i)
  return keys, ids


def _encodes(s):
  try:
    s.encode('utf-8')
  except UnicodeEncodeError:  # A lone surrogate, never in valid text.
    return False
  return True


class _Tables:
  """The lookup tables for one encoder, built once, outside any trace."""

  def __init__(self, encoder):
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    # pylint: disable=protected-access
    alphabet = encoder._alphabet
    # Entries a UTF-8 text can hold (a lone surrogate never matches).
    string_to_id = {s: i for s, i in encoder._subtoken_string_to_id.items()
                    if _encodes(s)}
    # pylint: enable=protected-access
    missing = set('\\u;0123456789') - set(alphabet)
    if missing or not string_to_id:
      raise ValueError(
          'Tokenize: the subword encoder has no vocabulary (its alphabet '
          f'lacks {sorted(missing)}); load it from a .subword file first.')
    whole_keys, whole_ids = _whole_token_entries(string_to_id, alphabet)
    longest = {}
    for entry in string_to_id:
      longest[ord(entry[0])] = max(longest.get(ord(entry[0]), 0), len(entry))
    with tf.init_scope():
      self.code_points = tf.constant(_code_point_table(alphabet))
      self.whole = tf.lookup.StaticHashTable(
          tf.lookup.KeyValueTensorInitializer(
              tf.constant(whole_keys, tf.string),
              tf.constant(whole_ids, tf.int64)), -1)
      self.longest_from = tf.lookup.StaticHashTable(
          tf.lookup.KeyValueTensorInitializer(
              tf.constant(list(longest), tf.int32),
              tf.constant(list(longest.values()), tf.int32)), 0)
      self.subtokens = tf.lookup.StaticHashTable(
          tf.lookup.KeyValueTensorInitializer(
              tf.constant([s.encode('utf-8') for s in string_to_id],
                          tf.string),
              tf.constant(list(string_to_id.values()), tf.int64)), -1)


_TABLES = weakref.WeakKeyDictionary()


def _tables(encoder):
  if encoder not in _TABLES:
    _TABLES[encoder] = _Tables(encoder)
  return _TABLES[encoder]


def _decode(texts):
  """Code points of `texts` ([k] strings), flat, with where each one is.

  Returns:
    (joined, code_points, byte_pos, row_splits): the texts joined in one
    string; int32 `[n]` code points; int64 `[n + 1]` byte offsets in
    `joined` of each code point and of the end; int64 `[k + 1]` code point
    index where each text starts, and the end.
  """
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  joined = tf.strings.reduce_join(texts)
  raw = tf.io.decode_raw(joined, tf.uint8)
  n_bytes = tf.size(raw, out_type=tf.int64)

  def ascii_text():
    splits = tf.cumsum(tf.concat(
        [[0], tf.cast(tf.strings.length(texts), tf.int64)], 0))
    return tf.cast(raw, tf.int32), tf.range(n_bytes + 1), splits

  def unicode_text():
    # Each text is checked alone (two invalid halves may join into a valid
    # character); once all are valid, decoding them joined gives the same
    # code points, with their offsets in `joined`. An invalid byte decodes
    # to a surrogate, which no valid text holds.
    row_splits, chars = tf.raw_ops.UnicodeDecode(
        input=texts, input_encoding='UTF-8', errors='replace',
        replacement_char=_INVALID, Tsplits=tf.int64)
    check = tf.debugging.Assert(tf.reduce_all(chars != _INVALID),
                                [_INVALID_UTF8])
    with tf.control_dependencies([check]):
      _, code_points, byte_pos = tf.raw_ops.UnicodeDecodeWithOffsets(
          input=joined[None], input_encoding='UTF-8', Tsplits=tf.int64)
    return code_points, tf.concat([byte_pos, [n_bytes]], 0), row_splits

  code_points, byte_pos, row_splits = tf.cond(
      tf.reduce_all(raw < 128), ascii_text, unicode_text)
  return joined, code_points, byte_pos, row_splits


def _tokens(tables, texts):
  """The tokens of `invertible_encode`, as strings, and their text index."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  joined, code_points, byte_pos, row_splits = _decode(texts)
  n = tf.size(code_points, out_type=tf.int64)
  word = tf.bitwise.bitwise_and(tf.gather(tables.code_points, code_points),
                                tf.constant(1, tf.uint8))
  # Where a text starts (an empty text marks where the next one starts, or
  # the end, which is cut off).
  new_row = _counts(row_splits, n) > 0
  # The first code point starts a token whatever its class (sentinel 2).
  flips = word != tf.concat([tf.constant([2], tf.uint8), word[:-1]], 0)
  starts = _where(new_row | flips)
  ends = tf.concat([starts[1:], [n]], 0)
  first = tf.gather(new_row, starts)
  last = tf.concat([tf.gather(new_row, starts[1:]), [True]], 0)
  # A lone space between tokens is implied by the decoder (a lone space
  # first or last in the text is kept, as in `invertible_encode`).
  lone_space = ((ends - starts == 1) & (tf.gather(code_points, starts) == 32)
                & ~first & ~last)
  kept = _where(~lone_space)
  starts = tf.gather(starts, kept)
  begin = tf.gather(byte_pos, starts)
  strings = tf.strings.substr(
      joined, begin, tf.gather(byte_pos, tf.gather(ends, kept)) - begin)
  # Empty texts repeat a split; the last text starting at or before a
  # token's start is the one holding it.
  rows = tf.raw_ops.UpperBound(sorted_inputs=row_splits[None],
                               values=starts[None], out_type=tf.int64)
  return strings, rows[0] - 1


class _Escaped(typing.NamedTuple):
  """Escaped tokens, joined: `text` and where each code point of it is."""
  text: typing.Any  # Scalar tf.string: all escaped tokens, one after another.
  code_points: typing.Any  # int32 [n]: its code points.
  byte_pos: typing.Any  # int64 [n + 1]: byte offset of each, and the end.
  row_splits: typing.Any  # int64 [m + 1]: code point where each token starts.


def _escape(tables, tokens):
  """`_subword._escape` of each of `tokens` ([m] strings), as `_Escaped`."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  # The `_` every escaped token ends with is decoded with it, then marked.
  splits, c = tf.raw_ops.UnicodeDecode(
      input=tf.strings.join([tokens, '_']), input_encoding='UTF-8',
      Tsplits=tf.int64)
  kind = tf.cast(tf.bitwise.right_shift(tf.gather(tables.code_points, c),
                                        tf.constant(1, tf.uint8)), tf.int32)
  trailing = splits[1:] - 1
  kind = tf.tensor_scatter_nd_update(
      kind, trailing[:, None], tf.fill(tf.shape(trailing), _TRAILING))
  digits = 1 + tf.reduce_sum(
      tf.cast(c[:, None] >= tf.constant(_POW10[1:])[None, :], tf.int32), 1)
  width = tf.where(kind == _NUMERIC, digits + 2,
                   tf.where((kind == _BACKSLASH) | (kind == _UNDERSCORE), 2, 1))
  # One output slot per escaped character: which input it comes from (src)
  # and its place in that input's escape (j).
  src = _repeat_range(width)
  slots = tf.cumsum(width, exclusive=True)
  j = tf.range(tf.size(src)) - tf.gather(slots, src)
  c, kind, width = (tf.gather(c, src), tf.gather(kind, src),
                    tf.gather(width, src))
  power = tf.gather(_POW10, tf.clip_by_value(width - 2 - j, 0, 6))
  numeric = tf.where(j == 0, ord('\\'), tf.where(
      j == width - 1, ord(';'), c // power % 10 + ord('0')))
  out = tf.where(kind == _PLAIN, c, tf.where(
      kind == _TRAILING, ord('_'), tf.where(
          kind == _NUMERIC, numeric, tf.where(
              (j == 0) | (kind == _BACKSLASH), ord('\\'), ord('u')))))
  text = tf.strings.unicode_encode(out, 'UTF-8')
  # Where each code point is in `text`, in bytes.
  _, _, byte_pos = tf.raw_ops.UnicodeDecodeWithOffsets(
      input=text[None], input_encoding='UTF-8', Tsplits=tf.int64)
  return _Escaped(
      text=text, code_points=out,
      byte_pos=tf.concat([byte_pos, _byte_length(text)], 0),
      row_splits=tf.cast(tf.gather(tf.concat([slots, [tf.size(out)]], 0),
                                   splits), tf.int64))


def _byte_length(text):
  """`[1]` int64: the length of the scalar string `text`, in bytes."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  return tf.cast(tf.strings.length(text), tf.int64)[None]


def _longest_matches(tables, escaped, at, end):
  """The longest vocabulary entry starting at each of `at`.

  Args:
    tables: the encoder's `_Tables`.
    escaped: `_Escaped` tokens.
    at, end: int64 `[q]` queries: a code point of `escaped` and the end of
      its token.

  Returns:
    int64 `[q]` lengths and ids of the matches; 0 and -1 where none matches.
  """
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  # No entry is longer than the longest one starting with the same
  # character: that bounds the prefixes to look up.
  bound = tf.minimum(end - at, tf.cast(tables.longest_from.lookup(
      tf.gather(escaped.code_points, at)), tf.int64))
  # Prefix lengths 1..bound for each query, flat, query by query.
  row = _repeat_range(bound)
  first = tf.cumsum(bound, exclusive=True)
  lens = tf.range(tf.size(row, out_type=tf.int64)) - tf.gather(first, row) + 1
  begin = tf.gather(at, row)
  byte_begin = tf.gather(escaped.byte_pos, begin)
  ids = tables.subtokens.lookup(tf.strings.substr(
      escaped.text, byte_begin,
      tf.gather(escaped.byte_pos, begin + lens) - byte_begin))
  best = tf.math.unsorted_segment_max(tf.where(ids >= 0, lens, 0), row,
                                      tf.size(at))
  # Query r's prefixes start at `first[r]` in `ids`; its match is the
  # best-th. A query without one points past the end, at the -1.
  pick = tf.where(best > 0, first + best - 1, tf.size(ids, out_type=tf.int64))
  return best, tf.gather(tf.concat([ids, [-1]], 0), pick)


def _counts(index, n):
  """How often each of `0..n-1` is in `index` (int64; `n` itself is dropped)."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  return tf.math.unsorted_segment_sum(tf.ones_like(index), index, n + 1)[:-1]


def _repeat_range(counts):
  """`i` repeated `counts[i]` times, for every i (fewer ops than tf.repeat)."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  # A mark where each run starts (a zero-length run shares its mark with the
  # next one, so the count of marks so far names the right run).
  marks = _counts(tf.cumsum(counts, exclusive=True), tf.reduce_sum(counts))
  return tf.cumsum(marks) - 1


def _where(mask):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  return tf.reshape(tf.where(mask), [-1])


def _greedy_split(tables, escaped):
  """Greedy longest-match ids of `_Escaped` tokens.

  The first `_STEPS` steps take one subtoken off every unfinished token at
  once. The few tokens left (long runs of punctuation and the like, which
  may take dozens of subtokens) get the longest match at every code point
  left instead, and pointer jumping finds their chains in a logarithmic
  number of rounds.

  Few ops matter more than little work here: inside tf.data each op costs
  microseconds however small its input, and every node of the graph adds
  to the time the first block waits for it to be instantiated. So no loop
  runs once per subtoken, and the ops are plain ones rather than ragged or
  masking helpers that expand to many nodes.

  Returns:
    `(ids, tokens)`: int64 ids, token by token, each token's in order, and
    the index of the token each belongs to.
  """
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  m = tf.size(escaped.row_splits, out_type=tf.int64) - 1
  ends = escaped.row_splits[1:]

  def step(i, token, at, token_log, id_log):
    end = tf.gather(ends, token)
    best, ids = _longest_matches(tables, escaped, at, end)
    going = _where((best > 0) & (at + best < end))
    return (i + 1, tf.gather(token, going), tf.gather(at + best, going),
            token_log.write(i, token), id_log.write(i, ids))

  # Each log starts with an empty entry, so that it is never empty (eager
  # TensorArrays cannot concatenate nothing).
  log = lambda: tf.TensorArray(
      tf.int64, size=0, dynamic_size=True, infer_shape=False,
      element_shape=[None]).write(0, tf.zeros([0], tf.int64))
  some = tf.TensorShape([None])
  _, token, at, token_log, id_log = tf.while_loop(
      lambda i, token, *_: (i <= _STEPS) & (tf.size(token) > 0), step,
      (1, tf.range(m), escaped.row_splits[:-1], log(), log()),
      shape_invariants=(tf.TensorShape([]), some, some, tf.TensorShape(None),
                        tf.TensorShape(None)))

  # The rest: the match at every code point left of the unfinished tokens,
  # numbered run after run (a token's run starts at `base`).
  left = tf.gather(ends, token) - at
  base = tf.cumsum(left, exclusive=True)
  run = _repeat_range(left)
  n = tf.size(run, out_type=tf.int64)
  here = tf.range(n)
  best, ids = _longest_matches(
      tables, escaped, tf.gather(at - base, run) + here,
      tf.gather(tf.gather(ends, token), run))
  # Each match leads to the next one, or (at its token's end, or where
  # nothing matches) to the sink `n`. The code points on a token's chain
  # are those reached from its start: marking what each mark reaches in
  # 1, 2, 4, ... jumps finds them all in log2(chain length) rounds.
  after = here + best
  jump = tf.concat([tf.where((best > 0) & (after < tf.gather(base + left, run)),
                             after, n), [n]], 0)
  on = _counts(base, n + 1)

  def reach(jump, on):
    on = tf.maximum(on, tf.math.unsorted_segment_max(on, jump, n + 1))
    return tf.gather(jump, jump), on

  _, on = tf.while_loop(lambda jump, on: tf.reduce_any(jump < n), reach,
                        (jump, on))
  chained = _where(on[:-1] > 0)
  tokens = tf.concat(
      [token_log.concat(), tf.gather(token, tf.gather(run, chained))], 0)
  ids = tf.concat([id_log.concat(), tf.gather(ids, chained)], 0)
  bad = tf.gather(tokens, _where(ids < 0))[:3]
  starts = tf.gather(escaped.byte_pos, escaped.row_splits)
  check = tf.debugging.Assert(tf.size(bad) == 0, [
      'SubwordTextEncoder: no subtoken matches part of',
      tf.strings.substr(escaped.text, tf.gather(starts, bad),
                        tf.gather(starts, bad + 1) - tf.gather(starts, bad)),
      '; the vocabulary lacks a character of its own alphabet.'])
  with tf.control_dependencies([check]):
    # The log is step-major; a stable sort by token keeps each token's
    # subtokens in order.
    order = tf.argsort(tokens, stable=True)
  return tf.gather(ids, order), tf.gather(tokens, order)


def _encode_block(tables, texts):
  """int64 ids of all `texts` ([k] strings), flat, and ids per text."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  tokens, token_rows = _tokens(tables, texts)
  distinct, which = tf.unique(tokens, out_idx=tf.int64)
  whole = tables.whole.lookup(distinct)
  hits = _where(whole >= 0)
  misses = _where(whole < 0)
  split_ids, split_of = _greedy_split(
      tables, _escape(tables, tf.gather(distinct, misses)))
  # The ids of each distinct token, laid out one token after another: a
  # hit has one, a miss those of its split.
  split_counts = _counts(split_of, tf.size(misses, out_type=tf.int64))
  counts = tf.tensor_scatter_nd_update(tf.ones_like(whole), misses[:, None],
                                       split_counts)
  offsets = tf.cumsum(counts, exclusive=True)
  within = (tf.range(tf.size(split_of, out_type=tf.int64))
            - tf.gather(tf.cumsum(split_counts, exclusive=True), split_of))
  laid_out = tf.scatter_nd(
      tf.concat([tf.gather(offsets, hits),
                 tf.gather(offsets, tf.gather(misses, split_of)) + within],
                0)[:, None],
      tf.concat([tf.gather(whole, hits), split_ids], 0),
      tf.reduce_sum(counts)[None])
  # Then each token's ids, in token order.
  token_counts = tf.gather(counts, which)
  slot = _repeat_range(token_counts)
  ids = tf.gather(laid_out, tf.gather(tf.gather(offsets, which), slot)
                  + tf.range(tf.size(slot, out_type=tf.int64))
                  - tf.gather(tf.cumsum(token_counts, exclusive=True), slot))
  lengths = tf.math.unsorted_segment_sum(token_counts, token_rows,
                                         tf.size(texts, out_type=tf.int64))
  return ids, lengths


def subword_encoders(encoder, n_reserved_ids, storage_dtype):
  """`encoder.encode` in TensorFlow ops: one string, and a block of strings.

  Args:
    encoder: a loaded `SubwordTextEncoder`.
    n_reserved_ids: offset added to every id.
    storage_dtype: dtype of the block ids (e.g. uint16 where they fit).

  Returns:
    `(one, block)`: `one` maps a scalar tf.string to its int64 `[None]` ids;
    `block` maps `[k]` strings to a `[k, None]` RaggedTensor of
    `storage_dtype` ids. Invalid UTF-8 fails, as `encode` does.
  """
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  tables = _tables(encoder)

  def one(t):
    ids, _ = _encode_block(tables, tf.reshape(t, [1]))
    return ids + n_reserved_ids

  def block(texts):
    ids, lengths = _encode_block(tables, texts)
    return tf.RaggedTensor.from_row_lengths(
        tf.cast(ids + n_reserved_ids, storage_dtype), lengths, validate=False)
  return one, block
