"""AsKeras for tf_keras: what `tfnp_trax.AsKeras` is under legacy Keras.

With `TF_USE_LEGACY_KERAS=1` in the environment, `tf.keras` is tf_keras
(Keras 2), as it was when Trax was written, and Trax programs build their
models with it: `tf.keras.Input`, `tf.keras.Model(...)`, then
`model.save(directory)` to write a SavedModel and
`tf.keras.models.load_model(directory)` to read it back. A Keras 3 layer
cannot sit in such a model, so under that setting `tfnp_trax.AsKeras` (and
`tfnp_trax.export.AsKeras`) is `AsTfKeras`, the same wrapper on
`tf_keras.layers.Layer`. The setting is read once, when tfnp_trax is
imported, as TensorFlow reads it for `tf.keras`; `keras_mode.legacy_keras`
says which one is in use.
"""

import tensorflow as tf
import tf_keras

from tfnp_trax.export import _as_keras_body

__all__ = ['AsTfKeras']


@tf_keras.saving.register_keras_serializable(package='tfnp_trax')
class AsTfKeras(_as_keras_body.AsKerasBody, tf_keras.layers.Layer):
  """Runs a tfnp_trax layer as a tf_keras (Keras 2) layer.

  Example, with `TF_USE_LEGACY_KERAS=1` set before TensorFlow is imported
  (tests/export/tf_keras_layer_test.py runs it):

      layer = tfnp_trax.AsKeras(model)
      inputs = tf.keras.Input(shape=(None,), dtype='int32')
      keras_model = tf.keras.Model(inputs, layer(inputs))
      keras_model.save(directory)  # A SavedModel.
      loaded = tf.keras.models.load_model(directory)

  Weights are trainable tf_keras variables and state non-trainable ones,
  as in the Keras 3 `AsKeras`; the arguments are `AsKerasBody.__init__`'s.
  A saved model loads without tfnp_trax: tf_keras revives the layer from
  the SavedModel's traced call functions.
  """

  # tf_keras runs `call` through AutoGraph; the tfnp_trax layer is already
  # plain TensorFlow (its Python branches are on static values).
  @tf.autograph.experimental.do_not_convert
  def call(self, inputs, training=None):
    return super().call(inputs, training=training)
