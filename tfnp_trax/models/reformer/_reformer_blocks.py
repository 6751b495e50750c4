"""Reversible Reformer blocks: decoder, encoder and encoder-decoder.

A reversible block keeps two activation streams (x1, x2) and updates them
as y1 = x1 + F(x2) and then y2 = x2 + G(y1) (`ReversibleHalfResidual`
followed by `ReversibleSwap`), so the backward pass can recompute every
block's input from its output instead of storing it. F is attention, G the
feed-forward part; both see LayerNorm-ed inputs. From "Reformer: The
Efficient Transformer" (Kitaev et al., 2020, arXiv:2001.04451) and RevNets
(Gomez et al., 2017, arXiv:1707.04585).
"""

from tfnp_trax import layers as tl
from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.layers.research import efficient_attention
from tfnp_trax.models.research import configurable_transformer as ct

__all__ = ['DecoderBlock', 'EncoderBlock', 'EncoderDecoderBlock',
           'InsertAxes12', 'RemoveAxes12', 'XYAvg']

# Layer constructors are CamelCase functions, as in Trax.
# pylint: disable=invalid-name


def InsertAxes12():
  """A (batch, length) mask as (batch, 1, 1, length), as tl.Attention takes."""
  return tl.Fn('InsertAxes12',
               lambda x: jnp.reshape(x, (x.shape[0], 1, 1, x.shape[1])))


def RemoveAxes12():
  """A (batch, 1, 1, length) padding mask as (batch, length)."""
  return tl.Fn('RemoveAxes12', lambda x: jnp.squeeze(x, (1, 2)))


def XYAvg():
  """Merges the two reversible streams by averaging them."""
  return tl.Fn('XYAvg', lambda x, y: (x + y) / 2.0)


def DecoderBlock(d_model, d_ff, d_attention_key, d_attention_value, n_heads,
                 attention_type, dropout, ff_activation, ff_dropout,
                 ff_use_sru, ff_chunk_size, ff_sparsity,
                 attention_chunk_size, n_attention_layers=1,
                 n_feedforward_layers=1, center_layernorm=True,
                 use_bfloat16=False, mode='train'):
  """Reversible causal block on the two streams: `(x1, x2) -> (y1, y2)`.

  `n_attention_layers` attention half-residuals, then
  `n_feedforward_layers` feed-forward half-residuals, each followed by a
  swap of the streams.

  Args:
    d_model: width of each stream.
    d_ff: width of the feed-forward hidden layer.
    d_attention_key: depth of each head's queries and keys.
    d_attention_value: depth of each head's values.
    n_heads: number of attention heads.
    attention_type: attention layer constructor (built causal, unmasked).
    dropout: dropout rate (attention and feed-forward output).
    ff_activation: activation layer constructor of the feed-forward part.
    ff_dropout: dropout rate after the feed-forward hidden layer.
    ff_use_sru: SRU layers beside the feed-forward part (int or pair).
    ff_chunk_size: if > 0, run the feed-forward part on chunks this size.
    ff_sparsity: 0, or the sparsity of `tl.SparseFF` feed-forward parts.
    attention_chunk_size: if > 0, run attention on batch chunks this size.
    n_attention_layers: number of attention half-residuals.
    n_feedforward_layers: number of feed-forward half-residuals.
    center_layernorm: LayerNorm subtracts the mean (else RMS norm).
    use_bfloat16: keep the feed-forward weights in bfloat16.
    mode: 'train', 'eval' or 'predict'.

  Returns:
    A list of reversible layers.
  """
  def _Attn():
    return ct.ApplyAttentionLayer(
        attention_type, d_model, n_heads, d_attention_key, d_attention_value,
        True, False, dropout, dropout, attention_chunk_size, mode)

  def _FF():
    return ct.FeedForwardWithOptions(
        d_model, d_ff, dropout, [-2], ff_activation, ff_dropout,
        ff_chunk_size, ff_use_sru, ff_sparsity, center_layernorm, mode,
        use_bfloat16)

  attention_halves = [
      [tl.ReversibleHalfResidual(tl.LayerNorm(center=center_layernorm),
                                 attention_layer=_Attn(),
                                 name='ReversibleHalfResidualDecoderAttn'),
       tl.ReversibleSwap()]
      for _ in range(n_attention_layers)]
  feed_forward_halves = [
      [tl.ReversibleHalfResidual(_FF(),
                                 name='ReversibleHalfResidualDecoderFF'),
       tl.ReversibleSwap()]
      for _ in range(n_feedforward_layers)]
  return attention_halves + feed_forward_halves


