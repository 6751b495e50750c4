"""A multilayer perceptron: fully connected layers with activations between."""

from tfnp_trax import layers as tl

__all__ = ['MLP']


def MLP(layer_widths=(128, 64), activation_fn=tl.Relu, out_activation=False,  # pylint: disable=invalid-name
        flatten=True, mode='train'):
  """Dense layers of the given widths, an activation between each two.

  Example:
    >>> from tfnp_trax import shapes
    >>> from tfnp_trax.fastmath import numpy as jnp
    >>> model = MLP(layer_widths=(8, 3))
    >>> _ = model.init(shapes.ShapeDtype((2, 4, 4)))
    >>> tuple(model(jnp.ones((2, 4, 4), dtype=jnp.float32)).shape)
    (2, 3)

  Args:
    layer_widths: widths of the Dense layers, in order; the last one is the
      output width.
    activation_fn: constructor of the activation layer used between layers.
    out_activation: if True, also apply the activation after the last layer.
    flatten: if True, first flatten each example to a vector, so inputs of
      shape (batch, ...) become (batch, -1).
    mode: unused; accepted so every model takes `mode`.

  Returns:
    The MLP as one layer.
  """
  del mode
  widths = tuple(layer_widths)
  if not widths or not all(isinstance(w, int) and w > 0 for w in widths):
    raise ValueError(f'MLP: layer_widths must be a non-empty sequence of '
                     f'positive ints, got {layer_widths!r}.')
  layers = [tl.Flatten()] if flatten else []
  for i, width in enumerate(widths):
    layers.append(tl.Dense(width))
    if out_activation or i < len(widths) - 1:
      layers.append(activation_fn())
  return tl.Serial(*layers)  # Unnamed, as in Trax.
