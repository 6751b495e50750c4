"""Blocks of examples on the tf.data path: same examples, same order.

Inside `Serial`, Tokenize, Dup, Shuffle, FilterByLength, BucketByLength and
AddLossWeights pass blocks of examples between them. Small block sizes make
every pipeline here span many blocks, so what is carried from block to
block (pending buckets, the shuffle buffer) is exercised. The Python path
they are compared with is Trax's generator code, itself checked against
recordings of real Trax in inputs_test.py.
"""

import numpy as np
import pytest
import tensorflow as tf

from tests import _fixtures
from tests.data import _recorded
from tfnp_trax import data
from tfnp_trax.data import _tf_path

VOCAB_DIR = str(_fixtures.path('trax_vocab'))
TEXTS = ['héllo wörld', '', 'a', 'tokens and more tokens', 'ß' * 20,
         'x' * 70] + [chr(97 + i % 26) * (1 + (7 * i) % 45) for i in range(60)]


@pytest.fixture(params=[3, 1024], ids=lambda n: f'block{n}')
def block_size(request, monkeypatch):
  monkeypatch.setattr(_tf_path, 'BLOCK_SIZE', request.param)
  return request.param


def _both(steps, texts=TEXTS, labels=True):
  """The batches of `steps` from Python strings and from a Dataset."""
  rows = [(t, np.int32(i)) for i, t in enumerate(texts)] if labels else texts
  python = list(data.Serial(lambda _: iter(rows), *steps)())
  columns = (texts, np.arange(len(texts), dtype=np.int32)) if labels else (
      texts)
  dataset = data.Serial(
      lambda _: tf.data.Dataset.from_tensor_slices(columns), *steps)()
  assert isinstance(dataset, tf.data.Dataset)
  return python, list(data.to_stream(dataset))


def test_char_tokenize_is_utf8_bytes_plus_reserved_ids(monkeypatch):
  monkeypatch.setattr(_tf_path, 'BLOCK_SIZE', 5)
  step = data.Tokenize(keys=[0], vocab_type='char', n_reserved_ids=3)
  python, blocked = _both([step])
  for i, (ids, label) in enumerate(blocked):
    want = np.frombuffer(TEXTS[i].encode('utf-8'), np.uint8).astype(
        np.int64) + 3
    assert ids.dtype == np.int64 and label == i
    np.testing.assert_array_equal(ids, want)
  _recorded.assert_same(python, blocked)
  # The per-example Dataset path (no Serial) gives the same.
  per_example = step(tf.data.Dataset.from_tensor_slices(
      (TEXTS, np.arange(len(TEXTS), dtype=np.int32))))
  _recorded.assert_same(python, list(data.to_stream(per_example)))


def test_char_tokenize_rejects_invalid_utf8_on_both_dataset_paths():
  texts = tf.data.Dataset.from_tensor_slices([b'fine', b'bad \xff byte'])
  step = data.Tokenize(vocab_type='char')
  for ds in (step(texts), data.Serial(lambda _: texts, step)()):
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match='Tokenize: a text is not valid UTF-8'):
      list(data.to_stream(ds))


def test_lm_pipeline_batches_are_identical(block_size):
  del block_size
  steps = [data.Tokenize(vocab_type='char', n_reserved_ids=1),
           data.Dup(), data.FilterByLength(60, min_length=1),
           data.BucketByLength([4, 16, 32], [4, 3, 2, 2]),
           data.AddLossWeights(id_to_mask=0)]
  python, blocked = _both(steps, labels=False)
  assert len(python) >= 15
  _recorded.assert_same([tuple(b) for b in python], blocked)


def test_strict_and_unbounded_buckets_are_identical(block_size):
  del block_size
  steps = [data.Tokenize(vocab_type='char'), data.Dup(),
           data.BucketByLength([8, 24], [5, 2, 3], strict_pad_on_len=True),
           data.AddLossWeights()]
  python, blocked = _both(steps, labels=False)
  assert any(b[0].shape[1] > 24 for b in python)  # The unbounded bucket.
  _recorded.assert_same([tuple(b) for b in python], blocked)


def test_a_pipeline_ending_in_blocks_gives_examples_back(monkeypatch):
  monkeypatch.setattr(_tf_path, 'BLOCK_SIZE', 4)
  steps = [data.Tokenize(vocab_type='char'), data.Dup(),
           data.FilterByLength(20), data.AddLossWeights(id_to_mask=104)]
  python, blocked = _both(steps, labels=False)
  assert len(python) == sum(len(t.encode()) <= 20 for t in TEXTS)
  _recorded.assert_same(python, blocked)


def test_subword_tokenize_on_blocks_matches_the_generator_path(monkeypatch):
  monkeypatch.setattr(_tf_path, 'BLOCK_SIZE', 6)
  subword = dict(vocab_type='subword', vocab_file='en_8k.subword',
                 vocab_dir=VOCAB_DIR)
  steps = [data.Tokenize(keys=[0], **subword), data.Dup(),
           data.BucketByLength([4, 8], [3, 2, 2], length_keys=[0])]
  python, blocked = _both(steps)
  assert len(python) >= 10
  _recorded.assert_same([tuple(b) for b in python], blocked)


@pytest.mark.parametrize('queue_size', [5, 500])
def test_shuffle_on_blocks_is_seeded_and_keeps_every_example(
    block_size, queue_size):
  del block_size
  ids = list(range(100))

  def shuffled():
    np.random.seed(3)
    out = data.Serial(lambda _: tf.data.Dataset.from_tensor_slices(ids),
                      data.Dup(), data.Shuffle(queue_size))()
    return [int(a) for a, _ in data.to_stream(out)]
  first = shuffled()
  assert first == shuffled() and sorted(first) == ids and first != ids
