"""Decoding sequence models: autoregressive sampling and beam search.

A 'predict'-mode model (e.g. `TransformerLM(..., mode='predict')`) keeps a
key/value cache in its state, so each step feeds only the newest token. With
`eval_mode=True` any causal model is sampled by recomputing the whole prefix
at every step instead (padded to a power of two to bound recompilation).
`beam_search` (in _beam_search.py) keeps the best few continuations.
"""

import random as _py_random
import weakref

import numpy as np

from tfnp_trax import fastmath
from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.layers import decoding_steps
from tfnp_trax.supervised import _decode_utils
from tfnp_trax.supervised._beam_search import beam_search

__all__ = ['autoregressive_sample_stream', 'autoregressive_sample',
           'beam_search']

# Step functions per model and (temperature, accelerate, eval_mode); kept
# while the model lives, so repeated sampling does not retrace.
_STEP_FNS = weakref.WeakKeyDictionary()


def _make_step(model, temperature, accelerate, eval_mode):
  """`(x, rng, index, flat_weights, flat_state) -> (sample, state, rng)`.

  Weights and state cross the compiled boundary as flat lists: the nested
  trees (with an empty tuple per weightless layer) cost more to match
  against the trace than the step itself costs to run on small models. The
  cached step has one input shape, so it is compiled once with XLA, which
  fuses the many small per-token ops; eval-mode steps see a new padded
  length every few tokens and use plain graph compilation, which traces far
  faster.
  """
  cache = _STEP_FNS.setdefault(model, {})
  key = (float(temperature), bool(accelerate), bool(eval_mode))
  if key in cache:
    return cache[key]
  # A weak reference, so that the cache entry does not keep the model alive.
  model_ref = weakref.ref(model)
  templates = (_decode_utils.structure(model.weights),
               _decode_utils.structure(model.state))

  def step(x, rng, index, flat_weights, flat_state):
    weights = fastmath.tree_unflatten(list(flat_weights), templates[0])[0]
    state = fastmath.tree_unflatten(list(flat_state), templates[1])[0]
    sample, new_state, rng = decoding_steps.sample_step(
        model_ref(), x, weights, state, rng, index, temperature)
    return sample, fastmath.tree_flatten(new_state), rng

  if accelerate:
    step = fastmath.jit(step, jit_compile=not eval_mode)
  cache[key] = step, templates
  return cache[key]


def _called_stream(model, inputs, symbols, temperature, rng):
  """Trax's own loop, for a model class with its own `__call__`.

  Trax samples by calling `model(x)`, which keeps the cache in
  `model.state`; a layer that overrides `__call__` (a test double standing
  in for a trained model, say) is sampled that way, unaccelerated, with
  NumPy inputs as Trax feeds them.
  """
  two_inputs = model.n_in > 1 and inputs is not None
  if not two_inputs and inputs is not None:
    symbols = np.concatenate([symbols, inputs], axis=1)
  while True:
    keys = fastmath.random.split(rng, 3)
    rng = keys[2]
    out = model((inputs, symbols) if two_inputs else symbols, rng=keys[0])
    sample = np.asarray(decoding_steps.sample_token(
        out, symbols.shape[1] - 1, keys[1], temperature)).astype(np.int32)
    symbols = sample[:, None]
    yield sample


def _check_length(bound, needed):
  if bound is not None and needed > bound.limit:
    raise ValueError(
        f'autoregressive_sample: the sequence would reach length {needed} '
        f'but layer {bound.layer_name} supports at most {bound.limit} '
        f'positions (it already holds {bound.position}). Lower max_length, '
        f'or create the model with a larger max_len.')


def _padded_length(length, eval_min_length, bound):
  """Next power of two >= max(length, eval_min_length), within the bound."""
  padded = 1
  while padded < max(length, eval_min_length):
    padded *= 2
  if bound is not None:
    padded = min(padded, bound.limit)
  return max(padded, length)


def autoregressive_sample_stream(model, inputs=None, batch_size=1,
                                 temperature=1.0, start_id=0,
                                 accelerate=True, eval_mode=False,
                                 eval_min_length=1, rng=None):
  """Yields the next token of each sequence in the batch, forever.

  Args:
    model: a layer in 'predict' mode, initialized (e.g. with
      `model.init(shapes.ShapeDtype((batch_size, 1), jnp.int32))`) and given
      trained weights; or, with `eval_mode`, any causal model whose logits at
      position t depend on tokens before t (as TransformerLM's do). A
      two-input model (e.g. `Transformer`) gets `(inputs, tokens)`.
    inputs: int array (batch_size, length): a prompt the generated tokens
      continue (one-input models), or the source sequence (two-input ones).
    batch_size: number of sequences sampled in parallel.
    temperature: softmax temperature; 0.0 takes the argmax (greedy).
    start_id: the id fed first, or an int array of shape (batch_size, 1).
    accelerate: compile each step with `fastmath.jit`, once per input shape
      (a token-by-token stream after a prompt compiles twice); the cached
      step is compiled with XLA.
    eval_mode: recompute the whole prefix each step with a non-'predict'
      model (slow; for models without a cache).
    eval_min_length: in eval mode, the shortest padded length.
    rng: int32 [2] key for sampling; a fresh random key if None.

  Returns:
    An endless iterator of int32 NumPy arrays of shape (batch_size,). The
    arguments are checked when this is called, before any token is made.

  Raises:
    ValueError: on an uninitialized or non-'predict' model (without
      eval_mode), a batch-size mismatch, batch_size < 1, a negative
      temperature, a start_id of the wrong size, or (when read) when
      decoding would exceed the model's max_len / max_inference_length.
    TypeError: when `inputs` or `start_id` are not integer token ids, or
      batch_size is not an int.
  """
  name = 'autoregressive_sample'
  # Checked when called, not at the first token: a generator would only
  # fail when first read, away from the call with the wrong argument.
  _decode_utils.check_count(batch_size, 'batch_size', name)
  _decode_utils.check_model(model, name, batch_size, eval_mode)
  inputs = _decode_utils.check_inputs(inputs, batch_size, name, model)
  _decode_utils.check_temperature(temperature, name)
  _decode_utils.check_rng(rng, name)
  symbols = _decode_utils.start_symbols(start_id, batch_size, name)
  if _decode_utils.calls_itself(model) and not (accelerate or eval_mode):
    rng = (fastmath.random.get_prng(_py_random.randint(0, 2**31 - 1))
           if rng is None else rng)
    return _called_stream(model, inputs, symbols, temperature, rng)
  return _sample_stream(model, inputs, symbols, temperature, accelerate,
                        eval_mode, eval_min_length, rng)


