"""Helpers shared by the samplers in decoding.py and by beam search."""

import math
import numbers

import numpy as np

from tfnp_trax import fastmath
from tfnp_trax import layers as tl
from tfnp_trax.layers import decoding_steps
from tfnp_trax.layers.decoding_steps import LengthBound
from tfnp_trax.layers.decoding_steps import check_temperature
from tfnp_trax.layers.decoding_steps import length_limit
from tfnp_trax.layers.decoding_steps import walk as _walk

__all__ = ['LengthBound', 'structure', 'length_limit', 'check_model',
           'check_inputs', 'check_count', 'check_max_length',
           'check_temperature', 'check_eos_id',
           'start_symbols', 'check_rng', 'calls_itself']


def structure(tree):
  """`tree` with every leaf replaced by 0: a template for tree_unflatten."""
  return fastmath.nested_map(lambda _: 0, tree)


def calls_itself(model):
  """Whether `model`'s class overrides `Layer.__call__` (see decoding)."""
  return type(model).__call__ is not tl.Layer.__call__


def check_model(model, fn_name, batch_size, eval_mode=False):
  """Raises a clear error for a model the sampler cannot decode with.

  Trax's samplers take an initialized model built with mode='predict': it
  keeps a cache of the prefix in its state, so each step feeds one token.
  A model whose mode-aware layers (positional encodings, causal attention)
  are all in another mode has no cache; it fails deep inside otherwise.
  Models without such layers (e.g. a plain `Fn`) are accepted as they are.

  Args:
    model: the layer to decode with.
    fn_name: the sampler's name, for messages.
    batch_size: the batch size the sampler was asked for (shown in the fix).
    eval_mode: the sampler recomputes the prefix, so any mode is fine.
  """
  modes = decoding_steps.modes(model)
  # Checked before init: initializing would not fix the wrong mode.
  if not eval_mode and modes and 'predict' not in modes:
    raise ValueError(
        f"{fn_name}: expected a model built with mode='predict' (it keeps a "
        f"decoding cache in its state), but {model.name}'s layers are in "
        f"mode {sorted(modes)}. Build it again with mode='predict' and copy "
        f"the weights over, or pass eval_mode=True to recompute the prefix "
        f"at every step.")
  # Weightless pure layers (e.g. an `Fn`) run without init, as in Trax.
  needs_init = any(not layer.sublayers and not isinstance(layer, tl.PureLayer)
                   for layer in _walk(model))
  if not model.initialized and needs_init and not calls_itself(model):
    raise ValueError(
        f'{fn_name}: model {model.name} is not initialized; call '
        f'model.init(shapes.ShapeDtype(({batch_size}, 1), jnp.int32)) (and '
        f'set trained weights) first.')


def check_inputs(inputs, batch_size, fn_name, model=None):
  """`inputs` as an int32 (batch_size, length) array, or a clear error.

  With `model`, a model of two inputs (source, tokens) must be given them:
  without, it would be fed the tokens alone and fail inside.
  """
  if inputs is None:
    if model is not None and model.n_in > 1:
      raise ValueError(
          f'{fn_name}: model {model.name} takes {model.n_in} inputs (the '
          f'source sequence, then the tokens decoded so far), but inputs is '
          f'None. Pass the source ids as inputs=, shape (batch_size='
          f'{batch_size}, length).')
    return None
  inputs = np.asarray(inputs)
  if inputs.ndim != 2 or inputs.shape[0] != batch_size:
    raise ValueError(
        f'{fn_name}: inputs must have shape (batch_size={batch_size}, '
        f'length), got shape {inputs.shape}. Pass '
        f'batch_size=inputs.shape[0].')
  # A cast would silently truncate float ids (e.g. 2.7 -> 2).
  if inputs.dtype.kind not in 'iu':
    raise TypeError(
        f'{fn_name}: inputs must be integer token ids, got dtype '
        f'{inputs.dtype}. Tokenize the text first, or cast ids with '
        f'.astype(np.int32).')
  return inputs.astype(np.int32)


def _is_int(x):
  return isinstance(x, (int, np.integer)) and not isinstance(x, bool)


