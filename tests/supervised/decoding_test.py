"""Autoregressive sampling: the cache agrees with recomputing the prefix."""

import doctest

import numpy as np
import pytest

from tfnp_trax import fastmath
from tfnp_trax import layers as tl
from tfnp_trax import models
from tfnp_trax import shapes
from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.supervised import decoding

VOCAB = 13
CONFIG = dict(d_model=16, d_ff=32, n_heads=2, n_layers=2, max_len=12,
              dropout=0.0)


@pytest.fixture(scope='module')
def lm_pair():
  """An eval-mode TransformerLM and a predict-mode copy with its weights."""
  full = models.TransformerLM(VOCAB, mode='eval', **CONFIG)
  full.init(shapes.ShapeDtype((2, 12), jnp.int32),
            rng=fastmath.random.get_prng(1))
  cached = models.TransformerLM(VOCAB, mode='predict', **CONFIG)
  cached.init(shapes.ShapeDtype((2, 1), jnp.int32))
  cached.weights = full.weights
  return full, cached, cached.state


def _greedy_by_recomputing(full, prompt, n_tokens):
  """Reruns the whole prefix each step; the reference for the cache."""
  tokens = prompt
  for _ in range(n_tokens):
    padded = np.concatenate([tokens, np.zeros_like(tokens[:, :1])], 1)
    logits = np.asarray(full(jnp.asarray(padded)))[:, tokens.shape[1]]
    tokens = np.concatenate([tokens, logits.argmax(-1)[:, None]], 1)
  return tokens[:, prompt.shape[1]:]


def test_cached_step_logits_match_full_prefix_logits(lm_pair, rng):
  full, cached, fresh = lm_pair
  cached.state = fresh
  tokens = rng.integers(1, VOCAB, size=(2, 7)).astype(np.int32)
  want = np.asarray(full(jnp.asarray(tokens)))
  fed = np.concatenate([np.zeros((2, 1), np.int32), tokens[:, :-1]], 1)
  got = [np.asarray(cached(jnp.asarray(fed[:, :3])))]  # A 3-token prompt.
  got += [np.asarray(cached(jnp.asarray(fed[:, t:t + 1])))
          for t in range(3, 7)]
  np.testing.assert_allclose(np.concatenate(got, 1), want, rtol=1e-4,
                             atol=1e-5)


def test_greedy_decoding_matches_recomputing_and_traces_once(lm_pair, rng):
  full, cached, fresh = lm_pair
  traces = []
  pure_fn = cached.pure_fn

  def counting_pure_fn(*args, **kwargs):
    traces.append(tuple(args[0].shape))  # Runs only while tracing.
    return pure_fn(*args, **kwargs)
  cached.pure_fn = counting_pure_fn
  prompt = rng.integers(1, VOCAB, size=(2, 3)).astype(np.int32)
  want = _greedy_by_recomputing(full, np.concatenate(
      [np.zeros((2, 1), np.int32), prompt], 1)[:, 1:], 7)
  for _ in range(2):
    cached.state = fresh
    got = decoding.autoregressive_sample(
        cached, inputs=prompt, batch_size=2, temperature=0.0, eos_id=-1,
        max_length=7)
    np.testing.assert_array_equal(got, want)
  # One trace for the prompt's shape, one for single tokens; none on reuse.
  assert traces == [(2, 4), (2, 1)]
  recomputed = decoding.autoregressive_sample(
      full, inputs=prompt, batch_size=2, temperature=0.0, eos_id=-1,
      max_length=7, eval_mode=True, accelerate=False)
  np.testing.assert_array_equal(recomputed, want)


def test_encoder_decoder_cached_decoding_matches_eval_mode(rng):
  small = dict(d_model=8, d_ff=16, n_heads=2, n_encoder_layers=1,
               n_decoder_layers=1, max_len=8, dropout=0.0)
  source = rng.integers(1, 9, size=(2, 5)).astype(np.int32)
  full = models.Transformer(9, mode='eval', **small)
  full.init(shapes.signature((jnp.asarray(source), jnp.asarray(source))))
  cached = models.Transformer(9, mode='predict', **small)
  cached.init(shapes.signature((jnp.asarray(source),
                                jnp.zeros((2, 1), jnp.int32))))

  def leaves(layer):
    if not layer.sublayers:
      yield layer
    for sub in layer.sublayers:
      yield from leaves(sub)
  for a, b in zip(leaves(full), leaves(cached)):  # The cache adds wrappers.
    b.weights = a.weights
  kwargs = dict(inputs=source, batch_size=2, temperature=0.0, eos_id=-1,
                max_length=5, accelerate=False)
  np.testing.assert_array_equal(
      decoding.autoregressive_sample(cached, **kwargs),
      decoding.autoregressive_sample(full, eval_mode=True, **kwargs))


def _fixed_logits_model(probs):
  log_probs = jnp.asarray(np.log(probs), jnp.float32)
  return tl.Fn('FixedLogits', lambda x: jnp.zeros(
      tuple(x.shape) + (len(probs),), jnp.float32) + log_probs)


def test_temperature_sampling_follows_softmax_of_scaled_logits():
  probs = np.array([0.2, 0.3, 0.5])
  model = _fixed_logits_model(probs)
  for temperature in (1.0, 2.0):
    stream = decoding.autoregressive_sample_stream(
        model, batch_size=4000, temperature=temperature, accelerate=False,
        rng=fastmath.random.get_prng(4))
    first = next(stream)
    want = probs ** (1.0 / temperature)
    np.testing.assert_allclose(np.bincount(first, minlength=3) / 4000.0,
                               want / want.sum(), atol=0.03)
  greedy = decoding.autoregressive_sample(model, batch_size=3,
                                          temperature=0.0, max_length=2,
                                          eos_id=-1)
  np.testing.assert_array_equal(greedy, np.full((3, 2), 2))


def test_sampling_is_reproducible_with_a_key(lm_pair):
  _, cached, fresh = lm_pair
  runs = []
  for _ in range(2):
    cached.state = fresh
    runs.append(decoding.autoregressive_sample(
        cached, batch_size=2, temperature=1.0, eos_id=-1, max_length=6,
        accelerate=False, rng=fastmath.random.get_prng(9)))
  np.testing.assert_array_equal(runs[0], runs[1])
  assert runs[0].shape == (2, 6) and (runs[0] < VOCAB).all()


def test_stops_when_every_sequence_has_produced_eos():
  model = _fixed_logits_model(np.array([0.1, 0.2, 0.7]))
  out = decoding.autoregressive_sample(model, batch_size=2, temperature=0.0,
                                       eos_id=2, max_length=10)
  np.testing.assert_array_equal(out, [[2], [2]])


def test_errors_name_the_problem(lm_pair):
  _, cached, fresh = lm_pair
  with pytest.raises(ValueError, match=r'inputs must have shape '
                     r'\(batch_size=1, length\), got shape \(2, 3\)'):
    next(decoding.autoregressive_sample_stream(
        cached, inputs=np.ones((2, 3), np.int32)))
  cached.state = fresh
  with pytest.raises(ValueError, match=r'reach length 13 but layer '
                     r'(PositionalEncoding|DotProductCausalAttention) '
                     r'supports at most 12 positions'):
    decoding.autoregressive_sample(cached, batch_size=2, temperature=0.0,
                                   eos_id=-1, max_length=20,
                                   accelerate=False)


def test_docstring_examples():
  result = doctest.testmod(decoding, extraglobs={
      'models': models, 'shapes': shapes, 'jnp': jnp})
  assert result.attempted > 0 and result.failed == 0
