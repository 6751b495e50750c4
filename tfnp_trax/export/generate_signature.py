"""A SavedModel signature that generates whole sequences in one call.

`generate_signature` runs the sampling loop of
`supervised.decoding.autoregressive_sample` inside the graph: a
`tf.while_loop` over the predict-mode cache, each step the library's own
`layers.decoding_steps.sample_step`. A server holding only TensorFlow sends
the prompt (or the source sentence) and gets the tokens back, with no
per-token round trip and no cache crossing the wire.
"""

import tensorflow as tf

from tfnp_trax import fastmath
from tfnp_trax.export import _module
from tfnp_trax.export import _predict_model
from tfnp_trax.layers import decoding_steps
from tfnp_trax.layers import forward_only

__all__ = ['generate_signature']

_NAME = 'generate_signature'


def _step_fn(predict_model, plan, weights, source, temperature):
  """`(tokens, flat_state, key) -> (sample, flat_state, key)` at index -1."""

  def step(tokens, flat_state, key):
    state = fastmath.tree_unflatten(list(flat_state), plan.template)[0]
    x = (source, tokens) if plan.two_inputs else tokens
    index = tokens.shape[1] - 1 if tokens.shape[1] is not None else (
        tf.shape(tokens)[1] - 1)
    sample, new_state, key = decoding_steps.sample_step(
        predict_model, x, weights, state, key, index, temperature)
    return (tf.convert_to_tensor(sample, tf.int32),
            [tf.convert_to_tensor(s) for s in fastmath.tree_flatten(
                new_state)], tf.convert_to_tensor(key))
  return step


def _prefill(step, tokens, flat_state, key):
  """Feeds `tokens[:, :-1]` one at a time; returns the cache and the rest.

  For prompts whose length is only known when called: each step has the
  shape of a single token, so one trace serves every prompt length.
  """
  n = tf.shape(tokens)[1] - 1

  def body(i, flat_state, key):
    _, flat_state, key = step(tokens[:, i][:, None], flat_state, key)
    return i + 1, flat_state, key
  _, flat_state, key = tf.while_loop(
      lambda i, *_: i < n, body, (tf.constant(0), flat_state, key))
  return tokens[:, -1][:, None], flat_state, key


def _generate(predict_model, plan, max_length, temperature, flat_weights,
              inputs, key):
  """The int32 (batch, max_length) tokens, zero after each sequence's eos."""
  weights = fastmath.tree_unflatten(
      [tf.convert_to_tensor(w) for w in flat_weights], fastmath.nested_map(
          lambda _: 0, predict_model.weights))[0]
  batch = plan.inputs_sig.shape[0]
  start = tf.fill([batch, 1], tf.constant(plan.start_id, tf.int32))
  source = inputs if plan.two_inputs else None
  step = _step_fn(predict_model, plan, weights, source, temperature)
  flat_state = [_predict_model.cache_tensor(c) for c in plan.cache]
  if plan.two_inputs:
    first = start
  else:
    first = tf.concat([start, inputs], axis=1)
    if plan.inputs_sig.shape[1] is None:
      first, flat_state, key = _prefill(step, first, flat_state, key)
  # The first step reads the whole prefix, as the library's sampler does.
  sample, flat_state, key = step(first, flat_state, key)
  eos = tf.constant(plan.eos_id, tf.int32)
  out = tf.pad(sample[:, None], [[0, 0], [0, max_length - 1]])
  done = tf.equal(sample, eos)

  def body(n, token, out, done, flat_state, key):
    sample, flat_state, key = step(token[:, None], flat_state, key)
    sample = tf.where(done, 0, sample)  # Padding after eos.
    out += tf.one_hot(n, max_length, dtype=tf.int32)[None, :] * sample[:,
                                                                       None]
    return (n + 1, sample, out, done | tf.equal(sample, eos), flat_state,
            key)

  def more(n, token, out, done, flat_state, key):
    del token, out, flat_state, key
    return (n < max_length) & ~tf.reduce_all(done)

  loop = tf.while_loop(more, body,
                       (tf.constant(1), sample, out, done, flat_state, key))
  return loop[2]


def _fresh_key():
  """A key from the clock's microseconds: other samples on every call.

  Not a stateful random op: those need a fixed seed when TensorFlow's op
  determinism is on, and would then repeat the same samples in every
  process that loads the model.
  """
  micros = tf.math.floormod(tf.cast(tf.timestamp() * 1e6, tf.int64),
                            2**31 - 1)
  return fastmath.random.get_prng(tf.cast(micros, tf.int32))


