"""Pooling layers: MaxPool, SumPool and AvgPool.

Inputs are `(batch, *spatial, channels)` with one pool-window axis per
spatial axis. As in Trax, windows move by one step per axis unless `strides`
says otherwise. With 'SAME' padding, padded cells never win a max, add
nothing to a sum, and are not counted in an average (a border window
averages only its real cells).

Integer and boolean inputs give what Trax's JAX pooling gives (see the note
in fastmath/nn_ops.py): MaxPool keeps the dtype, SumPool keeps an integer
dtype, AvgPool of integers is float32, and SumPool or AvgPool of booleans is
an error.
"""

from tfnp_trax import fastmath
from tfnp_trax.layers import _conv_layout
from tfnp_trax.layers import base

__all__ = ['MaxPool', 'SumPool', 'AvgPool']


def _pool_layer(kind, pool_fn, pool_size, strides, padding):
  """Builds the Fn layer `kind` after validating its arguments."""
  name = f'{kind}{tuple(pool_size)}'.replace(' ', '')
  pool_size = tuple(pool_size)
  n = len(pool_size)
  _conv_layout.per_axis(name, 'pool_size', pool_size, n)
  strides = _conv_layout.per_axis(name, 'strides', strides, n)
  if not (isinstance(padding, str) and padding.upper() in ('SAME', 'VALID')):
    raise ValueError(f"{name}: padding must be 'SAME' or 'VALID', got "
                     f'{padding!r}.')
  padding = padding.upper()

  def pool(x):
    if x.ndim != n + 2:
      raise ValueError(
          f'{name}: pool_size {pool_size} needs inputs of rank {n + 2} '
          f'(batch, {n} spatial axes, channels), got shape '
          f'{tuple(x.shape)}.')
    if padding == 'VALID' and any(
        size is not None and size < p
        for size, p in zip(x.shape[1:-1], pool_size)):
      raise ValueError(
          f"{name}: with 'VALID' padding the spatial size "
          f'{tuple(x.shape[1:-1])} must be at least the pool size '
          f"{pool_size}; use padding='SAME' or a smaller window.")
    if kind != 'MaxPool' and getattr(x.dtype, 'name', None) == 'bool':
      raise TypeError(f'{name}: expects a numeric input, got dtype bool with '
                      f'shape {tuple(x.shape)} (Trax fails here too: its '
                      f'window sum needs numbers). Cast with tl.ToFloat().')
    return pool_fn(x, pool_size=pool_size, strides=strides, padding=padding)
  return base.Fn(name, pool)


def MaxPool(pool_size=(2, 2), strides=None, padding='VALID'):  # pylint: disable=invalid-name
  """Reduces each window to its maximum.

  Example:
    >>> x = jnp.reshape(jnp.arange(16, dtype=jnp.float32), (1, 4, 4, 1))
    >>> MaxPool((2, 2), strides=(2, 2))(x).numpy()[0, :, :, 0]
    array([[ 5.,  7.],
           [13., 15.]], dtype=float32)

  Args:
    pool_size: window shape, one int per spatial axis.
    strides: window steps per spatial axis (default 1 on each).
    padding: 'VALID' (only whole windows) or 'SAME' (pad to
      ceil(size / stride) windows per axis).
  """
  return _pool_layer('MaxPool', fastmath.max_pool, pool_size, strides,
                     padding)


def SumPool(pool_size=(2, 2), strides=None, padding='VALID'):  # pylint: disable=invalid-name
  """Reduces each window to the sum of its values; see `MaxPool` for args."""
  return _pool_layer('SumPool', fastmath.sum_pool, pool_size, strides,
                     padding)


def AvgPool(pool_size=(2, 2), strides=None, padding='VALID'):  # pylint: disable=invalid-name
  """Reduces each window to the mean of its real (unpadded) cells.

  See `MaxPool` for the arguments.
  """
  return _pool_layer('AvgPool', fastmath.avg_pool, pool_size, strides,
                     padding)
