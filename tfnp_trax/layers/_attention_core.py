"""Scaled dot-product attention on per-head arrays, and its helpers.

Shared by the attention layers (attention.py, causal_attention.py and the
research layers): the per-head attention math, masks, mode checks, and the
`SplitIntoHeads` / `MergeHeads` layers that move between (batch, length, d)
and per-head arrays. Trax defines the two layers in `trax.layers.attention`,
which still exports them. Activations keep their dtype; the logits, the
softmax and its statistics are computed in float32 (float64 inputs stay
float64 so gradient checks keep their precision).
"""

import math

from tfnp_trax import fastmath
from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.layers import base
from tfnp_trax.layers.assert_shape import assert_shape

__all__ = ['MODES', 'check_mode', 'check_dropout', 'stats_dtype',
           'static_int', 'per_head_attention', 'causal_mask', 'check_mask',
           'split_into_heads_fn', 'merge_heads_fn', 'SplitIntoHeads',
           'MergeHeads']

# 'collect' is the mode RL agents build their data-collecting models in;
# it acts as 'eval' (no dropout, no statistics updates), as in Trax.
MODES = ('train', 'eval', 'predict', 'viz', 'collect')

# Added to masked-out logits; large enough that exp() underflows to zero.
_MASK_VALUE = -1e9


def check_mode(layer_name, mode):
  if mode not in MODES:
    raise ValueError(f'{layer_name}: mode must be one of {MODES}, got '
                     f'{mode!r}.')


def check_dropout(layer_name, rate):
  if rate is not None and not 0.0 <= rate < 1.0:
    raise ValueError(f'{layer_name}: dropout rate must be in [0, 1), got '
                     f'{rate}.')


def stats_dtype(dtype):
  """The dtype in which logits and softmax statistics are computed."""
  return jnp.float64 if dtype == jnp.float64 else jnp.float32


def static_int(x):
  """`int(x)` when `x` has a concrete value, None inside a trace."""
  try:
    return int(x)
  except TypeError:  # A symbolic tensor under tf.function or abstract eval.
    return None


def causal_mask(n_queries, n_keys, first_query_position=0):
  """Boolean [1, n_queries, n_keys]: query i sees keys 0..(start + i)."""
  queries = jnp.arange(n_queries, dtype=jnp.int32) + first_query_position
  keys = jnp.arange(n_keys, dtype=jnp.int32)
  return (keys[None, None, :] <= queries[None, :, None])


def check_mask(layer_name, mask, logits_shape):
  """Raises unless `mask` broadcasts to the attention logits' shape."""
  mask_shape = tuple(mask.shape)
  ok = len(mask_shape) == len(logits_shape) and all(
      m in (1, l) for m, l in zip(mask_shape, logits_shape))
  if ok and mask_shape[-1] != logits_shape[-1]:
    ok = False  # The key axis is never broadcast: that is the padding axis.
  if not ok:
    raise ValueError(
        f'{layer_name}: mask shape {mask_shape} does not broadcast to the '
        f'attention logits shape {tuple(logits_shape)} (batch, heads, '
        f'queries, keys); its last axis must equal the number of keys '
        f'({logits_shape[-1]}). Padding masks come from tl.PaddingMask() '
        f'with shape (batch, 1, 1, keys).')


