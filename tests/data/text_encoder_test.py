"""`text_encoder`: Trax's (tensor2tensor's) encoders on Trax's own files."""

import os

import numpy as np
import pytest

from tests import _fixtures
from tfnp_trax.data import text_encoder

VOCAB_DIR = str(_fixtures.path('trax_vocab'))
SUBWORD_FILE = os.path.join(VOCAB_DIR, 'en_8k.subword')
BERT_FILE = os.path.join(VOCAB_DIR, 'bert_uncased_vocab.txt')
RECORDED = _fixtures.json_file('trax_data', 'tokens.json')


@pytest.fixture(scope='module')
def subword():
  return text_encoder.SubwordTextEncoder(SUBWORD_FILE)


def test_reserved_tokens_and_unicode_helpers():
  assert text_encoder.RESERVED_TOKENS == ['<pad>', '<EOS>']
  assert (text_encoder.PAD_ID, text_encoder.EOS_ID) == (0, 1)
  assert text_encoder.RESERVED_TOKENS_BYTES == [b'<pad>', b'<EOS>']
  assert text_encoder.native_to_unicode(b'caf\xc3\xa9\xff') == 'café'
  with pytest.raises(UnicodeDecodeError):
    text_encoder.to_unicode(b'\xff')
  assert text_encoder.to_unicode_ignore_errors(b'a\xffb') == 'ab'
  assert text_encoder.strip_ids([3, 0, 1, 0, 1], [0, 1]) == [3]


def test_base_and_byte_encoders():
  base = text_encoder.TextEncoder()
  assert base.encode('1 2') == [3, 4]
  assert base.decode([0, 1, 5]) == '<pad> <EOS> 3'
  byte = text_encoder.ByteTextEncoder()
  assert byte.encode('hé') == [104 + 2, 195 + 2, 169 + 2]
  assert byte.vocab_size == 258
  assert byte.decode([1, 106, 107]) == '<EOS>hi'
  assert byte.decode([106, 107, 1, 0], strip_extraneous=True) == 'hi'


def test_invertible_word_split():
  # tensor2tensor's documented example: single spaces between words go.
  from tfnp_trax.data import _subword  # pylint: disable=g-import-not-at-top
  tokens = _subword.invertible_encode("Dude - that's so cool.")
  assert tokens == ['Dude', ' - ', 'that', "'", 's', 'so', 'cool', '.']
  assert _subword.invertible_decode(tokens) == "Dude - that's so cool."
  assert _subword.invertible_encode(' a') == [' ', 'a']


def test_subword_file_matches_trax(subword):
  record = RECORDED['subword']
  assert subword.vocab_size == record['vocab_size']
  assert subword.all_subtoken_strings[:4] == ('<pad>', '<EOS>', '_', ', _')
  for case in record['cases']:
    assert subword.encode(case['text']) == case['ids']
    assert subword.decode(case['ids']) == case['text']


def test_subword_escaping(subword):
  # '_' is escaped as '\u' and the token ends in '_'; a character missing
  # from the alphabet becomes '\<code point>;'.
  pieces = subword.decode_list(subword.encode_without_tokenizing('a_b'))
  assert ''.join(pieces) == 'a\\ub_'
  pieces = subword.decode_list(subword.encode_without_tokenizing('\U0001F600'))
  assert ''.join(pieces) == '\\128512;_'
  assert subword.decode(subword.encode_without_tokenizing('x\\y')) == 'x\\y'
  # Ids outside the vocabulary decode to nothing; EOS/PAD can be stripped.
  ids = subword.encode('Hello')
  assert subword.decode(ids + [10**6]) == 'Hello'
  assert subword.decode(ids + [1, 0], strip_extraneous=True) == 'Hello'


def test_subword_build_matches_trax(tmp_path):
  record = RECORDED['subword_build']
  enc = text_encoder.SubwordTextEncoder.build_from_generator(
      iter(record['corpus']), target_size=record['target_size'])
  assert list(enc.all_subtoken_strings) == record['subtokens']
  assert enc.encode('the cats sat on logs') == record['encoded']
  enc2 = text_encoder.SubwordTextEncoder()
  enc2.build_from_token_counts(record['token_counts'], record['min_count'],
                               record['num_iterations'])
  assert list(enc2.all_subtoken_strings) == record['subtokens_from_counts']
  path = str(tmp_path / 'built.subword')
  enc.store_to_file(path)
  reloaded = text_encoder.SubwordTextEncoder(path)
  assert reloaded.all_subtoken_strings == enc.all_subtoken_strings
  text = 'dogs, sat; the mat_2!'
  assert reloaded.decode(reloaded.encode(text)) == text


def test_subword_errors(tmp_path):
  with pytest.raises(ValueError, match='File .*nope.subword not found'):
    text_encoder.SubwordTextEncoder(str(tmp_path / 'nope.subword'))
  with pytest.raises(ValueError, match='Target size must be positive'):
    text_encoder.SubwordTextEncoder.build_to_target_size(0, {'a': 1}, 1, 2)
  with pytest.raises(ValueError, match='RESERVED_TOKENS must be a prefix'):
    text_encoder.SubwordTextEncoder().build_from_token_counts(
        {'a': 1}, 1, reserved_tokens=['<EOS>'])


