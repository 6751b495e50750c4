"""Tests for export.save_model: loading without tfnp_trax, CLI, errors."""

import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from tests.export import _isolated
from tfnp_trax import export
from tfnp_trax import fastmath
from tfnp_trax import layers as tl
from tfnp_trax import models
from tfnp_trax import shapes


def _mlp(sig=shapes.ShapeDtype((2, 4))):
  model = models.MLP(layer_widths=(8, 3))
  model.init(sig, rng=fastmath.random.get_prng(0))
  return model


def _numpy_mlp(x, weights):
  """float64 reference: Flatten, Dense, Relu, Dense."""
  (w1, b1), _, (w2, b2) = [fastmath.nested_map(np.asarray, w)
                           for w in weights[1:]]
  h = np.maximum(x.reshape(x.shape[0], -1).astype(np.float64) @ w1 + b1, 0)
  return h @ w2 + b2


def test_isolated_process_cannot_import_tfnp_trax():
  out = _isolated.run_without_tfnp_trax('''
      for name in ('tfnp_trax', 'tfnp_trax.layers', 'distribute'):
        try:
          __import__(name)
          print('imported', name)
        except ImportError:
          print('blocked', name)
  ''')
  assert out.split() == ['blocked', 'tfnp_trax', 'blocked',
                         'tfnp_trax.layers', 'blocked', 'distribute']


