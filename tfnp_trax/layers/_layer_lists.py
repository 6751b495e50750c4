"""The sublayer lists that combinators are given, flattened and checked.

Combinators accept layers nested in lists and tuples (and None for
nothing), as Trax's do; this lives above `base` because it checks for
`Layer`, while the data-stack helpers in `_stack` sit below it.
"""

from tfnp_trax.layers import base

__all__ = ['ensure_flat']


def ensure_flat(layers):
  """Flattens nested lists/tuples of layers; rejects non-layers clearly."""
  flat = []
  for item in layers:
    if isinstance(item, (list, tuple)):
      flat.extend(ensure_flat(item))
    elif isinstance(item, base.Layer):
      flat.append(item)
    elif item is None:
      continue
    else:
      raise TypeError(f'Expected a Layer or a list of layers, got '
                      f'{type(item).__name__}: {item!r}. Did you forget to '
                      f'call a layer constructor, e.g. tl.Relu() not tl.Relu?')
  return flat
