"""Tests for export.to_tflite: TFLite outputs match native ones."""

import warnings

import numpy as np
import pytest
import tensorflow as tf

from tfnp_trax import export
from tfnp_trax import fastmath
from tfnp_trax import models
from tfnp_trax import shapes


def _run_tflite(flatbuffer, *xs):
  with warnings.catch_warnings():
    warnings.simplefilter('ignore')  # tf.lite.Interpreter's deprecation.
    interpreter = tf.lite.Interpreter(model_content=flatbuffer)
  interpreter.allocate_tensors()
  for detail, x in zip(interpreter.get_input_details(), xs):
    interpreter.set_tensor(detail['index'], x)
  interpreter.invoke()
  return interpreter.get_tensor(interpreter.get_output_details()[0]['index'])


def test_mlp_matches_numpy():
  model = models.MLP(layer_widths=(8, 3))
  sig = shapes.ShapeDtype((2, 4))
  model.init(sig, rng=fastmath.random.get_prng(0))
  x = np.random.RandomState(0).normal(size=(2, 4)).astype(np.float32)
  (w1, b1), _, (w2, b2) = [fastmath.nested_map(np.asarray, w)
                           for w in model.weights[1:]]
  expected = np.maximum(x.astype(np.float64) @ w1 + b1, 0) @ w2 + b2
  out = _run_tflite(export.to_tflite(model, sig), x)
  np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-6)


def test_quantized_conversion_is_smaller_and_close():
  model = models.MLP(layer_widths=(64, 64, 3))
  sig = shapes.ShapeDtype((2, 64))
  model.init(sig, rng=fastmath.random.get_prng(0))
  x = np.random.RandomState(0).normal(size=(2, 64)).astype(np.float32)
  full = export.to_tflite(model, sig)
  small = export.to_tflite(model, sig,
                           optimizations=[tf.lite.Optimize.DEFAULT])
  assert len(small) < len(full) / 2
  np.testing.assert_allclose(_run_tflite(small, x), np.asarray(model(x)),
                             atol=0.1)


def test_uninitialized_and_unknown_sizes_are_rejected():
  with pytest.raises(ValueError, match=r'to_tflite: layer Serial is not '
                     r'initialized'):
    export.to_tflite(models.MLP((3,)), shapes.ShapeDtype((2, 4)))
  model = models.MLP((3,))
  model.init(shapes.ShapeDtype((2, 4)))
  with pytest.raises(ValueError, match=r'to_tflite: Serial needs fully known '
                     r'input sizes'):
    export.to_tflite(model, shapes.ShapeDtype((None, 4)))
