"""One head's projection weights, as Trax's efficient attention lays them out.

A head holds `(w_q, [w_k,] w_v, w_o[, b_q, [b_k,] b_v])`: `w_k` and `b_k`
only without shared queries/keys, biases only with `bias=True`. `w_o` is
`[d_v, d_model]`. Leaves may carry leading (head) axes.
"""

import math

from tfnp_trax import fastmath
from tfnp_trax.fastmath import numpy as jnp

__all__ = ['head_kernel', 'create_head_weights', 'HeadProjection']


def head_kernel(shape, rng, n_heads):
  """Glorot-uniform kernel for one head, scaled to all heads' total width.

  Trax keeps parity with its dense attention, which initializes all heads
  as one matrix: the limit counts `shape[1] * n_heads` output units.
  """
  lim = math.sqrt(6.0 / (shape[0] + shape[1] * n_heads))
  return fastmath.random.uniform(rng, shape, jnp.float32, -lim, lim)


def create_head_weights(d_model, d_qk, d_v, n_heads, rng, share_qk, bias,
                        d_kv=None):
  """Initial weights of one head (see the module docstring for the order).

  `d_kv` is the width of the key/value source (encoder-decoder attention).
  """
  d_kv = d_model if d_kv is None else d_kv
  rng_q, rng_k, rng_v, rng_o = fastmath.random.split(rng, 4)
  w_q = head_kernel((d_model, d_qk), rng_q, n_heads)
  w_k = None if share_qk else head_kernel((d_kv, d_qk), rng_k, n_heads)
  w_v = head_kernel((d_kv, d_v), rng_v, n_heads)
  w_o = jnp.transpose(head_kernel((d_model, d_v), rng_o, n_heads))
  kernels = (w_q, w_v, w_o) if share_qk else (w_q, w_k, w_v, w_o)
  if not bias:
    return kernels
  b_q = jnp.zeros((d_qk,), jnp.float32)
  b_v = jnp.zeros((d_v,), jnp.float32)
  if share_qk:
    return kernels + (b_q, b_v)
  return kernels + (b_q, jnp.zeros((d_qk,), jnp.float32), b_v)


class HeadProjection:
  """Unpacks a head's weights and projects inputs to queries, keys, values."""

  def __init__(self, weights, share_qk, bias):
    weights = tuple(weights)
    n_kernels = 3 if share_qk else 4
    kernels, biases = weights[:n_kernels], weights[n_kernels:]
    self.w_q, self.w_k = kernels[0], (None if share_qk else kernels[1])
    self.w_v, self.w_o = kernels[-2], kernels[-1]
    self.b_q = self.b_k = self.b_v = None
    if bias:
      self.b_q, self.b_v = biases[0], biases[-1]
      self.b_k = None if share_qk else biases[1]

  @staticmethod
  def _apply(x, w, b):
    y = jnp.matmul(x, w)
    # Biases carry the head axes of the weights; add a length axis.
    return y if b is None else y + b[..., None, :]

  def q(self, x):
    return self._apply(x, self.w_q, self.b_q)

  def k(self, x):
    return self._apply(x, self.w_k, self.b_k)

  def v(self, x):
    return self._apply(x, self.w_v, self.b_v)

  def o(self, x):
    return jnp.matmul(x, self.w_o)
