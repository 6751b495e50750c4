"""Reformer models: language models and an encoder-decoder.

"Reformer: The Efficient Transformer" (Kitaev et al., 2020,
https://arxiv.org/abs/2001.04451) makes long sequences affordable with
reversible residual blocks, whose backward pass recomputes activations
instead of storing one set per layer (so training memory hardly grows with
depth), with chunked feed-forward parts, and with LSH attention
(`LSHSelfAttention`), whose cost grows as n log n in the length. Defaults
and arguments follow Trax's `trax.models.reformer`.
"""

from tfnp_trax import layers as tl
from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.layers.research import efficient_attention
from tfnp_trax.models.reformer._reformer_blocks import DecoderBlock
from tfnp_trax.models.reformer._reformer_blocks import EncoderBlock
from tfnp_trax.models.reformer._reformer_blocks import EncoderDecoderBlock
from tfnp_trax.models.reformer._reformer_blocks import RemoveAxes12
from tfnp_trax.models.reformer._reformer_blocks import XYAvg
from tfnp_trax.models.research import _configurable_options as options
from tfnp_trax.models.research import configurable_transformer as ct

__all__ = ['DecoderBlock', 'EncoderBlock', 'EncoderDecoderBlock',
           'ReformerLM', 'ReformerShortenLM', 'Reformer']

# Layer constructors are CamelCase functions, as in Trax.
# pylint: disable=invalid-name


def _check_options(where, ff_sparsity, pos_type, pos_axial_shape,
                   pos_d_axial_embs):
  # Checked up front so the error names the model the user called; the
  # Reformer's feed-forward parts use ff_sparsity_type='1inN'.
  options.check_ff_sparsity(where, options.parse_ff_sparsity(ff_sparsity),
                            '1inN')
  options.check_pos_type(where, pos_type, pos_axial_shape, pos_d_axial_embs)


def _decoder_blocks(where, n_layers, attention_type, **block_kwargs):
  """One DecoderBlock per layer, cycling through a list of attention types."""
  if not isinstance(attention_type, (tuple, list)):
    attention_type = [attention_type]
  if n_layers % len(attention_type):
    raise ValueError(
        f'{where}: n_layers ({n_layers}) must be a multiple of the number '
        f'of attention types given ({len(attention_type)}), since layer i '
        f'uses attention_type[i % {len(attention_type)}].')
  return [DecoderBlock(attention_type=attention_type[i % len(attention_type)],
                       **block_kwargs)
          for i in range(n_layers)]


