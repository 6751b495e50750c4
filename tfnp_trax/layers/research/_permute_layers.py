"""Fixed permutations and regroupings of the last (embedding) axis.

`ReversibleReshapePermute` and `ReversibleRandomPermute` shuffle the last
axis by a fixed permutation that `reverse` undoes, so they can sit inside a
`ReversibleSerial`. `SplitLastAxis` and `MergeLastTwoAxes` turn `[..., d]`
into `[..., n, d / n]` and back; the sparse dense layers use them to work on
`n` modules of an embedding at once.
"""

import random as pyrandom

from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.layers import base
from tfnp_trax.layers import reversible
from tfnp_trax.layers.assert_shape import assert_shape

__all__ = ['ReversibleReshapePermute', 'ReversibleRandomPermute',
           'SplitLastAxis', 'MergeLastTwoAxes']

# Layer constructors are CamelCase functions, as in Trax.
# pylint: disable=invalid-name

# Trax seeds Python's `random.Random` with this constant for the permutation;
# using the same generator gives bit-identical permutations.
_RANDOM_PERMUTE_SEED = 42


def _reshape_multiplier(name, last_dim):
  """Size of the inner axis `m` when `[..., d]` is viewed as `[..., d/m, m]`.

  For d = 2**n, transposing the `(d/m, m)` view with m = 2**k permutes the
  axis with a cycle of length n / gcd(n, k); the longest cycle needs k prime
  to n. Following Trax, k is the largest integer in [1, n // 2] that does
  NOT divide n, or 1 when there is none (n <= 3, or n = 4).

  Args:
    name: layer name, for errors.
    last_dim: the size of the last axis.

  Returns:
    The multiplier `m`, a power of two.

  Raises:
    ValueError: if `last_dim` is not a power of two, at least 2.
  """
  if last_dim < 2 or last_dim & (last_dim - 1):
    raise ValueError(
        f'{name}: the last axis must have a power-of-two size of at least 2, '
        f'got {last_dim}. Use ReversibleRandomPermute for other sizes.')
  n = last_dim.bit_length() - 1  # log2(last_dim), exactly.
  k = next((i for i in range(n // 2, 0, -1) if n % i), 1)
  return 2 ** k


@assert_shape('...->...')
class ReversibleReshapePermute(reversible.ReversibleLayer):
  """Permutes the last axis by a reshape and a transpose; reversible.

  `[..., d]` is viewed as `[..., d / m, m]`, transposed to `[..., m, d / m]`
  and flattened back; `reverse` does the inverse. The permutation is the
  same for every position and never changes. `d` must be a power of two;
  `m` is chosen to give the longest cycle (log2(d) applications) that a
  reshape-transpose permutation can have.

  Example:
    >>> layer = ReversibleReshapePermute()
    >>> layer(jnp.arange(8.0)).numpy()
    array([0., 2., 4., 6., 1., 3., 5., 7.], dtype=float32)
  """

  def forward(self, x):
    m = _reshape_multiplier(self.name, x.shape[-1])
    return self._transpose(x, (-1, m))

  def reverse(self, output, weights=(), state=(), new_state=(), rng=None):
    del weights, state, new_state, rng
    m = _reshape_multiplier(self.name, output.shape[-1])
    return self._transpose(output, (m, -1))

  @staticmethod
  def _transpose(x, split):
    shape = tuple(x.shape)
    x = jnp.reshape(x, shape[:-1] + split)
    return jnp.reshape(jnp.swapaxes(x, -1, -2), shape)


def random_permutation(last_dim):
  """Trax's fixed permutation of `range(last_dim)` and its inverse.

  Python's `random.Random(42).shuffle` makes it, as in Trax, so it is the
  same permutation Trax uses (and independent of JAX or TF random bits).

  Args:
    last_dim: the size of the permuted axis.

  Returns:
    `(permutation, inverse)`, two lists of ints.
  """
  permutation = list(range(last_dim))
  pyrandom.Random(_RANDOM_PERMUTE_SEED).shuffle(permutation)
  inverse = [0] * last_dim
  for position, source in enumerate(permutation):
    inverse[source] = position
  return permutation, inverse


@assert_shape('...->...')
class ReversibleRandomPermute(reversible.ReversibleLayer):
  """Permutes the last axis by a fixed random-looking permutation; reversible.

  The permutation depends only on the size of the last axis and is the one
  Trax uses: Trax draws it from Python's `random.Random(42)`, not from the
  layer's rng, and so does this layer. `reverse` applies the inverse.

  Example:
    >>> x = jnp.arange(6.0)
    >>> layer = ReversibleRandomPermute()
    >>> bool(jnp.all(layer.reverse(layer(x)) == x))
    True
  """

  def forward(self, x):
    permutation, _ = random_permutation(x.shape[-1])
    return jnp.take(x, permutation, axis=-1)

  def reverse(self, output, weights=(), state=(), new_state=(), rng=None):
    del weights, state, new_state, rng
    _, inverse = random_permutation(output.shape[-1])
    return jnp.take(output, inverse, axis=-1)


@assert_shape('...a->...bc')
def SplitLastAxis(num_splits):
  """Reshapes `[..., d]` to `[..., num_splits, d / num_splits]`.

  Example:
    >>> tuple(SplitLastAxis(2)(jnp.zeros((3, 8))).shape)
    (3, 2, 4)
  """
  name = f'SplitLastAxis_{num_splits}'

  def split(x):
    shape = tuple(x.shape)
    if shape[-1] is not None and shape[-1] % num_splits:
      raise ValueError(
          f'{name}: the last axis of the input (shape {shape}) must be '
          f'divisible by num_splits={num_splits}, to split it into '
          f'{num_splits} equal modules.')
    return jnp.reshape(x, shape[:-1] + (num_splits, -1))
  return base.Fn(name, split)


@assert_shape('...ab->...c')
def MergeLastTwoAxes():
  """Reshapes `[..., a, b]` to `[..., a * b]`; the inverse of SplitLastAxis.

  Example:
    >>> tuple(MergeLastTwoAxes()(jnp.zeros((3, 2, 4))).shape)
    (3, 8)
  """
  # The shape assertion above already rejects inputs of rank below 2.
  def merge(x):
    shape = tuple(x.shape)
    return jnp.reshape(x, shape[:-2] + (shape[-2] * shape[-1],))
  return base.Fn('MergeLastTwoAxes', merge)
