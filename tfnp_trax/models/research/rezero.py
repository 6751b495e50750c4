"""ReZero Transformers (Bachlechner et al., 2020, arXiv:2003.04887).

Every residual sub-block computes `x + alpha * F(x)` with a learned scalar
alpha that starts at zero, so at initialization each block is the identity
and the model is its embedding and output layers alone. F is Trax's
pre-norm sub-block (LayerNorm, attention or feed-forward, dropout). The
models mirror `tfnp_trax.models.transformer`, with Trax's defaults.
"""

from tfnp_trax import layers as tl
# jnp is used by the docstring examples.
from tfnp_trax.fastmath import numpy as jnp  # pylint: disable=unused-import
from tfnp_trax.models.research import _rezero_blocks as blocks
from tfnp_trax.models.research._rezero_blocks import ResidualZero

__all__ = ['ResidualZero', 'ReZeroTransformerEncoder',
           'ReZeroTransformerDecoder', 'ReZeroTransformerLM',
           'ReZeroTransformer']

# Layer constructors are CamelCase functions, as in Trax.
# pylint: disable=invalid-name


def _dropout(dropout, dropout_shared_axes, mode):
  return tl.Dropout(rate=dropout, shared_axes=dropout_shared_axes, mode=mode)


def _check_heads(model, d_model, n_heads):
  if d_model % n_heads:
    raise ValueError(f'{model}: n_heads ({n_heads}) must divide d_model '
                     f'({d_model}).')


def ReZeroTransformerEncoder(vocab_size, n_classes=10, d_model=512,
                             d_ff=2048, n_layers=6, n_heads=8, dropout=0.1,
                             dropout_shared_axes=None, max_len=2048,
                             mode='train', ff_activation=tl.Relu):
  """Classifier: ids (batch, length) -> logits (batch, n_classes).

  Id 0 is padding, masked out of attention; the final activations are
  averaged over positions before the Dense output layer.

  Example:
    >>> from tfnp_trax import shapes
    >>> model = ReZeroTransformerEncoder(9, n_classes=3, d_model=4, d_ff=8,
    ...                                  n_layers=1, n_heads=2, max_len=8)
    >>> _ = model.init(shapes.ShapeDtype((2, 5), jnp.int32))

  Args:
    vocab_size: number of token ids.
    n_classes: number of output classes.
    d_model: width of the activations.
    d_ff: width of the feed-forward hidden layer.
    n_layers: number of encoder blocks.
    n_heads: number of attention heads.
    dropout: dropout rate, also used for attention dropout.
    dropout_shared_axes: axes sharing one dropout mask.
    max_len: longest input sequence.
    mode: 'train', 'eval' or 'predict' (same as 'eval' here).
    ff_activation: activation layer constructor of the feed-forward part.

  Returns:
    A layer with n_in=1, n_out=1.
  """
  _check_heads('ReZeroTransformerEncoder', d_model, n_heads)
  encoder_mode = 'eval' if mode == 'predict' else mode
  positional_encoder = [
      tl.Embedding(vocab_size, d_model),
      _dropout(dropout, dropout_shared_axes, mode),
      tl.PositionalEncoding(max_len=max_len, mode=encoder_mode)]
  return tl.Serial(                                     # toks
      tl.Branch(positional_encoder, tl.PaddingMask()),  # vecs masks
      [blocks.encoder_block(d_model, d_ff, n_heads, dropout,
                            dropout_shared_axes, mode, ff_activation)
       for _ in range(n_layers)],
      tl.Select([0], n_in=2),                           # vecs
      tl.LayerNorm(),
      tl.Mean(axis=1),
      tl.Dense(n_classes),
  )


def ReZeroTransformerDecoder(vocab_size=None, d_model=512, d_ff=2048,
                             n_layers=6, n_heads=8, dropout=0.1,
                             dropout_shared_axes=None, max_len=2048,
                             mode='train', ff_activation=tl.Relu):
  """Causal decoder: ids (batch, length) or vectors -> (..., d_model).

  Not shifted: the output at position t sees inputs 0..t.

  Example:
    >>> from tfnp_trax import shapes
    >>> model = ReZeroTransformerDecoder(d_model=4, d_ff=8, n_layers=1,
    ...                                  n_heads=2, max_len=8)
    >>> _ = model.init(shapes.ShapeDtype((2, 5, 3)))

  Args:
    vocab_size: number of token ids, or None for float vector inputs (then
      a Dense layer replaces the embedding).
    d_model: width of the activations.
    d_ff: width of the feed-forward hidden layer.
    n_layers: number of decoder blocks.
    n_heads: number of attention heads.
    dropout: dropout rate, also used for attention dropout.
    dropout_shared_axes: axes sharing one dropout mask.
    max_len: longest sequence (and 'predict'-mode decoding length).
    mode: 'train', 'eval' or 'predict'.
    ff_activation: activation layer constructor of the feed-forward part.

  Returns:
    A layer with n_in=1, n_out=1.
  """
  _check_heads('ReZeroTransformerDecoder', d_model, n_heads)
  embed = (tl.Embedding(vocab_size, d_model) if vocab_size is not None else
           tl.Dense(d_model))
  return tl.Serial(
      embed,
      _dropout(dropout, dropout_shared_axes, mode),
      tl.PositionalEncoding(max_len=max_len, mode=mode),
      [blocks.decoder_block(d_model, d_ff, n_heads, dropout,
                            dropout_shared_axes, mode, ff_activation, max_len)
       for _ in range(n_layers)],
      tl.LayerNorm(),
  )


