"""A SavedModel signature that runs beam search in one call.

`beam_search_signature` runs `supervised.decoding.beam_search` inside the
graph: a `tf.while_loop` whose body is the library's own
`layers.decoding_steps.beam_step`, over `batch * n_beams` rows of the
predict-mode cache.
"""

import numbers

import numpy as onp
import tensorflow as tf

from tfnp_trax import fastmath
from tfnp_trax.export import _module
from tfnp_trax.export import _predict_model
from tfnp_trax.layers import decoding_steps
from tfnp_trax.layers import forward_only

__all__ = ['beam_search_signature']

_NAME = 'beam_search_signature'


def _prefill(predict_model, plan, weights, tokens, flat_state):
  """Feeds `tokens[:, :-1]` one at a time (a prompt of any length)."""
  n = tf.shape(tokens)[1] - 1

  def body(i, flat_state):
    state = fastmath.tree_unflatten(list(flat_state), plan.template)[0]
    _, new_state = predict_model.pure_fn(tokens[:, i][:, None], weights,
                                         state, fastmath.random.get_prng(0))
    return i + 1, [tf.convert_to_tensor(s)
                   for s in fastmath.tree_flatten(new_state)]
  _, flat_state = tf.while_loop(lambda i, _: i < n, body,
                                (tf.constant(0), flat_state))
  return tokens[:, -1][:, None], flat_state


def _search(predict_model, plan, max_length, n_beams, alpha, flat_weights,
            inputs):
  """`(tokens (batch, n_beams, max_length), scores (batch, n_beams))`."""
  weights = fastmath.tree_unflatten(
      [tf.convert_to_tensor(w) for w in flat_weights], fastmath.nested_map(
          lambda _: 0, predict_model.weights))[0]
  batch = plan.inputs_sig.shape[0]
  start = tf.fill([batch, 1], tf.constant(plan.start_id, tf.int32))
  flat_state = [_predict_model.cache_tensor(c) for c in plan.cache]
  major = tuple(decoding_steps.batch_major(c, batch) for c in plan.cache)
  source = None
  if plan.two_inputs:
    first = start
    source = tf.repeat(inputs, n_beams, axis=0)
  else:
    first = tf.concat([start, inputs], axis=1)
    if plan.inputs_sig.shape[1] is None:
      first, flat_state = _prefill(predict_model, plan, weights, first,
                                   flat_state)
  # Beam k of sequence b starts as a copy of sequence b's cache rows.
  flat_state = [tf.convert_to_tensor(s) for s in decoding_steps.repeat_rows(
      flat_state, batch, n_beams, major)]

  def step(tokens, t, sums, finished, lengths, flat_state):
    state = fastmath.tree_unflatten(list(flat_state), plan.template)[0]
    x = (source, tokens) if plan.two_inputs else tokens
    out = decoding_steps.beam_step(
        predict_model, x, t, weights, state, sums, finished, lengths,
        n_beams, plan.eos_id, alpha, major)
    return tuple(tf.convert_to_tensor(o) for o in out[:6]) + (
        [tf.convert_to_tensor(s) for s in out[6]],)

  def extend(seqs, parent, token, t):
    seqs = tf.gather(seqs, parent, axis=1, batch_dims=1)
    return seqs + tf.one_hot(t - 1, max_length, dtype=tf.int32) * token[
        :, :, None]

  # Only beam 0 is live at first, so the first step does not pick the
  # same token once per (identical) beam.
  sums = tf.constant(onp.where(onp.arange(n_beams) == 0, 0.0, -onp.inf)[
      None].repeat(batch, 0).astype(onp.float32))
  finished = tf.zeros([batch, n_beams], tf.bool)
  lengths = tf.zeros([batch, n_beams], tf.int32)
  token, parent, sums, finished, lengths, scores, flat_state = step(
      tf.repeat(first, n_beams, axis=0), tf.constant(1), sums, finished,
      lengths, flat_state)
  seqs = extend(tf.zeros([batch, n_beams, max_length], tf.int32), parent,
                token, 1)

  def body(t, token, seqs, sums, finished, lengths, scores, flat_state):
    token, parent, sums, finished, lengths, scores, flat_state = step(
        tf.reshape(token, [batch * n_beams, 1]), t + 1, sums, finished,
        lengths, flat_state)
    return (t + 1, token, extend(seqs, parent, token, t + 1), sums,
            finished, lengths, scores, flat_state)

  def more(t, token, seqs, sums, finished, *_):
    del token, seqs, sums
    return (t < max_length) & ~tf.reduce_all(finished)

  loop = tf.while_loop(more, body, (tf.constant(1), token, seqs, sums,
                                    finished, lengths, scores, flat_state))
  return loop[2], loop[6]


