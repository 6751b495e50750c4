"""Pre-norm Transformer blocks shared by the Transformer models.

Each sub-block is `x + Dropout(F(LayerNorm(x)))` with F an attention or a
feed-forward layer, so the residual stream itself is never normalized.
"""

from tfnp_trax import layers as tl

__all__ = ['feed_forward', 'encoder_block', 'decoder_block',
           'encoder_decoder_block']


def _dropout(dropout, dropout_shared_axes, mode):
  return tl.Dropout(rate=dropout, shared_axes=dropout_shared_axes, mode=mode)


def feed_forward(d_model, d_ff, dropout, dropout_shared_axes, mode,
                 activation):
  """Dense(d_ff) -> activation -> dropout -> Dense(d_model)."""
  return [
      tl.Dense(d_ff),
      activation(),
      _dropout(dropout, dropout_shared_axes, mode),
      tl.Dense(d_model),
  ]


def _ff_residual(d_model, d_ff, dropout, dropout_shared_axes, mode,
                 activation):
  return tl.Residual(
      tl.LayerNorm(),
      feed_forward(d_model, d_ff, dropout, dropout_shared_axes, mode,
                   activation),
      _dropout(dropout, dropout_shared_axes, mode),
  )


def encoder_block(d_model, d_ff, n_heads, dropout, dropout_shared_axes, mode,
                  ff_activation):
  """`(activations, mask) -> (activations, mask)`: self-attention + FF."""
  return [
      tl.Residual(
          tl.LayerNorm(),
          tl.Attention(d_model, n_heads=n_heads, dropout=dropout, mode=mode),
          _dropout(dropout, dropout_shared_axes, mode),
      ),
      _ff_residual(d_model, d_ff, dropout, dropout_shared_axes, mode,
                   ff_activation),
  ]


def decoder_block(d_model, d_ff, n_heads, dropout, dropout_shared_axes, mode,
                  ff_activation, max_len):
  """`activations -> activations`: causal self-attention + FF.

  The attention's 'predict'-mode cache holds `max_len` positions, the same
  limit as the model's positional encoding.
  """
  return [
      tl.Residual(
          tl.LayerNorm(),
          tl.CausalAttention(d_model, n_heads=n_heads, dropout=dropout,
                             max_inference_length=max_len, mode=mode),
          _dropout(dropout, dropout_shared_axes, mode),
      ),
      _ff_residual(d_model, d_ff, dropout, dropout_shared_axes, mode,
                   ff_activation),
  ]


def encoder_decoder_block(d_model, d_ff, n_heads, dropout,
                          dropout_shared_axes, mode, ff_activation, max_len):
  """`(dec, mask, enc) -> (dec, mask, enc)`: causal, cross-attention, FF."""
  return [
      tl.Residual(
          tl.LayerNorm(),
          tl.CausalAttention(d_model, n_heads=n_heads,
                             max_inference_length=max_len, mode=mode),
          _dropout(dropout, dropout_shared_axes, mode),
      ),
      tl.Residual(
          tl.LayerNorm(),
          tl.Select([0, 2, 2, 1, 2]),  # dec enc enc mask enc
          tl.AttentionQKV(d_model, n_heads=n_heads, dropout=dropout,
                          mode=mode, cache_KV_in_predict=True),
          _dropout(dropout, dropout_shared_axes, mode),
      ),
      _ff_residual(d_model, d_ff, dropout, dropout_shared_axes, mode,
                   ff_activation),
  ]