def ReZeroTransformerLM(vocab_size, d_model=512, d_ff=2048, n_layers=6,
                        n_heads=8, dropout=0.1, dropout_shared_axes=None,
                        max_len=2048, mode='train', ff_activation=tl.Relu):
  """Language model: ids (batch, length) -> logits (..., vocab_size).

  Inputs are shifted right, so the logits at t predict token t. In
  'predict' mode feed one token per call (start with 0).

  Example:
    >>> from tfnp_trax import shapes
    >>> model = ReZeroTransformerLM(9, d_model=4, d_ff=8, n_layers=1,
    ...                             n_heads=2, max_len=8)
    >>> _ = model.init(shapes.ShapeDtype((2, 5), jnp.int32))

  Args:
    vocab_size: number of token ids.
    d_model: width of the activations.
    d_ff: width of the feed-forward hidden layer.
    n_layers: number of decoder blocks.
    n_heads: number of attention heads.
    dropout: dropout rate, also used for attention dropout.
    dropout_shared_axes: axes sharing one dropout mask.
    max_len: longest sequence (and 'predict'-mode decoding length).
    mode: 'train', 'eval' or 'predict'.
    ff_activation: activation layer constructor of the feed-forward part.

  Returns:
    A layer with n_in=1, n_out=1.
  """
  _check_heads('ReZeroTransformerLM', d_model, n_heads)
  return tl.Serial(
      tl.ShiftRight(mode=mode),
      tl.Embedding(vocab_size, d_model),
      _dropout(dropout, dropout_shared_axes, mode),
      tl.PositionalEncoding(max_len=max_len, mode=mode),
      [blocks.decoder_block(d_model, d_ff, n_heads, dropout,
                            dropout_shared_axes, mode, ff_activation, max_len)
       for _ in range(n_layers)],
      tl.LayerNorm(),
      tl.Dense(vocab_size),
  )


def ReZeroTransformer(input_vocab_size, output_vocab_size=None, d_model=512,
                      d_ff=2048, n_encoder_layers=6, n_decoder_layers=6,
                      n_heads=8, dropout=0.1, dropout_shared_axes=None,
                      max_len=2048, mode='train', ff_activation=tl.Relu):
  """Encoder-decoder: `(source_ids, target_ids) -> (logits, target_ids)`.

  Source id 0 is padding. Targets are shifted right. Without
  `output_vocab_size` the source and target share one embedding. In
  'predict' mode the encoder runs once and is cached, and the decoder
  takes one target token per call.

  Example:
    >>> from tfnp_trax import shapes
    >>> model = ReZeroTransformer(9, d_model=4, d_ff=8, n_encoder_layers=1,
    ...                           n_decoder_layers=1, n_heads=2, max_len=8)
    >>> _ = model.init((shapes.ShapeDtype((2, 5), jnp.int32),
    ...                 shapes.ShapeDtype((2, 3), jnp.int32)))

  Args:
    input_vocab_size: number of source token ids.
    output_vocab_size: number of target ids; None to share the source's.
    d_model: width of the activations.
    d_ff: width of the feed-forward hidden layers.
    n_encoder_layers: number of encoder blocks.
    n_decoder_layers: number of decoder blocks.
    n_heads: number of attention heads.
    dropout: dropout rate, also used for attention dropout.
    dropout_shared_axes: axes sharing one dropout mask.
    max_len: longest source or target sequence.
    mode: 'train', 'eval' or 'predict'.
    ff_activation: activation layer constructor of the feed-forward parts.

  Returns:
    A layer with n_in=2, n_out=2.
  """
  _check_heads('ReZeroTransformer', d_model, n_heads)

  def embedder(vocab_size):
    return [tl.Embedding(vocab_size, d_model),
            _dropout(dropout, dropout_shared_axes, mode)]

  in_embedder = embedder(input_vocab_size)
  # The same layer objects: source and target then share their weights.
  out_embedder = (in_embedder if output_vocab_size is None else
                  embedder(output_vocab_size))
  if output_vocab_size is None:
    output_vocab_size = input_vocab_size
  # The encoder sees whole sequences, so it never runs in 'predict' mode's
  # one-position-per-call fashion; positional encodings are not shared.
  encoder_mode = 'eval' if mode == 'predict' else mode
  encoder = tl.Serial(
      in_embedder,
      tl.PositionalEncoding(max_len=max_len, mode=encoder_mode),
      [blocks.encoder_block(d_model, d_ff, n_heads, dropout,
                            dropout_shared_axes, mode, ff_activation)
       for _ in range(n_encoder_layers)],
      tl.LayerNorm())
  if mode == 'predict':
    encoder = tl.Cache(encoder)
  return tl.Serial(
      tl.Select([0, 1, 1]),               # tok_e tok_d tok_d
      tl.Branch([], tl.PaddingMask()),    # tok_e mask tok_d tok_d
      encoder,                            # vec_e mask tok_d tok_d
      tl.Select([2, 1, 0]),               # tok_d mask vec_e tok_d
      tl.ShiftRight(mode=mode),
      out_embedder,
      tl.PositionalEncoding(max_len=max_len, mode=mode),
      tl.Branch([], tl.EncoderDecoderMask()),  # vec_d mask' vec_e tok_d
      [blocks.encoder_decoder_block(d_model, d_ff, n_heads, dropout,
                                    dropout_shared_axes, mode, ff_activation,
                                    max_len)
       for _ in range(n_decoder_layers)],
      tl.LayerNorm(),
      tl.Select([0], n_in=3),             # vec_d tok_d
      tl.Dense(output_vocab_size),
  )
