"""Subword tokenizing in TensorFlow ops (`_tf_subword`) against Python.

The reference is the Python `SubwordTextEncoder.encode` (`_subword.py`),
itself checked against ids recorded from real Trax in text_encoder_test.py
and tf_inputs_test.py; here the TensorFlow ops must give exactly its ids.
"""

import glob
import os

import numpy as np
import pytest
import tensorflow as tf

from tests import _fixtures
from tests.data import _recorded
from tfnp_trax import data
from tfnp_trax.data import _tf_path
from tfnp_trax.data import _tf_subword
from tfnp_trax.data import pylm
from tfnp_trax.data import text_encoder

VOCAB_DIR = str(_fixtures.path('trax_vocab'))
VOCAB_FILES = sorted(glob.glob(os.path.join(VOCAB_DIR, '*.subword')))

EDGE_CASES = [
    '', ' ', '  ', 'a', 'a b', 'a  b', ' a', 'a ', ' a b ', 'a b c d',
    'Hello, world.', 'Dude - that\'s so cool.', '_', '__init__(self)',
    '\\', 'a\\b\\\\c', '\n', 'a\nb', '\n\n  x', '\t', 'x\u00a0y',
    'é', 'naïve café', 'Ünïcödé wörds', '中文字符 和 日本語', '😀', 'a😀b',
    '١٢٣ ٤', 'Ⅻ and ½', 'e\u0301', '\u2603 snow', '\U0010ffff', '\x00',
    '9' * 50, '#' * 100, '-' * 79 + '\n', 'a' * 200, '=' * 30 + ' x_y ' * 9,
    'def f(x):\n    return x_1 ** 2  # done\n',
]
# Characters the fuzz mixes, by kind; plus random code points.
POOLS = ['abcXYZ019', ' ', '.,;:!?()[]{}"\'-=+*/#', '_\\', '\n\t',
         'éèàüößçñÅØ', '中文字日本語한국어', '😀🚀👍🏽', '0123456789']


def _fuzz_texts(n, seed=0):
  rng = np.random.default_rng(seed)
  texts = []
  for _ in range(n):
    chars = []
    for _ in range(rng.integers(0, 40)):
      if rng.random() < 0.05:
        code = int(rng.integers(0, 0x110000))
        if not 0xD800 <= code < 0xE000:  # Surrogates are not text.
          chars.append(chr(code))
      else:
        pool = POOLS[rng.integers(len(POOLS))]
        chars.append(pool[rng.integers(len(pool))] * int(rng.integers(1, 4)))
    texts.append(''.join(chars))
  return texts


def _corpus_texts(n):
  train, _ = pylm.load_corpus(max_bytes=300_000)
  paragraphs = [p.decode('utf-8') for p in train.tobytes().split(b'\n\n')
                if p.strip()]
  return paragraphs[:n]


@pytest.fixture(scope='module', params=VOCAB_FILES, ids=os.path.basename)
def encoder(request):
  return text_encoder.SubwordTextEncoder(request.param)


def _python_ids(encoder, texts, n_reserved_ids):
  return [[i + n_reserved_ids for i in encoder.encode(t)] for t in texts]


def test_the_vocabulary_folder_has_a_subword_file():
  assert VOCAB_FILES, VOCAB_DIR


@pytest.mark.parametrize('n_reserved_ids', [0, 2])
def test_block_gives_the_python_ids(encoder, n_reserved_ids):
  texts = EDGE_CASES + _fuzz_texts(300) + _corpus_texts(300)
  _, block = _tf_subword.subword_encoders(encoder, n_reserved_ids, tf.uint16)
  encode = tf.function(block, input_signature=[
      tf.TensorSpec([None], tf.string)])
  got = encode(tf.constant([t.encode('utf-8') for t in texts]))
  assert got.dtype == tf.uint16 and got.shape[0] == len(texts)
  want = _python_ids(encoder, texts, n_reserved_ids)
  for text, ids, want_ids in zip(texts, got.to_list(), want):
    assert ids == want_ids, text
  # Eager, an int64 store and a block of one text give the same.
  _, block64 = _tf_subword.subword_encoders(encoder, n_reserved_ids,
                                            tf.int64)
  eager = block64(tf.constant([t.encode('utf-8') for t in EDGE_CASES]))
  assert eager.dtype == tf.int64
  assert eager.to_list() == want[:len(EDGE_CASES)]
  assert encode(tf.constant(['a b'])).to_list() == want[4:5]
  assert encode(tf.zeros([0], tf.string)).shape[0] == 0


