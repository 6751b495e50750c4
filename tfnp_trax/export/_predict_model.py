"""What the decoding signatures share: the predict model's empty cache.

A signature that decodes runs a 'predict'-mode twin of the exported model
on the exported model's weight variables, starting from the state a fresh
`init` gives (the empty key/value cache).
"""

from typing import NamedTuple

import numpy as onp
import tensorflow as tf

from tfnp_trax import fastmath
from tfnp_trax import shapes
from tfnp_trax.export import _args
from tfnp_trax.layers import decoding_steps

__all__ = ['empty_cache', 'check_weights_fit', 'cache_tensor',
           'check_predict_mode', 'check_room', 'Plan', 'plan']


def empty_cache(predict_model, input_signature):
  """The state of a freshly initialized predict model, keeping its weights.

  The model is initialized with `fastmath.random.get_prng(0)`, so state
  drawn at init (the hash rotations of LSH attention) is the same in every
  export: a predict model initialized with that key decodes eagerly as the
  signatures do. The model's own weights and state, if it has any, are put
  back afterwards: building a signature must not reset a model the caller
  still decodes with.
  """
  kept = ((predict_model.weights, predict_model.state)
          if predict_model.initialized else None)
  _, state = predict_model.init(input_signature,
                                rng=fastmath.random.get_prng(0))
  if kept is not None:
    predict_model.weights, predict_model.state = kept
  return state


def check_weights_fit(module, predict_model, caller):
  """Raises unless `module` holds weights shaped as `predict_model`'s."""
  got = [tuple(v.shape) for v in module.weight_variables]
  want = [tuple(onp.shape(w)) for w in
          fastmath.tree_flatten(predict_model.weights)]
  if got != want:
    raise ValueError(
        f'{caller}: the predict model {predict_model.name} has '
        f'weights shaped {want}, but the exported model holds {got}. Build '
        f'the predict model with the same arguments as the exported one, '
        f'changing only mode=\'predict\'.')


def cache_tensor(leaf):
  """A graph tensor for one leaf of the empty cache.

  An all-zero leaf (a key/value buffer) becomes a `tf.zeros` op rather than
  a constant, so the SavedModel does not store megabytes of zeros.
  """
  leaf = onp.asarray(leaf)
  if leaf.size and not leaf.any():
    return tf.zeros(leaf.shape, leaf.dtype)
  return tf.constant(leaf)


def check_predict_mode(model, caller):
  """Raises unless `model`'s mode-aware layers include 'predict' ones."""
  modes = decoding_steps.modes(model)
  if modes and 'predict' not in modes:
    raise ValueError(
        f"{caller}: expected a model built with mode='predict' (it keeps a "
        f"decoding cache in its state), but {model.name}'s layers are in "
        f"mode {sorted(modes)}. Build the same model with mode='predict'; "
        f"its weights are taken from the exported model.")


def check_room(inputs, limit, max_length, where):
  """`inputs` (a prompt of any length), after checking it leaves room.

  Decoding feeds the start id, the prompt and all but the last generated
  token, `length + max_length` positions, and the model holds `limit`. The
  check sits on the data path as `_module.checked_input`'s does.
  """
  length = tf.shape(inputs)[1]
  ok = length + max_length <= limit
  message = (f'{where}: a prompt of this length leaves no room for '
             f'max_length={max_length} tokens: the model holds {limit} '
             f'positions, so prompts may have at most {limit - max_length} '
             f'tokens; got length')
  tf.debugging.Assert(ok, [message, length])
  gate = tf.debugging.check_numerics(tf.where(ok, 0.0, float('nan')),
                                     message + ' beyond that')
  return tf.reshape(inputs, tf.shape(inputs) + tf.cast(gate, tf.int32))


class Plan(NamedTuple):
  """What a decoding signature needs to know about its predict model.

  Attributes:
    two_inputs: whether the model takes (source, tokens).
    inputs_sig: ShapeDtype of the signature's `inputs` (the length may be
      None: a prompt of any length).
    cache: the flat empty cache (NumPy leaves, `tree_flatten` order).
    template: the state's tree structure, for `tree_unflatten`.
    limit: the positions the model holds, or None if nothing bounds them.
    start_id: the id fed first.
    eos_id: the id that ends a sequence (-1: none).
  """
  two_inputs: bool
  inputs_sig: shapes.ShapeDtype
  cache: list
  template: object
  limit: object
  start_id: int
  eos_id: int


def _check_int(value, name, caller, least):
  if isinstance(value, bool) or not isinstance(value, (int, onp.integer)):
    raise TypeError(f'{caller}: {name} must be an int, got {value!r} '
                    f'({type(value).__name__}).')
  if value < least:
    raise ValueError(f'{caller}: {name} must be at least {least}, got '
                     f'{value}.')
  return int(value)


def plan(predict_model, caller, max_length, batch_size, input_length,
         start_id, eos_id):
  """Checks a decoding signature's arguments; returns its `Plan`.

  Raises:
    TypeError: `predict_model` is not a layer, or a count or id is not an
      int.
    ValueError: the model is not in 'predict' mode, a count is out of range,
      an encoder-decoder has no `input_length`, or the model has no room for
      `input_length + max_length` positions.
  """
  _args.check_layer(predict_model, caller)
  check_predict_mode(predict_model, caller)
  max_length = _check_int(max_length, 'max_length', caller, 1)
  batch_size = _check_int(batch_size, 'batch_size', caller, 1)
  start_id = _check_int(start_id, 'start_id', caller, 0)
  eos_id = -1 if eos_id is None else _check_int(eos_id, 'eos_id', caller, -1)
  two_inputs = predict_model.n_in > 1
  if input_length is not None:
    input_length = _check_int(input_length, 'input_length', caller,
                              1 if two_inputs else 0)
  elif two_inputs:
    raise ValueError(
        f'{caller}: {predict_model.name} takes a source sequence and its '
        f'predict-mode cache is sized by the source length, so the '
        f'signature needs it: pass input_length= (pad sources to it).')
  tokens_sig = shapes.ShapeDtype((batch_size, 1), onp.int32)
  inputs_sig = shapes.ShapeDtype((batch_size, input_length), onp.int32)
  state = empty_cache(predict_model,
                      (inputs_sig, tokens_sig) if two_inputs else tokens_sig)
  # The bound of a freshly initialized model: position 0.
  kept = predict_model.state
  predict_model.state = state
  bound = decoding_steps.length_limit(predict_model, eval_mode=False)
  predict_model.state = kept
  limit = None if bound is None else bound.limit
  prompt = 0 if two_inputs or input_length is None else input_length
  if limit is not None and prompt + max_length > limit:
    raise ValueError(
        f'{caller}: max_length={max_length} after a prompt of {prompt} '
        f'tokens needs {prompt + max_length} positions, but layer '
        f'{bound.layer_name} holds {limit}. Lower max_length to '
        f'{limit - prompt}, or build the model with a larger max_len.')
  return Plan(two_inputs, inputs_sig, fastmath.tree_flatten(state),
              fastmath.nested_map(lambda _: 0, state), limit, start_id,
              eos_id)