def generate_signature(predict_model, max_length, temperature=0.0, eos_id=1,
                       start_id=0, batch_size=1, input_length=None,
                       seed_input=True, jit_compile=True):
  """A `generate` signature builder: whole sequences in one call.

  The signature takes `inputs`, int32 (batch_size, length): the prompt of a
  language model, or the source of an encoder-decoder (`Transformer`,
  `Reformer`), as `decoding.autoregressive_sample`'s `inputs`. It returns
  `outputs`, int32 (batch_size, max_length): the generated tokens, each
  sequence's tokens after its first `eos_id` set to 0. The whole loop runs
  in the graph and stops once every sequence has produced `eos_id`. At
  temperature 0 it decodes greedily, as `autoregressive_sample(...,
  temperature=0.0)` does; above 0 it samples, from the int32 scalar input
  `seed` if `seed_input` (the same seed gives the same tokens), else from
  fresh randomness each call.

  Example:
    >>> lm = models.TransformerLM(16, d_model=8, d_ff=16, n_layers=1,
    ...                           n_heads=2, max_len=16, mode='eval')
    >>> _ = lm.init(shapes.ShapeDtype((1, 8), jnp.int32))
    >>> lm_predict = models.TransformerLM(16, d_model=8, d_ff=16,
    ...                                   n_layers=1, n_heads=2, max_len=16,
    ...                                   mode='predict')
    >>> _ = save_model(lm, export_dir, shapes.ShapeDtype((1, 8), jnp.int32),
    ...                signatures={'generate': generate_signature(
    ...                    lm_predict, max_length=8)})
    >>> loaded = tf.saved_model.load(export_dir)
    >>> out = loaded.signatures['generate'](inputs=tf.constant([[3, 4]]))
    >>> tuple(out['outputs'].shape)
    (1, 8)

  Args:
    predict_model: the exported model's architecture built with
      `mode='predict'`; its weights are taken from the exported model.
    max_length: the number of tokens generated (the output's width).
    temperature: softmax temperature; 0.0 takes the argmax.
    eos_id: the id that ends a sequence; -1 or None: none does.
    start_id: the id fed first.
    batch_size: the number of sequences per call (the predict cache has a
      fixed batch size; another batch fails with a message saying so).
    input_length: the length of `inputs`. A language model's prompt may
      have any length if None (the prompt is then fed one token at a time;
      a fixed length feeds it in one step, which is faster for long
      prompts). An encoder-decoder needs it: its cache is sized by the
      source.
    seed_input: above temperature 0, whether the signature takes `seed`;
      without it each call draws its key from the clock (which TensorFlow
      refuses while op determinism is enabled).
    jit_compile: compile the loop with XLA (fuses each step's many small
      ops; the checks of the inputs run outside it).

  Returns:
    A builder for `save_model(..., signatures={'generate': ...})`.

  Raises:
    TypeError, ValueError: for a model that is not a predict-mode layer,
      arguments out of range, an encoder-decoder without `input_length`, or
      a `max_length` the model has no room for.
  """
  plan = _predict_model.plan(predict_model, _NAME, max_length, batch_size,
                             input_length, start_id, eos_id)
  decoding_steps.check_temperature(temperature, _NAME)
  temperature = float(temperature)
  if not isinstance(seed_input, bool) or not isinstance(jit_compile, bool):
    raise TypeError(f'{_NAME}: seed_input and jit_compile must be bools, '
                    f'got {seed_input!r} and {jit_compile!r}.')
  seeded = seed_input and temperature > 0
  where = f'{predict_model.name} (generate)'

  def builder(module):
    _predict_model.check_weights_fit(module, predict_model, _NAME)

    def run(flat_weights, inputs, key):
      with forward_only.forward_only():
        return _generate(predict_model, plan, max_length, temperature,
                         flat_weights, inputs, key)
    if jit_compile:
      run = tf.function(run, jit_compile=True, autograph=False)

    def generate(inputs, seed=None):
      inputs = _module.checked_input(inputs, plan.inputs_sig, 'inputs',
                                     where)
      if plan.inputs_sig.shape[1] is None and plan.limit is not None:
        inputs = _predict_model.check_room(inputs, plan.limit, max_length,
                                           where)
      if seed is not None:
        key = fastmath.random.get_prng(seed)
      elif temperature > 0:
        key = _fresh_key()
      else:
        key = fastmath.random.get_prng(0)  # Greedy: the key is unused.
      return {'outputs': run(list(module.weight_variables), inputs, key)}

    specs = [_module.relaxed_spec(plan.inputs_sig, 'inputs')]
    if seeded:
      specs.append(tf.TensorSpec((), tf.int32, name='seed'))
    return tf.function(generate, input_signature=specs, autograph=False)

  return builder

