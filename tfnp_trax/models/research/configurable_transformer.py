"""Configurable Transformers: encoder, language model and encoder-decoder.

The Transformer of "Attention Is All You Need" (Vaswani et al., 2017,
https://arxiv.org/abs/1706.03762) with Trax's research options: any
attention layer (`tl.Attention`, `tl.CausalAttention`, or the efficient
`SelfAttention`/`LSHSelfAttention`), chunked attention and feed-forward
parts, SRU layers beside the feed-forward part, and learned, axial,
sin-cos, fixed-base or infinite positional encodings (see
`PositionalEncoder`). The blocks and sub-layers live in private modules
and are re-exported here under Trax's names.

Options that select one of Trax's research sparsity layers (`ff_sparsity`,
`loss_sparsity`, `loss_sparsity_prob`, `enc_dec_attention_sparsity`) build
them from `tfnp_trax.layers` (see `_configurable_options`); while a layer
is missing there, the option raises NotImplementedError naming it.
"""

from tfnp_trax import layers as tl
from tfnp_trax.models.research import _configurable_options as options
from tfnp_trax.models.research._configurable_blocks import DecoderBlock
from tfnp_trax.models.research._configurable_blocks import EncoderBlock
from tfnp_trax.models.research._configurable_blocks import EncoderDecoderBlock
from tfnp_trax.models.research._configurable_embeddings import EmbeddingAndPositionalEncodings
from tfnp_trax.models.research._configurable_embeddings import PositionalEncoder
from tfnp_trax.models.research._configurable_layers import ApplyAttentionLayer
from tfnp_trax.models.research._configurable_layers import FeedForwardWithOptions

__all__ = ['FeedForwardWithOptions', 'ApplyAttentionLayer',
           'PositionalEncoder', 'EmbeddingAndPositionalEncodings',
           'ConfigurableTransformerEncoder', 'ConfigurableTransformerLM',
           'ConfigurableTransformer', 'EncoderBlock', 'DecoderBlock',
           'EncoderDecoderBlock']

# Layer constructors are CamelCase functions, as in Trax.
# pylint: disable=invalid-name

# The arguments every model below shares with `FeedForwardWithOptions` and
# `ApplyAttentionLayer`, documented once:
_SHARED_ARGS_DOC = """
    d_model: width of the activations (and of the embeddings).
    d_ff: width of the feed-forward hidden layers.
    n_heads: number of attention heads.
    max_len: longest sequence, for the learned positional encoding.
    dropout: dropout rate in the blocks, on the embeddings and on the
      attention weights.
    dropout_shared_axes: axes sharing one dropout mask, e.g. (0, 1) to
      share it over batch and length.
    mode: 'train', 'eval' or 'predict' (dropout runs only in 'train').
    ff_activation: activation layer constructor of the feed-forward parts.
    ff_dropout: dropout rate after the feed-forward hidden layers.
    ff_chunk_size: if > 0, run the feed-forward parts on position chunks.
    ff_use_sru: n or (n, n_units): SRU layers beside each feed-forward part.
    ff_sparsity: 0, or the sparsity of a sparse feed-forward part (see
      `FeedForwardWithOptions`).
    ff_sparsity_type: '1inN', 'Block' or 'Switch' (with ff_sparsity).
    attention_chunk_size: if > 0, run attention on batch chunks this size.
    pos_type: None for a learned positional encoding; 'sin-cos',
      'fixed-base', 'infinite', 'infinite-affine' or 'no'; or any other
      name (e.g. 'axial') for `AxialPositionalEncoding` (see
      `PositionalEncoder`).
    pos_axial_shape: the axial grid; its product is the sequence length.
    pos_d_axial_embs: features per axial axis, summing to d_model."""

_LOSS_ARGS_DOC = """
    loss_sparsity_type: the sparse output layer: 'mult', 'lowrank',
      'einsum', 'local' or 'local3' (see `tl.SparseDenseWithOptions`);
      None for a Dense one.
    loss_sparsity: the output layer's sparsity; 0 for a Dense one.
    loss_d_lowrank: rank of the 'lowrank' sparse output layer.
    loss_sparsity_prob: None, or the probability (in training) of using
      the sparse output layer rather than a Dense one."""


def _check_options(where, ff_sparsity, ff_sparsity_type, pos_type,
                   pos_axial_shape, pos_d_axial_embs):
  # Checked up front so the error names the model the user called.
  options.check_ff_sparsity(where, options.parse_ff_sparsity(ff_sparsity),
                            ff_sparsity_type)
  options.check_pos_type(where, pos_type, pos_axial_shape, pos_d_axial_embs)


