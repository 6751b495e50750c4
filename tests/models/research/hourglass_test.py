"""Tests of HourglassLM (tfnp_trax/models/research/hourglass.py).

Trax 1.4.1's outputs for tiny configurations, given the same weights, are
the reference (tests/testdata/rel_attention/); the layers inside are checked
against NumPy in tests/layers/research/. Trax's HourglassLM has no predict
mode, so instead of fast decoding the model's causality is checked.
"""

import functools

import numpy as np
import pytest

from tests.layers.research import _rel_fixtures as fx
from tfnp_trax import fastmath
from tfnp_trax import layers as tl
from tfnp_trax import models
from tfnp_trax import shapes
from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.layers.research import resampling as rs
from tfnp_trax.models.research import hourglass

TINY = dict(d_model=8, d_ff=16, n_heads=2, dropout=0.0)

# The same constructors as tests/testdata/rel_attention/make_fixtures.py.
CASES = {
    'hourglass_tiny': lambda: hourglass.HourglassLM(
        11, hierarchy='1@2', mode='eval', **TINY),
    'hourglass_two_levels': lambda: hourglass.HourglassLM(
        11, vanilla_layers=(1, 0), hierarchy='1@2 1@4 1@2', mode='eval',
        **TINY),
    'hourglass_sf3': lambda: hourglass.HourglassLM(
        11, vanilla_layers=(0, 1), hierarchy='2@3', mode='eval', **TINY),
    'hourglass_variants': lambda: hourglass.HourglassLM(
        11, hierarchy='1@2', mode='eval', ff_activation=tl.Relu,
        vanilla_attn_type=tl.CausalAttention,
        middle_attn_type=tl.CausalAttention,
        downsampling_fn=rs.LinearPooling, upsampling_fn=rs.NaiveUpsampling,
        **TINY),
}


@pytest.mark.parametrize('name', sorted(CASES))
def test_matches_trax(name):
  fx.assert_structure_matches(name, CASES[name]())
  modes = ('eager', 'xla') if name == 'hourglass_tiny' else ('eager',)
  fx.assert_outputs_match(name, CASES[name](), modes=modes, atol=5e-6)


def test_train_mode_and_defaults_match_trax_structure():
  fx.assert_structure_matches('hourglass_train', hourglass.HourglassLM(
      11, d_model=8, d_ff=16, n_heads=2, hierarchy='1@2'))
  assert str(hourglass.HourglassLM(11)) == fx.record(
      'hourglass_default_repr')['repr']


def test_exported_as_in_trax():
  assert models.HourglassLM is hourglass.HourglassLM
  assert models.hourglass is hourglass


@pytest.mark.parametrize('name', ['hourglass_two_levels', 'hourglass_sf3'])
def test_is_causal(name):
  # Logits at position t may depend only on tokens before t: changing token
  # t leaves positions 0..t unchanged, and changes some later position.
  model = fx.init_with_trax_weights(CASES[name](), name)
  key = fastmath.random.get_prng(0)
  run = fastmath.jit(lambda x: model.pure_fn(x, model.weights, model.state,
                                             key)[0])
  tokens = np.asarray(fx.inputs(name))
  base = np.asarray(run(tokens))
  for t in range(tokens.shape[1] - 1):
    changed = tokens.copy()
    changed[:, t] = changed[:, t] % 10 + 1
    out = np.asarray(run(changed))
    np.testing.assert_allclose(out[:, :t + 1], base[:, :t + 1], atol=1e-6,
                               err_msg=f'position {t}')
    assert not np.allclose(out[:, t + 1:], base[:, t + 1:], atol=1e-6)


def test_gradient_matches_finite_differences():
  # d loss / d embedding table along one random direction, by autodiff and
  # by central differences of the float32 forward pass.
  name = 'hourglass_tiny'
  model = fx.init_with_trax_weights(CASES[name](), name)
  tokens = jnp.asarray(fx.inputs(name))
  rng = np.random.default_rng(0)
  ct = jnp.asarray(rng.normal(size=(2, 8, 11)).astype(np.float32))
  direction = rng.normal(size=(11, 8)).astype(np.float32)
  key = fastmath.random.get_prng(0)

  def loss(weights):
    return jnp.sum(model.pure_fn(tokens, weights, model.state, key)[0] * ct)

  def with_embedding(delta):
    leaves = fastmath.tree_flatten(model.weights)
    leaves[0] = leaves[0] + delta  # The embedding table is the first leaf.
    return fastmath.tree_unflatten(leaves, model.weights)[0]

  grads = fastmath.grad(loss)(model.weights)
  analytic = float(np.sum(np.asarray(fastmath.tree_flatten(grads)[0]) *
                          direction))
  eps = 1e-3
  numeric = (float(loss(with_embedding(eps * direction))) -
             float(loss(with_embedding(-eps * direction)))) / (2 * eps)
  np.testing.assert_allclose(analytic, numeric, rtol=2e-3)


