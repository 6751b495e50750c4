"""Autoregressive sampling: the cache agrees with recomputing the prefix."""


import numpy as np
import pytest

from tfnp_trax import fastmath
from tfnp_trax import layers as tl
from tfnp_trax import models
from tfnp_trax import shapes
from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.supervised import _decode_utils
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
  # object.__setattr__: layers refuse new public attributes (typo guard).
  object.__setattr__(cached, 'pure_fn', counting_pure_fn)
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


@pytest.mark.parametrize('sampler', [decoding.autoregressive_sample,
                                     decoding.beam_search])
def test_model_and_inputs_are_checked_before_decoding(lm_pair, sampler):
  full, cached, fresh = lm_pair
  name = sampler.__name__
  with pytest.raises(ValueError, match=name + r": expected a model built with "
                     r"mode='predict' .* but Serial's layers are in mode "
                     r"\['eval'\]"):
    sampler(full, max_length=2, accelerate=False)
  with pytest.raises(ValueError, match=name + r': model Serial is not '
                     r'initialized; call model.init\(shapes.ShapeDtype\(\(3, '
                     r'1\), jnp.int32\)\)'):
    sampler(models.TransformerLM(VOCAB, mode='predict', **CONFIG),
            batch_size=3, max_length=2, accelerate=False)
  cached.state = fresh
  with pytest.raises(TypeError, match=name + r': inputs must be integer token '
                     r'ids, got dtype float64'):
    sampler(cached, inputs=np.ones((2, 3)), batch_size=2, max_length=2,
            accelerate=False)
  assert _same_tree(cached.state, fresh)


def test_eval_mode_sampling_accepts_any_mode_and_integer_lists(lm_pair):
  full, _, _ = lm_pair
  out = decoding.autoregressive_sample(
      full, inputs=[[3, 4], [5, 6]], batch_size=2, temperature=0.0,
      eos_id=-1, max_length=2, accelerate=False, eval_mode=True)
  np.testing.assert_array_equal(
      out, _greedy_by_recomputing(full, np.array([[3, 4], [5, 6]]), 2))


def test_length_limit_is_a_named_bound_that_tracks_the_cache(lm_pair):
  full, cached, fresh = lm_pair
  cached.state = fresh
  bound = _decode_utils.length_limit(cached, eval_mode=False)
  assert isinstance(bound, _decode_utils.LengthBound)
  assert (bound.limit, bound.position, bound.room) == (12, 0, 12)
  assert bound.layer_name in ('PositionalEncoding',
                              'DotProductCausalAttention')
  cached(jnp.zeros((2, 3), jnp.int32))  # A 3-token prompt fills the cache.
  bound = _decode_utils.length_limit(cached, eval_mode=False)
  assert (bound.limit, bound.position, bound.room) == (12, 3, 9)
  # In eval mode nothing is cached: the positional encoding bounds from 0.
  assert _decode_utils.length_limit(full, eval_mode=True) == (
      _decode_utils.LengthBound('PositionalEncoding', 12, 0))
  assert _decode_utils.length_limit(full, eval_mode=False) is None
  assert _decode_utils.length_limit(tl.Dense(3), eval_mode=True) is None
  cached.state = fresh


# -- Beam search --------------------------------------------------------------


def _predict_copy(full):
  """A predict-mode TransformerLM with `full`'s weights and its own steps."""
  model = models.TransformerLM(VOCAB, mode='predict', **CONFIG)
  model.init(shapes.ShapeDtype((2, 1), jnp.int32))
  model.weights = full.weights
  return model


def _same_tree(a, b):
  return all(np.array_equal(x, y) for x, y in zip(fastmath.tree_flatten(a),
                                                   fastmath.tree_flatten(b)))