def beam_search_signature(predict_model, max_length, n_beams=2, eos_id=1,
                          start_id=0, length_penalty=1.0, batch_size=1,
                          input_length=None, jit_compile=True):
  """A `beam_search` signature builder: the best `n_beams` continuations.

  The signature takes `inputs`, int32 (batch_size, length), the prompt of a
  language model or the source of an encoder-decoder, and returns
  `outputs`, int32 (batch_size, n_beams, max_length), the beams best first
  (0 after a beam's `eos_id`), and `scores`, float32 (batch_size, n_beams),
  each beam's length-normalized log-probability; the same beams and scores
  as `decoding.beam_search(...)` (whose beam k is `outputs[:, k]` up to the
  length it returns). The search stops once every beam has finished.

  Args:
    predict_model: the exported model's architecture built with
      `mode='predict'`; its weights are taken from the exported model.
    max_length: the most tokens per beam (the outputs' last axis).
    n_beams: beams kept per sequence; at most the vocabulary size.
    eos_id: the id that finishes a beam; -1 or None: none does.
    start_id: the id fed first.
    length_penalty: the exponent alpha of GNMT's length normalization.
    batch_size: the number of sequences per call.
    input_length: the length of `inputs`; None lets a language model take
      prompts of any length (fed one token at a time). An encoder-decoder
      needs it.
    jit_compile: compile the search with XLA.

  Returns:
    A builder for `save_model(..., signatures={'beam_search': ...})`.

  Raises:
    TypeError, ValueError: as `generate_signature`; also for n_beams below
      1 (or above the vocabulary, when saving) or a length_penalty that is
      not a finite number.
  """
  plan = _predict_model.plan(predict_model, _NAME, max_length, batch_size,
                             input_length, start_id, eos_id)
  if isinstance(n_beams, bool) or not isinstance(n_beams,
                                                 (int, onp.integer)):
    raise TypeError(f'{_NAME}: n_beams must be a positive int, got '
                    f'{n_beams!r} ({type(n_beams).__name__}).')
  if n_beams < 1:
    raise ValueError(f'{_NAME}: n_beams must be a positive int, got '
                     f'{n_beams}.')
  if isinstance(length_penalty, bool) or not isinstance(
      length_penalty, numbers.Real) or not onp.isfinite(length_penalty):
    raise TypeError(f'{_NAME}: length_penalty must be a finite number (the '
                    f'exponent alpha; 0 ranks by log-probability alone), '
                    f'got {length_penalty!r}.')
  if not isinstance(jit_compile, bool):
    raise TypeError(f'{_NAME}: jit_compile must be a bool, got '
                    f'{jit_compile!r}.')
  n_beams, alpha = int(n_beams), float(length_penalty)
  where = f'{predict_model.name} (beam_search)'

  def builder(module):
    _predict_model.check_weights_fit(module, predict_model, _NAME)

    def run(flat_weights, inputs):
      with forward_only.forward_only():
        return _search(predict_model, plan, max_length, n_beams, alpha,
                       flat_weights, inputs)
    if jit_compile:
      run = tf.function(run, jit_compile=True, autograph=False)

    def search(inputs):
      inputs = _module.checked_input(inputs, plan.inputs_sig, 'inputs',
                                     where)
      if plan.inputs_sig.shape[1] is None and plan.limit is not None:
        inputs = _predict_model.check_room(inputs, plan.limit, max_length,
                                           where)
      tokens, scores = run(list(module.weight_variables), inputs)
      return {'outputs': tokens, 'scores': scores}

    spec = _module.relaxed_spec(plan.inputs_sig, 'inputs')
    return tf.function(search, input_signature=[spec], autograph=False)

  return builder
