"""Relative attention layers, as in Trax's `layers/research/rel_attention.py`.

Transformer-XL's relative attention (https://arxiv.org/abs/1901.02860),
shaped for the Funnel Transformer (https://arxiv.org/abs/2006.03236) and the
Hourglass language model: queries may be pooled (shorter than the keys) or
upsampled (longer), and the attention scores and causal masks adapt to the
length ratio. The math lives in `_rel_attention_core`; this module builds
Trax's layers from it, with Trax's names, arguments, weight trees and reprs.

The two global biases of Transformer-XL are `Weights` layers created once by
`get_rel_att_inputs` and passed to every attention layer of a model, so one
copy of them is shared (Trax's weight cache keeps a single copy).
"""

from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.layers import base
from tfnp_trax.layers import combinators as cb
from tfnp_trax.layers import core
from tfnp_trax.layers import initializers as init
from tfnp_trax.layers.assert_shape import assert_shape
from tfnp_trax.layers.attention import MergeHeads
from tfnp_trax.layers.attention import SplitIntoHeads
from tfnp_trax.layers.core_extras import Weights
from tfnp_trax.layers.research import _rel_attention_core as rel

__all__ = ['RelativeAttentionWrapper', 'get_rel_att_inputs',
           'RelativeAttentionLayer', 'RelativeAttentionLMLayer',
           'RelativeAttention', 'DotProductAttention', 'PositionalEmbeddings',
           'calc_funnel_ratio', 'CreateAttentionMaskLayer', 'ShiftRightCls']

calc_funnel_ratio = rel.calc_funnel_ratio
# Trax's private name for the rel-shift; its own tests call it directly.
_fast_matrix_shift = rel.rel_shift

# pylint: disable=invalid-name


def _check_bias_layers(name, context_bias_layer, location_bias_layer):
  if context_bias_layer is None or location_bias_layer is None:
    raise ValueError(
        f'{name}: needs the shared context_bias_layer and location_bias_layer '
        f'(got {context_bias_layer!r} and {location_bias_layer!r}); create '
        f'them once per model with get_rel_att_inputs(d_model, n_heads).')


def RelativeAttentionWrapper(d_feature, n_heads=1, dropout=0.0,
                             max_inference_length=2048, mode='train',
                             context_bias_layer=None,
                             location_bias_layer=None, total_pooling=None):
  """Causal relative self-attention on one input (for configurable models).

  Feeds its one input as queries, keys and values to
  `RelativeAttentionLMLayer`, so it fits where `tl.CausalAttention` does.

  Args:
    d_feature: width of the activations.
    n_heads: number of attention heads; must divide `d_feature`.
    dropout: dropout rate on the attention weights (train mode).
    max_inference_length: unused; kept for Trax's signature.
    mode: 'train', 'eval' or 'predict'.
    context_bias_layer: the shared context bias (`get_rel_att_inputs`).
    location_bias_layer: the shared location bias (`get_rel_att_inputs`).
    total_pooling: how many tokens one position stands for here.

  Returns:
    A layer mapping activations (b, l, d) to activations (b, l, d).

  Raises:
    ValueError: if a bias layer is missing.

  Example:
    >>> context_bias, location_bias = get_rel_att_inputs(8, 2)
    >>> layer = RelativeAttentionWrapper(
    ...     8, n_heads=2, mode='eval', context_bias_layer=context_bias,
    ...     location_bias_layer=location_bias, total_pooling=1)
    >>> x = jnp.ones((2, 5, 8), dtype=jnp.float32)
    >>> _ = layer.init(shapes.signature(x))
    >>> tuple(layer(x).shape)
    (2, 5, 8)
  """
  del max_inference_length
  _check_bias_layers('RelativeAttentionWrapper', context_bias_layer,
                     location_bias_layer)
  attention = RelativeAttentionLMLayer(
      d_feature, context_bias_layer, location_bias_layer, total_pooling,
      n_heads=n_heads, dropout=dropout, mode=mode)
  return cb.Serial(cb.Select([0, 0, 0]), attention)