def _sample_stream(model, inputs, symbols, temperature, accelerate,
                   eval_mode, eval_min_length, rng):
  """The token stream of `autoregressive_sample_stream`, once checked."""
  two_inputs = model.n_in > 1 and inputs is not None
  if not two_inputs and inputs is not None:
    symbols = np.concatenate([symbols, inputs], axis=1)
  if eval_mode:
    symbols = symbols[:, 1:]  # The model's ShiftRight supplies the start.

  step, templates = _make_step(model, temperature, accelerate, eval_mode)
  flat_weights = fastmath.tree_flatten(model.weights)
  flat_state = fastmath.tree_flatten(model.state)
  rng = (fastmath.random.get_prng(_py_random.randint(0, 2**31 - 1))
         if rng is None else rng)
  bound = _decode_utils.length_limit(model, eval_mode)
  position = bound.position if bound else 0
  inputs = jnp.asarray(inputs) if two_inputs else None
  last = jnp.asarray(0, jnp.int32)  # Logits index when feeding one token.
  while True:
    if eval_mode:
      length = symbols.shape[1]
      _check_length(bound, length + 1)
      padded = _padded_length(length + 1, eval_min_length, bound)
      x = np.pad(symbols, [(0, 0), (0, padded - length)])
      index = jnp.asarray(length, jnp.int32)
    else:
      position += symbols.shape[1]
      _check_length(bound, position)
      x = symbols
      index = (last if symbols.shape[1] == 1 else
               jnp.asarray(symbols.shape[1] - 1, jnp.int32))
    x = (inputs, jnp.asarray(x)) if two_inputs else jnp.asarray(x)
    sample, new_state, rng = step(x, rng, index, flat_weights, flat_state)
    sample = np.asarray(sample).astype(np.int32)
    if eval_mode:
      symbols = np.concatenate([symbols, sample[:, None]], axis=1)
    else:
      # The cache now holds the prefix: feed only the new token next.
      flat_state = list(new_state)
      model.state = fastmath.tree_unflatten(flat_state, templates[1])[0]
      symbols = sample[:, None]
    yield sample


def autoregressive_sample(model, inputs=None, batch_size=1, temperature=1.0,
                          start_id=0, eos_id=1, max_length=100,
                          accelerate=True, eval_mode=False, eval_min_length=1,
                          rng=None):
  """Samples sequences until every one has produced `eos_id` or max_length.

  Example:
    >>> model = models.TransformerLM(16, d_model=8, d_ff=16, n_layers=1,
    ...                              n_heads=2, max_len=8, mode='predict')
    >>> _ = model.init(shapes.ShapeDtype((1, 1), jnp.int32))
    >>> tokens = autoregressive_sample(model, temperature=0.0, eos_id=-1,
    ...                                max_length=4)  # -1: no early stop.
    >>> tokens.shape
    (1, 4)

  Args:
    model: see `autoregressive_sample_stream`.
    inputs: see `autoregressive_sample_stream`.
    batch_size: number of sequences sampled in parallel.
    temperature: softmax temperature; 0.0 is greedy.
    start_id: the id fed first, or an int array of shape (batch_size, 1).
    eos_id: the end-of-sequence id; sampling stops once every sequence in
      the batch has produced it (tokens after it are still returned). -1 or
      None: no early stop.
    max_length: the most tokens generated: ceil(max_length), and at least
      one, since Trax tests the count after the first token.
    accelerate: compile each step with `fastmath.jit`.
    eval_mode: recompute the whole prefix each step (see the stream).
    eval_min_length: in eval mode, the shortest padded length.
    rng: int32 [2] key for sampling; a fresh random key if None.

  Returns:
    int32 NumPy array (batch_size, n) with 1 <= n <= max_length.

  Raises:
    ValueError, TypeError: as `autoregressive_sample_stream`; also for a
      max_length that is not a finite number, or an eos_id that is not an
      int (or None: no early stop).
  """
  _decode_utils.check_count(batch_size, 'batch_size', 'autoregressive_sample')
  max_length = _decode_utils.check_max_length(
      max_length, 'autoregressive_sample', at_least_one_token=True)
  eos_id = _decode_utils.check_eos_id(eos_id, 'autoregressive_sample')
  result = []
  eos_seen = np.zeros((batch_size,), dtype=bool)
  for sample in autoregressive_sample_stream(
      model, inputs, batch_size=batch_size, temperature=temperature,
      start_id=start_id, accelerate=accelerate, eval_mode=eval_mode,
      eval_min_length=eval_min_length, rng=rng):
    result.append(sample[:, None])
    eos_seen |= sample == eos_id
    if len(result) >= max_length or eos_seen.all():
      break
  return np.concatenate(result, axis=1)
