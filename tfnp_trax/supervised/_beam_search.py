"""Beam search over a 'predict'-mode model's key/value cache.

The `n_beams` beams of each sequence run as `batch_size * n_beams` rows of
one batch (row `b * n_beams + k` is beam k of sequence b). Each step feeds
every row its newest token, scores all one-token extensions, keeps the best
`n_beams` per sequence and reorders the cache rows to follow the surviving
beams with a gather. The step is one compiled function, traced once for the
prompt's shape and once for single tokens.
"""

import numbers
import weakref

import numpy as np

from tfnp_trax import fastmath
from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.layers import decoding_steps
from tfnp_trax.supervised import _decode_utils

__all__ = ['beam_search']

_BEAM_STEPS = weakref.WeakKeyDictionary()


def _make_step(model, batch_size, n_beams, eos_id, alpha, accelerate,
               batch_major):
  """The compiled step; see `beam_search` for the scoring it implements."""
  cache = _BEAM_STEPS.setdefault(model, {})
  key = (batch_size, n_beams, eos_id, float(alpha), bool(accelerate),
         batch_major)
  if key in cache:
    return cache[key]
  model_ref = weakref.ref(model)  # The cache must not keep the model alive.
  templates = (_decode_utils.structure(model.weights),
               _decode_utils.structure(model.state))

  def step(x, t, log_probs_sum, finished, lengths, flat_weights, flat_state):
    weights = fastmath.tree_unflatten(list(flat_weights), templates[0])[0]
    state = fastmath.tree_unflatten(list(flat_state), templates[1])[0]
    return decoding_steps.beam_step(
        model_ref(), x, t, weights, state, log_probs_sum, finished, lengths,
        n_beams, eos_id, alpha, batch_major)

  if accelerate:
    step = fastmath.jit(step, jit_compile=True)
  cache[key] = step
  return step


def _prompt(model, inputs, batch_size, start_id):
  """`(tokens fed first [batch, T], source for two-input models or None)`."""
  _decode_utils.check_count(batch_size, 'batch_size', 'beam_search')
  _decode_utils.check_model(model, 'beam_search', batch_size)
  inputs = _decode_utils.check_inputs(inputs, batch_size, 'beam_search',
                                      model)
  start = _decode_utils.start_symbols(start_id, batch_size, 'beam_search')
  if model.n_in > 1 and inputs is not None:
    return start, inputs
  if inputs is not None:
    return np.concatenate([start, inputs], axis=1), None
  return start, None


def _check_args(model, n_beams, max_length, length_penalty, prompt_length):
  """Raises for unusable arguments; returns max_length as an int."""
  _decode_utils.check_count(n_beams, 'n_beams', 'beam_search')
  max_length = _decode_utils.check_max_length(
      max_length, 'beam_search', at_least_one_token=False)
  if isinstance(length_penalty, bool) or not isinstance(
      length_penalty, numbers.Real) or not np.isfinite(length_penalty):
    raise TypeError(f'beam_search: length_penalty must be a finite number '
                    f'(the exponent alpha; 0 ranks by log-probability '
                    f'alone), got {length_penalty!r}.')
  bound = _decode_utils.length_limit(model, eval_mode=False)
  if bound is None:
    return max_length
  limit, position = bound.limit, bound.position
  # The last token chosen is never fed back, so it needs no position.
  needed = position + prompt_length + max_length - 1
  if needed > limit:
    most = limit - position - prompt_length + 1
    fix = (f'Lower max_length to {most}' if most > 0 else
           'Shorten the prompt')
    raise ValueError(
        f'beam_search: max_length={max_length} needs {needed} positions '
        f'({position} already in the cache, {prompt_length} prompt tokens '
        f'and {max_length - 1} fed back) but layer {bound.layer_name} '
        f'supports at most {limit}. {fix}, or create the model with a '
        f'larger max_len.')
  return max_length


