"""Trax's `tf.data` preprocessing functions, `fn(dataset, training, ...)`.

Each takes and returns a `tf.data.Dataset`. Most work on `(features,
targets)` pairs as `data_streams` builds them; the `*_on_len`, `pad_*`,
`add_eos_*` and `lm_token_preprocessing` functions work on feature dicts.
"""

import tensorflow as tf

__all__ = [
    'add_eos_to_output_features', 'bair_robot_pushing_hparams',
    'bair_robot_pushing_preprocess', 'c4_preprocess',
    'cifar10_augmentation_flatten_preprocess',
    'cifar10_augmentation_preprocess', 'cifar10_no_augmentation_preprocess',
    'concat_preprocess', 'downsampled_imagenet_flatten_bare_preprocess',
    'filter_dataset_on_len', 'lm1b_preprocess', 'lm_token_preprocessing',
    'no_preprocess', 'pad_dataset_to_length', 'squeeze_targets_preprocess',
    'truncate_dataset_on_len', 'wmt_concat_preprocess', 'wmt_preprocess',
]


def no_preprocess(dataset, training):
  """Returns `dataset` unchanged."""
  del training
  return dataset


def _scale_image(features, targets):
  return dict(features, image=tf.cast(features['image'], tf.float32) / 255.0
             ), targets


def _augment_image(features, targets):
  # Pad to 40x40, take a random 32x32 crop, flip at random: the CIFAR
  # augmentation of the DenseNet paper (arXiv:1608.06993, p. 5).
  image = tf.image.resize_with_crop_or_pad(features['image'], 40, 40)
  image = tf.image.random_crop(image, [32, 32, 3])
  image = tf.image.random_flip_left_right(image)
  return dict(features, image=image), targets


def cifar10_no_augmentation_preprocess(dataset, training):
  """Scales `features['image']` to float32 in [0, 1]."""
  del training
  return dataset.map(_scale_image)


def cifar10_augmentation_preprocess(dataset, training):
  """Random crop and flip when training, then scales images to [0, 1]."""
  if training:
    dataset = dataset.map(_augment_image)
  return dataset.map(_scale_image)


def cifar10_augmentation_flatten_preprocess(dataset, training,
                                            predict_image_train_weight=0.01):
  """Augments (training), flattens the image and appends the label.

  The result is `({'image': pixels+label, 'mask': weights}, pixels+label)`
  as int64, where the mask weighs pixels by `predict_image_train_weight`
  when training (0 in eval) and the label by 1.
  """
  pixel_weight = predict_image_train_weight if training else 0.0

  def flatten(features, targets):
    pixels = tf.cast(tf.reshape(features['image'], [-1]), tf.int64)
    label = tf.expand_dims(targets, 0)
    sequence = tf.concat([pixels, label], 0)
    mask = tf.concat([tf.ones_like(pixels, tf.float32) * pixel_weight,
                      tf.ones_like(label, tf.float32)], 0)
    return {'image': sequence, 'mask': mask}, sequence

  if training:
    dataset = dataset.map(_augment_image)
  return dataset.map(flatten)


def downsampled_imagenet_flatten_bare_preprocess(dataset, training):
  """Flattens `image` to int64 pixels (arXiv:1601.06759 generation setup).

  Applied to raw feature dicts (before targets are appended).
  """
  del training
  return dataset.map(
      lambda f: {'image': tf.cast(tf.reshape(f['image'], [-1]), tf.int64)})


def concat_preprocess(dataset, training, pad_symbol=0):
  """LM pairs: `[pad, inputs, pad, targets]` as both inputs and targets."""
  del training

  def concat(features, targets):
    inputs = features['inputs']
    pad = tf.fill([1], tf.cast(pad_symbol, inputs.dtype))
    sequence = tf.concat([pad, inputs, pad, targets], 0)
    return dict(features, inputs=sequence), sequence

  return dataset.map(concat)


def squeeze_targets_preprocess(dataset, training):
  """Drops a last targets axis of size 1."""
  del training

  def squeeze(features, targets):
    if targets.shape[-1] == 1:
      targets = tf.squeeze(targets, axis=-1)
    return features, targets

  return dataset.map(squeeze)


def _length_filter(max_length, lengths_fn):
  return lambda features, targets: tf.less(
      lengths_fn(features, targets), max_length + 1)


def lm1b_preprocess(dataset, training, max_target_length=-1,
                    max_eval_target_length=-1):
  """Keeps examples whose targets are at most the maximum length.

  A maximum <= 0 keeps everything; `max_target_length` applies when
  training, `max_eval_target_length` otherwise.
  """
  limit = max_target_length if training else max_eval_target_length
  if limit > 0:
    dataset = dataset.filter(
        _length_filter(limit, lambda _, t: tf.shape(t)[0]))
  return dataset


def _pair_length(features, targets):
  return tf.maximum(tf.shape(features['inputs'])[0], tf.shape(targets)[0])


def wmt_preprocess(dataset, training, max_length=-1, max_eval_length=-1):
  """Keeps pairs whose longer side is at most the maximum length."""
  limit = max_length if training else max_eval_length
  if limit > 0:
    dataset = dataset.filter(_length_filter(limit, _pair_length))
  return dataset


def wmt_concat_preprocess(dataset, training, max_length=-1,
                          max_eval_length=-1):
  """`wmt_preprocess`, then `[inputs, 0, targets]` with a targets mask."""
  dataset = wmt_preprocess(dataset, training, max_length, max_eval_length)

  def concat(features, targets):
    inputs = features['inputs']
    pad = tf.zeros_like(inputs[:1])
    sequence = tf.concat([inputs, pad, targets], 0)
    mask = tf.concat([tf.zeros_like(inputs), pad, tf.ones_like(targets)], 0)
    return dict(features, inputs=sequence, mask=mask), sequence

  return dataset.map(concat)


