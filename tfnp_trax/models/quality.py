"""Quality: a Q-network head, one value per discrete action.

`body` and `normalizer` are functions `mode -> layer` (or None for no
layer), as for `Policy` and `Value`, so one architecture can be built for
training and for collection.
"""

import numbers

from tfnp_trax import layers as tl

__all__ = ['Quality']

# Layer constructors are CamelCase functions, as in Trax.
# pylint: disable=invalid-name


def _batched(layer_fn, mode, batch_axes):
  """`layer_fn(mode)` (or nothing), folding leading axes if asked."""
  if layer_fn is None:
    return []
  layer = layer_fn(mode=mode)
  # An empty part stays empty, as in Trax: nothing to wrap.
  if batch_axes is None or (isinstance(layer, list) and not layer):
    return layer
  return tl.BatchLeadingAxes(tl.Serial(layer), n_last_axes_to_keep=batch_axes)


def Quality(body=None, normalizer=None, batch_axes=None, mode='train',
            n_actions=2, head_init_range=None):
  """`normalizer -> body -> Dense(n_actions)`: observations to Q-values.

  Example:
    >>> from tfnp_trax import shapes
    >>> from tfnp_trax.fastmath import numpy as jnp
    >>> model = Quality(body=lambda mode: tl.Serial(tl.Dense(8), tl.Relu()),
    ...                 n_actions=3)
    >>> _ = model.init(shapes.ShapeDtype((2, 4)))
    >>> tuple(model(jnp.zeros((2, 4), dtype=jnp.float32)).shape)
    (2, 3)

  Args:
    body: function `mode -> layer` for the network body, or None.
    normalizer: function `mode -> layer` run before the body, or None.
    batch_axes: if set, the normalizer and body run on inputs whose leading
      axes are folded into one, keeping the last `batch_axes` axes (see
      `tl.BatchLeadingAxes`).
    mode: 'train', 'eval' or 'predict', passed to `body` and `normalizer`.
    n_actions: number of actions, the head's output width.
    head_init_range: if set, the head's kernel is initialized uniformly in
      [-head_init_range, head_init_range].

  Returns:
    A layer with n_in=1, n_out=1.
  """
  if (isinstance(n_actions, bool) or
      not isinstance(n_actions, numbers.Integral) or n_actions < 1):
    raise ValueError(f'Quality: n_actions must be a positive int, got '
                     f'{n_actions!r}.')
  n_actions = int(n_actions)  # A space's `n` may be a NumPy integer.
  head_kwargs = {}
  if head_init_range is not None:
    head_kwargs['kernel_initializer'] = tl.RandomUniformInitializer(
        lim=head_init_range)
  return tl.Serial(
      _batched(normalizer, mode, batch_axes),
      _batched(body, mode, batch_axes),
      tl.Dense(n_actions, **head_kwargs),
  )
