"""End to end: TFDS from a local data_dir -> Trax pipeline -> Loop trains.

TFDS -> Tokenize (Trax's en_8k.subword) -> Shuffle -> FilterByLength ->
BucketByLength -> AddLossWeights feeds `training.Loop`, written as in Trax;
the same steps also run as tf.data ops on a `tf.data.Dataset`.
"""

import numpy as np
import pytest
import tensorflow as tf

from tests import _fixtures
from tests.data import _tiny_tfds
from tfnp_trax import optimizers
from tfnp_trax import data
import tfnp_trax.layers as tl
from tfnp_trax.supervised import training

VOCAB_DIR = str(_fixtures.path('trax_vocab'))
SUBWORD = dict(vocab_type='subword', vocab_file='en_8k.subword',
               vocab_dir=VOCAB_DIR)


@pytest.fixture(scope='module')
def data_dir(tmp_path_factory):
  return _tiny_tfds.write_reviews(tmp_path_factory.mktemp('tfds'))


def _pipeline(data_dir, train=True):
  return data.Serial(
      data.TFDS('tiny_reviews', data_dir=data_dir, keys=('text', 'label'),
                train=train),
      data.Tokenize(keys=[0], **SUBWORD),
      data.Shuffle(8),
      data.FilterByLength(max_length=6, length_keys=[0]),
      data.BucketByLength(boundaries=[4], batch_sizes=[4, 2],
                          length_keys=[0]),
      data.AddLossWeights(),
  )


def test_pipeline_batches_hold_the_dataset_sentences(data_dir):
  texts = {t: label for t, label in _tiny_tfds.REVIEWS['train']}
  batches = _pipeline(data_dir)()
  seen = set()
  # Enough batches that Shuffle(8) has let every example out.
  for _ in range(40):
    ids, labels, weights = next(batches)
    assert ids.dtype == np.int64 and ids.ndim == 2
    np.testing.assert_array_equal(weights, np.ones(labels.shape, np.float32))
    for row, label in zip(ids, labels):
      # Padding is 0 (`<pad>` in en_8k); what is left decodes to a sentence.
      text = data.detokenize(row[row != 0], **SUBWORD)
      assert texts[text] == label
      assert len(row[row != 0]) <= 6
      seen.add(text)
  # FilterByLength dropped the long reviews, and only those.
  long = {t for t in texts
          if len(next(data.tokenize(iter([t]), **SUBWORD))) > 6}
  assert long and not seen & long
  assert seen == set(texts) - long


def test_loop_trains_on_the_tfds_pipeline(data_dir, tmp_path):
  vocab = data.vocab_size(**SUBWORD)
  model = tl.Serial(tl.Embedding(vocab, 8), tl.Mean(axis=1), tl.Dense(2),
                    tl.LogSoftmax())
  task = training.TrainTask(_pipeline(data_dir)(),
                            tl.WeightedCategoryCrossEntropy(),
                            optimizers.Adam(0.05))
  evals = training.EvalTask(_pipeline(data_dir)(),
                            [tl.WeightedCategoryCrossEntropy()], ['xent'],
                            n_eval_batches=4)
  loop = training.Loop(model, task, eval_tasks=[evals],
                       output_dir=str(tmp_path), eval_at=lambda s: s in
                       (1, 30))
  loop.run(30)
  assert loop.step == 30
  (_, first), (_, last) = loop.history.get('eval', 'metrics/xent')
  assert np.isfinite(first) and np.isfinite(last)
  # Eight short reviews are easy to fit: the loss must drop, by far.
  assert last < 0.5 * first


def test_the_same_pipeline_runs_as_tf_data_ops():
  rows = _tiny_tfds.REVIEWS['train']
  texts = [t for t, _ in rows]
  labels = np.array([label for _, label in rows])
  steps = [data.Tokenize(keys=[0], **SUBWORD),
           data.FilterByLength(max_length=6, length_keys=[0]),
           data.BucketByLength(boundaries=[4], batch_sizes=[4, 2],
                               length_keys=[0]),
           data.AddLossWeights()]
  ds = tf.data.Dataset.from_tensor_slices((texts, labels))
  out = data.Serial(*steps)(ds)
  assert isinstance(out, tf.data.Dataset)  # Tokenize kept the tf.data path.

  def examples(batches):
    return sorted((tuple(ids[ids != 0].tolist()), int(label))
                  for batch_ids, batch_labels, _ in batches
                  for ids, label in zip(batch_ids, batch_labels))

  python = data.Serial(*steps)(iter(zip(texts, labels)))
  got = examples(out.as_numpy_iterator())
  assert got == examples(python)
  # Short reviews, in full batches (a last partial bucket is dropped, as in
  # Trax).
  tokenized = {(tuple(next(data.tokenize(iter([t]), **SUBWORD)).tolist()), l)
               for t, l in rows}
  short = {(ids, l) for ids, l in tokenized if len(ids) <= 6}
  assert set(got) <= short and len(got) >= 4