def ConfigurableTransformerEncoder(vocab_size, n_classes=10, d_model=512,
                                   d_ff=2048, n_layers=6, n_heads=8,
                                   max_len=2048, dropout=0.1,
                                   dropout_shared_axes=None, mode='train',
                                   ff_activation=tl.Relu, ff_dropout=0.1,
                                   ff_chunk_size=0, ff_use_sru=0,
                                   ff_sparsity=0, ff_sparsity_type='1inN',
                                   attention_chunk_size=0,
                                   attention_type=tl.Attention,
                                   pos_type=None, pos_axial_shape=None,
                                   pos_d_axial_embs=None):
  """Classifier: token ids (batch, length) -> logits (batch, n_classes).

  Id 0 is padding and is masked out of attention; the final activations
  are averaged over positions and mapped to `n_classes` raw scores.

  Args:
    vocab_size: number of token ids.
    n_classes: number of output classes.
    n_layers: number of encoder blocks.
    attention_type: the (masked, non-causal) attention layer constructor.
    {shared}

  Returns:
    A layer with n_in=1, n_out=1.
  """
  _check_options('ConfigurableTransformerEncoder', ff_sparsity,
                 ff_sparsity_type, pos_type, pos_axial_shape,
                 pos_d_axial_embs)
  positional_encoder = tl.AssertFunction('...->...d', [
      tl.Embedding(vocab_size, d_model),
      tl.Dropout(rate=dropout, shared_axes=dropout_shared_axes, mode=mode),
      PositionalEncoder(mode, dropout, max_len, pos_type, pos_axial_shape,
                        pos_d_axial_embs)])
  encoder_blocks = [
      EncoderBlock(d_model, d_ff, n_heads, dropout, dropout_shared_axes, mode,
                   ff_activation, ff_dropout, ff_chunk_size, ff_use_sru,
                   ff_sparsity, ff_sparsity_type, attention_chunk_size,
                   attention_type)
      for _ in range(n_layers)]
  return tl.Serial(                                     # toks
      tl.Branch(positional_encoder, tl.PaddingMask()),  # vecs masks
      encoder_blocks,                                   # vecs masks
      tl.Select([0], n_in=2),                           # vecs
      tl.LayerNorm(),
      tl.Mean(axis=1),
      tl.Dense(n_classes))


def ConfigurableTransformerLM(vocab_size, d_model=512, d_ff=2048, n_layers=6,
                              n_heads=8, max_len=2048, dropout=0.1,
                              dropout_shared_axes=None, mode='train',
                              ff_activation=tl.Relu, ff_dropout=0.1,
                              ff_chunk_size=0, ff_use_sru=0, ff_sparsity=0,
                              ff_sparsity_type='1inN',
                              loss_sparsity_type='mult', loss_sparsity=0,
                              loss_d_lowrank=0, loss_sparsity_prob=None,
                              attention_chunk_size=0,
                              attention_type=tl.CausalAttention,
                              pos_type=None, pos_axial_shape=None,
                              pos_d_axial_embs=None,
                              pos_start_from_zero_prob=1.0,
                              pos_max_offset_to_add=0):
  """Language model: token ids (batch, length) -> logits (..., vocab_size).

  The input is shifted right by one, so the logits at position t predict
  token t from tokens 0..t-1. In 'predict' mode the model takes one token
  per call and keeps its attention caches in its state (see
  `tfnp_trax.supervised.decoding`). With the default options the layers
  are those of `TransformerLM`.

  Args:
    vocab_size: number of token ids.
    n_layers: number of decoder blocks.
    attention_type: the causal attention layer constructor.
    {shared}
    pos_start_from_zero_prob: with pos_type=None, in training, the
      probability that positions start at 0; otherwise they start at a
      random offset below pos_max_offset_to_add.
    pos_max_offset_to_add: that offset's bound; offset plus length must
      stay within max_len.
    {loss}

  Returns:
    A layer with n_in=1, n_out=1.
  """
  where = 'ConfigurableTransformerLM'
  _check_options(where, ff_sparsity, ff_sparsity_type, pos_type,
                 pos_axial_shape, pos_d_axial_embs)
  output_layer = options.output_dense(
      where, vocab_size, loss_sparsity_type, loss_sparsity,
      loss_sparsity_prob, d_input=d_model, d_lowrank=loss_d_lowrank,
      mode=mode)
  positional_encoder = [
      tl.Embedding(vocab_size, d_model),
      tl.Dropout(rate=dropout, shared_axes=dropout_shared_axes, mode=mode),
      PositionalEncoder(mode, dropout, max_len, pos_type, pos_axial_shape,
                        pos_d_axial_embs, pos_start_from_zero_prob,
                        pos_max_offset_to_add)]
  decoder_blocks = [
      DecoderBlock(d_model, d_ff, n_heads, dropout, dropout_shared_axes, mode,
                   ff_activation, ff_dropout, ff_chunk_size, ff_use_sru,
                   ff_sparsity, ff_sparsity_type, attention_chunk_size,
                   attention_type)
      for _ in range(n_layers)]
  return tl.Serial(
      tl.ShiftRight(mode=mode),   # toks
      positional_encoder,         # vecs
      decoder_blocks,             # vecs
      tl.LayerNorm(),             # vecs
      output_layer)               # logits