def ReformerLM(vocab_size, d_model=512, d_ff=2048, d_attention_key=64,
               d_attention_value=64, n_layers=6, n_heads=8, dropout=0.1,
               max_len=2048,
               attention_type=efficient_attention.SelfAttention,
               pos_type=None, pos_axial_shape=(), pos_d_axial_embs=None,
               pos_start_from_zero_prob=1.0, pos_max_offset_to_add=0,
               ff_activation=tl.FastGelu, ff_use_sru=0, ff_chunk_size=0,
               ff_sparsity=0, loss_sparsity_type='mult', loss_sparsity=0,
               loss_d_lowrank=0, loss_sparsity_prob=None,
               attention_chunk_size=0, mode='train'):
  """Reversible language model: token ids -> logits (..., vocab_size).

  The input is shifted right, embedded and duplicated into two streams that
  run through the reversible decoder blocks; the streams are then
  concatenated (so the output layer sees 2 * d_model features), normalized
  and projected to the vocabulary. In 'predict' mode the model takes one
  token per call (see `tfnp_trax.supervised.decoding`).

  Example:
    >>> model = ReformerLM(16, d_model=8, d_ff=16, d_attention_key=4,
    ...                    d_attention_value=4, n_layers=1, n_heads=2)
    >>> _ = model.init(shapes.ShapeDtype((1, 8), jnp.int32))

  Args:
    vocab_size: number of token ids.
    d_model: width of each stream.
    d_ff: width of the feed-forward hidden layers.
    d_attention_key: depth of each head's queries and keys.
    d_attention_value: depth of each head's values.
    n_layers: number of reversible decoder blocks.
    n_heads: number of attention heads.
    dropout: dropout rate everywhere (attention, feed-forward, embeddings).
    max_len: longest sequence, for the learned positional encoding.
    attention_type: attention layer constructor, e.g. `SelfAttention` or
      `LSHSelfAttention`; or a list of them, used by the layers in turn.
    pos_type: None (learned encoding), 'sin-cos', 'fixed-base',
      'infinite', 'infinite-affine', 'no', or e.g. 'axial' (see
      `configurable_transformer.PositionalEncoder`).
    pos_axial_shape: the axial grid; its product is the sequence length.
    pos_d_axial_embs: features per axial axis, summing to d_model.
    pos_start_from_zero_prob: in training, how often positions start at 0.
    pos_max_offset_to_add: largest random position offset in training.
    ff_activation: activation layer constructor of the feed-forward parts.
    ff_use_sru: n or (n, n_units): SRU layers beside each feed-forward part.
    ff_chunk_size: if > 0, run the feed-forward parts on position chunks.
    ff_sparsity: 0, or the sparsity of `tl.SparseFF` feed-forward parts.
    loss_sparsity_type: the sparse output layer's type (see
      `tl.SparseDenseWithOptions`); None for a Dense one.
    loss_sparsity: the output layer's sparsity; 0 for a Dense one.
    loss_d_lowrank: rank of the 'lowrank' output layer.
    loss_sparsity_prob: None, or the probability (in training) of using
      the sparse output layer rather than a Dense one.
    attention_chunk_size: if > 0, run attention on batch chunks this size.
    mode: 'train', 'eval' or 'predict'.

  Returns:
    A layer with n_in=1, n_out=1.
  """
  where = 'ReformerLM'
  _check_options(where, ff_sparsity, pos_type, pos_axial_shape,
                 pos_d_axial_embs)
  # As in Trax, d_input is d_model (the sparse layers that use it see
  # both streams concatenated, 2 * d_model wide).
  output_layer = options.output_dense(
      where, vocab_size, loss_sparsity_type, loss_sparsity,
      loss_sparsity_prob, d_input=d_model, d_lowrank=loss_d_lowrank,
      mode=mode)
  positional_embedder = [
      tl.Embedding(vocab_size, d_model),
      tl.Dropout(rate=dropout, shared_axes=[-2], mode=mode),
      ct.PositionalEncoder(mode, dropout, max_len, pos_type, pos_axial_shape,
                           pos_d_axial_embs, pos_start_from_zero_prob,
                           pos_max_offset_to_add),
  ]
  decoder_blocks = _decoder_blocks(
      where, n_layers, attention_type, d_model=d_model, d_ff=d_ff,
      d_attention_key=d_attention_key, d_attention_value=d_attention_value,
      n_heads=n_heads, dropout=dropout, ff_activation=ff_activation,
      ff_dropout=dropout, ff_use_sru=ff_use_sru, ff_chunk_size=ff_chunk_size,
      ff_sparsity=ff_sparsity, attention_chunk_size=attention_chunk_size,
      mode=mode)
  return tl.Serial(
      tl.ShiftRight(mode=mode),
      positional_embedder,
      tl.Dup(),                            # x1 x2
      tl.ReversibleSerial(decoder_blocks),
      tl.Concatenate(),                    # [x1, x2] on the last axis.
      tl.LayerNorm(),
      tl.Dropout(rate=dropout, shared_axes=[-2], mode=mode),
      output_layer)


