"""NumPy float64 references for the attention layer tests."""

import numpy as np

from tfnp_trax import fastmath

MASK_VALUE = -1e9


def softmax(z):
  z = z - z.max(-1, keepdims=True)
  e = np.exp(z)
  return e / e.sum(-1, keepdims=True)


def dot_product_attention(q, k, v, mask=None, causal=False):
  """softmax(q k^T / sqrt(d)) v over the last two axes, masked."""
  logits = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
  if mask is not None:
    logits = np.where(mask, logits, MASK_VALUE)
  if causal:
    lq, lk = logits.shape[-2:]
    logits = np.where(np.tril(np.ones((lq, lk), bool)), logits, MASK_VALUE)
  return softmax(logits) @ v


def split_heads(x, n_heads):
  b, l, d = x.shape
  return x.reshape(b, l, n_heads, d // n_heads).transpose(0, 2, 1, 3)


def merge_heads(x):
  b, h, l, dh = x.shape
  return x.transpose(0, 2, 1, 3).reshape(b, l, h * dh)


def multi_head(q_in, k_in, v_in, mask, weights, n_heads, causal=False):
  """Projections, per-head attention and output projection.

  `weights` is any tree whose leaves are wq, bq, wk, bk, wv, bv, wo, bo.
  """
  wq, bq, wk, bk, wv, bv, wo, bo = fastmath.tree_leaves(weights)
  q, k, v = q_in @ wq + bq, k_in @ wk + bk, v_in @ wv + bv
  heads = dot_product_attention(split_heads(q, n_heads),
                                split_heads(k, n_heads),
                                split_heads(v, n_heads), mask, causal)
  return merge_heads(heads) @ wo + bo
