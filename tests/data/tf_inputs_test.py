"""`tf_inputs`: tokenizers against ids recorded from Trax 1.4.1, TFDS offline.

`tests/testdata/trax_data/tokens.json` holds the ids Trax itself produced
on fixed sentences with its own vocabulary files (see the generator script
beside it).
"""

import os

import numpy as np
import pytest
import tensorflow as tf

from tests import _fixtures
from tests.data import _tiny_tfds
from tfnp_trax.data import _tfds
from tfnp_trax.data import tf_inputs

VOCAB_DIR = str(_fixtures.path('trax_vocab'))
RECORDED = _fixtures.json_file('trax_data', 'tokens.json')

VOCABS = ['subword', 'subword_reserved', 'char', 'char_reserved', 'bert',
          'bert_lowercase']


def _kwargs(record):
  return dict(vocab_type=record['vocab_type'], vocab_file=record['vocab_file'],
              vocab_dir=VOCAB_DIR, n_reserved_ids=record['n_reserved_ids'])


# Tokenizers: Trax's ids, round trips, sizes.


@pytest.mark.parametrize('name', VOCABS)
def test_tokenize_matches_trax_ids(name):
  record = RECORDED[name]
  texts = [c['text'] for c in record['cases']]
  out = list(tf_inputs.tokenize(iter(texts), **_kwargs(record)))
  for case, ids in zip(record['cases'], out):
    assert ids.dtype == np.int64, case['text']
    assert ids.tolist() == case['ids'], case['text']


@pytest.mark.parametrize('name', VOCABS)
def test_detokenize_and_vocab_size_match_trax(name):
  record = RECORDED[name]
  for case in record['cases']:
    text = tf_inputs.detokenize(np.array(case['ids'], np.int64),
                                **_kwargs(record))
    assert text == case['detokenized']
    if record['vocab_type'] in ('subword', 'char'):
      assert text == case['text']  # Invertible tokenizations.
  assert tf_inputs.vocab_size(**_kwargs(record)) == record['vocab_size']


def test_sentencepiece_matches_trax_ids_and_round_trips():
  record = RECORDED['sentencepiece']
  spm_path = os.path.join(VOCAB_DIR, 'sentencepiece.model')
  texts = [c['text'] for c in record['cases']]
  step = tf_inputs.SentencePieceTokenize(spm_path=spm_path)
  # Tuples are tokenized by their first field, as in Trax.
  out = list(step(iter([(t, 'ignored') for t in texts])))
  kw = dict(vocab_type='sentencepiece', vocab_file='sentencepiece.model',
            vocab_dir=VOCAB_DIR)
  for case, ids, ids2 in zip(record['cases'], out,
                             tf_inputs.tokenize(iter(texts), **kw)):
    assert ids.tolist() == case['ids'] == ids2.tolist(), case['text']
  assert tf_inputs.detokenize(record['cases'][0]['ids'], **kw) == (
      'Hello world.')
  assert tf_inputs.vocab_size(**kw) == 32000
  # Decoding stops after EOS (id 1), as t5's vocabulary does.
  assert tf_inputs.detokenize([8774, 296, 1, 5], **kw) == 'Hello world'


def test_tokenize_keys_pick_fields_as_trax():
  kw = dict(vocab_type='char', vocab_dir=VOCAB_DIR)
  got = next(tf_inputs.tokenize(iter([('ab', 'cd', 7)]), keys=[0, 1], **kw))
  want = RECORDED['structures']['tuple_keys_0_1']
  assert [g.tolist() for g in got[:2]] == want[:2] and got[2] == want[2]
  got = next(tf_inputs.tokenize(iter([{'a': 'xy', 'b': 'z'}]), keys=['a'],
                                **kw))
  assert got['a'].tolist() == RECORDED['structures']['dict_keys_a']['a']
  assert got['b'] == 'z'


def test_tokenize_accepts_tfds_bytes():
  kw = _kwargs(RECORDED['subword'])
  case = RECORDED['subword']['cases'][5]  # Non-ASCII text.
  ids = next(tf_inputs.tokenize(iter([case['text'].encode('utf-8')]), **kw))
  assert ids.tolist() == case['ids']


@pytest.mark.parametrize('name', ['subword_reserved', 'char', 'bert'])
def test_tokenize_on_tf_data_gives_the_same_ids(name):
  record = RECORDED[name]
  texts = [c['text'] for c in record['cases']]
  labels = np.arange(len(texts), dtype=np.int64)
  ds = tf.data.Dataset.from_tensor_slices((texts, labels))
  out = tf_inputs.Tokenize(keys=[0], **_kwargs(record))(ds)
  assert isinstance(out, tf.data.Dataset)
  assert out.element_spec[0] == tf.TensorSpec([None], tf.int64)
  for (ids, label), case, want_label in zip(out.as_numpy_iterator(),
                                            record['cases'], labels):
    assert ids.tolist() == case['ids'] and label == want_label


