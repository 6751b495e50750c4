"""`tf_inputs` tf.data preprocessors: recorded Trax outputs and hand values."""

import numpy as np
import pytest
import tensorflow as tf

from tests import _fixtures
from tfnp_trax.data import tf_inputs

RECORDED = _fixtures.json_file('trax_data', 'preprocessors.json')
TOKENS = _fixtures.json_file('trax_data', 'tokens.json')


def _pairs():
  rows = [({'inputs': np.array([3, 4, 5])}, np.array([6, 7])),
          ({'inputs': np.array([8])}, np.array([9, 10, 11, 12]))]
  return tf.data.Dataset.from_generator(
      lambda: iter(rows),
      output_signature=({'inputs': tf.TensorSpec([None], tf.int64)},
                        tf.TensorSpec([None], tf.int64)))


def _tolist(x):
  if isinstance(x, dict):
    return {k: _tolist(v) for k, v in sorted(x.items())}
  if isinstance(x, (tuple, list)):
    return [_tolist(v) for v in x]
  return np.asarray(x).tolist()


def _run(ds):
  return [_tolist(e) for e in ds.as_numpy_iterator()]


@pytest.mark.parametrize('name', ['concat_preprocess', 'wmt_concat_preprocess',
                                  'wmt_preprocess', 'lm1b_preprocess'])
def test_pair_preprocessors_match_trax(name):
  record = RECORDED[name]
  fn = getattr(tf_inputs, name)
  assert _run(fn(_pairs(), True, **record['kwargs'])) == record['outputs']


def test_length_limits_apply_to_their_mode_only():
  # wmt: the limit of the other mode is ignored; <= 0 means no limit.
  assert len(_run(tf_inputs.wmt_preprocess(_pairs(), False, max_length=3))) == 2
  assert len(_run(tf_inputs.wmt_preprocess(_pairs(), False,
                                           max_eval_length=3))) == 1
  assert len(_run(tf_inputs.lm1b_preprocess(_pairs(), False,
                                            max_eval_target_length=2))) == 1


def test_lm_token_preprocessing_matches_trax():
  ds = tf.data.Dataset.from_tensors({'inputs': tf.constant([3, 4]),
                                     'targets': tf.constant([5, 6, 7])})
  assert _run(tf_inputs.lm_token_preprocessing(ds, True)) == RECORDED[
      'lm_token_preprocessing']['outputs']


def test_cifar10_flatten_matches_trax_in_eval():
  img = np.arange(12, dtype=np.uint8).reshape(2, 2, 3)
  ds = tf.data.Dataset.from_tensors(({'image': img}, np.int64(4)))
  got = _run(tf_inputs.cifar10_augmentation_flatten_preprocess(ds, False))
  assert got == RECORDED['cifar10_augmentation_flatten_preprocess_eval'][
      'outputs']


def _images(n=2):
  r = np.random.default_rng(0)
  img = r.integers(0, 256, size=(n, 32, 32, 3)).astype(np.uint8)
  return img, tf.data.Dataset.from_tensor_slices(
      ({'image': img}, np.arange(n, dtype=np.int64)))


def test_cifar10_scaling_and_augmentation():
  img, ds = _images()
  got = list(tf_inputs.cifar10_no_augmentation_preprocess(
      ds, True).as_numpy_iterator())
  np.testing.assert_allclose(got[0][0]['image'], img[0] / 255.0, rtol=1e-6)
  assert got[0][0]['image'].dtype == np.float32
  # Eval: no augmentation. Train: a 32x32 crop of the image zero-padded to
  # 40x40, maybe flipped; every crop window is checked.
  evals = list(tf_inputs.cifar10_augmentation_preprocess(
      ds, False).as_numpy_iterator())
  np.testing.assert_allclose(evals[1][0]['image'], img[1] / 255.0, rtol=1e-6)
  (feats, _), _ = tf_inputs.cifar10_augmentation_preprocess(
      ds, True).as_numpy_iterator()
  padded = np.pad(img[0] / 255.0, [(4, 4), (4, 4), (0, 0)])
  windows = [padded[i:i + 32, j:j + 32] for i in range(9) for j in range(9)]
  windows += [w[:, ::-1] for w in windows]
  assert any(np.allclose(feats['image'], w, atol=1e-6) for w in windows)
  (flat, seq), _ = tf_inputs.cifar10_augmentation_flatten_preprocess(
      ds, True, predict_image_train_weight=0.5).as_numpy_iterator()
  np.testing.assert_array_equal(flat['mask'][:-1], 0.5)
  assert flat['mask'][-1] == 1.0 and seq[-1] == 0 and seq.shape == (3073,)


