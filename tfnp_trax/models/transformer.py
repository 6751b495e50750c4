"""Transformer models: encoder, decoder, language model, encoder-decoder.

All use pre-norm blocks (see `_transformer_blocks`): token embeddings plus a
learned positional encoding initialized to sinusoids, a stack of blocks, and
a final LayerNorm. Defaults follow Trax. The architecture is from "Attention
Is All You Need" (Vaswani et al., 2017).
"""

from tfnp_trax import layers as tl
from tfnp_trax.models import _transformer_blocks as blocks

__all__ = ['TransformerEncoder', 'TransformerDecoder', 'TransformerLM',
           'Transformer']

# Layer constructors are CamelCase functions, as in Trax.
# pylint: disable=invalid-name


def TransformerEncoder(vocab_size, n_classes=10, d_model=512, d_ff=2048,
                       n_layers=6, n_heads=8, max_len=2048, dropout=0.1,
                       dropout_shared_axes=None, mode='train',
                       ff_activation=tl.Relu):
  """Classifier: token ids (batch, length) -> logits (batch, n_classes).

  Id 0 is padding and is masked out of attention. The final activations are
  averaged over positions and mapped to `n_classes` raw scores.

  Args:
    vocab_size: number of token ids.
    n_classes: number of output classes.
    d_model: width of the activations.
    d_ff: width of the feed-forward hidden layer.
    n_layers: number of encoder blocks.
    n_heads: number of attention heads.
    max_len: longest input sequence.
    dropout: dropout rate, also used for attention dropout.
    dropout_shared_axes: axes sharing one dropout mask.
    mode: 'train', 'eval' or 'predict' (same as 'eval' here).
    ff_activation: activation layer constructor of the feed-forward part.

  Returns:
    A layer with n_in=1, n_out=1.
  """
  encoder_mode = 'eval' if mode == 'predict' else mode
  return tl.Serial(
      tl.Branch([], tl.PaddingMask()),  # toks masks
      tl.Embedding(vocab_size, d_model),
      tl.Dropout(rate=dropout, shared_axes=dropout_shared_axes, mode=mode),
      tl.PositionalEncoding(max_len=max_len, mode=encoder_mode),
      [blocks.encoder_block(d_model, d_ff, n_heads, dropout,
                            dropout_shared_axes, encoder_mode, ff_activation)
       for _ in range(n_layers)],
      tl.Select([0], n_in=2),  # Drops the masks.
      tl.LayerNorm(),
      tl.Mean(axis=1),
      tl.Dense(n_classes))


def TransformerDecoder(vocab_size=None, d_model=512, d_ff=2048, n_layers=6,
                       n_heads=8, max_len=2048, dropout=0.1,
                       dropout_shared_axes=None, mode='train',
                       ff_activation=tl.Relu):
  """Causal decoder: (batch, length) ids or (batch, length, d_model) vectors.

  Returns (batch, length, d_model) activations. The input is not shifted, so
  the output at position t depends on inputs at positions 0..t.

  Args:
    vocab_size: number of token ids, or None for float vector inputs (then a
      Dense layer replaces the embedding).
    d_model: width of the activations.
    d_ff: width of the feed-forward hidden layer.
    n_layers: number of decoder blocks.
    n_heads: number of attention heads.
    max_len: longest sequence (and 'predict'-mode decoding length).
    dropout: dropout rate, also used for attention dropout.
    dropout_shared_axes: axes sharing one dropout mask.
    mode: 'train', 'eval' or 'predict' (cached one-step decoding).
    ff_activation: activation layer constructor of the feed-forward part.

  Returns:
    A layer with n_in=1, n_out=1.
  """
  embed = (tl.Embedding(vocab_size, d_model) if vocab_size is not None else
           tl.Dense(d_model))
  return tl.Serial(
      embed,
      tl.Dropout(rate=dropout, shared_axes=dropout_shared_axes, mode=mode),
      tl.PositionalEncoding(max_len=max_len, mode=mode),
      [blocks.decoder_block(d_model, d_ff, n_heads, dropout,
                            dropout_shared_axes, mode, ff_activation, max_len)
       for _ in range(n_layers)],
      tl.LayerNorm())


