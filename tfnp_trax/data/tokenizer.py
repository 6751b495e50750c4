"""Trax's `trax.data.tokenizer`: the invertible word tokenizer and counts.

`encode` splits text at every boundary between word characters (Unicode
letters and numbers) and other characters, dropping a lone space between
two words; `decode` puts those spaces back, so `decode(encode(s)) == s`.
They are the tokenizer `SubwordTextEncoder` splits text with (one
implementation, in `tfnp_trax.data._subword`). `corpus_token_counts` and
`vocab_token_counts` count tokens of text files (any `tf.io.gfile` path or
wildcard pattern), as the vocabulary builders of Trax read them.

Example:
  >>> encode("Dude - that's so cool.")
  ['Dude', ' - ', 'that', "'", 's', 'so', 'cool', '.']
  >>> decode(['Dude', ' - ', 'that', "'", 's', 'so', 'cool', '.'])
  "Dude - that's so cool."
"""

import collections

from absl import logging
import tensorflow as tf

from tfnp_trax.data import _subword

__all__ = ['encode', 'decode', 'corpus_token_counts', 'vocab_token_counts']


def encode(text):
  """Splits a `str` into word and non-word tokens (a list of `str`)."""
  return _subword.invertible_encode(text)


def decode(tokens):
  """Joins tokens from `encode` back into the text they came from."""
  return _subword.invertible_decode(tokens)


def _read_filepattern(filepattern, max_lines=None, split_on_newlines=True):
  """Yields the stripped lines (or whole texts) of the files matching a glob.

  Args:
    filepattern: a path or wildcard pattern; files are read in sorted order.
    max_lines: stop after this many lines in all (None or 0: no limit).
    split_on_newlines: yield each line, stripped; else each file's text
      (cut after `max_lines` lines when given).

  Yields:
    Lines or file contents, as `str`.

  Nothing matching yields nothing, as in Trax (the counts come out empty);
  a warning names the pattern.
  """
  filenames = sorted(tf.io.gfile.glob(filepattern))
  if not filenames:
    logging.warning('tokenizer: no file matches %r, so there is nothing to '
                    'count; check the path or wildcard pattern.', filepattern)
  lines_read = 0
  for filename in filenames:
    with tf.io.gfile.GFile(filename) as f:
      if split_on_newlines:
        for line in f:
          yield line.strip()
          lines_read += 1
          if max_lines and lines_read >= max_lines:
            return
      elif not max_lines:
        yield f.read()
      else:
        doc = []
        for line in f:
          doc.append(line)
          lines_read += 1
          if lines_read >= max_lines:
            yield ''.join(doc)
            return
        yield ''.join(doc)


def corpus_token_counts(text_filepattern, corpus_max_lines,
                        split_on_newlines=True):
  """Counts the `encode` tokens of a corpus.

  Args:
    text_filepattern: a path or wildcard pattern of text files.
    corpus_max_lines: read at most this many lines in all (0: no limit).
    split_on_newlines: tokenize each stripped line on its own; else each
      file's whole text (newlines then become part of tokens).

  Returns:
    A `collections.Counter` token -> count.
  """
  counts = collections.Counter()
  for doc in _read_filepattern(text_filepattern, max_lines=corpus_max_lines,
                               split_on_newlines=split_on_newlines):
    counts.update(encode(doc))
  return counts


def vocab_token_counts(text_filepattern, max_lines):
  """Reads `token,count` lines (a two-column CSV) into a dict.

  Lines without a comma are skipped with a warning; the count is what
  follows the last comma, so tokens may contain commas.

  Args:
    text_filepattern: a path or wildcard pattern of CSV files.
    max_lines: read at most this many lines in all (0: no limit).

  Returns:
    A dict token -> int count.
  """
  counts = {}
  for i, line in enumerate(_read_filepattern(text_filepattern,
                                             max_lines=max_lines)):
    if ',' not in line:
      logging.warning('tokenizer: skipped malformed vocab line #%d %r '
                      '(expected "token,count").', i, line)
      continue
    token, count = line.rsplit(',', 1)
    counts[token] = int(count)
  return counts
