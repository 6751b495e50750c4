"""AsKeras: a tfnp_trax layer as a Keras 3 layer.

The layer's weights become trainable Keras variables and its state
non-trainable ones, so `model.compile` / `model.fit` train it, `model.export`
serves it and `.keras` files save it. The state (e.g. BatchNorm statistics)
and an rng key advance on every training call, as they do in native
training; inference calls leave both unchanged. The body is shared with the
tf_keras face (`export/tf_keras_layer.py`) in `export/_as_keras_body.py`.
"""

import keras
import tensorflow as tf

from tfnp_trax import fastmath
from tfnp_trax import shapes
from tfnp_trax.export import _as_keras_body

__all__ = ['AsKeras']


@keras.saving.register_keras_serializable(package='tfnp_trax')
class AsKeras(_as_keras_body.AsKerasBody, keras.layers.Layer):
  """Runs a tfnp_trax layer as a Keras 3 layer.

  Example:
    >>> layer = AsKeras(LayerFactory(models.MLP, layer_widths=(8, 3)))
    >>> model = keras.Sequential([keras.Input((4,)), layer])
    >>> tuple(model(onp.ones((2, 4), onp.float32)).shape)
    (2, 3)

  Initialization, modes, state and saving behave as `AsKerasBody` says;
  its `__init__` gives the arguments. `.keras` files save and load it when
  the layer is given as a `LayerFactory`.
  """

  def compute_output_spec(self, inputs, training=None):
    del training
    layer = self._held.layer
    def concrete(x):
      # Unknown sizes are traced at batch_size (axis 0) or 1; the output's
      # axis 0 is reported unknown again below.
      shape = tuple((self._batch_size or 1) if d is None and i == 0 else
                    (1 if d is None else d) for i, d in enumerate(x.shape))
      return shapes.ShapeDtype(shape, x.dtype)
    sig = fastmath.nested_map(
        concrete, tuple(inputs) if isinstance(inputs, list) else inputs)
    unknown_batch = any(x.shape and x.shape[0] is None
                        for x in fastmath.tree_flatten(inputs))
    out = layer.output_signature(sig)

    def spec(s):
      shape = tuple(s.shape)
      if unknown_batch and shape:
        shape = (None,) + shape[1:]
      return keras.KerasTensor(shape, dtype=tf.as_dtype(s.dtype).name)
    return fastmath.nested_map(spec, out)