def test_beam_search_with_one_beam_is_greedy_sampling(lm_pair, rng):
  _, cached, fresh = lm_pair
  prompt = rng.integers(1, VOCAB, size=(2, 3)).astype(np.int32)
  for inputs in (None, prompt):
    cached.state = fresh
    greedy = decoding.autoregressive_sample(
        cached, inputs=inputs, batch_size=2, temperature=0.0, eos_id=-1,
        max_length=7)
    cached.state = fresh
    (tokens, scores), = decoding.beam_search(
        cached, inputs=inputs, batch_size=2, n_beams=1, eos_id=-1,
        max_length=7)
    np.testing.assert_array_equal(tokens, greedy)
    assert tokens.dtype == np.int32 and scores.shape == (2,)
    assert _same_tree(cached.state, fresh)  # Beam search leaves the state.


def test_beam_search_scores_are_the_eval_models_and_trace_twice(lm_pair,
                                                                rng):
  full, _, _ = lm_pair
  model = _predict_copy(full)
  traces = []
  pure_fn = model.pure_fn

  def counting_pure_fn(*args, **kwargs):
    traces.append(tuple(args[0].shape))  # Runs only while tracing.
    return pure_fn(*args, **kwargs)
  # object.__setattr__: layers refuse new public attributes (typo guard).
  object.__setattr__(model, 'pure_fn', counting_pure_fn)
  prompt = rng.integers(1, VOCAB, size=(2, 2)).astype(np.int32)
  alpha = 0.6
  for _ in range(2):
    beams = decoding.beam_search(model, inputs=prompt, batch_size=2,
                                 n_beams=3, eos_id=-1, max_length=6,
                                 length_penalty=alpha)
  assert traces == [(6, 3), (6, 1)]  # Prompt, then single tokens; reused.
  assert len(beams) == 3
  # Every beam's score is the full-prefix model's log-probability of its
  # tokens (after the prompt), length-normalized: the reordered cache
  # gives the same logits as recomputing.
  for tokens, scores in beams:
    assert tokens.shape == (2, 6)
    sequence = np.concatenate([prompt, tokens], axis=1)
    log_probs = np.asarray(full(jnp.asarray(sequence)), np.float64)
    log_probs -= np.log(np.exp(log_probs).sum(-1, keepdims=True))
    picked = np.take_along_axis(log_probs[:, 1:], sequence[:, 1:, None],
                                axis=2)[..., 0][:, prompt.shape[1] - 1:]
    np.testing.assert_allclose(scores, picked.sum(1) / (11 / 6) ** alpha,
                               rtol=1e-4, atol=1e-4)
  all_scores = np.stack([s for _, s in beams], axis=1)
  assert (np.diff(all_scores, axis=1) <= 0).all()  # Best first.
  for row in range(2):
    assert len({tuple(t[row]) for t, _ in beams}) == 3  # Distinct beams.


def test_encoder_decoder_beam_search_with_one_beam_is_greedy(rng):
  small = dict(d_model=8, d_ff=16, n_heads=2, n_encoder_layers=1,
               n_decoder_layers=1, max_len=8, dropout=0.0)
  source = rng.integers(1, 9, size=(2, 5)).astype(np.int32)
  model = models.Transformer(9, mode='predict', **small)
  model.init(shapes.signature((jnp.asarray(source),
                               jnp.zeros((2, 1), jnp.int32))))
  fresh = model.state
  kwargs = dict(inputs=source, batch_size=2, eos_id=-1, max_length=5)
  greedy = decoding.autoregressive_sample(model, temperature=0.0, **kwargs)
  model.state = fresh
  (tokens, _), = decoding.beam_search(model, n_beams=1, **kwargs)
  np.testing.assert_array_equal(tokens, greedy)
  # The encoder's cached outputs are copied to every beam.
  beams = decoding.beam_search(model, n_beams=3, **kwargs)
  assert [t.shape for t, _ in beams] == [(2, 5)] * 3


def _markov_model(table):
  """Next-token log-probs given only the previous token: `table[prev]`."""
  model = tl.Embedding(len(table), len(table))
  model.init(shapes.ShapeDtype((1, 1), jnp.int32))
  model.weights = jnp.asarray(table, jnp.float32)
  return model


