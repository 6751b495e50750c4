"""Policy, Value and PolicyAndValue heads against NumPy."""

import doctest

import numpy as np
import pytest

from tests import _modes
from tfnp_trax import fastmath
from tfnp_trax import layers as tl
from tfnp_trax import models
from tfnp_trax import shapes
from tfnp_trax.models import rl as rl_models
from tfnp_trax.rl import distributions


def body(mode):
  del mode
  return tl.Serial(tl.Dense(5), tl.Tanh())


def np_dense(x, params):
  w, b = (np.asarray(p, np.float64) for p in params)
  return x @ w + b


@pytest.mark.parametrize('mode', _modes.MODES)
def test_policy_matches_numpy(mode):
  x = np.random.default_rng(0).normal(size=(3, 2, 4)).astype(np.float32)
  model = models.Policy(distributions.Categorical(3), body=body)
  weights, state = model.init(shapes.signature(x))
  y, _ = _modes.run_layer(model, x, mode)
  assert y.shape == (3, 2, 3)
  (dense_w, _), head_w = weights  # (body: (Dense, Tanh), head Dense).
  expected = np_dense(np.tanh(np_dense(x, dense_w)), head_w)
  np.testing.assert_allclose(np.asarray(y), expected, rtol=1e-5, atol=1e-6)


def test_value_and_policy_and_value_shapes():
  x = np.zeros((4, 1, 3), np.float32)
  value = models.Value(body=body)
  value.init(shapes.signature(x))
  assert value(x).shape == (4, 1, 1)
  joint = models.PolicyAndValue(distributions.Gaussian((2,),
                                                       learn_std='shared'),
                                body=body)
  joint.init(shapes.signature(x))
  dist_inputs, values = joint(x)
  assert dist_inputs.shape == (4, 1, 3) and values.shape == (4, 1, 1)


def test_shared_body_feeds_both_heads():
  x = np.random.default_rng(1).normal(size=(2, 3)).astype(np.float32)
  joint = models.PolicyAndValue(distributions.Categorical(2), body=body)
  weights, _ = joint.init(shapes.signature(x))
  # Weights: (body, Branch: ((), (policy top, value top))).
  trunk = np.tanh(np_dense(x, weights[0][0]))
  dist_inputs, values = joint(x)
  policy_head = weights[1][1][0][0]
  value_head = weights[1][1][1][0]
  np.testing.assert_allclose(np.asarray(dist_inputs),
                             np_dense(trunk, policy_head), rtol=1e-5)
  np.testing.assert_allclose(np.asarray(values), np_dense(trunk, value_head),
                             rtol=1e-5)


def test_head_init_range_and_action_injection():
  x = np.zeros((2, 3), np.float32)
  model = models.Policy(distributions.Categorical(4), head_init_range=1e-3)
  weights, _ = model.init(shapes.signature(x))
  assert np.abs(np.asarray(weights[0][0])).max() <= 1e-3
  q = models.Value(body=body, inject_actions=True, inject_actions_dim=8,
                   is_discrete=True, vocab_size=3)
  actions = np.array([0, 2], np.int32)
  q.init(shapes.signature((x, actions)))
  assert q((x, actions)).shape == (2, 1)


def test_batch_axes_fold_leading_axes():
  x = np.ones((2, 3, 4), np.float32)
  model = models.Policy(distributions.Categorical(2), body=body,
                        batch_axes=1)
  model.init(shapes.signature(x))
  assert model(x).shape == (2, 3, 2)


def test_docstrings():
  results = doctest.testmod(rl_models, extraglobs={'tl': tl,
                                                   'fastmath': fastmath})
  assert results.failed == 0 and results.attempted > 0