def test_token_text_encoder(tmp_path):
  enc = text_encoder.TokenTextEncoder(None, vocab_list=['a', 'b', '<pad>'],
                                      replace_oov='a')
  assert enc.vocab_size == 4  # Reserved tokens first, '<pad>' not repeated.
  assert enc.encode(' b  zzz a ') == [3, 2, 2]
  assert enc.decode([3, 2, 99]) == 'b a ID_99'
  path = str(tmp_path / 'tokens.txt')
  enc.store_to_file(path)
  reloaded = text_encoder.TokenTextEncoder(path, reverse=True)
  assert reloaded.encode('a b') == [3, 2] and reloaded.decode([3, 2]) == 'a b'


def test_class_label_encoders():
  enc = text_encoder.ClassLabelEncoder(['neg', 'pos'])
  assert (enc.encode('pos'), enc.decode([1]), enc.vocab_size) == (1, 'pos', 2)
  assert enc.decode(np.array([[0]])) == 'neg'
  one_hot = text_encoder.OneHotClassLabelEncoder(['a', 'b', 'c'])
  assert one_hot.encode('c') == [0, 0, 1]
  assert one_hot.decode(np.array([0, 1, 0])) == 'b'
  with pytest.raises(ValueError, match='class_labels'):
    text_encoder.ClassLabelEncoder()


def test_bert_encoder_tokenizes_as_bert():
  enc = text_encoder.BertEncoder(BERT_FILE, do_lower_case=True)
  assert enc.tokenize('Héllo, WORLD!') == ['hello', ',', 'world', '!']
  # CJK ideographs become single tokens; unknown words become [UNK].
  assert enc.tokenize('東京') == ['東', '京']
  assert enc.tokenize('\U0001F600') == ['[UNK]']
  assert enc.tokenize('x' * 201) == ['[UNK]']
  cased = text_encoder.BertEncoder(BERT_FILE, do_lower_case=False)
  assert cased.tokenize('Hello') == ['[UNK]']  # Uncased vocabulary.
  for case in RECORDED['bert_lowercase']['cases']:
    assert enc.encode(case['text']) == case['ids']
    assert enc.decode(case['ids']) == case['detokenized']
  assert enc.vocab_size == 30522
  wordpiece = text_encoder.BertWordpieceTokenizer(
      {'un': 0, '##aff': 1, '##able': 2})
  assert wordpiece.tokenize('unaffable unable unbox') == [
      'un', '##aff', '##able', 'un', '##able', '[UNK]']


def test_real_and_image_encoders():
  real = text_encoder.RealEncoder()
  assert real.encode('1.5 -2') == [1.5, -2.0]
  assert real.decode([1.5, -2.0]) == '1.5 -2.0'
  image = text_encoder.ImageEncoder(height=2, width=3, channels=3)
  ids = list(range(18))
  path = image.decode(ids)
  try:
    np.testing.assert_array_equal(image.encode(path),
                                  np.arange(18).reshape(2, 3, 3))
  finally:
    os.remove(path)
  with pytest.raises(ValueError, match='do not fill an image of shape'):
    image.decode(ids[:5])


# -- Trax's module-level subword helpers (trax/data/text_encoder.py) ----------
def test_escape_and_unescape_token_by_hand():
  # Hand-worked: '_' -> '\u', '\' -> '\\', chars outside the alphabet and
  # '\n' -> '\<ord>;', then a closing '_'.
  alphabet = set('abcdefghijklmnopqrstuvwxyz .\n') | text_encoder._ESCAPE_CHARS
  text = 'Foo! Bar.\nunder_score back\\slash'
  escaped = '\\70;oo\\33; \\66;ar.\\10;under\\uscore back\\\\slash_'
  assert text_encoder._escape_token(text, alphabet) == escaped
  assert text_encoder._unescape_token(escaped) == text
  assert text_encoder._ESCAPE_CHARS == set('\\_u;0123456789')


def test_replaced_escape_chars_make_text_unencodable(monkeypatch):
  # Follows trax/data/text_encoder.py: the alphabet takes the module's
  # _ESCAPE_CHARS when it is built; without '8' and 'u', 'T' (escaped
  # '\84;') cannot be spelled, which Trax reports with an AssertionError.
  monkeypatch.setattr(text_encoder, '_ESCAPE_CHARS', set('\\_;13579'))
  counts = {w: 1 for w in 'the quick brown fox jumps over the lazy dog'.split()}
  encoder = text_encoder.SubwordTextEncoder.build_to_target_size(
      100, counts, 2, 10)
  with pytest.raises(AssertionError, match='no subtoken matches'):
    encoder.encode('This has UPPER CASE')
  with pytest.raises(ValueError):  # Also a ValueError, as before.
    encoder.encode('T')
  monkeypatch.undo()
  fresh = text_encoder.SubwordTextEncoder.build_to_target_size(
      100, counts, 2, 10)
  assert fresh.decode(fresh.encode('This has UPPER CASE')) == (
      'This has UPPER CASE')


def test_load_from_file_object_strips_either_quote():
  import io  # pylint: disable=g-import-not-at-top
  for text in ('the\nand\nof\n', '"the"\n"and"\n"of"\n', "'the'\n'and'\nof"):
    encoder = text_encoder.SubwordTextEncoder()
    encoder._load_from_file_object(io.StringIO(text))
    assert encoder.all_subtoken_strings == ('the', 'and', 'of')
    assert encoder.vocab_size == 3
