"""The math of funnel-aware relative attention (Transformer-XL style).

Queries may be longer than keys (upsampling), shorter (downsampling, i.e.
pooled queries), or equally long. The ratio between the two lengths is the
*funnel factor*; every function here derives it from the static shapes.

Relative position scores follow Transformer-XL (Dai et al., 2019,
https://arxiv.org/abs/1901.02860): the score of query i and key j is

    (q_i + u) . k_j  +  (q_i + v) . R[i - j]

with learned global biases u (context) and v (location) and sinusoidal
embeddings R of the distance. The second term is computed once against
every embedding row and then *rel-shifted*, so that row i lines up with the
distances i - j. The funnel variant (Funnel-Transformer, Dai et al., 2020,
https://arxiv.org/abs/2006.03236) adapts the distances and the shift to the
pooling factor.
"""

import math

import numpy as onp

from tfnp_trax import fastmath
from tfnp_trax.fastmath import numpy as jnp

__all__ = ['calc_funnel_ratio', 'relative_positions', 'sinusoidal_embeddings',
           'funnel_mask', 'rel_shift', 'relative_dot_product_attention']


def calc_funnel_ratio(keys_len, queries_len):
  """`(funnel_factor, is_upsampling)` of keys and queries of these lengths.

  Args:
    keys_len: number of keys.
    queries_len: number of queries.

  Returns:
    `(longer // shorter, queries_len > keys_len)`.

  Raises:
    ValueError: if the longer length is not a multiple of the shorter one.
  """
  longer, shorter = max(keys_len, queries_len), min(keys_len, queries_len)
  if shorter <= 0 or longer % shorter:
    raise ValueError(
        f'calc_funnel_ratio: the longer of keys_len ({keys_len}) and '
        f'queries_len ({queries_len}) must be a positive multiple of the '
        f'shorter; pooled sequences must divide evenly.')
  return longer // shorter, queries_len > keys_len


def relative_positions(queries_len, keys_len, total_kv_pooling):
  """The distances the embedding rows stand for, as float32.

  Equal lengths: the K distances -(K-1)..0, times the pooling so far.
  Downsampling: the 2K-1 distances -(K-1)..K-1, times the pooling.
  Upsampling: the 2Q-1 distances -(Q-1)..Q-1 in query units, unscaled.
  """
  factor, is_upsampling = calc_funnel_ratio(keys_len, queries_len)
  if total_kv_pooling is None and not is_upsampling:
    raise ValueError(
        f'PositionalEmbeddings: total_kv_pooling (total_pooling) is None, but '
        f'queries of length {queries_len} over keys of length {keys_len} '
        f'need it to scale distances; pass 1 for unpooled sequences.')
  if factor == 1:
    positions = (onp.arange(keys_len) - (keys_len - 1)) * total_kv_pooling
  elif is_upsampling:
    positions = onp.arange(-queries_len + 1, queries_len)
  else:
    positions = onp.arange(-keys_len + 1, keys_len) * total_kv_pooling
  return jnp.asarray(positions, dtype=jnp.float32)


def sinusoidal_embeddings(positions, d_feature):
  """[sin(p * f) | cos(p * f)] for frequencies f = 10000^(-2i / d_feature)."""
  exponents = jnp.arange(0.0, d_feature, 2.0, dtype=jnp.float32) / d_feature
  inv_freq = 1.0 / (10000.0 ** exponents)
  angles = jnp.einsum('i,j->ij', positions, inv_freq)
  return jnp.concatenate([jnp.sin(angles), jnp.cos(angles)], axis=1)


def funnel_mask(queries, keys):
  """Causal (batch, 1, queries_len, keys_len) boolean mask.

  With pooled keys every key stands for `factor` consecutive queries' worth
  of positions, so the triangle over the shorter length is widened by
  repeating its columns (downsampling) or rows (upsampling).
  """
  keys_len, queries_len = keys.shape[-2], queries.shape[-2]
  factor, is_upsampling = calc_funnel_ratio(keys_len, queries_len)
  if factor == 1:
    mask = onp.tril(onp.ones((queries_len, queries_len), bool))
  elif is_upsampling:
    mask = onp.repeat(onp.tril(onp.ones((keys_len, keys_len), bool)), factor,
                      axis=0)
  else:
    mask = onp.repeat(onp.tril(onp.ones((queries_len, queries_len), bool)),
                      factor, axis=1)
  # A (batch, 1, 1, 1) block of True lets the batch size stay symbolic.
  per_example = jnp.ones_like(queries[:, :1, :1], dtype=jnp.bool_)[:, None]
  return jnp.logical_and(per_example, jnp.asarray(mask)[None, None])


