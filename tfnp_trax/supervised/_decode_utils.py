"""Helpers shared by the samplers in decoding.py and by beam search."""

from typing import NamedTuple

import numpy as np

from tfnp_trax import fastmath
from tfnp_trax import layers as tl

__all__ = ['LengthBound', 'structure', 'length_limit', 'check_model',
           'check_inputs']


class LengthBound(NamedTuple):
  """The sequence-length limit a model's layer puts on decoding.

  Attributes:
    layer_name: name of the layer that sets the limit (for error messages).
    limit: how many positions that layer supports in all.
    position: how many of those positions its state already holds.
  """
  layer_name: str
  limit: int
  position: int

  @property
  def room(self):
    """Positions still free."""
    return self.limit - self.position


def structure(tree):
  """`tree` with every leaf replaced by 0: a template for tree_unflatten."""
  return fastmath.nested_map(lambda _: 0, tree)


def _walk(layer):
  yield layer
  for sub in layer.sublayers:
    yield from _walk(sub)


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
  modes = {layer.mode for layer in _walk(model)
           if isinstance(getattr(type(layer), 'mode', None), property)}
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
  if not model.initialized and needs_init:
    raise ValueError(
        f'{fn_name}: model {model.name} is not initialized; call '
        f'model.init(shapes.ShapeDtype(({batch_size}, 1), jnp.int32)) (and '
        f'set trained weights) first.')


def check_inputs(inputs, batch_size, fn_name):
  """`inputs` as an int32 (batch_size, length) array, or a clear error."""
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


def _int_or_none(x):
  try:
    return int(x)
  except (TypeError, ValueError):
    return None


def length_limit(model, eval_mode):
  """The tightest sequence-length bound on decoding `model`, a LengthBound.

  When decoding with the cache, only 'predict'-mode layers bound the length
  and the position is how many positions their state already holds; in eval
  mode every positional encoding bounds it, from position 0. None if no
  layer bounds the length.
  """
  best = None
  for layer in _walk(model):
    if isinstance(layer, tl.PositionalEncoding):
      if eval_mode:
        found = LengthBound(layer.name, layer.max_len, 0)
      elif layer.mode == 'predict':
        found = LengthBound(layer.name, layer.max_len,
                            _int_or_none(layer.state))
      else:
        continue
    elif (isinstance(layer, tl.DotProductCausalAttention) and not eval_mode
          and layer.mode == 'predict'):
      state = layer.state
      # The attention cache is (keys, values, index): the index counts the
      # positions already written.
      found = LengthBound(
          layer.name, layer.max_inference_length,
          _int_or_none(state[2]) if isinstance(state, tuple) else None)
    else:
      continue
    if found.position is None:  # Not initialized yet: sets no bound.
      continue
    if best is None or found.room < best.room:
      best = found
  return best
