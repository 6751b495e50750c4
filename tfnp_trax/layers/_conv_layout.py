"""Convolution layouts: parsing `dimension_numbers` and checking arguments.

`dimension_numbers = (lhs_spec, rhs_spec, out_spec)` names the axes of the
input ('N' batch, 'C' channels), the kernel ('I' in, 'O' out) and the output
with one letter each; every other letter is a spatial axis, matched by
letter. As in XLA, the spatial order of `kernel_size`, `strides` and
explicit padding is the order of the letters in `rhs_spec`. Layers compute
in the canonical layout `N, *spatial, C` with kernel `*spatial, I, O`.
"""

import functools
import operator

from tfnp_trax.fastmath import numpy as jnp

__all__ = ['ConvLayout', 'check_padding', 'per_axis']

PADDING_HELP = ("'SAME', 'VALID' or a sequence of (low, high) pairs, one "
                'per spatial axis')


def per_axis(layer_name, what, value, n, default=1):
  """`value` as an n-tuple of ints: None -> default, int -> repeated."""
  if value is None:
    return (default,) * n
  if isinstance(value, int):
    return (value,) * n
  value = tuple(value)
  if len(value) != n or not all(isinstance(v, int) and v >= 1
                                for v in value):
    raise ValueError(f'{layer_name}: {what} must be {n} positive ints (one '
                     f'per spatial axis), got {value!r}.')
  return value


def check_padding(layer_name, padding, n):
  """Returns 'SAME'/'VALID' or n (low, high) pairs; raises a clear error."""
  if isinstance(padding, str):
    if padding.upper() in ('SAME', 'VALID'):
      return padding.upper()
  elif isinstance(padding, (list, tuple)) and len(padding) == n and all(
      isinstance(p, (list, tuple)) and len(p) == 2 and
      all(isinstance(v, int) and v >= 0 for v in p) for p in padding):
    return tuple(tuple(p) for p in padding)
  raise ValueError(f'{layer_name}: padding must be {PADDING_HELP} ({n} '
                   f'here), got {padding!r}.')


def _perm(src, dst):
  return [src.index(c) for c in dst]


class ConvLayout:
  """Axis bookkeeping for one `dimension_numbers` triple."""

  def __init__(self, layer_name, dimension_numbers, n_kernel_dims):
    self.name = layer_name
    try:
      lhs, rhs, out = (str(s) for s in dimension_numbers)
    except (TypeError, ValueError):
      raise ValueError(f'{layer_name}: dimension_numbers must be three '
                       f"strings like ('NHWC', 'HWIO', 'NHWC'), got "
                       f'{dimension_numbers!r}.') from None
    spatial = [c for c in rhs if c not in 'IO']
    ok = (sorted(lhs) == sorted(out) == sorted(spatial + ['N', 'C']) and
          sorted(rhs) == sorted(spatial + ['I', 'O']) and
          len(set(rhs)) == len(rhs))
    if not ok:
      raise ValueError(
          f'{layer_name}: inconsistent dimension_numbers {dimension_numbers}:'
          f" the input and output specs need 'N', 'C' and the kernel's "
          f"spatial letters; the kernel spec needs 'I', 'O' and the same "
          f'spatial letters, each once.')
    if len(spatial) != n_kernel_dims:
      raise ValueError(
          f'{layer_name}: kernel_size has {n_kernel_dims} spatial dims but '
          f'the kernel spec {rhs!r} has {len(spatial)}. For 1-D inputs use '
          f"dimension_numbers=('NWC', 'WIO', 'NWC') (or Conv1d).")
    self.lhs, self.rhs, self.out = lhs, rhs, out
    self.canonical = 'N' + ''.join(spatial) + 'C'
    self.n_spatial = len(spatial)
    # Inputs of higher rank fold their extra leading axes into the batch.
    self.can_fold = lhs[0] == 'N' and out[0] == 'N'

  def fold(self, shape):
    """Returns the shape with extra leading axes folded into the batch."""
    shape = tuple(shape)
    rank = len(self.lhs)
    if len(shape) == rank:
      return shape
    if len(shape) > rank and self.can_fold:
      lead = shape[:len(shape) - rank + 1]
      batch = (None if None in lead else
               functools.reduce(operator.mul, lead, 1))
      return (batch,) + shape[len(shape) - rank + 1:]
    extra = (' or more (extra leading axes count as batch)'
             if self.can_fold else '')
    raise ValueError(
        f'{self.name}: input shape {shape} has rank {len(shape)}, but the '
        f'layout {self.lhs!r} needs rank {rank}{extra}. A {self.n_spatial}-D '
        f'kernel needs inputs (batch, {self.n_spatial} spatial axes, '
        f'channels).')

  def input_channels(self, shape):
    return self.fold(shape)[self.lhs.index('C')]

  def kernel_shape(self, input_shape, filters, kernel_size):
    """Kernel shape in `rhs_spec` order, kernel_size in its spatial order."""
    sizes = iter(kernel_size)
    n_in = self.input_channels(input_shape)
    return tuple(filters if c == 'O' else n_in if c == 'I' else next(sizes)
                 for c in self.rhs)

  def bias_shape(self, filters):
    """The bias broadcasting against the output: leading 1s dropped."""
    shape = [filters if c == 'C' else 1 for c in self.out]
    while shape and shape[0] == 1:
      shape.pop(0)
    return tuple(shape)

  def to_canonical(self, x):
    perm = _perm(self.lhs, self.canonical)
    return x if perm == sorted(perm) else jnp.transpose(x, perm)

  def kernel_to_canonical(self, w):
    perm = _perm(self.rhs, self.canonical[1:-1] + 'IO')
    return w if perm == sorted(perm) else jnp.transpose(w, perm)

  def from_canonical(self, y):
    perm = _perm(self.canonical, self.out)
    return y if perm == sorted(perm) else jnp.transpose(y, perm)

  def check_channels(self, x_canonical, w_canonical, input_shape):
    got, expected = x_canonical.shape[-1], w_canonical.shape[-2]
    if got != expected:
      raise ValueError(
          f'{self.name}: input has {got} channels (axis '
          f"{self.lhs.index('C')} of input shape {tuple(input_shape)}, layout "
          f'{self.lhs!r}) but the kernel expects {expected} (kernel shape '
          f'{tuple(w_canonical.shape)} in {self.canonical[1:-1]}IO order). '
          f'Re-run init with the new input signature.')

  def apply(self, x, w, b, conv_fn):
    """Runs `conv_fn(x_canonical, w_canonical)` in the canonical layout.

    Folds extra leading axes into the batch, checks channels, casts the
    kernel and bias to the input's dtype, adds the bias (if not None) in the
    output layout and unfolds the batch again.
    """
    folded = self.fold(x.shape)
    if len(folded) != x.ndim:
      x_in = jnp.reshape(x, (-1,) + folded[1:])
    else:
      x_in = x  # No reshape, so unknown (None) batch sizes keep working.
    xc = self.to_canonical(x_in)
    wc = self.kernel_to_canonical(w)
    self.check_channels(xc, wc, x.shape)
    y = self.from_canonical(conv_fn(xc, wc.astype(x.dtype)))
    if b is not None:
      y = y + b.astype(y.dtype)
    if len(folded) != x.ndim:
      lead = tuple(-1 if d is None else d
                   for d in x.shape[:x.ndim - len(folded) + 1])
      y = jnp.reshape(y, lead + tuple(y.shape[1:]))
    return y
