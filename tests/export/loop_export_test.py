"""Tests for export_loop: a trained Loop's eval model as a SavedModel."""

import numpy as np
import tensorflow as tf

from tfnp_trax import export
from tfnp_trax import layers as tl
from tfnp_trax import optimizers
from tfnp_trax.supervised import training


def _data(seed, batch=4):
  r = np.random.default_rng(seed)
  while True:
    x = r.normal(size=(batch, 6)).astype(np.float32)
    y = (x.sum(axis=1) > 0).astype(np.int32)
    yield x, y, np.ones(batch, np.float32)


def _loop(model):
  task = training.TrainTask(_data(0), tl.WeightedCategoryCrossEntropy(),
                            optimizers.SGD(0.1), n_steps_per_checkpoint=100)
  return training.Loop(model, task)


def test_exports_the_trained_weights_with_unknown_batch(tmp_path):
  loop = _loop(tl.Serial(tl.Dense(8), tl.Relu(), tl.Dense(2)))
  loop.run(3)
  signature = export.export_loop(loop, str(tmp_path / 'sm'))
  assert signature[0].shape == (None, 6)
  fn = tf.saved_model.load(str(tmp_path / 'sm')).signatures[
      'serving_default']
  (w1, b1), _, (w2, b2) = [[np.asarray(a) for a in w]
                           for w in loop.eval_model.weights]
  x = np.random.RandomState(0).normal(size=(5, 6)).astype(np.float32)
  expected = np.maximum(x.astype(np.float64) @ w1 + b1, 0) @ w2 + b2
  np.testing.assert_allclose(fn(inputs=tf.constant(x))['outputs'].numpy(),
                             expected, rtol=1e-5, atol=1e-6)
  # The batch the Loop peeked at is still the next one it trains on.
  loop.run(1)
  assert loop.step == 4


def test_falls_back_to_the_training_batch_size(tmp_path):
  # A reshape that reads the batch size cannot be traced with an unknown
  # one, so the export pins it to the training batch size, 4.
  model = tl.Serial(
      tl.Fn('StaticReshape', lambda x: x.reshape((x.shape[0], 3, 2))),
      tl.Flatten(), tl.Dense(2))
  loop = _loop(model)
  loop.run(1)
  signature = export.export_loop(loop, str(tmp_path / 'sm'))
  assert signature[0].shape == (4, 6)
  fn = tf.saved_model.load(str(tmp_path / 'sm')).signatures[
      'serving_default']
  x = np.random.RandomState(1).normal(size=(4, 6)).astype(np.float32)
  w, b = (np.asarray(a) for a in loop.eval_model.weights[2])
  np.testing.assert_allclose(fn(inputs=tf.constant(x))['outputs'].numpy(),
                             x.astype(np.float64) @ w + b, rtol=1e-5,
                             atol=1e-6)