def _shift_rows(x, shift):
  """Shifts row i of the last two axes left by (rows - 1 - i) + shift - 1.

  This is Transformer-XL's rel-shift, done with a pad and two reshapes
  instead of a gather: prepending `shift` zero columns and re-reading the
  buffer with rows of the other length offsets each row by one more place
  than the row before. Entries past the valid band wrap into the next row;
  the causal mask hides them in the language-model layers.
  """
  queries_len, width = x.shape[-2], x.shape[-1]
  n_heads = x.shape[1]
  zeros = jnp.zeros_like(x[..., :shift])
  padded = jnp.concatenate([zeros, x], axis=-1)
  padded = padded.reshape((-1, n_heads, width + shift, queries_len))
  return padded[:, :, shift:, :].reshape((-1, n_heads, queries_len, width))


def rel_shift(x, funnel_factor=1, is_upsampling=False):
  """Aligns position scores (b, n, Q, W) with keys: the result is (b, n, Q, K).

  Args:
    x: scores of every query against every embedding row.
    funnel_factor: length ratio of the longer and shorter sequence.
    is_upsampling: whether the queries are the longer sequence.

  Returns:
    Scores indexed by (query, key).
  """
  if funnel_factor == 1 and not is_upsampling:
    # Equal lengths: W == K == Q and no column selection is needed.
    return _shift_rows(x, 1)
  step, shift = (funnel_factor, 1) if is_upsampling else (1, funnel_factor)
  keys_span = (x.shape[-1] + 1) // 2
  shifted = _shift_rows(x, shift)
  return shifted[..., shift - 1:shift - 1 + keys_span:step]


def relative_dot_product_attention(queries, keys, values, pos_emb,
                                   context_bias, location_bias, mask,
                                   separate_cls, dropout, mode, rng,
                                   name='RelativeAttention'):
  """Per-head relative attention.

  Args:
    queries: (batch, n_heads, Q, d_head).
    keys: (batch, n_heads, K, d_head).
    values: (batch, n_heads, K, d_head).
    pos_emb: (W, n_heads, d_head) embeddings of the relative distances.
    context_bias: (1, n_heads, 1, d_head), added to queries for content.
    location_bias: (1, n_heads, 1, d_head), added to queries for position.
    mask: boolean, broadcastable to (batch, n_heads, Q, K), or None.
    separate_cls: drop the position term of the first query and first key
      (a CLS token has no meaningful distance to the others).
    dropout: rate of dropout on the attention weights, in train mode.
    mode: 'train', 'eval', 'predict' or 'viz'.
    rng: key for the dropout.
    name: layer name for error messages.

  Returns:
    `(per_head_outputs, attention_weights)`, both float32.

  Raises:
    ValueError: for a dropout rate of 1 or more.
  """
  if dropout is not None and dropout >= 1.0:
    raise ValueError(f'{name}: dropout rate must be lower than 1, got '
                     f'{dropout}.')
  d_head = queries.shape[-1]
  factor, is_upsampling = calc_funnel_ratio(keys.shape[-2],
                                            queries.shape[-2])
  content = jnp.einsum('bnid,bnjd->bnij', queries + context_bias, keys)
  position = jnp.einsum('bnid,jnd->bnij', queries + location_bias, pos_emb)
  position = rel_shift(position, factor, is_upsampling)
  if separate_cls:
    keep = onp.ones(position.shape[-2:], bool)
    keep[0, :] = keep[:, 0] = False
    position = jnp.where(jnp.asarray(keep), position,
                         jnp.zeros_like(position))
  dots = (content + position) / math.sqrt(d_head)
  if mask is not None:
    dots = jnp.where(mask, dots, jnp.full_like(dots, -1e9))
  dots = jnp.exp(dots - fastmath.logsumexp(dots, axis=-1, keepdims=True))
  if dropout is not None and dropout > 0.0 and mode == 'train':
    keep = fastmath.random.bernoulli(rng, 1.0 - dropout, dots.shape)
    dots = jnp.where(keep, dots / (1.0 - dropout), jnp.zeros_like(dots))
  out = jnp.matmul(dots, values)
  return out.astype(jnp.float32), dots.astype(jnp.float32)
