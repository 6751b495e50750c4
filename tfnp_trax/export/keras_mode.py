"""Which Keras `tfnp_trax.AsKeras` wraps for: Keras 3 or tf_keras.

TensorFlow makes `tf.keras` tf_keras (Keras 2) when the environment has
`TF_USE_LEGACY_KERAS` set to "1", "true" or "True", and Keras 3 otherwise;
this reads the same variable in the same way, so `AsKeras` layers fit the
models `tf.keras` builds.
"""

import os

__all__ = ['legacy_keras']

_TRUE = ('1', 'true', 'True')


def legacy_keras():
  """Whether `tf.keras` is tf_keras in this process (TF_USE_LEGACY_KERAS)."""
  return os.environ.get('TF_USE_LEGACY_KERAS') in _TRUE
