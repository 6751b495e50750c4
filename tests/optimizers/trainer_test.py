"""Tests for tfnp_trax.optimizers.trainer (Trax's trainer names and contract).

Follows trax/optimizers/trainer.py: `optimizers.Trainer.one_step(batch, rng)`
defaults to step 0 and leaves the new weights in the model and the new slots
in the optimizer; `optimizers.trainer` exports the reversible trainer too.
"""

import numpy as np
import pytest

from tfnp_trax import fastmath
from tfnp_trax import optimizers
import tfnp_trax.layers as tl
from tfnp_trax.supervised import reversible_trainer


def _batch():
  x = np.array([[1.0], [2.0], [-1.0], [0.5]], np.float32)
  t = np.array([[0.0], [1.0], [2.0], [-1.0]], np.float32)
  return x, t, np.ones_like(t)


def test_names_match_trax():
  assert optimizers.ReversibleSerialTrainer is (
      reversible_trainer.ReversibleSerialTrainer)
  assert optimizers.trainer.extract_reversible_blocks is (
      reversible_trainer.extract_reversible_blocks)
  assert optimizers.trainer.Trainer is optimizers.Trainer


def test_one_step_updates_model_weights_in_place():
  x, t, w = _batch()
  model = tl.Serial(tl.Dense(1), tl.L2Loss())
  model.init((x, t, w), rng=fastmath.random.get_prng(0))
  kernel = np.asarray(model.weights[0][0]).copy()
  bias = np.asarray(model.weights[0][1]).copy()
  opt = optimizers.SGD(0.1)
  trainer = optimizers.Trainer(model, opt)
  loss, _ = trainer.one_step((x, t, w), fastmath.random.get_prng(1))

  # Plain gradient descent on the mean squared error, by hand.
  err = x @ kernel + bias - t  # [4, 1]
  np.testing.assert_allclose(float(loss), np.mean(err**2), rtol=1e-5)
  grad_kernel = 2.0 * x.T @ err / len(x)
  grad_bias = 2.0 * np.mean(err, axis=0)
  np.testing.assert_allclose(np.asarray(model.weights[0][0]),
                             kernel - 0.1 * grad_kernel, rtol=1e-5)
  np.testing.assert_allclose(np.asarray(model.weights[0][1]),
                             bias - 0.1 * grad_bias, rtol=1e-5)


def test_slots_land_in_the_optimizer():
  x, t, w = _batch()
  model = tl.Serial(tl.Dense(1), tl.L2Loss())
  model.init((x, t, w), rng=fastmath.random.get_prng(0))
  opt = optimizers.Momentum(0.1, mass=0.5)
  trainer = optimizers.Trainer(model, opt)
  assert not np.any(np.asarray(opt.slots[0]))
  trainer.one_step((x, t, w), fastmath.random.get_prng(1))
  # Momentum's first slot after one step is the first gradient (non-zero).
  assert np.any(np.asarray(opt.slots[0]))
  np.testing.assert_allclose(np.asarray(opt.slots[0]),
                             np.asarray(trainer.slots[0]))


def test_bad_n_devices_is_rejected():
  x, t, w = _batch()
  model = tl.Serial(tl.Dense(1), tl.L2Loss())
  model.init((x, t, w))
  with pytest.raises(ValueError, match='Trainer: n_devices=3 but the '
                     'strategy'):
    optimizers.Trainer(model, optimizers.SGD(0.1), n_devices=3)
