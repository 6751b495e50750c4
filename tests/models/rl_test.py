"""Policy, Value, PolicyAndValue and Quality heads against NumPy."""

import inspect

import numpy as np
import pytest

from tests import _layer_testing as lt
from tfnp_trax import fastmath
from tfnp_trax import layers as tl
from tfnp_trax import models
from tfnp_trax import shapes
from tfnp_trax.models import rl as rl_models
from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.rl import distributions


def body(mode):
  del mode
  return tl.Serial(tl.Dense(5), tl.Tanh())


def np_dense(x, params):
  w, b = (np.asarray(p, np.float64) for p in params)
  return x @ w + b


@pytest.mark.parametrize('mode', lt.MODES)
def test_policy_matches_numpy(mode):
  x = np.random.default_rng(0).normal(size=(3, 2, 4)).astype(np.float32)
  model = models.Policy(distributions.Categorical(3), body=body)
  weights, state = model.init(shapes.signature(x))
  y, _ = lt.run_layer(model, x, mode)
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


def _random_weights(model, seed):
  """Random values for every weight leaf of `model`, and the tree of them."""
  rng = np.random.default_rng(seed)
  leaves = [rng.normal(size=np.shape(w)).astype(np.float32) * 0.5
            for w in fastmath.tree_leaves(model.weights)]
  return leaves, fastmath.tree_unflatten(list(leaves), model.weights)[0]


def np_tanh_body(x, w, b):
  return np.tanh(x.astype(np.float64) @ w + b)


def _layer_norm(x, scale, bias, eps=1e-6):
  x = x - x.mean(-1, keepdims=True)
  return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * scale + bias


def test_signatures_follow_trax():
  # trax/models/rl.py (Trax 1.4.1): argument names, order and defaults.
  def params(f):
    return [(p.name, p.default) for p in
            inspect.signature(f).parameters.values()]
  empty = inspect.Parameter.empty
  assert params(models.Policy) == [
      ('policy_distribution', empty), ('body', None), ('normalizer', None),
      ('head_init_range', None), ('batch_axes', None), ('mode', 'train')]
  assert params(models.Value) == [
      ('body', None), ('normalizer', None), ('inject_actions', False),
      ('inject_actions_n_layers', 1), ('inject_actions_dim', 64),
      ('batch_axes', None), ('mode', 'train'), ('is_discrete', False),
      ('vocab_size', 2), ('multiplicative_action_injection', False),
      ('head_init_range', None)]
  assert params(models.PolicyAndValue) == [
      ('policy_distribution', empty), ('body', None),
      ('policy_top', models.Policy), ('value_top', models.Value),
      ('normalizer', None), ('joint', True), ('mode', 'train')]
  assert params(models.Quality) == [
      ('body', None), ('normalizer', None), ('batch_axes', None),
      ('mode', 'train'), ('n_actions', 2), ('head_init_range', None)]


def test_quality_is_reexported_where_trax_has_it():
  assert rl_models.Quality is models.Quality
  assert 'Quality' in rl_models.__all__


@pytest.mark.parametrize('mode', lt.MODES)
@pytest.mark.parametrize('joint', [True, False])
def test_policy_and_value_match_numpy(joint, mode):
  x = np.random.default_rng(2).normal(size=(3, 4)).astype(np.float32)
  model = models.PolicyAndValue(distributions.Categorical(3), body=body,
                                joint=joint)
  model.init(shapes.signature(x))
  leaves, weights = _random_weights(model, seed=3)
  (dist_inputs, values), _ = lt.run_layer(model, x, mode, weights=weights)
  if joint:
    # One body (Dense 4->5, Tanh), then the policy and value Dense heads.
    bw, bb, pw, pb, vw, vb = leaves
    trunk = np_tanh_body(x, bw, bb)
    want = (trunk @ pw + pb, trunk @ vw + vb)
  else:
    # Each head on its own copy of the body.
    pbw, pbb, pw, pb, vbw, vbb, vw, vb = leaves
    want = (np_tanh_body(x, pbw, pbb) @ pw + pb,
            np_tanh_body(x, vbw, vbb) @ vw + vb)
  assert dist_inputs.shape == (3, 3) and values.shape == (3, 1)
  np.testing.assert_allclose(np.asarray(dist_inputs), want[0], rtol=1e-5,
                             atol=1e-5)
  np.testing.assert_allclose(np.asarray(values), want[1], rtol=1e-5,
                             atol=1e-5)


