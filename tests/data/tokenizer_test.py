"""`tokenizer`: Trax's invertible tokenizer and token counts.

Follows trax/data/tokenizer.py (encode, decode, corpus_token_counts,
vocab_token_counts); expected values are worked out by hand.
"""

import random

from tfnp_trax.data import tokenizer


def test_encode_splits_at_word_boundaries():
  assert tokenizer.encode("Dude - that's so cool.") == [
      'Dude', ' - ', 'that', "'", 's', 'so', 'cool', '.']
  assert tokenizer.encode('Łukasz est né en 1981.') == [
      'Łukasz', 'est', 'né', 'en', '1981', '.']
  assert tokenizer.encode(' Spaces at the ends ') == [
      ' ', 'Spaces', 'at', 'the', 'ends', ' ']
  assert tokenizer.encode('802.11b') == ['802', '.', '11b']
  assert tokenizer.encode('two. \nlines') == ['two', '. \n', 'lines']
  assert tokenizer.encode('') == []


def test_decode_restores_single_spaces_and_inverts_encode():
  assert tokenizer.decode(['Dude', ' - ', 'that', "'", 's', 'so', 'cool',
                           '.']) == "Dude - that's so cool."
  rng = random.Random(0)
  alphabet = 'ab .,\n\t-1é'
  for _ in range(200):
    s = ''.join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))
    assert tokenizer.decode(tokenizer.encode(s)) == s


def _corpus(tmp_path):
  (tmp_path / 'corpus-1.txt').write_text('a b a\n. c\n', encoding='utf-8')
  (tmp_path / 'corpus-2.txt').write_text('c a\n', encoding='utf-8')
  return str(tmp_path / 'corpus-*.txt')


def test_corpus_token_counts_by_lines_and_whole_files(tmp_path):
  pattern = _corpus(tmp_path)
  assert tokenizer.corpus_token_counts(pattern, 0) == {
      'a': 3, 'b': 1, '. ': 1, 'c': 2}
  # Two lines only: 'a b a' and '. c'.
  assert tokenizer.corpus_token_counts(pattern, 2) == {
      'a': 2, 'b': 1, '. ': 1, 'c': 1}
  # Whole files: newlines stay in the tokens ('\n. ' and the final '\n').
  whole = tokenizer.corpus_token_counts(pattern, 0, split_on_newlines=False)
  assert whole == {'a': 3, 'b': 1, '\n. ': 1, 'c': 2, '\n': 2}
  # Whole files cut after two lines in all: only the first file's text.
  assert tokenizer.corpus_token_counts(pattern, 2, split_on_newlines=False) == {
      'a': 2, 'b': 1, '\n. ': 1, 'c': 1, '\n': 1}


def test_vocab_token_counts_skips_malformed_lines(tmp_path):
  path = tmp_path / 'vocab.csv'
  path.write_text('the,10\nno comma\na,b,3\nof,2\n', encoding='utf-8')
  assert tokenizer.vocab_token_counts(str(path), 0) == {
      'the': 10, 'a,b': 3, 'of': 2}
  assert tokenizer.vocab_token_counts(str(path), 2) == {'the': 10}


def test_no_matching_file_counts_nothing(tmp_path):
  assert tokenizer.corpus_token_counts(str(tmp_path / 'none-*.txt'), 0) == {}