def EncoderBlock(d_model, d_ff, n_heads, attention_type, dropout,
                 ff_activation, ff_dropout, ff_use_sru=0, ff_chunk_size=0,
                 ff_sparsity=0, attention_chunk_size=0, center_layernorm=True,
                 use_bfloat16=False, use_two_swaps_per_block=True,
                 mode='train'):
  """Reversible encoder block: `(x1, x2, mask) -> (y1, y2, mask)`.

  The attention is masked and non-causal, with d_model / n_heads deep
  heads. A classic attention layer taking (x, 4-d mask) gets the
  (batch, length) mask reshaped for it. An encoder never runs step by
  step, so 'predict' mode builds it in 'eval' mode.

  Args:
    d_model: width of each stream.
    d_ff: width of the feed-forward hidden layer.
    n_heads: number of attention heads.
    attention_type: attention layer constructor.
    dropout: dropout rate (attention and feed-forward output).
    ff_activation: activation layer constructor of the feed-forward part.
    ff_dropout: dropout rate after the feed-forward hidden layer.
    ff_use_sru: SRU layers beside the feed-forward part (int or pair).
    ff_chunk_size: if > 0, run the feed-forward part on chunks this size.
    ff_sparsity: 0, or the sparsity of `tl.SparseFF` feed-forward parts.
    attention_chunk_size: if > 0, run attention on batch chunks this size.
    center_layernorm: LayerNorm subtracts the mean (else RMS norm).
    use_bfloat16: keep the feed-forward weights in bfloat16.
    use_two_swaps_per_block: end with a swap (True) or leave the streams
      crossed after the feed-forward half-residual.
    mode: 'train', 'eval' or 'predict'.

  Returns:
    A list of reversible layers.
  """
  if mode == 'predict':
    mode = 'eval'
  attention = ct.ApplyAttentionLayer(
      attention_type=attention_type, d_model=d_model, n_heads=n_heads,
      d_qk=d_model // n_heads, d_v=d_model // n_heads, masked=True,
      causal=False, attention_dropout=dropout, output_dropout=dropout,
      attention_chunk_size=attention_chunk_size, mode=mode)
  if attention.n_out == 2:  # tl.Attention: (x, mask) -> (y, mask).
    attention = tl.Serial(tl.Parallel([], InsertAxes12()), attention,
                          tl.Select([0], n_in=2))
  feed_forward = ct.FeedForwardWithOptions(
      d_model, d_ff, dropout, [-2], ff_activation, ff_dropout, ff_chunk_size,
      ff_use_sru, ff_sparsity, center_layernorm, mode, use_bfloat16)
  layers = [
      tl.ReversibleHalfResidual(tl.LayerNorm(center=center_layernorm),
                                attention_layer=attention,
                                name='ReversibleHalfResidualEncoderAttn'),
      tl.ReversibleSwap(),
      tl.ReversibleHalfResidual(feed_forward,
                                name='ReversibleHalfResidualEncoderFF'),
  ]
  if use_two_swaps_per_block:
    layers.append(tl.ReversibleSwap())
  return layers


def EncoderDecoderBlock(d_model, d_ff, n_heads, dropout, ff_activation,
                        ff_dropout, mode, ff_use_sru=0, ff_chunk_size=0,
                        ff_sparsity=0):
  """Reversible decoder block with cross-attention.

  Maps `(d1, d2, enc, mask) -> (d1', d2', enc, mask)`: causal
  `SelfAttention`, `EncDecAttention` over the encoder activations, and the
  feed-forward part, each a half-residual followed by a swap.

  Args:
    d_model: width of each stream.
    d_ff: width of the feed-forward hidden layer.
    n_heads: number of attention heads (of depth d_model / n_heads).
    dropout: dropout rate (attention and feed-forward output).
    ff_activation: activation layer constructor of the feed-forward part.
    ff_dropout: dropout rate after the feed-forward hidden layer.
    mode: 'train', 'eval' or 'predict'.
    ff_use_sru: SRU layers beside the feed-forward part (int or pair).
    ff_chunk_size: if > 0, run the feed-forward part on chunks this size.
    ff_sparsity: 0, or the sparsity of `tl.SparseFF` feed-forward parts.

  Returns:
    A list of reversible layers.
  """
  d_head = d_model // n_heads
  enc_dec_attention = efficient_attention.EncDecAttention(
      n_heads=n_heads, d_qk=d_head, d_v=d_head, attention_dropout=dropout,
      output_dropout=dropout, mode=mode)
  causal_attention = efficient_attention.SelfAttention(
      n_heads=n_heads, d_qk=d_head, d_v=d_head, causal=True,
      attention_dropout=dropout, output_dropout=dropout, mode=mode)
  feed_forward = ct.FeedForwardWithOptions(
      d_model, d_ff, dropout, [-2], ff_activation, ff_dropout, ff_chunk_size,
      ff_use_sru, ff_sparsity, True, mode)
  return [                             # vec_d1 vec_d2 vec_e masks
      tl.ReversibleHalfResidual(tl.LayerNorm(),
                                attention_layer=causal_attention),
      tl.ReversibleSwap(),
      tl.ReversibleHalfResidual(tl.LayerNorm(),
                                attention_layer=enc_dec_attention),
      tl.ReversibleSwap(),
      tl.ReversibleHalfResidual(feed_forward),
      tl.ReversibleSwap(),
  ]