def test_separate_towers_have_their_own_body_weights():
  x = np.zeros((2, 4), np.float32)
  model = models.PolicyAndValue(distributions.Categorical(3), body=body,
                                joint=False)
  model.init(shapes.signature(x))
  leaves = [np.asarray(w) for w in fastmath.tree_leaves(model.weights)]
  assert len(leaves) == 8  # Two bodies (w, b) and two heads (w, b).
  assert not np.array_equal(leaves[0], leaves[4])  # Initialized apart.
  joint = models.PolicyAndValue(distributions.Categorical(3), body=body)
  joint.init(shapes.signature(x))
  assert len(fastmath.tree_leaves(joint.weights)) == 6


def test_policy_and_value_prints_as_trax():
  # Reprs of Trax 1.4.1's PolicyAndValue with this body (Trax prints its
  # activations wrapped in a Serial, from their shape asserts).
  tanh = str(tl.Tanh()).replace('\n', '\n    ')
  joint = str(models.PolicyAndValue(distributions.Categorical(3), body=body))
  assert joint == (
      'Serial_out2[\n  Serial[\n    Dense_5\n    ' + tanh + '\n  ]\n'
      '  Branch_out2[\n    Serial[\n      Dense_3\n    ]\n'
      '    Serial[\n      Dense_1\n    ]\n  ]\n]')
  separate = models.PolicyAndValue(distributions.Categorical(3), body=body,
                                   joint=False)
  assert [str(s) for s in separate.sublayers] == [
      str(tl.Branch(tl.Serial(body('train'), tl.Serial(tl.Dense(3))),
                    tl.Serial(body('train'), tl.Serial(tl.Dense(1)))))]


def test_policy_and_value_build_tops_as_trax():
  # Trax passes body=None, normalizer=None and mode to both tops.
  seen = []

  def policy_top(policy_distribution, body, normalizer, mode):
    seen.append(('policy', policy_distribution.n_inputs, body, normalizer,
                 mode))
    return tl.Dense(policy_distribution.n_inputs)

  def value_top(body, normalizer, mode):
    seen.append(('value', body, normalizer, mode))
    return tl.Dense(1)
  models.PolicyAndValue(distributions.Categorical(2), policy_top=policy_top,
                        value_top=value_top, mode='eval')
  assert seen == [('policy', 2, None, None, 'eval'),
                  ('value', None, None, 'eval')]


@pytest.mark.parametrize('mode', lt.MODES)
@pytest.mark.parametrize('multiplicative', [False, True])
def test_action_injection_matches_numpy(multiplicative, mode):
  rng = np.random.default_rng(4)
  obs = rng.normal(size=(3, 4)).astype(np.float32)
  actions = rng.normal(size=(3, 2)).astype(np.float32)
  model = models.Value(body=body, inject_actions=True, inject_actions_dim=6,
                       inject_actions_n_layers=2,
                       multiplicative_action_injection=multiplicative)
  model.init(shapes.signature((obs, actions)))
  leaves, weights = _random_weights(model, seed=5)
  got, _ = lt.run_layer(model, (obs, actions), mode, weights=weights)
  bw, bb, ow, ob, aw, ab, *rest = leaves
  x = np_tanh_body(obs, bw, bb) @ ow + ob
  a = actions.astype(np.float64) @ aw + ab
  if multiplicative:
    # Trax: LayerNorm(x * tanh(a)), with the LayerNorm's own scale and bias.
    scale, bias, *rest = rest
    h = _layer_norm(x * np.tanh(a), scale, bias)
  else:
    h = x + a
  w1, b1, w2, b2, hw, hb = rest
  h = np.maximum(h @ w1 + b1, 0)
  h = np.maximum(h @ w2 + b2, 0)
  np.testing.assert_allclose(np.asarray(got), h @ hw + hb, rtol=1e-4,
                             atol=1e-5)