def test_bad_configurations_are_named():
  with pytest.raises(ValueError, match=r"HourglassLM: mode='predict' is not "
                     r'supported'):
    hourglass.HourglassLM(11, mode='predict')
  with pytest.raises(ValueError, match=r"HourglassLM: hierarchy '1@2 1@4' "
                     r'is not a palindrome'):
    hourglass.HourglassLM(11, hierarchy='1@2 1@4')
  with pytest.raises(ValueError, match=r"HourglassLM: hierarchy '1@2 1@3 "
                     r"1@2': total shorten factor 3 is not a positive "
                     r"multiple of the previous level's 2"):
    hourglass.HourglassLM(11, hierarchy='1@2 1@3 1@2')
  with pytest.raises(ValueError, match=r"HourglassLM: hierarchy level '6x3'"):
    hourglass.HourglassLM(11, hierarchy='6x3')


def test_sequence_length_must_divide_by_the_shortening():
  model = hourglass.HourglassLM(11, hierarchy='1@2 1@4 1@2', mode='eval',
                                **TINY)
  with pytest.raises(ValueError, match=r'HourglassLM: sequence length 6 '
                     r'\(input shape \(2, 6\)\) is not divisible by the '
                     r'total shorten factor 4'):
    model.init(shapes.ShapeDtype((2, 6), jnp.int32))
  model.init(shapes.ShapeDtype((2, 8), jnp.int32))
  with pytest.raises(ValueError, match=r'HourglassLM: sequence length 10 '):
    model(np.ones((2, 10), np.int32))


def test_imagenet64_vanilla_attention_rotary_lsh_is_causal():
  # Trax's hourglass_imagenet64.gin: token-level blocks use
  # PureLSHSelfAttentionWrapper with rotary_position_emb=True, num_weights=2,
  # weights_format='model' and PureLSHSelfAttention (n_buckets=None,
  # n_hashes=2, n_chunks_before=1); Trax rotates the shared QK
  # (trax/layers/research/efficient_attention.py _ProjectAndSplitHeads).
  # One chunk per hashing round (chunk_len 8 = the length, no earlier
  # chunk) makes LSH attention exactly causal whatever the buckets, so the
  # model's causality can be checked; with several chunks a later token's
  # bucket moves earlier tokens' chunks (as in Trax).
  attn = functools.partial(
      tl.PureLSHSelfAttentionWrapper,
      pure_lsh_implementation=tl.PureLSHSelfAttention,
      rotary_position_emb=True, bias=True, num_weights=2,
      weights_format='model', chunk_len=8, n_buckets=None, n_chunks_after=0,
      n_chunks_before=0, n_hashes=2)
  model = hourglass.HourglassLM(
      11, vanilla_layers=(1, 1), hierarchy='1@2', mode='eval',
      vanilla_attn_type=attn, downsampling_fn=rs.LinearPooling,
      upsampling_fn=rs.LinearUpsampling, **TINY)
  assert 'Rotate' in repr(model)
  tokens = np.random.RandomState(0).randint(1, 11, (1, 8)).astype(np.int32)
  model.init(shapes.signature(tokens), rng=fastmath.random.get_prng(0))
  key = fastmath.random.get_prng(1)
  state = model.state

  def run(x):
    # The same hash keys every call: the state's buckets are not advanced.
    return np.asarray(model.pure_fn(x, model.weights, state, key)[0])
  base = run(tokens)
  assert base.shape == (1, 8, 11) and np.all(np.isfinite(base))
  for t in (2, 5):
    changed = tokens.copy()
    changed[:, t] = changed[:, t] % 10 + 1
    out = run(changed)
    np.testing.assert_allclose(out[:, :t + 1], base[:, :t + 1], atol=1e-5,
                               err_msg=f'position {t}')
    assert not np.allclose(out[:, t + 1:], base[:, t + 1:], atol=1e-6)
