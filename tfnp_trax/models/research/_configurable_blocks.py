"""Encoder, decoder and encoder-decoder blocks of the configurable models.

Pre-norm residual blocks: each sub-block is `x + Dropout(F(LayerNorm(x)))`
for attention, and `x + FeedForwardWithOptions(x)` (which holds its own
LayerNorm and dropout) for the feed-forward part.
"""

from tfnp_trax import layers as tl
from tfnp_trax.models.research import _configurable_options as options
from tfnp_trax.models.research._configurable_layers import ApplyAttentionLayer
from tfnp_trax.models.research._configurable_layers import FeedForwardWithOptions

__all__ = ['EncoderBlock', 'DecoderBlock', 'EncoderDecoderBlock']

# Layer constructors are CamelCase functions, as in Trax.
# pylint: disable=invalid-name


def _feed_forwards(n, d_model, d_ff, dropout, dropout_shared_axes,
                   ff_activation, ff_dropout, ff_chunk_size, ff_use_sru,
                   ff_sparsity, ff_sparsity_type, mode):
  return [tl.Residual(FeedForwardWithOptions(
      d_model, d_ff, dropout, dropout_shared_axes, ff_activation, ff_dropout,
      ff_chunk_size, ff_use_sru, ff_sparsity, True, mode, False,
      ff_sparsity_type)) for _ in range(n)]


def _attention_residuals(n, causal, masked, d_model, n_heads, dropout,
                         dropout_shared_axes, attention_chunk_size,
                         attention_type, mode):
  d_head = d_model // n_heads
  return [tl.Residual(
      tl.LayerNorm(),
      ApplyAttentionLayer(attention_type, d_model, n_heads, d_head, d_head,
                          causal=causal, masked=masked,
                          attention_dropout=dropout, output_dropout=dropout,
                          attention_chunk_size=attention_chunk_size,
                          mode=mode),
      tl.Dropout(rate=dropout, shared_axes=dropout_shared_axes, mode=mode),
  ) for _ in range(n)]


def EncoderBlock(d_model, d_ff, n_heads, dropout, dropout_shared_axes, mode,
                 ff_activation, ff_dropout, ff_chunk_size, ff_use_sru,
                 ff_sparsity, ff_sparsity_type, attention_chunk_size,
                 attention_type, n_attention_layers=1,
                 n_feedforward_layers=1):
  """`(activations, mask) -> (activations, mask)`: attention, then FF.

  The mask, made from the source tokens, keeps attention off padding.
  Arguments are those of `ConfigurableTransformerEncoder` (see there and
  `FeedForwardWithOptions`), plus:

  Args:
    d_model: width of the activations.
    d_ff: width of the feed-forward hidden layer.
    n_heads: number of attention heads.
    dropout: dropout rate in the block (attention dropout too).
    dropout_shared_axes: axes sharing one dropout mask.
    mode: 'train', 'eval' or 'predict'.
    ff_activation: activation layer constructor of the feed-forward part.
    ff_dropout: dropout rate after the feed-forward hidden layer.
    ff_chunk_size: if > 0, run the feed-forward part on chunks this size.
    ff_use_sru: SRU layers alongside the feed-forward part (int or pair).
    ff_sparsity: 0, or a sparse feed-forward part's sparsity.
    ff_sparsity_type: see `FeedForwardWithOptions`.
    attention_chunk_size: if > 0, run attention on batch chunks this size.
    attention_type: the attention layer constructor (non-causal, masked).
    n_attention_layers: attention sub-blocks before the feed-forward ones.
    n_feedforward_layers: feed-forward sub-blocks.

  Returns:
    A list of layers.
  """
  return (
      _attention_residuals(n_attention_layers, False, True, d_model, n_heads,
                           dropout, dropout_shared_axes,
                           attention_chunk_size, attention_type, mode) +
      _feed_forwards(n_feedforward_layers, d_model, d_ff, dropout,
                     dropout_shared_axes, ff_activation, ff_dropout,
                     ff_chunk_size, ff_use_sru, ff_sparsity,
                     ff_sparsity_type, mode))


