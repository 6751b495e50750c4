"""Converts inference models to TensorFlow Lite flatbuffers."""

from absl import logging
import tensorflow as tf

from tfnp_trax.export import _args
from tfnp_trax.export import _module
from tfnp_trax.export import _trees

__all__ = ['to_tflite']


def to_tflite(model, input_signature, weights=None, state=None,
              optimizations=None):
  """Returns `model` (with its weights) as TFLite model bytes.

  The conversion first tries TFLite's builtin ops only; if some op has no
  builtin kernel it retries allowing TensorFlow ops (`SELECT_TF_OPS`), which
  the interpreter runs through the Flex delegate (bundled with the
  `tensorflow` pip package, not with minimal TFLite runtimes).

  Example:
    >>> model = models.MLP(layer_widths=(8, 3))
    >>> _ = model.init(shapes.ShapeDtype((2, 4)))
    >>> flatbuffer = to_tflite(model, shapes.ShapeDtype((2, 4)))
    >>> interpreter = tf.lite.Interpreter(model_content=flatbuffer)

  Args:
    model: an initialized inference layer (build it with mode='eval').
    input_signature: ShapeDtype (or tuple of them) with fully known sizes.
    weights: the weight tree; `model.weights` by default.
    state: the state tree; `model.state` by default.
    optimizations: optional list of `tf.lite.Optimize` values, e.g.
      `[tf.lite.Optimize.DEFAULT]` for dynamic-range quantization.

  Returns:
    The flatbuffer as bytes.

  Raises:
    ValueError: if the model is not initialized (and no weights given) or
      the signature has unknown sizes.
  """
  _args.check_layer(model, 'to_tflite')
  _args.check_optimizations(optimizations, 'to_tflite')
  weights, state = _trees.weights_and_state(model, weights, state,
                                            'to_tflite')
  sigs, names = _module.input_specs(model, input_signature, None,
                                    'to_tflite')
  for s in sigs:
    if any(d is None for d in s.shape):
      raise ValueError(f'to_tflite: {model.name} needs fully known input '
                       f'sizes, got {s}. Give the batch size explicitly.')
  module = _module.LayerModule(model, weights, state)

  def forward(*xs):
    return _module.run_layer(model, list(xs), module.read_weights(),
                             module.read_state(), where='to_tflite')
  specs = [tf.TensorSpec(s.shape, s.dtype, name=n)
           for s, n in zip(sigs, names)]
  concrete = tf.function(forward, input_signature=specs,
                         autograph=False).get_concrete_function()
  try:
    return _convert(concrete, module, optimizations, select_tf_ops=False)
  except Exception as e:  # pylint: disable=broad-except
    # The converter raises its own ConverterError type, which is not exposed
    # under a stable public name.
    logging.info('to_tflite: builtin ops are not enough (%s); retrying '
                 'with SELECT_TF_OPS.', str(e).splitlines()[0][:200])
    return _convert(concrete, module, optimizations, select_tf_ops=True)


def _convert(concrete, module, optimizations, select_tf_ops):
  converter = tf.lite.TFLiteConverter.from_concrete_functions([concrete],
                                                              module)
  if optimizations:
    converter.optimizations = list(optimizations)
  ops = [tf.lite.OpsSet.TFLITE_BUILTINS]
  if select_tf_ops:
    ops.append(tf.lite.OpsSet.SELECT_TF_OPS)
  converter.target_spec.supported_ops = ops
  return converter.convert()