def beam_search(model, inputs=None, batch_size=1, n_beams=2, start_id=0,
                eos_id=1, max_length=100, length_penalty=1.0,
                accelerate=True):
  """The `n_beams` best continuations of each sequence, by beam search.

  Beams are ranked by log p(tokens) / ((5 + length) / 6) ** length_penalty
  (GNMT's length normalization; length_penalty=0 ranks by log-probability
  alone). A beam that produces `eos_id` is finished: it keeps its tokens and
  score, and its later positions are 0. Search stops after `max_length`
  tokens, or earlier once every beam of every sequence is finished. Trax
  1.4.1's signature; unlike Trax it also handles eos_id, the length penalty
  and batch_size > 1. The model's state is left as it was.

  Example:
    >>> model = models.TransformerLM(16, d_model=8, d_ff=16, n_layers=1,
    ...                              n_heads=2, max_len=8, mode='predict')
    >>> _ = model.init(shapes.ShapeDtype((1, 1), jnp.int32))
    >>> beams = beam_search(model, n_beams=2, eos_id=-1, max_length=4)
    >>> [(seq.shape, score.shape) for seq, score in beams]
    [((1, 4), (1,)), ((1, 4), (1,))]

  Args:
    model: a 'predict'-mode layer, initialized for batches of `batch_size`
      (its cache rows are copied once per beam); a two-input model (e.g.
      `Transformer`) gets `(inputs, tokens)`.
    inputs: int array (batch_size, length): a prompt the beams continue
      (one-input models), or the source sequence (two-input ones).
    batch_size: number of sequences searched in parallel.
    n_beams: beams kept per sequence; at most the vocabulary size.
    start_id: the id fed first, or an int array of shape (batch_size, 1).
    eos_id: the id that finishes a beam (-1 or None: none does).
    max_length: the most tokens generated.
    length_penalty: the exponent alpha of the length normalization.
    accelerate: compile the step with XLA (traced twice: prompt, tokens).

  Returns:
    A list of `n_beams` pairs `(tokens, scores)`, best first: tokens an int32
    NumPy array (batch_size, n) with n <= max_length, scores float32
    (batch_size,) holding each beam's length-normalized log-probability.

  Raises:
    ValueError: on an uninitialized or non-'predict' model, a batch-size
      mismatch, batch_size, n_beams or max_length below 1, n_beams above
      the vocabulary size, or max_length beyond the positions the model has
      left.
    TypeError: when `inputs`, `start_id` or `eos_id` are not integer token
      ids, a count is not an int, or length_penalty is not a number.
  """
  prompt, source = _prompt(model, inputs, batch_size, start_id)
  max_length = _check_args(model, n_beams, max_length, length_penalty,
                           prompt.shape[1])
  eos_id = _decode_utils.check_eos_id(eos_id, 'beam_search')
  n_rows = batch_size * n_beams
  flat_state = fastmath.tree_flatten(model.state)
  batch_major = tuple(decoding_steps.batch_major(leaf, batch_size)
                      for leaf in flat_state)
  flat_state = decoding_steps.repeat_rows(flat_state, batch_size, n_beams,
                                          batch_major)
  step = _make_step(model, batch_size, n_beams, eos_id, length_penalty,
                    accelerate, batch_major)
  flat_weights = fastmath.tree_flatten(model.weights)
  source = (jnp.asarray(np.repeat(source, n_beams, axis=0))
            if source is not None else None)
  tokens = np.repeat(prompt, n_beams, axis=0)
  # Only beam 0 is live at first, so the first step does not pick the
  # same token once per (identical) beam.
  sums = np.full((batch_size, n_beams), -np.inf, np.float32)
  sums[:, 0] = 0.0
  finished = np.zeros((batch_size, n_beams), bool)
  lengths = np.zeros((batch_size, n_beams), np.int32)
  seqs = np.zeros((batch_size, n_beams, 0), np.int32)
  for t in range(1, max_length + 1):
    x = jnp.asarray(tokens) if source is None else (source,
                                                    jnp.asarray(tokens))
    token, parent, sums, finished, lengths, scores, flat_state = step(
        x, jnp.asarray(t, jnp.int32), jnp.asarray(sums),
        jnp.asarray(finished), jnp.asarray(lengths), flat_weights,
        flat_state)
    token, parent = np.asarray(token), np.asarray(parent)
    seqs = np.concatenate([np.take_along_axis(seqs, parent[:, :, None], 1),
                           token[:, :, None]], axis=2)
    tokens = token.reshape((n_rows, 1))
    if np.asarray(finished).all():
      break
  scores = np.asarray(scores, np.float32)
  return [(seqs[:, k], scores[:, k]) for k in range(n_beams)]
