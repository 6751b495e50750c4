"""LocallyConvDense: a Dense approximation by convolution over modules.

The embedding is split into modules and a 2-D convolution runs over
(length, modules): across modules it is centred (neighbouring modules mix),
along the sequence it is causal, looking `length_kernel_size - 1` positions
back. `_RememberPad` supplies those past positions: zeros in training, and in
'predict' mode the last positions of the previous call, kept in its state,
so that decoding one token at a time matches a full-sequence pass.
"""

from tfnp_trax import fastmath
from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.layers import base
from tfnp_trax.layers import combinators as cb
from tfnp_trax.layers import convolution
from tfnp_trax.layers import core
from tfnp_trax.layers.assert_shape import assert_shape
from tfnp_trax.layers.research._permute_layers import MergeLastTwoAxes
from tfnp_trax.layers.research._permute_layers import SplitLastAxis

__all__ = ['LocallyConvDense']

# Layer constructors are CamelCase functions, as in Trax.
# pylint: disable=invalid-name


class _RememberPad(base.Layer):
  """Left-pads axis 1 with `n_items_to_remember` past items.

  Outside 'predict' mode the past is zeros. In 'predict' mode the state is
  `(past, marker)`: `past` holds the last `n_items_to_remember` items of
  axis 1 seen so far (zeros at first; float32, as in Trax), and `marker` is
  Trax's `{'init': ()}` before the first call and `{'forward': ()}` after,
  kept so that Trax decoding states load unchanged.

  `monkey_patched_mask` is a hook for models that feed padded prompts (Trax's
  Terraformer overrides it to return a mask source with `get_value()`): on
  the first call it makes the remembered items end before the padding.
  """

  def __init__(self, n_items_to_remember, mode):
    super().__init__(name='_RememberPad')
    self._n_items_to_remember = n_items_to_remember
    self._mode = mode
    # pylint: disable-next=assignment-from-none
    self._portal_mask = self.monkey_patched_mask()

  def monkey_patched_mask(self):
    """Returns the padding-mask source, or None (the default: no mask)."""
    return None

  def forward(self, x):
    n = self._n_items_to_remember
    if n == 0:
      return x
    if self._mode != 'predict':
      pads = [(0, 0)] * len(x.shape)
      pads[1] = (n, 0)
      return jnp.pad(x, pads, mode='constant')
    past, marker = self.state
    x = jnp.concatenate([past, x], axis=1)
    if self._portal_mask is not None and 'init' in marker:
      if x.shape[0] != 1:
        raise ValueError(f'{self.name}: a padding mask in predict mode needs '
                         f'batch size 1, got input shape {tuple(x.shape)}.')
      mask = self._portal_mask.get_value()
      n_padding = jnp.sum(mask == 0, dtype=jnp.int32)
      start = x.shape[1] - (n + n_padding)
      past = fastmath.dynamic_slice_in_dim(x, start, n, axis=1)
    else:
      past = x[:, -n:, ...]
    self.state = (past, {'forward': ()})
    return x

  def init_weights_and_state(self, input_signature):
    if isinstance(input_signature, (list, tuple)):
      input_signature = input_signature[0]
    self.weights = ()
    if self._mode == 'predict':
      shape = list(input_signature.shape)
      shape[1] = self._n_items_to_remember
      self.state = (jnp.zeros(shape, dtype=jnp.float32), {'init': ()})
    else:
      self.state = ()


def _pad_modules(half):
  """Zero-pads the module axis of `[batch, length, modules, d]` by `half`."""
  def pad(x):
    if len(x.shape) != 4:
      raise ValueError(
          f'LocallyConvDense: expected inputs of shape (batch, length, d), '
          f'got shape {tuple(x.shape[:-2]) + (x.shape[-2] * x.shape[-1],)}.')
    return jnp.pad(x, [(0, 0), (0, 0), (half, half), (0, 0)],
                   mode='constant')
  return base.Fn('Pad', pad)


@assert_shape('...a->...b')
def LocallyConvDense(n_modules, n_units, mode, kernel_size=1,
                     length_kernel_size=1):
  """A Dense approximation that convolves over modules, with shared weights.

  Input `[batch, length, d]` is split into `n_modules` modules of size
  `d / n_modules`; a convolution with kernel `[length_kernel_size,
  kernel_size, d / n_modules, n_units]` then gives each output module
  `n_units` values from the `kernel_size` modules around it (zero beyond the
  ends) at the current and `length_kernel_size - 1` previous positions. The
  output is `[batch, length, n_modules * n_units]`. Unlike
  `LocallyConnectedDense`, every module shares one kernel. With one module
  it is `Dense(n_units)`.

  Example:
    >>> layer = LocallyConvDense(2, 3, mode='train', kernel_size=3)
    >>> _ = layer.init(shapes.ShapeDtype((1, 5, 8)))
    >>> tuple(layer(jnp.ones((1, 5, 8), dtype=jnp.float32)).shape)
    (1, 5, 6)

  Args:
    n_modules: number of modules the input and output are split into.
    n_units: outputs per module.
    mode: 'train', 'eval' or 'predict'; in 'predict' mode the layer keeps
      the last `length_kernel_size - 1` positions between calls.
    kernel_size: number of neighbouring modules seen; odd.
    length_kernel_size: number of positions seen (the current one and those
      before it).

  Returns:
    The layer.

  Raises:
    ValueError: if `kernel_size` is even.
  """
  if n_modules == 1:
    return core.Dense(n_units)
  if kernel_size % 2 != 1:
    raise ValueError(f'LocallyConvDense: kernel_size must be odd, got '
                     f'{kernel_size}; only odd sizes center on a module.')
  half = (kernel_size - 1) // 2
  return cb.Serial(
      SplitLastAxis(n_modules),
      _pad_modules(half),
      _RememberPad(length_kernel_size - 1, mode=mode),
      convolution.Conv(n_units, kernel_size=(length_kernel_size, kernel_size)),
      MergeLastTwoAxes(),
  )
