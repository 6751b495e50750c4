"""TensorFlow Datasets as Trax streams, read offline from a local data_dir.

Trax's `TFDS` and `data_streams` download and prepare a dataset when it is
missing. tfnp_trax never downloads: the dataset must already be prepared
(TFDS record files and `dataset_info.json`) under `data_dir`, and a missing
one fails at once, naming the dataset, the directory searched and how to
prepare it. `tensorflow_datasets` is imported only when a dataset is read.
"""

import os
import random

import numpy as np

from tfnp_trax.data import _counters
from tfnp_trax.data import _preprocessors

__all__ = ['DatasetNotPreparedError', 'TFDS', 'data_streams',
           'dataset_to_stream', 'download_and_prepare', 'load_local_builder',
           'train_and_eval_dataset']

# Training streams skip a random number of examples (up to this many) so
# that hosts started together do not read the data in lock-step, as Trax.
_MAX_SKIP_EXAMPLES = 100_000


class DatasetNotPreparedError(FileNotFoundError):
  """A TFDS dataset is not prepared in the local data directory."""


def _default_data_dir():
  return os.environ.get('TFDS_DATA_DIR',
                        os.path.join('~', 'tensorflow_datasets'))


def _not_prepared(caller, dataset_name, data_dir, detail=''):
  return DatasetNotPreparedError(
      f"{caller}: dataset '{dataset_name}' is not prepared in data_dir "
      f"{data_dir}{detail}. tfnp_trax reads TFDS datasets offline and never "
      'downloads them. Prepare it where the data can be reached, e.g. '
      f"`tfds build {dataset_name.split(':')[0]} --data_dir {data_dir}` or "
      f"tfds.builder('{dataset_name}', data_dir='{data_dir}')"
      '.download_and_prepare(), then pass data_dir=<that directory>.')


def download_and_prepare(dataset_name, data_dir):
  """Returns the local `data_dir` holding `dataset_name`; never downloads.

  Trax downloads and prepares a missing dataset here. tfnp_trax only
  checks that it is prepared (in `data_dir`, or by default in
  `$TFDS_DATA_DIR` or `~/tensorflow_datasets`).

  Args:
    dataset_name: a TFDS name such as `'imdb_reviews'`, `'glue/mnli'` or
      `'mnist:3.*.*'`. T2T problems (`'t2t_...'`) are not supported.
    data_dir: the directory of prepared datasets, or None for the default.

  Returns:
    The expanded `data_dir`.

  Raises:
    DatasetNotPreparedError: if the dataset is not prepared there.
    ValueError: for a T2T problem name.
  """
  return _local_data_dir(dataset_name, data_dir, 'download_and_prepare')


def _local_data_dir(dataset_name, data_dir, caller):
  if dataset_name.startswith('t2t_'):
    raise ValueError(
        f"{caller}: '{dataset_name}' is a tensor2tensor problem; tfnp_trax "
        'reads TFDS datasets only (tensor2tensor is not supported).')
  data_dir = os.path.expanduser(data_dir or _default_data_dir())
  load_local_builder(dataset_name, data_dir, caller=caller)
  return data_dir


def load_local_builder(dataset_name, data_dir, caller='TFDS'):
  """The read-only TFDS builder of a dataset prepared in `data_dir`."""
  data_dir = os.path.expanduser(data_dir)
  if not os.path.isdir(data_dir):
    raise _not_prepared(caller, dataset_name, data_dir,
                        ' (the directory does not exist)')
  import tensorflow_datasets as tfds  # pylint: disable=g-import-not-at-top
  try:
    # Built from the prepared files alone: no dataset code, no download.
    return tfds.core.read_only_builder.builder_from_files(
        dataset_name, data_dir=data_dir)
  except tfds.core.registered.DatasetNotFoundError:
    raise _not_prepared(caller, dataset_name, data_dir) from None