def lm_token_preprocessing(dataset, training):
  """Dicts: inputs and targets become `[inputs, 0, targets]`, plus a mask."""
  del training

  def concat(x):
    inputs, targets = x['inputs'], x['targets']
    pad = tf.zeros_like(inputs[:1])
    sequence = tf.concat([inputs, pad, targets], 0)
    mask = tf.concat([tf.zeros_like(inputs), pad, tf.ones_like(targets)], 0)
    return dict(x, inputs=sequence, targets=sequence, mask=mask)

  return dataset.map(concat)


def bair_robot_pushing_hparams(hparams=None, video_num_input_frames=1,
                               video_num_target_frames=15):
  """Sets the frame counts on `hparams`, or returns them if it is None."""
  if hparams is None:
    return video_num_input_frames, video_num_target_frames
  hparams.video_num_input_frames = video_num_input_frames
  hparams.video_num_target_frames = video_num_target_frames


def bair_robot_pushing_preprocess(dataset, training):
  """Flattens input then target frames into one int32 LM sequence + mask."""
  del training

  def concat(features, targets):
    inputs = features['inputs']
    sequence = tf.cast(tf.reshape(tf.concat([inputs, targets], 0), [-1]),
                       tf.int32)
    mask = tf.cast(tf.reshape(tf.concat(
        [tf.zeros_like(inputs), tf.ones_like(targets)], 0), [-1]), tf.float32)
    return dict(features, inputs=sequence, targets=sequence, mask=mask
               ), sequence

  return dataset.map(concat)


def c4_preprocess(dataset, training, max_target_length=-1, tokenization=None,
                  spm_path=None):
  """C4 text to LM targets: Unicode code points, or SentencePiece ids.

  Args:
    dataset: `(features, targets)` pairs with `features['text']`.
    training: unused.
    max_target_length: keep examples with at most this many targets (<= 0:
      all).
    tokenization: `'spc'` for SentencePiece ids from `spm_path`; otherwise
      the text's code points.
    spm_path: a local SentencePiece `.model` file (required for `'spc'`).
  """
  del training
  if tokenization == 'spc':
    from tfnp_trax.data import _tokenize  # pylint: disable=g-import-not-at-top
    from tfnp_trax.data import _vocab  # pylint: disable=g-import-not-at-top
    import os  # pylint: disable=g-import-not-at-top
    path = spm_path or _tokenize.T5_DEFAULT_SPM_PATH
    vocab = _vocab.get_vocab('sentencepiece', os.path.basename(path),
                             os.path.dirname(path), caller='c4_preprocess')

    def to_ids(text):
      ids = tf.py_function(
          lambda s: tf.constant(vocab.encode(s.numpy()), tf.int64),
          [text], tf.int64)
      ids.set_shape([None])
      return ids
  else:
    def to_ids(text):
      return tf.cast(tf.strings.unicode_decode(text, 'UTF-8'), tf.int64)

  def tokenize(features, targets):
    del targets
    ids = to_ids(features['text'])
    return dict(features, inputs=ids, targets=ids), ids

  dataset = dataset.map(tokenize)
  if max_target_length > 0:
    dataset = dataset.filter(
        _length_filter(max_target_length, lambda _, t: tf.shape(t)[0]))
  return dataset


def filter_dataset_on_len(dataset, training, len_map=None,
                          filter_on_eval=False):
  """Keeps dict examples whose features' lengths lie within bounds.

  Args:
    dataset: a dataset of feature dicts.
    training: whether training; in eval nothing is filtered unless
      `filter_on_eval`.
    len_map: `{feature: (min_len, max_len)}`, both bounds inclusive.
    filter_on_eval: filter in eval too.
  """
  if len_map is None or not (training or filter_on_eval):
    return dataset
  _check_len_map('filter_dataset_on_len', len_map)
  for key, (min_len, max_len) in len_map.items():
    def within(x, key=key, min_len=min_len, max_len=max_len):
      size = tf.shape(x[key])[0]
      return tf.logical_and(min_len <= size, size <= max_len)
    dataset = dataset.filter(within)
  return dataset


def truncate_dataset_on_len(dataset, training, len_map=None,
                            truncate_on_eval=False):
  """Cuts dict features to at most `len_map[feature]` along axis 0."""
  if len_map is None or not (training or truncate_on_eval):
    return dataset
  _check_len_map('truncate_dataset_on_len', len_map)

  def truncate(x):
    return dict(x, **{k: x[k][:n] for k, n in len_map.items()})

  return dataset.map(truncate)


def pad_dataset_to_length(dataset, training, len_map=None):
  """Pads 1-D dict features with zeros up to `len_map[feature]`."""
  del training
  if len_map is None:
    return dataset

  def pad(x):
    padded = {k: tf.pad(x[k], [[0, tf.maximum(n - tf.shape(x[k])[0], 0)]])
              for k, n in len_map.items()}
    return dict(x, **padded)

  return dataset.map(pad)


def add_eos_to_output_features(dataset, training, output_features='targets',
                               eos=1):
  """Appends `eos` to each feature named in `output_features`."""
  del training
  if not isinstance(output_features, (list, tuple)):
    output_features = [output_features]

  def add_eos(x):
    return dict(x, **{k: tf.concat([x[k], tf.cast([eos], x[k].dtype)], 0)
                      for k in output_features})

  return dataset.map(add_eos)


def _check_len_map(caller, len_map):
  if not isinstance(len_map, dict):
    raise TypeError(f'{caller}: len_map must be a dict of feature name to '
                    f'length, got {type(len_map).__name__}.')
