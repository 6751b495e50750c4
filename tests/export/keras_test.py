"""Tests for AsKeras: outputs, training, state, rng, saving, export."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from tfnp_trax import export
from tfnp_trax import fastmath
from tfnp_trax import layers as tl
from tfnp_trax import models
from tfnp_trax import shapes


@export.register_layer_constructor
def _NormDropNet(width=8):  # pylint: disable=invalid-name
  """A registered test constructor with state (BatchNorm) and an rng."""
  return tl.Serial(tl.Dense(width), tl.BatchNorm(axis=(0,)),
                   tl.Dropout(0.25), tl.Relu(), tl.Dense(3))


def _data(n=8):
  rng = np.random.RandomState(0)
  return (rng.normal(size=(n, 4)).astype(np.float32),
          rng.normal(size=(n, 3)).astype(np.float32))


def _variables(as_keras, trainable):
  return [v for v in as_keras.weights if v.trainable == trainable]


def test_output_equals_numpy_reference():
  mlp = models.MLP(layer_widths=(8, 3))
  mlp.init(shapes.ShapeDtype((2, 4)), rng=fastmath.random.get_prng(0))
  layer = export.AsKeras(mlp)
  x, _ = _data(2)
  (w1, b1), _, (w2, b2) = [fastmath.nested_map(np.asarray, w)
                           for w in mlp.weights[1:]]
  expected = np.maximum(x.astype(np.float64) @ w1 + b1, 0) @ w2 + b2
  np.testing.assert_allclose(layer(x).numpy(), expected, rtol=1e-5,
                             atol=1e-6)
  assert [tuple(v.shape) for v in layer.trainable_weights] == [
      (4, 8), (8,), (8, 3), (3,)]


@pytest.mark.parametrize('jit_compile', [False, True])
def test_fit_trains_weights_state_and_rng(jit_compile):
  layer = export.AsKeras(export.LayerFactory(_NormDropNet, width=8),
                         initializer_rng=1, rng=5)
  model = keras.Sequential([keras.Input((4,)), layer])
  model.compile(optimizer=keras.optimizers.SGD(0.1), loss='mse',
                jit_compile=jit_compile)
  x, y = _data()
  before = [v.numpy() for v in layer.weights]
  history = model.fit(x, y, epochs=4, batch_size=8, verbose=0)
  assert np.all(np.isfinite(history.history['loss']))
  # Every variable but Dropout's rate (its state) moved: weights by SGD,
  # BatchNorm statistics and batch count by the training calls, and the
  # rng key by its splits.
  unchanged = [v.path.split('/')[-1] for a, v in zip(before, layer.weights)
               if np.array_equal(a, v.numpy())]
  assert unchanged == ['Serial.2_Dropout']
  assert int(_variables(layer, False)[2].numpy()) == 4
  # The trained weights come back as a tfnp_trax tree for the native layer.
  # Inference calls use the current rng variable (the last weight) as is.
  rng = layer.weights[-1].numpy()
  native, _ = layer.trax_layer.pure_fn(x, layer.trax_weights,
                                       layer.trax_state, rng)
  np.testing.assert_allclose(np.asarray(native), layer(x).numpy(),
                             rtol=1e-5, atol=1e-6)


def test_batchnorm_statistics_advance_only_in_training():
  bn = tl.BatchNorm(axis=(0,), momentum=0.5)
  layer = export.AsKeras(bn)
  x = np.random.RandomState(0).normal(size=(4, 3)).astype(np.float32)
  layer(x, training=False)
  mean, var, count = (v.numpy() for v in _variables(layer, False)[:3])
  np.testing.assert_allclose(mean, np.zeros((1, 3)))
  assert count == 0
  layer(x, training=True)
  layer(x, training=True)
  mean, var, count = (v.numpy() for v in _variables(layer, False)[:3])
  # Two updates with momentum 0.5: running = 0.75 * batch + 0.25 * initial.
  np.testing.assert_allclose(mean, 0.75 * x.mean(0, keepdims=True),
                             rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(var, 0.75 * x.var(0, keepdims=True) + 0.25,
                             rtol=1e-5)
  assert count == 2


def test_dropout_rng_advances_per_training_call():
  layer = export.AsKeras(tl.Dropout(0.5), rng=7)
  x = np.ones((4, 16), np.float32)
  first, second = layer(x, training=True), layer(x, training=True)
  assert not np.array_equal(first.numpy(), second.numpy())
  # Each call splits the key: the call uses one half, the other is kept.
  key = fastmath.random.get_prng(7)
  for out in (first, second):
    keys = fastmath.random.split(key, 2)
    expected, _ = tl.Dropout(0.5).pure_fn(x, (), np.float32(0.5), keys[1])
    np.testing.assert_array_equal(out.numpy(), np.asarray(expected))
    key = keys[0]
  np.testing.assert_array_equal(layer.weights[-1].numpy(), np.asarray(key))


def test_transformer_lm_takes_integer_ids():
  layer = export.AsKeras(export.LayerFactory(
      models.TransformerLM, vocab_size=16, d_model=8, d_ff=16, n_layers=1,
      n_heads=2, max_len=8, mode='eval'))
  ids = np.random.RandomState(0).randint(0, 16, size=(2, 8)).astype(np.int32)
  out = layer(ids)
  assert out.shape == (2, 8, 16)
  native = layer.trax_layer.pure_fn(
      ids, layer.trax_layer.weights, layer.trax_layer.state,
      fastmath.random.get_prng(0))[0]
  np.testing.assert_allclose(out.numpy(), np.asarray(native), rtol=1e-5,
                             atol=1e-6)


@pytest.mark.parametrize('factory', [
    export.LayerFactory(models.MLP, layer_widths=(8, 3)),
    export.LayerFactory(_NormDropNet, width=4),
], ids=['MLP', 'NormDropNet'])
def test_keras_file_round_trip(tmp_path, factory):
  layer = export.AsKeras(factory, initializer_rng=2)
  model = keras.Sequential([keras.Input((4,)), layer])
  model.compile(optimizer=keras.optimizers.SGD(0.1), loss='mse')
  x, y = _data()
  model.fit(x, y, epochs=2, batch_size=8, verbose=0)
  model.save(tmp_path / 'model.keras')
  loaded = keras.models.load_model(tmp_path / 'model.keras')
  assert isinstance(loaded.layers[0], export.AsKeras)
  for a, b in zip(loaded.weights, model.weights):
    np.testing.assert_array_equal(a.numpy(), b.numpy())
  np.testing.assert_array_equal(loaded(x).numpy(), model(x).numpy())


def test_model_export_serves_without_keras_objects(tmp_path):
  # Keras traces the export with an unknown batch size; batch_size pins it.
  layer = export.AsKeras(export.LayerFactory(models.MLP, layer_widths=(8, 3)),
                         batch_size=8)
  model = keras.Sequential([keras.Input((4,)), layer])
  x, _ = _data()
  model.export(str(tmp_path / 'exported'), verbose=False)
  loaded = tf.saved_model.load(str(tmp_path / 'exported'))
  np.testing.assert_allclose(loaded.serve(x).numpy(), model(x).numpy(),
                             rtol=1e-6)


def test_saving_a_bare_layer_explains_the_fix():
  mlp = models.MLP(layer_widths=(3,))
  layer = export.AsKeras(mlp)
  layer(np.ones((2, 4), np.float32))
  with pytest.raises(NotImplementedError,
                     match=r'AsKeras\(Serial\): saving the config needs.*'
                     r'AsKeras\(LayerFactory\(constructor, \*\*kwargs\)\)'):
    layer.get_config()


def test_bad_rng_is_rejected():
  with pytest.raises(ValueError, match=r'AsKeras: rng must be an int seed or '
                     r'an int32 key of shape \[2\]'):
    export.AsKeras(tl.Relu(), rng=[1, 2, 3])