def ConfigurableTransformer(input_vocab_size, output_vocab_size=None,
                            d_model=512, d_ff=2048, n_encoder_layers=6,
                            n_decoder_layers=6, n_heads=8, max_len=2048,
                            dropout=0.1, dropout_shared_axes=None,
                            mode='train', ff_activation=tl.Relu,
                            ff_dropout=0.1, ff_chunk_size=0, ff_use_sru=0,
                            ff_sparsity=0, ff_sparsity_type='1inN',
                            loss_sparsity_type='mult', loss_sparsity=0,
                            loss_d_lowrank=0, loss_sparsity_prob=None,
                            attention_chunk_size=0,
                            encoder_attention_type=tl.Attention,
                            encoder_decoder_attention_type=tl.CausalAttention,
                            pos_type=None, pos_axial_shape=None,
                            pos_d_axial_embs=None,
                            enc_dec_attention_sparsity=0):
  """Encoder-decoder: `(source_ids, target_ids) -> (logits, target_ids)`.

  Source id 0 is padding. The target is shifted right, so the logits at
  position t predict target token t. Without `output_vocab_size` the source
  and target share one embedding. In 'predict' mode the encoder runs once
  and is cached, and the decoder takes one target token per call.

  Args:
    input_vocab_size: number of source token ids.
    output_vocab_size: number of target ids; None to share the source's.
    n_encoder_layers: number of encoder blocks.
    n_decoder_layers: number of encoder-decoder blocks.
    encoder_attention_type: the encoder's attention layer constructor.
    encoder_decoder_attention_type: the decoder's causal self-attention
      layer constructor (the cross-attention is always `AttentionQKV`).
    enc_dec_attention_sparsity: 0 for Dense cross-attention projections;
      n > 0 for a sparse query projection and none after the attention;
      or a pair (q_sparsity, result_sparsity) of None (Dense), 'noop' (no
      layer) or a sparsity (see `tl.AttentionQKV`).
    {shared}
    {loss}

  Returns:
    A layer with n_in=2, n_out=2.
  """
  where = 'ConfigurableTransformer'
  _check_options(where, ff_sparsity, ff_sparsity_type, pos_type,
                 pos_axial_shape, pos_d_axial_embs)
  options.check_enc_dec_attention_sparsity(where, enc_dec_attention_sparsity)
  in_encoder, out_encoder, output_vocab_size = EmbeddingAndPositionalEncodings(
      input_vocab_size, d_model, mode, dropout, dropout_shared_axes, max_len,
      output_vocab_size=output_vocab_size, pos_type=pos_type,
      pos_axial_shape=pos_axial_shape, pos_d_axial_embs=pos_d_axial_embs)
  output_layer = options.output_dense(
      where, output_vocab_size, loss_sparsity_type, loss_sparsity,
      loss_sparsity_prob, d_input=d_model, d_lowrank=loss_d_lowrank,
      mode=mode)
  encoder_blocks = [
      EncoderBlock(d_model, d_ff, n_heads, dropout, dropout_shared_axes, mode,
                   ff_activation, ff_dropout, ff_chunk_size, ff_use_sru,
                   ff_sparsity, ff_sparsity_type, attention_chunk_size,
                   encoder_attention_type)
      for _ in range(n_encoder_layers)]
  encoder = tl.Serial(in_encoder, encoder_blocks, tl.LayerNorm())
  if mode == 'predict':
    encoder = tl.Cache(encoder)
  encoder_decoder_blocks = [
      EncoderDecoderBlock(d_model, d_ff, n_heads, dropout,
                          dropout_shared_axes, mode, ff_activation,
                          ff_dropout, ff_chunk_size, ff_use_sru, ff_sparsity,
                          ff_sparsity_type, attention_chunk_size,
                          encoder_decoder_attention_type,
                          enc_dec_attention_sparsity)
      for _ in range(n_decoder_layers)]
  return tl.Serial(
      tl.Select([0, 1, 1]),               # tok_e tok_d tok_d
      tl.Branch([], tl.PaddingMask()),    # tok_e masks tok_d tok_d
      encoder,                            # vec_e masks tok_d tok_d
      tl.Select([2, 1, 0]),               # tok_d masks vec_e tok_d
      tl.ShiftRight(mode=mode),
      out_encoder,                        # vec_d masks vec_e tok_d
      tl.Branch([], tl.EncoderDecoderMask()),  # vec_d masks' vec_e tok_d
      encoder_decoder_blocks,
      tl.LayerNorm(),
      tl.Select([0], n_in=3),             # vec_d tok_d
      output_layer)                       # logits tok_d


for _model in (ConfigurableTransformerEncoder, ConfigurableTransformerLM,
               ConfigurableTransformer):
  _model.__doc__ = _model.__doc__.replace(
      '    {shared}', _SHARED_ARGS_DOC.strip('\n')).replace(
          '    {loss}', _LOSS_ARGS_DOC.strip('\n'))
del _model