def test_downsampled_imagenet_and_squeeze():
  img = np.arange(8, dtype=np.uint8).reshape(2, 2, 2)
  ds = tf.data.Dataset.from_tensors({'image': img})
  (got,) = _run(tf_inputs.downsampled_imagenet_flatten_bare_preprocess(ds,
                                                                         True))
  assert got == {'image': list(range(8))}
  ds = tf.data.Dataset.from_tensors(({'x': 1}, tf.constant([[1], [2]])))
  assert _run(tf_inputs.squeeze_targets_preprocess(ds, True)) == [
      [{'x': 1}, [1, 2]]]


def _dicts():
  rows = [{'inputs': [1, 2, 3, 4], 'targets': [5, 6]},
          {'inputs': [7], 'targets': [8, 9, 10]}]
  return tf.data.Dataset.from_generator(
      lambda: iter(rows), output_signature={
          'inputs': tf.TensorSpec([None], tf.int64),
          'targets': tf.TensorSpec([None], tf.int64)})


def test_filter_truncate_pad_and_eos_on_dicts():
  lens = {'inputs': (1, 3), 'targets': (1, 3)}
  assert _run(tf_inputs.filter_dataset_on_len(_dicts(), True, lens)) == [
      {'inputs': [7], 'targets': [8, 9, 10]}]
  # Eval keeps everything unless asked.
  assert len(_run(tf_inputs.filter_dataset_on_len(_dicts(), False,
                                                  lens))) == 2
  assert len(_run(tf_inputs.filter_dataset_on_len(
      _dicts(), False, lens, filter_on_eval=True))) == 1
  assert _run(tf_inputs.truncate_dataset_on_len(
      _dicts(), True, {'inputs': 2})) == [
          {'inputs': [1, 2], 'targets': [5, 6]},
          {'inputs': [7], 'targets': [8, 9, 10]}]
  assert len(_run(tf_inputs.truncate_dataset_on_len(
      _dicts(), False, {'inputs': 2}))[0]['inputs']) == 4
  assert _run(tf_inputs.pad_dataset_to_length(
      _dicts(), True, {'targets': 3})) == [
          {'inputs': [1, 2, 3, 4], 'targets': [5, 6, 0]},
          {'inputs': [7], 'targets': [8, 9, 10]}]
  assert _run(tf_inputs.add_eos_to_output_features(
      _dicts(), True, ['inputs', 'targets'], eos=1))[1] == {
          'inputs': [7, 1], 'targets': [8, 9, 10, 1]}
  with pytest.raises(TypeError, match='len_map must be a dict'):
    tf_inputs.truncate_dataset_on_len(_dicts(), True, [('inputs', 2)])


def test_bair_robot_pushing():
  frames = tf.data.Dataset.from_tensors(
      ({'inputs': np.full((1, 2, 2), 3, np.uint8)},
       np.full((2, 2, 2), 4, np.uint8)))
  ((feats, seq),) = list(tf_inputs.bair_robot_pushing_preprocess(
      frames, True).as_numpy_iterator())
  np.testing.assert_array_equal(seq, [3] * 4 + [4] * 8)
  np.testing.assert_array_equal(feats['mask'], [0.0] * 4 + [1.0] * 8)
  assert seq.dtype == np.int32 and feats['mask'].dtype == np.float32
  assert tf_inputs.bair_robot_pushing_hparams() == (1, 15)


def test_c4_preprocess_code_points_and_sentencepiece():
  record = TOKENS['sentencepiece']
  texts = [c['text'] for c in record['cases']]
  ds = tf.data.Dataset.from_tensor_slices({'text': texts}).map(
      lambda x: (x, x['text']))
  chars = list(tf_inputs.c4_preprocess(ds, True).as_numpy_iterator())
  assert chars[5][1].tolist() == [ord(c) for c in texts[5]]
  spm = str(_fixtures.path('trax_vocab', 'sentencepiece.model'))
  # Trax's own tokenization='spc' path, recorded: the same ids.
  got = list(tf_inputs.c4_preprocess(ds, True, tokenization='spc',
                                     spm_path=spm).as_numpy_iterator())
  for (feats, ids), case in zip(got, record['cases']):
    assert ids.tolist() == case['ids'] == feats['inputs'].tolist()
  short = tf_inputs.c4_preprocess(ds, True, max_target_length=5)
  assert [len(t) for _, t in short.as_numpy_iterator()] == [0, 1]