def DecoderBlock(d_model, d_ff, n_heads, dropout, dropout_shared_axes, mode,
                 ff_activation, ff_dropout, ff_chunk_size, ff_use_sru,
                 ff_sparsity, ff_sparsity_type, attention_chunk_size,
                 attention_type, n_attention_layers=1,
                 n_feedforward_layers=1):
  """`activations -> activations`: causal self-attention, then FF.

  Takes the arguments of `EncoderBlock`; `attention_type` is built causal
  and unmasked.

  Args:
    d_model: width of the activations.
    d_ff: width of the feed-forward hidden layer.
    n_heads: number of attention heads.
    dropout: dropout rate in the block (attention dropout too).
    dropout_shared_axes: axes sharing one dropout mask.
    mode: 'train', 'eval' or 'predict'.
    ff_activation: activation layer constructor of the feed-forward part.
    ff_dropout: dropout rate after the feed-forward hidden layer.
    ff_chunk_size: if > 0, run the feed-forward part on chunks this size.
    ff_use_sru: SRU layers alongside the feed-forward part (int or pair).
    ff_sparsity: 0, or a sparse feed-forward part's sparsity.
    ff_sparsity_type: see `FeedForwardWithOptions`.
    attention_chunk_size: if > 0, run attention on batch chunks this size.
    attention_type: the attention layer constructor.
    n_attention_layers: attention sub-blocks before the feed-forward ones.
    n_feedforward_layers: feed-forward sub-blocks.

  Returns:
    A list of layers.
  """
  return (
      _attention_residuals(n_attention_layers, True, False, d_model, n_heads,
                           dropout, dropout_shared_axes,
                           attention_chunk_size, attention_type, mode) +
      _feed_forwards(n_feedforward_layers, d_model, d_ff, dropout,
                     dropout_shared_axes, ff_activation, ff_dropout,
                     ff_chunk_size, ff_use_sru, ff_sparsity,
                     ff_sparsity_type, mode))


def EncoderDecoderBlock(d_model, d_ff, n_heads, dropout, dropout_shared_axes,
                        mode, ff_activation, ff_dropout, ff_chunk_size,
                        ff_use_sru, ff_sparsity, ff_sparsity_type,
                        attention_chunk_size, attention_type,
                        enc_dec_attention_sparsity=0):
  """`(dec, mask, enc) -> (dec, mask, enc)`: causal, cross-attention, FF.

  The cross-attention is always `tl.AttentionQKV`, with the encoder's keys
  and values cached in 'predict' mode; `attention_type` is the causal
  self-attention, built causal and masked.

  Args:
    d_model: width of the activations.
    d_ff: width of the feed-forward hidden layer.
    n_heads: number of attention heads.
    dropout: dropout rate in the block (attention dropout too).
    dropout_shared_axes: axes sharing one dropout mask.
    mode: 'train', 'eval' or 'predict'.
    ff_activation: activation layer constructor of the feed-forward part.
    ff_dropout: dropout rate after the feed-forward hidden layer.
    ff_chunk_size: if > 0, run the feed-forward part on chunks this size.
    ff_use_sru: SRU layers alongside the feed-forward part (int or pair).
    ff_sparsity: 0, or a sparse feed-forward part's sparsity.
    ff_sparsity_type: see `FeedForwardWithOptions`.
    attention_chunk_size: if > 0, run attention on batch chunks this size.
    attention_type: the causal self-attention layer constructor.
    enc_dec_attention_sparsity: 0 (Dense projections), n > 0 (a sparse
      query projection of sparsity n and no output projection), or a pair
      (q_sparsity, result_sparsity) for `tl.AttentionQKV`.

  Returns:
    A list of layers.
  """
  q_sparsity, result_sparsity = options.check_enc_dec_attention_sparsity(
      'EncoderDecoderBlock', enc_dec_attention_sparsity)

  def _Dropout():
    return tl.Dropout(rate=dropout, shared_axes=dropout_shared_axes, mode=mode)

  attention_qkv = tl.AttentionQKV(
      d_model, n_heads=n_heads, dropout=dropout, mode=mode,
      cache_KV_in_predict=True, q_sparsity=q_sparsity,
      result_sparsity=result_sparsity)
  d_head = d_model // n_heads
  causal_attention = ApplyAttentionLayer(
      attention_type, d_model, n_heads, d_head, d_head, causal=True,
      masked=True, attention_dropout=dropout, output_dropout=dropout,
      attention_chunk_size=attention_chunk_size, mode=mode)
  feed_forward = FeedForwardWithOptions(
      d_model, d_ff, dropout, dropout_shared_axes, ff_activation, ff_dropout,
      ff_chunk_size, ff_use_sru, ff_sparsity, True, mode, False,
      ff_sparsity_type)
  return [                             # vec_d masks vec_e
      tl.Residual(tl.LayerNorm(), causal_attention, _Dropout()),
      tl.Residual(
          tl.LayerNorm(),
          tl.Select([0, 2, 2, 1, 2]),  # vec_d vec_e vec_e masks vec_e
          attention_qkv,               # vec_d masks vec_e
          _Dropout()),
      tl.Residual(feed_forward),
  ]