def ReformerShortenLM(vocab_size, shorten_factor=1, d_embedding=256,
                      d_model=512, d_ff=2048, d_attention_key=64,
                      d_attention_value=64, n_layers=6, n_heads=8,
                      dropout=0.1, max_len=2048,
                      attention_type=efficient_attention.SelfAttention,
                      pos_type=None, pos_axial_shape=(),
                      pos_d_axial_embs=None, ff_activation=tl.FastGelu,
                      ff_use_sru=0, ff_chunk_size=0, ff_sparsity=0,
                      attention_chunk_size=0, mode='train'):
  """Reversible LM over a sequence shortened by `shorten_factor`.

  Every `shorten_factor` consecutive embeddings (of width `d_embedding`,
  shifted so that no position sees its own token) are concatenated into one
  position, projected to `d_model` and run through the reversible decoder
  blocks; the result is expanded back to full length, concatenated with
  the plain embeddings and decoded per position by a causal convolution and
  an SRU. The length must be a multiple of `shorten_factor`. There is no
  fast ('predict') mode.

  Args:
    vocab_size: number of token ids.
    shorten_factor: how many positions are merged into one.
    d_embedding: width of the token embeddings.
    d_model: width of each stream of the shortened sequence.
    d_ff: width of the feed-forward hidden layers.
    d_attention_key: depth of each head's queries and keys.
    d_attention_value: depth of each head's values.
    n_layers: number of reversible decoder blocks.
    n_heads: number of attention heads.
    dropout: dropout rate everywhere.
    max_len: longest sequence, for the learned positional encoding.
    attention_type: attention layer constructor, or a list used in turn.
    pos_type: as for `ReformerLM`.
    pos_axial_shape: the axial grid; its product is the sequence length.
    pos_d_axial_embs: features per axial axis, summing to d_embedding.
    ff_activation: activation layer constructor of the feed-forward parts.
    ff_use_sru: n or (n, n_units): SRU layers beside each feed-forward part.
    ff_chunk_size: if > 0, run the feed-forward parts on position chunks.
    ff_sparsity: 0, or the sparsity of `tl.SparseFF` feed-forward parts.
    attention_chunk_size: if > 0, run attention on batch chunks this size.
    mode: 'train' or 'eval'.

  Returns:
    A layer with n_in=1, n_out=1.
  """
  where = 'ReformerShortenLM'
  if mode == 'predict':
    raise ValueError(f"{where}: mode='predict' (fast decoding) is not "
                     f"supported, as in Trax; use mode='eval' and decode "
                     f'with eval_mode=True.')
  _check_options(where, ff_sparsity, pos_type, pos_axial_shape,
                 pos_d_axial_embs)
  positional_embedder = [
      tl.Embedding(vocab_size, d_embedding),
      tl.Dropout(rate=dropout, shared_axes=[-2], mode=mode),
      ct.PositionalEncoder(mode, dropout, max_len, pos_type, pos_axial_shape,
                           pos_d_axial_embs),
  ]
  decoder_blocks = _decoder_blocks(
      where, n_layers, attention_type, d_model=d_model, d_ff=d_ff,
      d_attention_key=d_attention_key, d_attention_value=d_attention_value,
      n_heads=n_heads, dropout=dropout, ff_activation=ff_activation,
      ff_dropout=dropout, ff_use_sru=ff_use_sru, ff_chunk_size=ff_chunk_size,
      ff_sparsity=ff_sparsity, attention_chunk_size=attention_chunk_size,
      mode=mode)

  def shorten(x):
    if x.shape[1] % shorten_factor:
      raise ValueError(
          f'{where}: sequence length {x.shape[1]} is not a multiple of '
          f'shorten_factor {shorten_factor} (input shape '
          f'{tuple(x.shape)}); pad the inputs.')
    return jnp.reshape(x, (x.shape[0], x.shape[1] // shorten_factor, -1))

  def prolong_back(x):
    return jnp.reshape(x, (x.shape[0], x.shape[1] * shorten_factor, -1))

  return tl.Serial(
      tl.ShiftRight(),
      positional_embedder,
      tl.Dup(),                   # emb emb; the first one gets shortened.
      # Shifting by shorten_factor - 1 more keeps each merged position from
      # seeing the tokens it will predict.
      tl.ShiftRight(n_positions=shorten_factor - 1),
      tl.Fn('Shorten', shorten, n_out=1),
      tl.Dense(d_model),
      tl.Dup(),                   # short short emb
      tl.ReversibleSerial(decoder_blocks),
      tl.Select([0], n_in=2),     # short emb
      tl.LayerNorm(),
      tl.Dropout(rate=dropout, shared_axes=[-2], mode=mode),
      tl.Dense(shorten_factor * d_embedding),
      tl.Fn('ProlongBack', prolong_back, n_out=1),
      tl.Concatenate(),           # [long, emb] on the last axis.
      tl.CausalConv(d_embedding),
      tl.Relu(),
      tl.SRU(d_embedding),        # Makes each position's output depend on
      tl.Dense(vocab_size))       # the ones before it within a group.


def Reformer(input_vocab_size, output_vocab_size=None, d_model=512,
             d_ff=2048, n_encoder_layers=6, n_decoder_layers=6, n_heads=8,
             dropout=0.1, max_len=2048, ff_activation=tl.Relu,
             ff_dropout=None, mode='train', pos_type=None,
             pos_axial_shape=None, pos_d_axial_embs=None, ff_use_sru=0,
             ff_chunk_size=0, ff_sparsity=0):
  """Reversible encoder-decoder: `(source, target) -> (logits, target)`.

  Source id 0 is padding. Encoder and decoder each run two reversible
  streams, averaged at the end. The target is shifted right; in 'predict'
  mode the encoder runs once and is cached and the decoder takes one target
  token per call.

  Args:
    input_vocab_size: number of source token ids.
    output_vocab_size: number of target ids; None to share the source's
      vocabulary and embedding.
    d_model: width of each stream.
    d_ff: width of the feed-forward hidden layers.
    n_encoder_layers: number of reversible encoder blocks.
    n_decoder_layers: number of reversible encoder-decoder blocks.
    n_heads: number of attention heads.
    dropout: dropout rate everywhere.
    max_len: longest sequence, for the learned positional encodings.
    ff_activation: activation layer constructor of the feed-forward parts.
    ff_dropout: dropout after the feed-forward hidden layers; None means
      `dropout`.
    mode: 'train', 'eval' or 'predict'.
    pos_type: as for `ReformerLM`.
    pos_axial_shape: the axial grid; its product is the sequence length.
    pos_d_axial_embs: features per axial axis, summing to d_model.
    ff_use_sru: n or (n, n_units): SRU layers beside each feed-forward part.
    ff_chunk_size: if > 0, run the feed-forward parts on position chunks.
    ff_sparsity: 0, or the sparsity of `tl.SparseFF` feed-forward parts.

  Returns:
    A layer with n_in=2, n_out=2.
  """
  _check_options('Reformer', ff_sparsity, pos_type, pos_axial_shape,
                 pos_d_axial_embs)
  in_encoder, out_encoder, output_vocab_size = (
      ct.EmbeddingAndPositionalEncodings(
          input_vocab_size, d_model, mode, dropout, [-2], max_len,
          output_vocab_size=output_vocab_size, pos_type=pos_type,
          pos_axial_shape=pos_axial_shape,
          pos_d_axial_embs=pos_d_axial_embs))
  encoder_blocks = [
      EncoderBlock(d_model, d_ff, n_heads, efficient_attention.SelfAttention,
                   dropout, ff_activation, ff_dropout, mode=mode,
                   ff_use_sru=ff_use_sru, ff_chunk_size=ff_chunk_size,
                   ff_sparsity=ff_sparsity)
      for _ in range(n_encoder_layers)]
  encoder = tl.Serial([
      in_encoder,
      tl.Dup(),
      tl.ReversibleSerial(encoder_blocks),
      XYAvg(),
      tl.LayerNorm(),
  ])
  if mode == 'predict':
    encoder = tl.Cache(encoder)
  encoder_decoder_blocks = [
      EncoderDecoderBlock(d_model, d_ff, n_heads, dropout, ff_activation,
                          ff_dropout, mode, ff_use_sru=ff_use_sru,
                          ff_chunk_size=ff_chunk_size,
                          ff_sparsity=ff_sparsity)
      for _ in range(n_decoder_layers)]
  return tl.Serial(
      tl.Select([0, 1, 1]),                 # tok_e tok_d tok_d
      tl.Branch([], [tl.PaddingMask(),
                     RemoveAxes12()]),      # tok_e mask tok_d .....
      encoder,                              # vec_e mask tok_d .....
      tl.Select([2, 0, 1]),                 # tok_d vec_e mask .....
      tl.ShiftRight(mode=mode),
      out_encoder,                          # vec_d vec_e mask .....
      tl.Dup(),                             # vec_d1 vec_d2 vec_e mask .....
      tl.ReversibleSerial(encoder_decoder_blocks),
      XYAvg(),                              # vec_d vec_e mask .....
      tl.LayerNorm(),
      tl.Select([0], n_in=3),               # vec_d .....
      tl.Dense(output_vocab_size))
