"""Helpers shared by the samplers in decoding.py and by beam search."""

from typing import NamedTuple

from tfnp_trax import fastmath
from tfnp_trax import layers as tl

__all__ = ['LengthBound', 'structure', 'length_limit']


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