def get_rel_att_inputs(d_model, n_heads):
  """The (context_bias_layer, location_bias_layer) pair a model shares.

  Each is a `Weights` layer of shape (1, n_heads, 1, d_model // n_heads),
  initialized from N(0, 1e-6**2).

  Args:
    d_model: width of the activations; even and a multiple of `n_heads`.
    n_heads: number of attention heads.

  Returns:
    `(context_bias_layer, location_bias_layer)`.

  Raises:
    ValueError: if `d_model` is odd or not a multiple of `n_heads`.
  """
  if d_model % n_heads or d_model % 2:
    raise ValueError(
        f'get_rel_att_inputs: d_model ({d_model}) must be even and a '
        f'multiple of n_heads ({n_heads}).')
  shape = (1, n_heads, 1, d_model // n_heads)
  initializer = init.RandomNormalInitializer(1e-6)
  return Weights(initializer, shape=shape), Weights(initializer, shape=shape)


@assert_shape('bSq,blk,blv,b1xl->bSd,b1xl')
def RelativeAttentionLayer(d_feature, context_bias_layer, location_bias_layer,
                           total_kv_pooling, separate_cls, n_heads=1,
                           dropout=0.0, mode='train'):
  """Relative attention: (q, k, v, mask) -> (activations, mask).

  Dense projections of the queries, keys, values and of the sinusoidal
  distance embeddings (four `Dense(d_feature)` layers), the two shared
  biases, `RelativeAttention`, and an output `Dense(d_feature)`.

  Args:
    d_feature: width of the activations.
    context_bias_layer: the shared context bias (`get_rel_att_inputs`).
    location_bias_layer: the shared location bias (`get_rel_att_inputs`).
    total_kv_pooling: how many tokens one key stands for; scales distances.
    separate_cls: treat the first position as a CLS token (no position
      term). Trax 1.4.1's distance embeddings refuse it, and so do these.
    n_heads: number of attention heads.
    dropout: dropout rate on the attention weights (train mode).
    mode: 'train', 'eval' or 'predict'.

  Returns:
    The layer.
  """
  _check_bias_layers('RelativeAttentionLayer', context_bias_layer,
                     location_bias_layer)
  return cb.Serial(
      cb.Branch(PositionalEmbeddings(d_feature, separate_cls,
                                     total_kv_pooling),
                cb.Select([0]), cb.Select([1])),
      cb.Parallel(core.Dense(d_feature), core.Dense(d_feature),
                  core.Dense(d_feature), core.Dense(d_feature)),
      context_bias_layer,
      location_bias_layer,
      RelativeAttention(separate_cls=separate_cls, n_heads=n_heads,
                        dropout=dropout, mode=mode),
      core.Dense(d_feature),
  )


@assert_shape('bSq,blk,blv->bSd')
def RelativeAttentionLMLayer(d_feature, context_bias_layer,
                             location_bias_layer, total_kv_pooling,
                             separate_cls=False, n_heads=1, dropout=0.0,
                             mode='train'):
  """Causal relative attention: (q, k, v) -> activations.

  `RelativeAttentionLayer` with the causal funnel mask made from the
  lengths of the queries and keys (`CreateAttentionMaskLayer`).

  Args:
    d_feature: width of the activations.
    context_bias_layer: the shared context bias (`get_rel_att_inputs`).
    location_bias_layer: the shared location bias (`get_rel_att_inputs`).
    total_kv_pooling: how many tokens one key stands for; scales distances.
    separate_cls: see `RelativeAttentionLayer`.
    n_heads: number of attention heads.
    dropout: dropout rate on the attention weights (train mode).
    mode: 'train', 'eval' or 'predict'.

  Returns:
    The layer.
  """
  attention = RelativeAttentionLayer(
      d_feature, context_bias_layer, location_bias_layer, total_kv_pooling,
      separate_cls, n_heads=n_heads, dropout=dropout, mode=mode)
  return cb.Serial(
      CreateAttentionMaskLayer(),  # q, k, v, mask
      attention,                   # activations, mask
      cb.Select([0], n_in=2),      # activations
  )


class RelativeAttention(base.Layer):
  """The attention core: 7 inputs -> (activations, mask).

  Inputs are (location_bias, context_bias, pos_emb, q, k, v, mask), with q,
  k, v of shape (batch, length, d_feature), pos_emb (W, d_feature) and mask
  broadcastable to (batch, n_heads, q_len, k_len). Heads are split, scored
  with `DotProductAttention` and merged back; the mask passes through. In
  'viz' mode the attention weights are kept as the layer's state.
  """

  def __init__(self, separate_cls, n_heads=1, dropout=0.0, mode='train'):
    """Creates the layer.

    Args:
      separate_cls: drop the position term of the first query and key.
      n_heads: number of attention heads.
      dropout: dropout rate on the attention weights (train mode).
      mode: 'train', 'eval', 'predict' or 'viz'.
    """
    super().__init__(n_in=7, n_out=2)
    self._separate_cls = separate_cls
    self._n_heads = n_heads
    self._dropout = dropout
    self._mode = mode

  def forward(self, inputs):
    location_bias, context_bias, pos_emb, q, k, v, mask = inputs
    d_feature, n_heads = q.shape[-1], self._n_heads
    if d_feature % n_heads:
      raise ValueError(
          f'{self.name}: d_feature ({d_feature}) is not a multiple of n_heads '
          f'({n_heads}) (queries shape {tuple(q.shape)}).')
    split = SplitIntoHeads(n_heads, merged_batch_and_head=False).forward
    per_head, dots = DotProductAttention(
        split(q), split(k), split(v),
        pos_emb.reshape((-1, n_heads, d_feature // n_heads)),
        context_bias, location_bias, mask, separate_cls=self._separate_cls,
        dropout=self._dropout, mode=self._mode, rng=self.rng)
    if self._mode == 'viz':
      self.state = dots
    merged = MergeHeads(n_heads, merged_batch_and_head=False).forward(
        per_head)
    return merged, mask


def DotProductAttention(queries, keys, values, pos_emb, context_bias,
                        location_bias, mask, separate_cls, dropout, mode, rng):
  """Per-head relative attention; returns `(outputs, weights)` in float32.

  See `_rel_attention_core.relative_dot_product_attention` for the shapes
  and the formula. (Trax's `tl.DotProductAttention` is a different layer;
  this function is reached as `rel_attention.DotProductAttention`.)
  """
  return rel.relative_dot_product_attention(
      queries, keys, values, pos_emb, context_bias, location_bias, mask,
      separate_cls, dropout, mode, rng)


def PositionalEmbeddings(d_feature, separate_cls, total_kv_pooling):
  """(queries, keys) -> sinusoidal embeddings of their relative distances.

  Args:
    d_feature: embedding width.
    separate_cls: must be False (Trax 1.4.1 supports no CLS token here).
    total_kv_pooling: how many tokens one key stands for; scales distances.

  Returns:
    A layer whose output has shape (W, d_feature): W = k_len for equal
    lengths, else 2 * max(q_len, k_len) - 1 (see `relative_positions`).
  """

  def positions(queries, keys):
    if separate_cls:
      raise ValueError(
          'PositionalEmbeddings: separate_cls=True is not supported (nor is '
          'it in Trax 1.4.1); pass separate_cls=False.')
    return rel.relative_positions(queries.shape[-2], keys.shape[-2],
                                  total_kv_pooling)

  def embed(positions_vector):
    return rel.sinusoidal_embeddings(positions_vector, d_feature)

  return cb.Serial(
      base.Fn('Generate positions vectors', positions, n_out=1),
      base.Fn('Transform to sinusoidal encodings', embed, n_out=1))


@assert_shape('bqd,bkd,bvd->bqd,bkd,bvd,b1qk')
def CreateAttentionMaskLayer():
  """(q, k, v) -> (q, k, v, causal funnel mask of shape (b, 1, q_len, k_len)).

  A query attends to the keys at or before its own position; with pooled
  keys or queries the causal triangle is widened by the length ratio.
  """
  return cb.Branch(
      cb.Select([0]), cb.Select([1]), cb.Select([2]),
      base.Fn('create attention mask layer', rel.funnel_mask, n_out=1))


@assert_shape('...d->...d')
def ShiftRightCls(cls_id):
  """Shifts sequences right by one along axis 1, putting `cls_id` first.

  Args:
    cls_id: the value (e.g. the CLS token id) inserted at position 0.

  Returns:
    The layer.
  """

  def shift_right(x):
    if x.ndim < 2:
      raise ValueError(f'ShiftRightCls: expects a (batch, length, ...) '
                       f'input, got shape {tuple(x.shape)}.')
    first = jnp.full_like(x[:, :1], cls_id)
    return jnp.concatenate([first, x[:, :-1]], axis=1)

  return base.Fn('ShiftRightCls()', shift_right)