def test_loads_and_runs_without_tfnp_trax(tmp_path):
  model = _mlp()
  x = np.random.RandomState(0).normal(size=(2, 4)).astype(np.float32)
  export.save_model(model, str(tmp_path / 'sm'), shapes.ShapeDtype((2, 4)))
  np.save(tmp_path / 'x.npy', x)
  _isolated.run_without_tfnp_trax(f'''
      import numpy as np
      import tensorflow as tf
      loaded = tf.saved_model.load({str(tmp_path / 'sm')!r})
      fn = loaded.signatures['serving_default']
      assert list(fn.structured_input_signature[1]) == ['inputs']
      assert list(fn.structured_outputs) == ['outputs']
      x = np.load({str(tmp_path / 'x.npy')!r})
      y = fn(inputs=tf.constant(x))['outputs'].numpy()
      np.save({str(tmp_path / 'y.npy')!r}, y)
      y = loaded.serve(x)['outputs'].numpy()
      np.save({str(tmp_path / 'y_serve.npy')!r}, y)
  ''')
  expected = _numpy_mlp(x, model.weights)
  np.testing.assert_allclose(np.load(tmp_path / 'y.npy'), expected,
                             rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(np.load(tmp_path / 'y_serve.npy'), expected,
                             rtol=1e-5, atol=1e-6)


def test_saved_model_cli_show_and_run(tmp_path):
  model = _mlp()
  path = str(tmp_path / 'sm')
  export.save_model(model, path, shapes.ShapeDtype((2, 4)))
  x = np.random.RandomState(1).normal(size=(2, 4)).astype(np.float32)
  np.save(tmp_path / 'x.npy', x)
  cli = [sys.executable, '-m', 'tensorflow.python.tools.saved_model_cli']
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2')
  script = (
      f'{" ".join(cli)} show --dir {path} --tag_set serve '
      f'--signature_def serving_default && '
      f'{" ".join(cli)} run --dir {path} --tag_set serve --signature_def '
      f'serving_default --inputs inputs={tmp_path}/x.npy --outdir '
      f'{tmp_path}/out')
  proc = subprocess.run(['bash', '-c', script], capture_output=True,
                        text=True, timeout=240, env=env, check=False)
  assert proc.returncode == 0, proc.stderr[-3000:]
  assert "inputs['inputs'] tensor_info" in proc.stdout
  assert "outputs['outputs'] tensor_info" in proc.stdout
  np.testing.assert_allclose(np.load(tmp_path / 'out' / 'outputs.npy'),
                             _numpy_mlp(x, model.weights), rtol=1e-5,
                             atol=1e-6)


def test_unknown_batch_size_and_names(tmp_path):
  model = tl.Parallel(tl.Dense(3), tl.Relu())
  model.init((shapes.ShapeDtype((2, 4)), shapes.ShapeDtype((2, 5))),
             rng=fastmath.random.get_prng(0))
  export.save_model(
      model, str(tmp_path / 'sm'),
      (shapes.ShapeDtype((None, 4)), shapes.ShapeDtype((None, 5))),
      input_names=('features', 'extra'), output_names=('dense', 'relu'))
  fn = tf.saved_model.load(str(tmp_path / 'sm')).signatures[
      'serving_default']
  w, b = (np.asarray(a) for a in model.weights[0])
  for batch in (1, 3):
    a = np.random.RandomState(batch).normal(size=(batch, 4)).astype(
        np.float32)
    c = np.random.RandomState(9).normal(size=(batch, 5)).astype(np.float32)
    out = fn(features=tf.constant(a), extra=tf.constant(c))
    np.testing.assert_allclose(out['dense'].numpy(), a @ w + b, rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(out['relu'].numpy(), np.maximum(c, 0))


def test_explicit_weights_are_saved(tmp_path):
  model = _mlp()
  doubled = fastmath.nested_map(lambda w: 2 * w, model.weights)
  export.save_model(model, str(tmp_path / 'sm'), shapes.ShapeDtype((2, 4)),
                    weights=doubled)
  x = np.ones((2, 4), np.float32)
  out = tf.saved_model.load(str(tmp_path / 'sm')).signatures[
      'serving_default'](inputs=tf.constant(x))['outputs']
  np.testing.assert_allclose(out.numpy(), _numpy_mlp(x, doubled), rtol=1e-5,
                             atol=1e-5)


def test_uninitialized_layer_is_rejected(tmp_path):
  with pytest.raises(ValueError, match=r'save_model: layer Serial is not '
                     r'initialized.*Call layer.init\(input_signature\)'):
    export.save_model(models.MLP((4,)), str(tmp_path / 'sm'),
                      shapes.ShapeDtype((2, 4)))


def test_weights_of_another_shape_are_rejected(tmp_path):
  model = _mlp()
  other = _mlp(shapes.ShapeDtype((2, 5)))
  with pytest.raises(ValueError, match=r'array 0 has shape \(5, 8\) but the '
                     r'layer expects \(4, 8\)'):
    export.save_model(model, str(tmp_path / 'sm'), shapes.ShapeDtype((2, 4)),
                      weights=other.weights)


def test_signature_must_match_number_of_inputs(tmp_path):
  with pytest.raises(ValueError, match=r'layer Serial takes 1 input\(s\) but '
                     r'the input_signature describes 2'):
    export.save_model(_mlp(), str(tmp_path / 'sm'),
                      (shapes.ShapeDtype((2, 4)), shapes.ShapeDtype((2, 4))))


def test_wrong_input_shape_gives_clear_error(tmp_path):
  export.save_model(_mlp(), str(tmp_path / 'sm'), shapes.ShapeDtype((2, 4)))
  fn = tf.saved_model.load(str(tmp_path / 'sm')).signatures[
      'serving_default']
  with pytest.raises(tf.errors.InvalidArgumentError,
                     match=r'Serial \(serving_default\): input `inputs` must '
                     r'have shape \(2, 4\) .*float32; got'):
    fn(inputs=tf.ones((3, 4)))
  # A wrong rank is caught by the shape the signature fixes.
  with pytest.raises(tf.errors.InvalidArgumentError,
                     match=r'\[2,4,1\] is not compatible with expected shape '
                     r'\[2,4\]'):
    fn(inputs=tf.ones((2, 4, 1)))
  with pytest.raises(tf.errors.InvalidArgumentError,
                     match=r'expected to be a float tensor but is a double'):
    fn(inputs=tf.ones((2, 4), tf.float64))