def test_tokenize_on_tf_data_dicts_tokenizes_string_fields():
  record = RECORDED['subword']
  ds = tf.data.Dataset.from_tensors({'text': record['cases'][0]['text'],
                                     'n': tf.constant(3)})
  (out,) = list(tf_inputs.Tokenize(**_kwargs(record))(ds).as_numpy_iterator())
  assert out['text'].tolist() == record['cases'][0]['ids'] and out['n'] == 3
  bad = tf.data.Dataset.from_tensors(({'n': 1}, 'x'))
  with pytest.raises(ValueError, match=r"Tokenize: field 'n' .* dtype int32"):
    tf_inputs.Tokenize(keys=['n'], **_kwargs(record))(bad.map(
        lambda d, _: d))


def test_missing_local_vocab_file_names_the_path():
  missing = os.path.join(VOCAB_DIR, 'nope.subword')
  with pytest.raises(FileNotFoundError,
                     match=rf"Tokenize: vocabulary file {missing} for "
                     r"vocab_type='subword' does not exist\. Copy the "
                     r'vocabulary file to a local directory'):
    tf_inputs.Tokenize(vocab_file='nope.subword', vocab_dir=VOCAB_DIR)


def test_default_vocab_dir_is_never_downloaded_from(monkeypatch):
  # Offline (as CI is, and as TFNP_TRAX_OFFLINE makes any machine), Trax's
  # remote default is refused at once with the fix.
  monkeypatch.setenv('TFNP_TRAX_OFFLINE', '1')
  monkeypatch.delenv('TFNP_TRAX_VOCAB_DIR', raising=False)
  with pytest.raises(FileNotFoundError,
                     match=r'vocabulary file gs://trax-ml/vocabs/en_8k.subword'
                     r" for vocab_type='subword' is a remote path and "
                     r'tfnp_trax never downloads.*pass vocab_dir='):
    tf_inputs.vocab_size(vocab_file='en_8k.subword')
  with pytest.raises(FileNotFoundError, match=r'gs://t5-data/vocabs/'):
    next(tf_inputs.SentencePieceTokenize()(iter(['a'])))


def test_bad_vocab_arguments():
  with pytest.raises(ValueError, match='vocab_type must be "subword", "char"'
                     r'.* but got words'):
    tf_inputs.tokenize(iter(['a']), vocab_type='words')
  with pytest.raises(ValueError, match=r"vocab_type='bert' needs vocab_file"):
    tf_inputs.detokenize([1], vocab_type='bert')


def test_convert_to_unicode():
  step = tf_inputs.ConvertToUnicode(keys=[0])
  got = next(step(iter([(b'caf\xc3\xa9 \xff!', b'kept')])))
  # Invalid UTF-8 (\xff) is dropped; fields outside keys stay bytes.
  assert got == ('café !', b'kept')
  assert next(tf_inputs.ConvertToUnicode()(iter([{'a': b'x'}]))) == {'a': 'x'}


# TFDS, read offline from a local data_dir.


@pytest.fixture(scope='module')
def data_dir(tmp_path_factory):
  return _tiny_tfds.write_reviews(tmp_path_factory.mktemp('tfds'))


def _take(gen, n):
  it = gen()
  return [next(it) for _ in range(n)]


def test_tfds_streams_keys_from_the_local_split_forever(data_dir):
  train = _tiny_tfds.REVIEWS['train']
  got = _take(tf_inputs.TFDS('tiny_reviews', data_dir=data_dir,
                             keys=('text', 'label')), 2 * len(train))
  first_pass = sorted((t.decode(), int(l)) for t, l in got[:len(train)])
  assert first_pass == sorted(train)
  assert got[len(train):] == got[:len(train)]  # Repeats, same file order.
  evals = _take(tf_inputs.TFDS('tiny_reviews', data_dir=data_dir,
                               keys=('label', 'text'), train=False), 3)
  assert sorted((t.decode(), int(l)) for l, t in evals) == sorted(
      _tiny_tfds.REVIEWS['test'])


def test_tfds_hosts_and_holdout_split_the_train_data(data_dir):
  train = sorted(_tiny_tfds.REVIEWS['train'])

  def texts(**kw):
    rows = _take(tf_inputs.TFDS('tiny_reviews', data_dir=data_dir,
                                keys=('text', 'label'), **kw), 8)
    return {(t.decode(), int(l)) for t, l in rows}

  host0 = texts(host_id=0, n_hosts=2)
  host1 = texts(host_id=1, n_hosts=2)
  assert len(host0) == len(host1) == 4 and host0 | host1 == set(train)
  held = texts(train=False, eval_holdout_size=0.25)
  kept = texts(eval_holdout_size=0.25)
  assert len(held) == 2 and len(kept) == 6 and held | kept == set(train)


