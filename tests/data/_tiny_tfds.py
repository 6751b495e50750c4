"""Writes tiny real TFDS datasets into a temporary data_dir, offline."""

import numpy as np
import tensorflow as tf

REVIEWS = {
    'train': [('a truly good film', 1), ('bad plot and bad acting', 0),
              ('good fun', 1), ('boring', 0), ('the best film of the year', 1),
              ('not good at all', 0), ('lovely', 1), ('awful, just awful', 0)],
    'test': [('good', 1), ('bad', 0), ('a good plot', 1)],
}


def write_reviews(data_dir, name='tiny_reviews', splits=None):
  """Prepares `name` (text + label, like imdb_reviews) in `data_dir`."""
  import tensorflow_datasets as tfds  # pylint: disable=g-import-not-at-top
  tfds.disable_progress_bar()
  splits = splits or REVIEWS
  features = tfds.features.FeaturesDict({
      'text': tfds.features.Text(),
      'label': tfds.features.ClassLabel(num_classes=2)})
  datasets = {
      split: tf.data.Dataset.from_tensor_slices({
          'text': [t for t, _ in rows],
          'label': np.array([l for _, l in rows], np.int64)})
      for split, rows in splits.items()}
  tfds.dataset_builders.store_as_tfds_dataset(
      name=name, version='1.0.0', features=features, split_datasets=datasets,
      data_dir=str(data_dir))
  return str(data_dir)