@pytest.mark.parametrize('n_reserved_ids', [0, 2])
def test_one_gives_the_python_ids_eagerly_and_in_tf_function(
    encoder, n_reserved_ids):
  one, _ = _tf_subword.subword_encoders(encoder, n_reserved_ids, tf.uint16)
  traced = tf.function(one, input_signature=[tf.TensorSpec([], tf.string)])
  texts = EDGE_CASES + _fuzz_texts(20, seed=1)
  for text, want in zip(texts, _python_ids(encoder, texts, n_reserved_ids)):
    for fn in (one, traced):
      ids = fn(tf.constant(text.encode('utf-8')))
      assert ids.dtype == tf.int64 and ids.shape.rank == 1
      assert ids.numpy().tolist() == want, (text, fn)


def test_block_runs_no_python(encoder):
  _, block = _tf_subword.subword_encoders(encoder, 0, tf.uint16)
  graph = tf.function(block).get_concrete_function(
      tf.TensorSpec([None], tf.string)).graph.as_graph_def()
  ops = {node.op for node in graph.node}
  for function in graph.library.function:
    ops |= {node.op for node in function.node_def}
  assert 'While' in ops or 'StatelessWhile' in ops  # The library is read.
  assert not ops & {'EagerPyFunc', 'PyFunc', 'PyFuncStateless'}


@pytest.mark.parametrize('texts', [
    [b'fine', b'bad \xff byte'],
    # Each half alone is invalid, as Python decodes them; joined they are
    # a valid 'é', which must not hide the error.
    [b'\xc3', b'\xa9'],
])
def test_invalid_utf8_fails_as_in_python(encoder, texts):
  with pytest.raises(UnicodeDecodeError):
    encoder.encode(texts[-1].decode('utf-8'))
  one, block = _tf_subword.subword_encoders(encoder, 0, tf.uint16)
  with pytest.raises(tf.errors.InvalidArgumentError,
                     match='Tokenize: a text is not valid UTF-8'):
    block(tf.constant(texts))
  with pytest.raises(tf.errors.InvalidArgumentError,
                     match='Tokenize: a text is not valid UTF-8'):
    one(tf.constant(texts[-1]))


def test_a_vocabulary_missing_a_character_fails_as_in_python(tmp_path):
  # 'a' is in the alphabet (from 'ab_') but no entry starts 'a' alone.
  path = tmp_path / 'tiny.subword'
  path.write_text("'ab_'\n'b'\n'_'\n", encoding='utf-8')
  encoder = text_encoder.SubwordTextEncoder(str(path))
  assert encoder.encode('ab') == [0]
  with pytest.raises(ValueError, match='no subtoken matches'):
    encoder.encode('a')
  _, block = _tf_subword.subword_encoders(encoder, 0, tf.uint16)
  assert block(tf.constant(['ab', 'b'])).to_list() == [[0], [1, 2]]
  for texts in (['ab', 'a'], ['b' * 20 + 'a']):  # Fails early, and late.
    with pytest.raises(ValueError, match='no subtoken matches'):
      encoder.encode(texts[-1])
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r'(?s)no subtoken matches part of.*a_'):
      block(tf.constant(texts))


def test_an_encoder_without_vocabulary_is_refused():
  with pytest.raises(ValueError, match='subword encoder has no vocabulary'):
    _tf_subword.subword_encoders(text_encoder.SubwordTextEncoder(), 0,
                                 tf.uint16)


def _serial_batches(texts, steps, on_dataset):
  if on_dataset:
    source = lambda _: tf.data.Dataset.from_tensor_slices(texts)
  else:
    source = lambda _: iter(texts)
  out = data.Serial(source, *steps)()
  return [tuple(b) for b in (data.to_stream(out) if on_dataset else out)]


def test_lm_pipeline_on_tf_data_gives_the_generator_batches(monkeypatch):
  monkeypatch.setattr(_tf_path, 'BLOCK_SIZE', 64)
  subword = dict(vocab_type='subword', vocab_file='en_8k.subword',
                 vocab_dir=VOCAB_DIR, n_reserved_ids=2)
  texts = _corpus_texts(200) + EDGE_CASES + _fuzz_texts(50, seed=2)
  steps = [data.Tokenize(**subword), data.Dup(),
           data.FilterByLength(max_length=256),
           data.BucketByLength([16, 64, 256], [16, 8, 4, 2]),
           data.AddLossWeights(id_to_mask=0)]
  python = _serial_batches(texts, steps, on_dataset=False)
  blocked = _serial_batches(texts, steps, on_dataset=True)
  assert len(python) >= 20
  _recorded.assert_same(python, blocked)
  # The per-example Dataset path (a Dataset given to Tokenize alone).
  per_example = data.Tokenize(**subword)(
      tf.data.Dataset.from_tensor_slices(texts[:40]))
  want = [np.asarray(ids, np.int64) for ids in
          _python_ids(text_encoder.SubwordTextEncoder(
              os.path.join(VOCAB_DIR, 'en_8k.subword')), texts[:40], 2)]
  _recorded.assert_same([(w,) for w in want],
                        list(data.to_stream(per_example)))