def train_and_eval_dataset(dataset_name, data_dir, eval_holdout_size=0,
                           train_shuffle_files=True, eval_shuffle_files=False,
                           use_alt_eval=False, subsplit=None):
  """The train and eval `tf.data.Dataset`s of a locally prepared dataset.

  Args:
    dataset_name: TFDS name.
    data_dir: directory of prepared datasets.
    eval_holdout_size: fraction in [0, 1) of the train split to hold out
      (from its end) as the eval data instead of the validation/test split.
    train_shuffle_files: shuffle the train files when reading.
    eval_shuffle_files: shuffle the eval files when reading.
    use_alt_eval: for `glue/mnli`, evaluate on `validation_mismatched`.
    subsplit: `(start, end)` fractions of the (remaining) train split to
      read, e.g. one host's share.

  Returns:
    `(train, eval, keys)`, where `keys` is `([input], [target])` from the
    dataset's supervised keys, or None.
  """
  builder = load_local_builder(dataset_name, data_dir)
  splits = builder.info.splits
  multilingual = dataset_name == 'c4/multilingual'
  train_split = 'en' if multilingual else 'train'
  if train_split not in splits:
    raise ValueError(f"TFDS: dataset '{dataset_name}' has no train split "
                     f'(it has {sorted(splits)}); training needs one.')
  eval_split = None
  n_train = splits[train_split].num_examples
  n_holdout = int(n_train * eval_holdout_size)
  if n_holdout > 0 or subsplit is not None:
    start_frac, end_frac = subsplit or (0, 1)
    n_kept = n_train - n_holdout
    start, end = int(n_kept * start_frac), int(n_kept * end_frac)
    if end - start < 1:
      raise ValueError(f'TFDS: the train subsplit {subsplit} of '
                       f"'{dataset_name}' has no examples (n_train "
                       f'{n_kept}).')
    if n_holdout > 0:
      eval_split = f'{train_split}[-{n_holdout}:]'
    train_split = f'{train_split}[{start}:{end}]'
  if dataset_name == 'glue/mnli':
    eval_split = ('validation_mismatched' if use_alt_eval
                  else 'validation_matched')
  elif multilingual:
    eval_split = 'en-validation'
  elif eval_split is None:
    if 'validation' in splits:
      eval_split = 'validation'
    elif 'test' in splits:
      eval_split = 'test'
    else:
      raise ValueError(f"TFDS: dataset '{dataset_name}' has neither a "
                       f'validation nor a test split (it has '
                       f'{sorted(splits)}); pass eval_holdout_size > 0.')
  train = builder.as_dataset(split=train_split,
                             shuffle_files=train_shuffle_files)
  valid = builder.as_dataset(split=eval_split,
                             shuffle_files=eval_shuffle_files)
  supervised = builder.info.supervised_keys
  keys = ([supervised[0]], [supervised[1]]) if supervised else None
  return train, valid, keys


def TFDS(dataset_name, data_dir=None, tfds_preprocess_fn=None, keys=None,  # pylint: disable=invalid-name
         train=True, use_alt_eval=False, shuffle_train=True, host_id=None,
         n_hosts=None, eval_holdout_size=0):
  """A stream of examples of a TFDS dataset prepared in a local data_dir.

  Args:
    dataset_name: TFDS name, e.g. `'imdb_reviews'` or `'glue/mnli'`.
    data_dir: directory of prepared datasets (default `$TFDS_DATA_DIR` or
      `~/tensorflow_datasets`); nothing is downloaded.
    tfds_preprocess_fn: function applied to the raw `tf.data.Dataset`
      before features are selected.
    keys: feature names to select; each example becomes the tuple of those
      features. None keeps the whole feature dict.
    train: read the train split, else the eval split.
    use_alt_eval: the alternate eval split (`glue/mnli` mismatched).
    shuffle_train: shuffle the train files when reading.
    host_id: this host's index when the data is split across hosts.
    n_hosts: number of hosts; each reads its own share of the train split.
    eval_holdout_size: fraction of train held out as eval data.

  Returns:
    A function `gen(generator=None)` returning an endless iterator of NumPy
    examples (text as bytes).

  Raises:
    DatasetNotPreparedError: if the dataset is not in `data_dir`.
  """
  data_dir = _local_data_dir(dataset_name, data_dir, 'TFDS')
  host_id = _counters._host_id() if host_id is None else host_id  # pylint: disable=protected-access
  n_hosts = n_hosts or _counters._host_count()  # pylint: disable=protected-access
  subsplit = ((host_id / n_hosts, (host_id + 1) / n_hosts) if n_hosts > 1
              else None)
  train_ds, eval_ds, _ = train_and_eval_dataset(
      dataset_name, data_dir, eval_holdout_size,
      train_shuffle_files=shuffle_train, use_alt_eval=use_alt_eval,
      subsplit=subsplit)
  dataset = train_ds if train else eval_ds
  if tfds_preprocess_fn is not None:
    dataset = tfds_preprocess_fn(dataset)
  if keys is not None:
    spec = dataset.element_spec
    missing = [k for k in keys if isinstance(spec, dict) and k not in spec]
    if missing:
      raise KeyError(f"TFDS: dataset '{dataset_name}' has no features "
                     f'{missing}; it has {sorted(dataset.element_spec)}.')
    dataset = dataset.map(lambda example: tuple(example[k] for k in keys))
  dataset = dataset.repeat()

  def gen(generator=None):
    del generator
    yield from dataset.as_numpy_iterator()

  return gen