def per_head_attention(queries, keys, values, mask, dropout, mode, rng):
  """softmax(q k^T / sqrt(d_head), masked) v, per head.

  Args:
    queries: [..., n_queries, d_head].
    keys: [..., n_keys, d_head].
    values: [..., n_keys, d_value].
    mask: None, or a boolean/0-1 array broadcasting to
      [..., n_queries, n_keys]; False/0 entries are not attended to.
    dropout: rate of attention-weight dropout, applied in 'train' mode.
    mode: 'train', 'eval', 'predict' or 'viz'.
    rng: int32 [2] key for dropout.

  Returns:
    `(activations, strengths)`: activations [..., n_queries, d_value] in the
    queries' dtype, and the attention strengths in float32 (or float64).
  """
  # Integer inputs attend in float32, as jnp's matmul and softmax promote
  # them in Trax; float inputs keep their dtype.
  queries, keys, values = (a if fastmath.is_float(a) else a.astype(jnp.float32)
                           for a in (queries, keys, values))
  dtype = queries.dtype
  sdtype = stats_dtype(dtype)
  d_head = queries.shape[-1]
  if keys.dtype == dtype:
    logits = fastmath.matmul_transposed(queries, keys).astype(sdtype)
  else:
    logits = jnp.matmul(queries, jnp.swapaxes(keys, -1, -2)).astype(sdtype)
  logits = logits * (1.0 / math.sqrt(d_head))
  if mask is not None:
    if mask.dtype != jnp.bool_:
      mask = mask != 0
    logits = jnp.where(mask, logits, jnp.asarray(_MASK_VALUE, dtype=sdtype))
  # exp(logits - logsumexp(logits)), as Trax writes it, in one Softmax op.
  strengths = fastmath.softmax(logits, axis=-1)
  if dropout and mode == 'train':
    keep = fastmath.random.bernoulli(rng, 1.0 - dropout, strengths.shape)
    strengths = jnp.where(keep, strengths * (1.0 / (1.0 - dropout)),
                          jnp.zeros_like(strengths))
  activations = jnp.matmul(strengths.astype(values.dtype), values)
  return activations.astype(dtype), strengths


def split_into_heads_fn(n_heads, merged_batch_and_head, layer_name):
  """The array function of `SplitIntoHeads`; errors name `layer_name`."""
  def f(x):
    if x.ndim != 3:
      raise ValueError(f'{layer_name}: expects activations of shape (batch, '
                       f'length, d_feature), got shape {tuple(x.shape)}.')
    batch, length, d_feature = x.shape
    if d_feature % n_heads:
      raise ValueError(f'{layer_name}: d_feature {d_feature} is not a '
                       f'multiple of n_heads {n_heads} (input shape '
                       f'{tuple(x.shape)}).')
    x = x.reshape((batch, length, n_heads, d_feature // n_heads))
    x = x.transpose((0, 2, 1, 3))
    if merged_batch_and_head:
      x = x.reshape((batch * n_heads, length, d_feature // n_heads))
    return x
  return f


def merge_heads_fn(n_heads, merged_batch_and_head, layer_name):
  """The array function of `MergeHeads`; errors name `layer_name`."""
  def f(x):
    if merged_batch_and_head:
      if x.ndim != 3 or x.shape[0] % n_heads:
        raise ValueError(
            f'{layer_name}: expects shape (batch * n_heads, length, d_head) '
            f'with a leading dim divisible by n_heads {n_heads}, got shape '
            f'{tuple(x.shape)}.')
      x = x.reshape((x.shape[0] // n_heads, n_heads) + tuple(x.shape[1:]))
    elif x.ndim != 4 or x.shape[1] != n_heads:
      raise ValueError(f'{layer_name}: expects shape (batch, n_heads='
                       f'{n_heads}, length, d_head), got shape '
                       f'{tuple(x.shape)}.')
    batch, _, length, d_head = x.shape
    return x.transpose((0, 2, 1, 3)).reshape((batch, length, n_heads * d_head))
  return f


@assert_shape('bld->...lh')
def SplitIntoHeads(  # pylint: disable=invalid-name
    n_heads, merged_batch_and_head=True):
  """(batch, length, d) -> (batch * n_heads, length, d / n_heads).

  With `merged_batch_and_head=False` the result is
  (batch, n_heads, length, d / n_heads).
  """
  return base.Fn('SplitIntoHeads', split_into_heads_fn(
      n_heads, merged_batch_and_head, 'SplitIntoHeads'))


@assert_shape('...lh->bld')
def MergeHeads(  # pylint: disable=invalid-name
    n_heads, merged_batch_and_head=True):
  """Inverse of `SplitIntoHeads`: back to (batch, length, d)."""
  return base.Fn('MergeHeads', merge_heads_fn(
      n_heads, merged_batch_and_head, 'MergeHeads'))