def _exhaustive(table, prev, n_beams, eos_id, max_length, alpha):
  """The best `n_beams` (score, tokens) over every possible output."""
  found = []

  def extend(prev, tokens, log_prob):
    if tokens and (tokens[-1] == eos_id or len(tokens) == max_length):
      found.append((log_prob / ((5 + len(tokens)) / 6) ** alpha,
                    tuple(tokens)))
      return
    for token in range(len(table)):
      extend(token, tokens + [token], log_prob + table[prev, token])
  extend(prev, [], 0.0)
  return sorted(found, key=lambda f: -f[0])[:n_beams]


def _beam_search_is_exact(table, prev, n_beams, eos_id, max_length, alpha):
  """Whether the best beams of each length grow out of shorter best beams.

  Then keeping the best `n_beams` at every step loses nothing, and beam
  search must return exactly what the exhaustive search finds.
  """
  for length in range(2, max_length + 1):
    best = _exhaustive(table, prev, n_beams, eos_id, length, alpha)
    shorter = {t for _, t in _exhaustive(table, prev, n_beams, eos_id,
                                         length - 1, alpha)}
    if not all(t[:length - 1] in shorter for _, t in best):
      return False
  return True


def _random_table(seed, vocab):
  logits = np.random.RandomState(seed).normal(size=(vocab, vocab))
  return logits - np.log(np.exp(logits).sum(-1, keepdims=True))


@pytest.mark.parametrize('alpha', [0.0, 0.6, 2.0])
@pytest.mark.parametrize('eos_id', [-1, 1])
def test_beam_search_equals_exhaustive_search(alpha, eos_id):
  vocab, n_beams, max_length, prompts = 4, 3, 4, (2, 3)

  def suits(table):
    # Beam search is provably exact, and with an eos some best beam ends
    # early (so finished beams are ranked against live ones).
    exact = all(_beam_search_is_exact(table, p, n_beams, eos_id, max_length,
                                      alpha) for p in prompts)
    ended = any(len(seq) < max_length for p in prompts for _, seq in
                _exhaustive(table, p, n_beams, eos_id, max_length, alpha))
    return exact and (eos_id < 0 or ended)
  seed = next(s for s in range(300) if suits(_random_table(s, vocab)))
  table = _random_table(seed, vocab)
  beams = decoding.beam_search(
      _markov_model(table), inputs=np.array(prompts)[:, None], batch_size=2,
      n_beams=n_beams, eos_id=eos_id, max_length=max_length,
      length_penalty=alpha)
  for row, prev in enumerate(prompts):
    want = _exhaustive(table, prev, n_beams, eos_id, max_length, alpha)
    for (tokens, scores), (score, seq) in zip(beams, want):
      padded = list(seq) + [0] * (tokens.shape[1] - len(seq))
      assert tokens[row].tolist() == padded  # 0s after eos.
      np.testing.assert_allclose(scores[row], score, rtol=1e-5, atol=1e-5)


def test_beam_search_with_a_beam_per_token_is_exact_for_two_steps():
  # With n_beams == vocabulary size the first step keeps every token, so
  # the second step sees every sequence: exact for any table.
  table = _random_table(0, 4)
  for eos_id, alpha in ((1, 1.0), (2, 0.0), (-1, 0.6)):
    beams = decoding.beam_search(_markov_model(table), n_beams=4,
                                 eos_id=eos_id, max_length=2,
                                 length_penalty=alpha)
    want = _exhaustive(table, 0, 4, eos_id, 2, alpha)
    got = [(float(s[0]), tuple(t[0][:len(w)]))
           for (t, s), (_, w) in zip(beams, want)]
    assert [g[1] for g in got] == [w[1] for w in want]
    np.testing.assert_allclose([g[0] for g in got], [w[0] for w in want],
                               rtol=1e-5)