def dataset_to_stream(dataset, input_name):
  """NumPy `(inputs, targets[, mask])` tuples from `(features, targets)`."""
  for features, targets in dataset.as_numpy_iterator():
    inputs = features[input_name]
    # As in Trax, only uint8 *scalars* are cast to int32; uint8 arrays (e.g.
    # image pixels) pass through unchanged.
    if isinstance(inputs, np.uint8):
      inputs = inputs.astype(np.int32)
    if isinstance(targets, np.uint8):
      targets = targets.astype(np.int32)
    if 'mask' in features:
      yield inputs, targets, features['mask']
    else:
      yield inputs, targets


def _shuffle_data(dataset, target_names, training, shuffle_buffer_size,
                  preprocess_fn, bare_preprocess_fn):
  """Appends targets, repeats, skips (train), preprocesses and shuffles."""

  def append_targets(example):
    if len(target_names) == 1:
      return example, example[target_names[0]]
    return example, {name: example[name] for name in target_names}

  if bare_preprocess_fn is not None:
    dataset = bare_preprocess_fn(dataset, training)
  dataset = dataset.map(append_targets).repeat()
  if training:
    dataset = dataset.skip(random.randint(0, _MAX_SKIP_EXAMPLES))
  dataset = preprocess_fn(dataset, training)
  return dataset.shuffle(shuffle_buffer_size).prefetch(8)


def data_streams(dataset_name, data_dir=None,
                 preprocess_fn=_preprocessors.no_preprocess,
                 bare_preprocess_fn=None, shuffle_buffer_size=1024,
                 eval_holdout_size=0, input_name=None, target_name=None):
  """`(train_stream_fn, eval_stream_fn)` over a locally prepared dataset.

  Args:
    dataset_name: TFDS name.
    data_dir: directory of prepared datasets; nothing is downloaded.
    preprocess_fn: `fn(dataset, training)` applied to `(features, targets)`
      pairs.
    bare_preprocess_fn: `fn(dataset, training)` applied to the raw feature
      dicts, before targets are appended.
    shuffle_buffer_size: size of the shuffle buffer.
    eval_holdout_size: fraction of train held out as eval data.
    input_name: input feature (default: the dataset's supervised input).
    target_name: target feature (default: the supervised target).

  Returns:
    Two functions; each call returns an endless iterator of NumPy
    `(inputs, targets[, mask])` examples. Train skips a random number of
    examples first, as in Trax.
  """
  data_dir = _local_data_dir(dataset_name, data_dir, 'data_streams')
  cache = []

  def stream(which):
    if not cache:
      train, valid, keys = train_and_eval_dataset(dataset_name, data_dir,
                                                  eval_holdout_size)
      inputs = ([input_name] if input_name is not None
                else keys[0] if keys else [None])
      targets = ([target_name] if target_name is not None
                 else keys[1] if keys else [None])
      if inputs[0] is None or targets[0] is None:
        raise ValueError(
            f"data_streams: dataset '{dataset_name}' has no supervised keys; "
            'pass input_name= and target_name= (feature names).')
      cache.append((
          _shuffle_data(train, targets, True, shuffle_buffer_size,
                        preprocess_fn, bare_preprocess_fn),
          _shuffle_data(valid, targets, False, shuffle_buffer_size,
                        preprocess_fn, bare_preprocess_fn),
          inputs[0]))
    train_ds, eval_ds, name = cache[0]
    return dataset_to_stream(eval_ds if which == 'eval' else train_ds, name)

  return lambda: stream('train'), lambda: stream('eval')