def test_multiplicative_injection_prints_as_trax():
  model = models.Value(body=body, inject_actions=True, inject_actions_dim=4,
                       multiplicative_action_injection=True)
  injector = str(model.sublayers[1])
  assert injector.startswith(
      'Serial_in2[\n  Parallel_in2_out2[\n    Dense_4\n    Dense_4\n  ]\n'
      '  Serial_in2[\n    TanhMulGate_in2\n    LayerNorm\n  ]\n'
      '  Serial[\n    Dense_4\n')


def test_discrete_action_injection_embeds_actions():
  rng = np.random.default_rng(6)
  obs = rng.normal(size=(2, 4)).astype(np.float32)
  actions = np.array([2, 0], np.int32)
  model = models.Value(body=body, inject_actions=True, inject_actions_dim=3,
                       is_discrete=True, vocab_size=3,
                       multiplicative_action_injection=True)
  model.init(shapes.signature((obs, actions)))
  leaves, weights = _random_weights(model, seed=7)
  got = model((obs, actions), weights=weights)
  bw, bb, ow, ob, emb, scale, bias, w1, b1, hw, hb = leaves
  x = np_tanh_body(obs, bw, bb) @ ow + ob
  h = _layer_norm(x * np.tanh(emb[actions]), scale, bias)
  want = np.maximum(h @ w1 + b1, 0) @ hw + hb
  np.testing.assert_allclose(np.asarray(got), want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize('make', [
    lambda r: models.Policy(distributions.Categorical(64), body=body,
                            head_init_range=r),
    lambda r: models.Value(body=body, head_init_range=r),
    lambda r: models.Value(body=body, inject_actions=True,
                           inject_actions_dim=4, head_init_range=r),
    lambda r: models.Quality(body=body, n_actions=64, head_init_range=r)])
def test_head_init_range_bounds_the_head_kernel(make):
  x = np.zeros((2, 4), np.float32)
  sig = shapes.signature(x)
  model = make(1e-3)
  if model.n_in == 2:
    sig = shapes.signature((x, np.zeros((2, 2), np.float32)))
  model.init(sig)
  head_w, head_b = model.weights[-1]
  head_w = np.asarray(head_w)
  assert np.abs(head_w).max() <= 1e-3
  assert np.abs(head_w).max() > 1e-4  # Uniform in the range, not zeros.
  # The bias keeps Dense's default (normal, stddev 1e-6).
  assert np.abs(np.asarray(head_b)).max() < 1e-4
  # Without it the head's kernel is Glorot-initialized, far larger.
  default = make(None)
  default.init(sig)
  assert np.abs(np.asarray(default.weights[-1][0])).max() > 1e-2


@pytest.mark.parametrize('make,name', [
    (lambda: models.Value(head_init_range=-1.0), 'Value'),
    (lambda: models.Policy(distributions.Categorical(2),
                           head_init_range='small'), 'Policy')])
def test_head_init_range_must_be_positive(make, name):
  with pytest.raises(ValueError, match=rf'{name}: head_init_range must be a '
                     r'positive number or None, got'):
    make()


def test_batch_axes_leave_empty_parts_empty():
  # Trax folds only parts that exist: no body gives no BatchLeadingAxes.
  assert str(models.Value(batch_axes=1)) == 'Serial[\n  Dense_1\n]'
  model = models.Policy(distributions.Categorical(3), body=body, batch_axes=1)
  assert str(model.sublayers[0]).startswith(
      'BatchLeadingAxes[\n  Serial[\n    Dense_5\n')


def test_separate_towers_take_jnp_inputs_with_leading_axes():
  # (batch, time, features) inputs, as the agents pass them.
  dist = distributions.Gaussian((2,))
  model = models.PolicyAndValue(dist, body=body, joint=False)
  model.init(shapes.ShapeDtype((2, 1, 4)))
  dist_inputs, values = model(jnp.ones((2, 1, 4), dtype=jnp.float32))
  assert dist_inputs.shape == (2, 1, dist.n_inputs)
  assert values.shape == (2, 1, 1)