def check_count(value, name, fn_name):
  """`value` (a batch size, a beam count) as an int, if it is a positive int.

  Args:
    value: the count to check.
    name: its argument name, for messages.
    fn_name: the sampler's name, for messages.

  Raises:
    TypeError: `value` is not an int (NumPy ints count; bools do not).
    ValueError: it is 0 or negative.
  """
  if not _is_int(value):
    raise TypeError(f'{fn_name}: {name} must be a positive int, got '
                    f'{value!r} ({type(value).__name__}).')
  if value < 1:
    raise ValueError(f'{fn_name}: {name} must be a positive int, got '
                     f'{value}.')
  return int(value)


def check_max_length(value, fn_name, at_least_one_token):
  """The number of decoding steps Trax takes for `max_length`, as an int.

  Trax counts steps up to `max_length` with a comparison, so any real number
  works there: 2.5 takes 3 steps. `autoregressive_sample` tests the count
  after its first token, so it always yields one (`at_least_one_token`);
  `beam_search` tests it first, and with no step has no result to return.

  Raises:
    TypeError: `value` is not a real number (bools do not count).
    ValueError: it is not finite (sampling would not stop), or, without
      `at_least_one_token`, it leaves no step.
  """
  if isinstance(value, bool) or not isinstance(value, numbers.Real):
    raise TypeError(f'{fn_name}: max_length must be a number of tokens, got '
                    f'{value!r} ({type(value).__name__}).')
  if not math.isfinite(value):
    raise ValueError(f'{fn_name}: max_length must be finite, got {value}; '
                     f'give the longest output to generate.')
  steps = math.ceil(value)
  if at_least_one_token:
    return max(1, steps)
  if steps < 1:
    raise ValueError(f'{fn_name}: max_length must be positive (it takes '
                     f'ceil(max_length) steps), got {value}.')
  return steps


def check_eos_id(eos_id, fn_name):
  """`eos_id` as an int; None (no id ends a sequence) becomes -1.

  A non-integer id would never equal a sampled token, so decoding would
  silently run to max_length.
  """
  if eos_id is None:
    return -1
  if isinstance(eos_id, (float, np.floating)) and float(eos_id).is_integer():
    return int(eos_id)
  if not _is_int(eos_id):
    raise TypeError(f'{fn_name}: eos_id must be an int token id (-1 or None '
                    f'for none), got {eos_id!r} ({type(eos_id).__name__}).')
  return int(eos_id)


def start_symbols(start_id, batch_size, fn_name):
  """The first ids fed, an int32 `(batch_size, 1)` array, or a clear error.

  Args:
    start_id: an int, or int ids of shape `(batch_size, 1)` (or
      `(batch_size,)`).
    batch_size: the number of sequences.
    fn_name: the sampler's name, for messages.
  """
  if np.isscalar(start_id) or np.ndim(start_id) == 0:
    value = start_id if np.isscalar(start_id) else np.asarray(start_id).item()
    whole = (isinstance(value, (float, np.floating)) and
             float(value).is_integer())
    if not (_is_int(value) or whole):
      raise TypeError(f'{fn_name}: start_id must be an int token id or int '
                      f'ids of shape (batch_size={batch_size}, 1), got '
                      f'{start_id!r} ({type(start_id).__name__}).')
    return np.full((batch_size, 1), int(value), dtype=np.int32)
  ids = np.asarray(start_id)
  if ids.dtype.kind not in 'iu':
    raise TypeError(f'{fn_name}: start_id must hold integer token ids, got '
                    f'dtype {ids.dtype}.')
  if ids.size != batch_size or ids.ndim > 2:
    raise ValueError(f'{fn_name}: start_id must be an int or have shape '
                     f'(batch_size={batch_size}, 1), got shape {ids.shape}.')
  return ids.astype(np.int32).reshape((batch_size, 1))


def check_rng(rng, fn_name):
  """Raises unless `rng` is None or a key of two int32s (get_prng's)."""
  if rng is None:
    return
  shape = np.shape(rng)
  if shape != (2,):
    raise ValueError(f'{fn_name}: rng must be a key of shape (2,) (e.g. '
                     f'fastmath.random.get_prng(0)), got {rng!r} with shape '
                     f'{shape}.')