def test_missing_dataset_fails_at_once_naming_how_to_prepare(data_dir):
  with pytest.raises(tf_inputs.DatasetNotPreparedError,
                     match=rf"TFDS: dataset 'imdb_reviews' is not prepared in "
                     rf'data_dir {data_dir}\. tfnp_trax reads TFDS datasets '
                     r'offline and never downloads them\. .*`tfds build '
                     rf'imdb_reviews --data_dir {data_dir}`'):
    tf_inputs.TFDS('imdb_reviews', data_dir=data_dir, keys=('text',))
  missing = os.path.join(data_dir, 'nowhere')
  with pytest.raises(FileNotFoundError,
                     match=r"download_and_prepare: dataset 'x' is not "
                     rf'prepared in data_dir {missing} \(the directory does '
                     r'not exist\)'):
    tf_inputs.download_and_prepare('x', missing)
  with pytest.raises(ValueError, match='tensor2tensor problem'):
    tf_inputs.download_and_prepare('t2t_translate', data_dir)
  assert tf_inputs.download_and_prepare('tiny_reviews', data_dir) == data_dir


def test_tfds_unknown_key_is_named(data_dir):
  with pytest.raises(KeyError, match=r"no features \['txt'\]; it has "
                     r"\['label', 'text'\]"):
    tf_inputs.TFDS('tiny_reviews', data_dir=data_dir, keys=('txt',))


def test_data_streams_and_dataset_to_stream(data_dir, monkeypatch):
  # Train streams first skip a random number of examples, up to 100k as in
  # Trax; fewer keep this test fast.
  monkeypatch.setattr(_tfds, '_MAX_SKIP_EXAMPLES', 20)
  train, evals = tf_inputs.data_streams(
      'tiny_reviews', data_dir=data_dir, input_name='text',
      target_name='label', shuffle_buffer_size=4)
  texts = dict(_tiny_tfds.REVIEWS['train'] + _tiny_tfds.REVIEWS['test'])
  for stream in (train(), evals()):
    for _ in range(5):
      text, label = next(stream)
      assert texts[text.decode()] == label
  with pytest.raises(ValueError, match='no supervised keys; pass input_name'):
    next(tf_inputs.data_streams('tiny_reviews', data_dir=data_dir)[0]())
  ds = tf.data.Dataset.from_tensors(
      ({'x': np.uint8(7), 'mask': np.float32(0.5)}, np.uint8(3)))
  ((x, y, mask),) = list(tf_inputs.dataset_to_stream(ds, 'x'))
  assert (x.dtype, y.dtype, x, y, mask) == (np.int32, np.int32, 7, 3, 0.5)


# BERT inputs and the functions that need t5.


def test_create_bert_inputs():
  rows = [(np.array([5, 6]), np.array([7]), 1)]
  ids, seg, seg2, label, weight = next(tf_inputs.CreateBertInputs()(rows))
  np.testing.assert_array_equal(ids, [101, 5, 6, 102, 7, 102])
  np.testing.assert_array_equal(seg, [0, 0, 0, 0, 1, 1])
  assert seg2 is seg and (label, weight) == (1, 1)
  single = tf_inputs.CreateBertInputs(double_sentence=False, labeled=False,
                                      cls_id=1, sep_id=2)
  ids, seg, _ = next(single([(np.array([5, 6]),)]))
  np.testing.assert_array_equal(ids, [1, 5, 6, 2])
  np.testing.assert_array_equal(seg, [0, 0, 0, 0])


def test_mask_random_tokens_masks_a_fraction_of_plain_tokens():
  np.random.seed(0)
  tokens = np.array([101] + list(range(1000, 1020)) + [102, 0, 0])
  masked, original, weights = next(tf_inputs.mask_random_tokens(
      [(tokens.copy(),)]))
  np.testing.assert_array_equal(original, tokens)
  chosen = np.flatnonzero(weights)
  assert len(chosen) == 3  # round(0.15 * 20)
  np.testing.assert_allclose(weights[chosen], 1 / 3)
  assert set(chosen) <= set(range(1, 21))
  unchosen = np.setdiff1d(np.arange(len(tokens)), chosen)
  np.testing.assert_array_equal(masked[unchosen], tokens[unchosen])
  assert list(tf_inputs.mask_random_tokens([(np.array([101, 5, 102]),)])) == []


def _t5_installed():
  try:
    import t5.data  # pylint: disable=g-import-not-at-top,unused-import
    return True
  except ImportError:
    return False


@pytest.mark.skipif(_t5_installed(), reason='checks the error without t5')
def test_t5_functions_say_they_need_t5():
  for fn in (lambda: tf_inputs.CorpusToRandomChunks('c4'),
             lambda: tf_inputs.get_t5_preprocessor_by_name('glue'),
             tf_inputs.t5_data):
    with pytest.raises(ImportError, match=r'`pip install t5`'):
      fn()
  with pytest.raises(ImportError, match='tensor2tensor'):
    tf_inputs.t2t_problems()


def test_mathqa_helpers():
  assert tf_inputs.compute_nums('a 4,000 b -2.5 c 3e2') == [4000.0, -2.5,
                                                            300.0]
  assert tf_inputs.compute_ops('add(n0,n1)|divide(#0,n2)|') == [
      'add(n0,n1)', 'divide(#0,n2)']
  assert tf_inputs.convert_float_to_mathqa(2.0) == 'const_2'
  assert tf_inputs.convert_float_to_mathqa(3.13) == 'const_3_13'
  assert tf_inputs.convert_to_subtract('const_3') == 'subtract(const_3,const_0)'
  assert tf_inputs.is_number('1e3') and not tf_inputs.is_number('e')
