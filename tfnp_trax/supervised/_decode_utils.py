"""Helpers shared by the samplers in decoding.py and by beam search."""

from tfnp_trax import fastmath
from tfnp_trax import layers as tl

__all__ = ['structure', 'length_limit']


def structure(tree):
  """`tree` with every leaf replaced by 0: a template for tree_unflatten."""
  return fastmath.nested_map(lambda _: 0, tree)


def _walk(layer):
  yield layer
  for sub in layer.sublayers:
    yield from _walk(sub)


def _int_or_none(x):
  try:
    return int(x)
  except (TypeError, ValueError):
    return None


def length_limit(model, eval_mode):
  """`(layer name, limit, position)` of the tightest sequence-length bound.

  When decoding with the cache, only 'predict'-mode layers bound the length
  and the position is how many positions their state already holds; in eval
  mode every positional encoding bounds it, from position 0. None if no
  layer bounds the length.
  """
  best = None
  for layer in _walk(model):
    if isinstance(layer, tl.PositionalEncoding):
      if eval_mode:
        found = (layer.name, layer.max_len, 0)
      elif layer.mode == 'predict':
        found = (layer.name, layer.max_len, _int_or_none(layer.state))
      else:
        continue
    elif (isinstance(layer, tl.DotProductCausalAttention) and not eval_mode
          and layer.mode == 'predict'):
      state = layer.state
      found = (layer.name, layer.max_inference_length,
               _int_or_none(state[2]) if isinstance(state, tuple) else None)
    else:
      continue
    if found[2] is None:
      continue
    if best is None or found[1] - found[2] < best[1] - best[2]:
      best = found
  return best
