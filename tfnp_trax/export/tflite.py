"""Converts inference models to TensorFlow Lite flatbuffers."""

import re

from absl import logging
import tensorflow as tf

from tfnp_trax import fastmath
from tfnp_trax.export import _args
from tfnp_trax.export import _module
from tfnp_trax.export import _trees
from tfnp_trax.fastmath import shared_functions

__all__ = ['to_tflite', 'tensorflow_ops_needed']


def to_tflite(model, input_signature, weights=None, state=None,
              optimizations=None, select_tf_ops=None):
  """Returns `model` (with its weights) as TFLite model bytes.

  By default the conversion first tries TFLite's builtin ops only, which
  every LiteRT runtime (`ai_edge_litert`, mobile) runs; if some op has no
  builtin kernel it retries allowing TensorFlow ops (`SELECT_TF_OPS`), which
  only a runtime with the Flex delegate runs (`tf.lite.Interpreter` of the
  `tensorflow` pip package, or LiteRT built with it).

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
    select_tf_ops: None (builtin ops, else TensorFlow ops), False (builtin
      ops only: a model that needs others raises, naming them) or True
      (TensorFlow ops allowed from the start).

  Returns:
    The flatbuffer as bytes.

  Raises:
    ValueError: if the model is not initialized (and no weights given), the
      signature has unknown sizes, or `select_tf_ops=False` and the model
      needs TensorFlow ops.
  """
  _args.check_layer(model, 'to_tflite')
  if select_tf_ops not in (None, True, False):
    raise TypeError(f'to_tflite: select_tf_ops must be None, True or False, '
                    f'got {select_tf_ops!r}.')
  _args.check_optimizations(optimizations, 'to_tflite')
  weights, state = _trees.weights_and_state(model, weights, state,
                                            'to_tflite')
  sigs, names = _module.input_specs(model, input_signature, None,
                                    'to_tflite')
  for s in sigs:
    if any(d is None for d in s.shape):
      raise ValueError(f'to_tflite: {model.name} needs fully known input '
                       f'sizes, got {s}. Give the batch size explicitly.')
  # The weights go in as constants the trace captures, not as variables:
  # the converter freezes them either way, and without variables its
  # detour through a temporary SavedModel takes half the time.
  weights, state = [fastmath.nested_map(tf.constant, tree)
                    for tree in (weights, state)]
  module = tf.Module()

  def forward(*xs):
    # TFLite's converter cannot lower the not-inlined calls that deep
    # reversible stacks trace into.
    with shared_functions.inlined():
      return _module.run_layer(model, list(xs), weights, state,
                               where='to_tflite')
  specs = [tf.TensorSpec(s.shape, s.dtype, name=n)
           for s, n in zip(sigs, names)]
  concrete = tf.function(forward, input_signature=specs,
                         autograph=False).get_concrete_function()
  if select_tf_ops:
    return _convert(concrete, module, optimizations, select_tf_ops=True)
  try:
    return _convert(concrete, module, optimizations, select_tf_ops=False)
  except Exception as e:  # pylint: disable=broad-except
    # The converter raises its own ConverterError type, which is not exposed
    # under a stable public name.
    needed = tensorflow_ops_needed(str(e))
    if select_tf_ops is False:
      raise ValueError(
          f'to_tflite: {model.name} needs TensorFlow ops that TFLite has no '
          f'builtin kernel for: {", ".join(needed) or str(e)[:300]}. Such '
          f'a model runs only where the Flex delegate is linked in; pass '
          f'select_tf_ops=None or True to allow them.') from e
    logging.info('to_tflite: builtin ops are not enough (%s); retrying '
                 'with SELECT_TF_OPS.', ', '.join(needed) or
                 str(e).splitlines()[0][:200])
    return _convert(concrete, module, optimizations, select_tf_ops=True)


def tensorflow_ops_needed(converter_message):
  """The TensorFlow ops a failed builtin-only conversion names, sorted.

  The converter lists each op without a builtin kernel as `tf.OpName` (with
  its location and types) in its error.
  """
  listed = re.search(r'TF Select ops: ([^\n]*)', converter_message)
  if listed:
    return sorted({op.strip() for op in listed.group(1).split(',')
                   if op.strip()})
  return sorted(set(re.findall(r'\btf\.([A-Z][A-Za-z0-9]*)\(',
                               converter_message)))


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
