"""Which Keras `tfnp_trax.AsKeras` wraps for: Keras 3 or tf_keras.

TensorFlow makes `tf.keras` tf_keras (Keras 2) when the environment has
`TF_USE_LEGACY_KERAS` set to "1", "true" or "True", and Keras 3 otherwise;
this reads the same variable in the same way, so `AsKeras` layers fit the
models `tf.keras` builds.
"""

import os

__all__ = ['as_keras_class', 'legacy_keras']

_TRUE = ('1', 'true', 'True')


def legacy_keras():
  """Whether `tf.keras` is tf_keras in this process (TF_USE_LEGACY_KERAS)."""
  return os.environ.get('TF_USE_LEGACY_KERAS') in _TRUE


def as_keras_class():
  """The AsKeras class for this process's `tf.keras`.

  `export.keras.AsKeras` (Keras 3) by default; under TF_USE_LEGACY_KERAS it
  is `export.tf_keras_layer.AsTfKeras`, imported only then.
  """
  # pylint: disable=g-import-not-at-top
  if legacy_keras():
    from tfnp_trax.export import tf_keras_layer
    return tf_keras_layer.AsTfKeras
  from tfnp_trax.export import keras
  return keras.AsKeras