def TransformerLM(vocab_size, d_model=512, d_ff=2048, n_layers=6, n_heads=8,
                  max_len=2048, dropout=0.1, dropout_shared_axes=None,
                  mode='train', ff_activation=tl.Relu):
  """Language model: token ids (batch, length) -> logits (..., vocab_size).

  The input is shifted right by one (a 0 enters at the front), so the logits
  at position t predict token t from tokens 0..t-1. In 'predict' mode the
  model is fed one token per call (start with a 0) and keeps a key/value
  cache; see `tfnp_trax.supervised.decoding`. The outputs are raw logits,
  as in Trax.

  Example:
    >>> model = TransformerLM(16, d_model=8, d_ff=16, n_layers=1, n_heads=2)
    >>> _ = model.init(shapes.ShapeDtype((1, 4), jnp.int32))

  Args:
    vocab_size: number of token ids.
    d_model: width of the activations.
    d_ff: width of the feed-forward hidden layer.
    n_layers: number of decoder blocks.
    n_heads: number of attention heads.
    max_len: longest sequence (and 'predict'-mode decoding length).
    dropout: dropout rate, also used for attention dropout.
    dropout_shared_axes: axes sharing one dropout mask.
    mode: 'train', 'eval' or 'predict'.
    ff_activation: activation layer constructor of the feed-forward part.

  Returns:
    A layer with n_in=1, n_out=1.
  """
  return tl.Serial(
      tl.ShiftRight(mode=mode),
      tl.Embedding(vocab_size, d_model),
      tl.Dropout(rate=dropout, shared_axes=dropout_shared_axes, mode=mode),
      tl.PositionalEncoding(max_len=max_len, mode=mode),
      [blocks.decoder_block(d_model, d_ff, n_heads, dropout,
                            dropout_shared_axes, mode, ff_activation, max_len)
       for _ in range(n_layers)],
      tl.LayerNorm(),
      tl.Dense(vocab_size))


def Transformer(input_vocab_size, output_vocab_size=None, d_model=512,
                d_ff=2048, n_encoder_layers=6, n_decoder_layers=6, n_heads=8,
                max_len=2048, dropout=0.1, dropout_shared_axes=None,
                mode='train', ff_activation=tl.Relu):
  """Encoder-decoder: `(source_ids, target_ids) -> (logits, target_ids)`.

  Source id 0 is padding. The target is shifted right, so the logits at
  position t predict target token t. Without `output_vocab_size` the source
  and target share one embedding. In 'predict' mode the encoder runs once
  and is cached, and the decoder takes one target token per call.

  Args:
    input_vocab_size: number of source token ids.
    output_vocab_size: number of target ids; None to share the source's.
    d_model: width of the activations.
    d_ff: width of the feed-forward hidden layers.
    n_encoder_layers: number of encoder blocks.
    n_decoder_layers: number of decoder blocks.
    n_heads: number of attention heads.
    max_len: longest source or target sequence.
    dropout: dropout rate, also used for attention dropout.
    dropout_shared_axes: axes sharing one dropout mask.
    mode: 'train', 'eval' or 'predict'.
    ff_activation: activation layer constructor of the feed-forward parts.

  Returns:
    A layer with n_in=2, n_out=2.
  """
  encoder_mode = 'eval' if mode == 'predict' else mode
  in_embedder = tl.Embedding(input_vocab_size, d_model)
  if output_vocab_size is None:
    out_embedder = in_embedder
    output_vocab_size = input_vocab_size
  else:
    out_embedder = tl.Embedding(output_vocab_size, d_model)

  def dropout_layer():
    return tl.Dropout(rate=dropout, shared_axes=dropout_shared_axes,
                      mode=mode)

  encoder = tl.Serial(
      in_embedder,
      dropout_layer(),
      tl.PositionalEncoding(max_len=max_len, mode=encoder_mode),
      [blocks.encoder_block(d_model, d_ff, n_heads, dropout,
                            dropout_shared_axes, encoder_mode, ff_activation)
       for _ in range(n_encoder_layers)],
      tl.LayerNorm())
  if mode == 'predict':
    encoder = tl.Cache(encoder)

  return tl.Serial(
      tl.Select([0, 1, 1]),  # tok_e tok_d tok_d
      tl.Branch([], tl.PaddingMask()),  # tok_e mask tok_d tok_d
      encoder,  # vec_e mask tok_d tok_d
      tl.Select([2, 1, 0]),  # tok_d mask vec_e tok_d
      tl.ShiftRight(mode=mode),
      out_embedder,
      dropout_layer(),
      tl.PositionalEncoding(max_len=max_len, mode=mode),
      tl.Branch([], tl.EncoderDecoderMask()),  # vec_d mask' vec_e tok_d
      [blocks.encoder_decoder_block(d_model, d_ff, n_heads, dropout,
                                    dropout_shared_axes, mode, ff_activation,
                                    max_len)
       for _ in range(n_decoder_layers)],
      tl.LayerNorm(),
      tl.Select([0], n_in=3),  # vec_d tok_d
      tl.Dense(output_vocab_size))