def test_beam_search_stops_when_every_beam_has_ended():
  # Token 1 (eos) is by far the likeliest after the start token.
  table = np.log(np.full((3, 3), 0.05))
  table[:, 1] = np.log(0.9)
  beams = decoding.beam_search(_markov_model(table), n_beams=2, eos_id=1,
                               max_length=10, length_penalty=0.0)
  assert beams[0][0].tolist() == [[1, 0]]  # Ended at once, then padding.
  np.testing.assert_allclose(beams[0][1], [np.log(0.9)], rtol=1e-6)
  assert beams[1][0].shape == (1, 2) and beams[1][0][0, 1] == 1


def test_beam_search_errors_name_the_numbers(lm_pair):
  _, cached, fresh = lm_pair
  cached.state = fresh
  with pytest.raises(ValueError, match=r'beam_search: n_beams=14 is larger '
                     r'than the vocabulary: the model scores 13 tokens'):
    decoding.beam_search(cached, batch_size=2, n_beams=14, max_length=5,
                         accelerate=False)
  with pytest.raises(ValueError, match=r'beam_search: max_length=20 needs 20 '
                     r'positions \(0 already in the cache, 1 prompt tokens '
                     r'and 19 fed back\) but layer (PositionalEncoding|'
                     r'DotProductCausalAttention) supports at most 12\. '
                     r'Lower max_length to 12'):
    decoding.beam_search(cached, batch_size=2, max_length=20)
  with pytest.raises(ValueError, match=r'beam_search: inputs must have shape '
                     r'\(batch_size=1, length\), got shape \(2, 3\)'):
    decoding.beam_search(cached, inputs=np.ones((2, 3), np.int32))
  with pytest.raises(ValueError, match=r'n_beams must be a positive int, '
                     r'got 0'):
    decoding.beam_search(cached, batch_size=2, n_beams=0)
  assert _same_tree(cached.state, fresh)


def test_eos_id_none_runs_to_max_length_and_a_whole_float_is_an_id():
  model = _fixed_logits_model(np.array([0.1, 0.2, 0.7]))
  # None: no id ends a sequence, so every one of the max_length tokens.
  out = decoding.autoregressive_sample(model, temperature=0.0, eos_id=None,
                                       max_length=4, accelerate=False)
  np.testing.assert_array_equal(out, [[2, 2, 2, 2]])
  # 2.0 names id 2 (Trax compares ids with ==): the first token ends it.
  out = decoding.autoregressive_sample(model, temperature=0.0, eos_id=2.0,
                                       max_length=4, accelerate=False)
  np.testing.assert_array_equal(out, [[2]])
  beams = decoding.beam_search(model, n_beams=1, eos_id=None, max_length=3,
                               accelerate=False)
  np.testing.assert_array_equal(beams[0][0], [[2, 2, 2]])


@pytest.mark.parametrize('max_length,n_tokens', [(2.5, 3), (3.0, 3),
                                                   (0, 1), (-4, 1)])
def test_max_length_counts_tokens_as_trax_does(max_length, n_tokens):
  # trax/supervised/decoding.py, autoregressive_sample: the count is tested
  # with `counter >= max_length` after each token, the first one included.
  model = _fixed_logits_model(np.array([0.1, 0.2, 0.7]))
  out = decoding.autoregressive_sample(model, temperature=0.0, eos_id=None,
                                       max_length=max_length,
                                       accelerate=False)
  np.testing.assert_array_equal(out, [[2] * n_tokens])
  # beam_search tests `counter < max_length` before each step.
  if max_length > 0:
    beams = decoding.beam_search(model, n_beams=1, eos_id=None,
                                 max_length=max_length, accelerate=False)
    np.testing.assert_array_equal(beams[0][0], [[2] * n_tokens])


