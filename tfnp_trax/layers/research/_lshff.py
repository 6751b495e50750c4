"""LSHFF: a feed-forward block that computes only hash-matched units."""

from tfnp_trax import fastmath
from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.layers import base
from tfnp_trax.layers import initializers as init
from tfnp_trax.layers.research import _attention_functions as fns

__all__ = ['LSHFF']


class LSHFF(base.Layer):
  """`Dense(d_ff) -> Relu -> Dense(d_model)`, masked by hash agreement.

  Rows of the input and rows of the first weight matrix are hashed with the
  same random rotations (from the layer's rng); a hidden unit is computed
  for an input only if they share a bucket in at least one of `n_hashes`
  rounds, which predicts the units Relu would keep.

  Args:
    d_ff: hidden width.
    n_buckets: buckets per hashing round (even int or factor list).
    n_hashes: hashing rounds.
    mode: 'train', 'eval' or 'predict' (kept; no effect).
    kernel_initializer: initializer of both weight matrices.
    bias_initializer: initializer of the output bias.

  Example:
    >>> layer = LSHFF(8, n_buckets=4)
    >>> x = jnp.ones((2, 3, 4), jnp.float32)
    >>> _ = layer.init(shapes.signature(x))
    >>> tuple(layer(x).shape)
    (2, 3, 4)
  """

  def __init__(self, d_ff, n_buckets, n_hashes=4, mode='train',
               kernel_initializer=init.GlorotUniformInitializer(),
               bias_initializer=init.RandomNormalInitializer(1e-6)):
    super().__init__(name=f'LSHFF_{d_ff}')
    fns.n_buckets_total(n_buckets)  # Fails early on odd bucket counts.
    self._mode = mode
    self._d_ff, self._n_buckets, self._n_hashes = d_ff, n_buckets, n_hashes
    self._kernel_initializer = kernel_initializer
    self._bias_initializer = bias_initializer

  def forward(self, x):
    w1, w2, b2 = self.weights
    x_shape = x.shape
    x = jnp.reshape(x, (-1, x_shape[-1]))
    # The same rng, so the same rotations, for inputs and weight rows.
    x_buckets, _ = fns.hash_vecs(x, self._n_buckets, self._n_hashes,
                                 self.rng)
    w1_buckets, _ = fns.hash_vecs(w1, self._n_buckets, self._n_hashes,
                                  self.rng)
    same = jnp.equal(x_buckets[:, :, None], w1_buckets[:, None, :])
    hash_mask = fastmath.stop_gradient(
        jnp.any(same, axis=0).astype(x.dtype))  # [rows, d_ff]
    mid = jnp.dot(x, jnp.transpose(w1)) * hash_mask
    relu = jnp.where(mid <= 0, jnp.zeros_like(mid), mid)
    res = jnp.dot(relu, w2) + b2
    return jnp.reshape(res, x_shape)

  def init_weights_and_state(self, input_signature):
    d_model = input_signature.shape[-1]
    rngs = fastmath.random.split(self.rng, 3)
    w1 = self._kernel_initializer((self._d_ff, d_model), rngs[0])
    w2 = self._kernel_initializer((self._d_ff, d_model), rngs[1])
    b2 = self._bias_initializer((d_model,), rngs[2])
    self.weights = (w1, w2, b2)
