"""tfnp_trax.export: SavedModel, ONNX, TFLite and Keras interop for layers."""

from tfnp_trax.export.beam_search_signature import beam_search_signature
from tfnp_trax.export.decode_signature import decode_signatures
from tfnp_trax.export.from_keras import FromKeras
from tfnp_trax.export.generate_signature import generate_signature
from tfnp_trax.export import keras_mode
from tfnp_trax.export.layer_factory import LayerFactory
from tfnp_trax.export.layer_factory import register_layer_constructor
from tfnp_trax.export.loop_export import export_loop
from tfnp_trax.export.saved_model import save_model
from tfnp_trax.export.saved_model import serving_function
from tfnp_trax.export.onnx import to_onnx
from tfnp_trax.export.policy import save_policy
from tfnp_trax.export.tflite import to_tflite

# AsKeras fits the models `tf.keras` builds: Keras 3 by default, tf_keras
# under TF_USE_LEGACY_KERAS=1 (see export/tf_keras_layer.py).
AsKeras = keras_mode.as_keras_class()

__all__ = ['AsKeras', 'FromKeras', 'LayerFactory', 'beam_search_signature',
           'decode_signatures',
           'generate_signature', 'keras_mode',
           'export_loop', 'register_layer_constructor', 'save_model',
           'save_policy',
           'serving_function', 'to_onnx', 'to_tflite']