def test_start_id_of_shape_batch_feeds_each_sequence_its_own_id():
  # Logits peak at (fed id + 1), so the first greedy token is start + 1.
  model = tl.Fn('NextId', lambda x: 10.0 * (
      jnp.arange(6)[None, None, :] == x[..., None] + 1).astype(jnp.float32))
  for start in (np.array([0, 3], np.int64), np.array([[0], [3]], np.int32)):
    out = decoding.autoregressive_sample(model, batch_size=2, start_id=start,
                                         temperature=0.0, eos_id=-1,
                                         max_length=1, accelerate=False)
    np.testing.assert_array_equal(out, [[1], [4]])


def test_stream_checks_its_arguments_when_made_not_when_read():
  model = _fixed_logits_model(np.array([0.5, 0.5]))
  with pytest.raises(ValueError, match=r'batch_size must be a positive int, '
                     r'got 0'):
    decoding.autoregressive_sample_stream(model, batch_size=0)
  with pytest.raises(ValueError, match=r'temperature must be >= 0'):
    decoding.autoregressive_sample_stream(model, temperature=-0.5)


def test_temperature_may_be_a_zero_rank_array_or_infinite():
  model = _fixed_logits_model(np.array([0.1, 0.2, 0.7]))
  out = decoding.autoregressive_sample(model, temperature=np.array(0.0),
                                       eos_id=-1, max_length=2,
                                       accelerate=False)
  np.testing.assert_array_equal(out, [[2, 2]])  # Greedy: the 0.7 token.
  # Infinite temperature flattens the distribution: every token is drawn.
  first = next(decoding.autoregressive_sample_stream(
      model, batch_size=600, temperature=float('inf'), accelerate=False,
      rng=fastmath.random.get_prng(3)))
  np.testing.assert_allclose(np.bincount(first, minlength=3) / 600.0,
                             [1 / 3] * 3, atol=0.07)


def test_a_whole_float_max_length_counts_tokens_as_an_int():
  # Trax counts generated tokens up to max_length, so 3.0 means 3.
  model = _fixed_logits_model(np.array([0.1, 0.2, 0.7]))
  out = decoding.autoregressive_sample(model, temperature=0.0, eos_id=-1,
                                       max_length=3.0, accelerate=False)
  np.testing.assert_array_equal(out, [[2, 2, 2]])
  beams = decoding.beam_search(model, n_beams=1, eos_id=-1, max_length=2.0,
                               accelerate=False)
  np.testing.assert_array_equal(beams[0][0], [[2, 2]])


class _CountingLM(tl.Layer):
  """Predicts (sum of every token it was fed) % 5, via its own __call__.

  A stand-in for a trained model as Trax's tests write them: it overrides
  `__call__` and keeps what it saw in `state`, so it is never initialized.
  """

  def __init__(self):
    super().__init__()
    self._seen = None

  @property
  def state(self):
    return self._seen

  @state.setter
  def state(self, state):
    self._seen = state

  def __call__(self, x, rng=None):
    del rng
    assert isinstance(x, np.ndarray)  # Trax feeds NumPy arrays.
    if self._seen is None:
      self._seen = np.zeros(x.shape[0], np.int64)
    self._seen = self._seen + x.sum(axis=1)
    logits = np.full((x.shape[0], x.shape[1], 5), -100.0, np.float32)
    logits[np.arange(x.shape[0]), -1, self._seen % 5] = 100.0
    return logits


def test_a_model_with_its_own_call_is_sampled_by_calling_it():
  # trax/supervised/decoding.py samples with `model(x)`; the cache lives in
  # model.state, which the model keeps between calls.
  model = _CountingLM()
  out = decoding.autoregressive_sample(
      model, inputs=np.array([[2, 2], [1, 0]]), batch_size=2, start_id=0,
      temperature=0.0, eos_id=-1, max_length=3, accelerate=False)
  # By hand: sums 4 and 1 after the prompt; each token is added next.
  # Row 0: 4 -> 4, 8 -> 3, 11 -> 1. Row 1: 1 -> 1, 2 -> 2, 4 -> 4.
  np.testing.assert_array_equal(out, [[4, 3, 1], [1, 2, 4]])
  # The last token is returned, not fed back.
  np.testing.assert_array_equal(model.state, [11, 4])
