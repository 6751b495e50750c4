"""Token embeddings and positional encodings of the configurable models."""

from tfnp_trax import layers as tl
from tfnp_trax.layers.research import position_encodings
from tfnp_trax.models.research import _configurable_options as options

__all__ = ['PositionalEncoder', 'EmbeddingAndPositionalEncodings']

# Layer constructors are CamelCase functions, as in Trax.
# pylint: disable=invalid-name


@tl.assert_shape('...d->...d')
def PositionalEncoder(mode, dropout=None, max_len=None, pos_type=None,
                      pos_axial_shape=None, pos_d_axial_embs=None,
                      pos_start_from_zero_prob=1.0, pos_max_offset_to_add=0,
                      use_bfloat16=False):
  """The positional encoding layer that `pos_type` names, as in Trax.

  * None: the learned `tl.PositionalEncoding` (with `max_len`, `dropout`,
    `pos_start_from_zero_prob` and `pos_max_offset_to_add`);
  * 'sin-cos': `tl.SinCosPositionalEncoding(mode=mode)`;
  * 'fixed-base': `tl.FixedBasePositionalEncoding(mode=mode)`;
  * 'infinite': `tl.InfinitePositionalEncoding(affine=False)` and
    'infinite-affine': `tl.InfinitePositionalEncoding()`; as in Trax these
    get no `mode` (so they run as in training, in every mode);
  * 'time-bin': raises TypeError, as Trax 1.4.1 does (it builds
    `tl.TimeBinPositionalEncoding` without its required time_bin_length);
  * 'no': no positional encoding (an empty Serial);
  * any other name: `AxialPositionalEncoding` over `pos_axial_shape` with
    `pos_d_axial_embs` features per axis (Trax's configs call it 'axial').

  The research encodings ignore `dropout`, `max_len` and the offsets.

  Args:
    mode: 'train', 'eval' or 'predict'.
    dropout: dropout rate on the encoding ('train' mode only).
    max_len: longest sequence, for the learned encoding.
    pos_type: None, or the kind of encoding (see above).
    pos_axial_shape: the axial grid; its product is the sequence length.
    pos_d_axial_embs: features per axial axis, summing to d_model.
    pos_start_from_zero_prob: in training, how often positions start at 0
      (otherwise at a random offset).
    pos_max_offset_to_add: the largest such random offset.
    use_bfloat16: keep the learned encoding in bfloat16.

  Returns:
    A layer mapping (..., d) activations to the same shape.

  Raises:
    TypeError: for pos_type='time-bin', as in Trax.
    ValueError: for an axial encoding without its shape and depths.
  """
  options.check_pos_type('PositionalEncoder', pos_type, pos_axial_shape,
                         pos_d_axial_embs)
  if not pos_type:
    return tl.PositionalEncoding(
        max_len=max_len, dropout=dropout, use_bfloat16=use_bfloat16,
        start_from_zero_prob=pos_start_from_zero_prob,
        max_offset_to_add=pos_max_offset_to_add, mode=mode)
  if pos_type == 'sin-cos':
    return position_encodings.SinCosPositionalEncoding(mode=mode)
  if pos_type == 'fixed-base':
    return position_encodings.FixedBasePositionalEncoding(mode=mode)
  if pos_type == 'infinite':
    return position_encodings.InfinitePositionalEncoding(affine=False)
  if pos_type == 'infinite-affine':
    return position_encodings.InfinitePositionalEncoding()
  if pos_type == 'no':
    return tl.Serial()
  return position_encodings.AxialPositionalEncoding(
      shape=pos_axial_shape, d_embs=pos_d_axial_embs,
      # One dropout decision per (example, feature), shared over the grid.
      dropout_broadcast_dims=tuple(range(1, len(pos_axial_shape) + 1)),
      dropout=dropout, mode=mode)


def EmbeddingAndPositionalEncodings(input_vocab_size, d_model, mode,
                                    embedding_dropout, dropout_shared_axes,
                                    max_len, output_vocab_size=None,
                                    pos_type=None, pos_axial_shape=None,
                                    pos_d_axial_embs=None,
                                    pos_start_from_zero_prob=1.0,
                                    pos_max_offset_to_add=0,
                                    use_bfloat16=False):
  """The encoder-side and decoder-side input layers of a seq2seq model.

  Each is embedding (or a Dense layer when the vocabulary size is None, for
  vector inputs), dropout and a positional encoder. Without
  `output_vocab_size` both sides share one embedding layer (and so its
  weights); positional encodings are never shared. The encoder side never
  runs step by step, so in 'predict' mode it is built in 'eval' mode.

  Args:
    input_vocab_size: encoder-side vocabulary size, or None for vectors.
    d_model: width of the activations.
    mode: 'train', 'eval' or 'predict'.
    embedding_dropout: dropout after the embedding and on the encoding.
    dropout_shared_axes: axes sharing one dropout mask.
    max_len: longest sequence.
    output_vocab_size: decoder-side vocabulary size; None to share the
      encoder's.
    pos_type: see `PositionalEncoder`.
    pos_axial_shape: see `PositionalEncoder`.
    pos_d_axial_embs: see `PositionalEncoder`.
    pos_start_from_zero_prob: see `PositionalEncoder`.
    pos_max_offset_to_add: see `PositionalEncoder`.
    use_bfloat16: keep embedding and encoding weights in bfloat16.

  Returns:
    `(in_encoder, out_encoder, output_vocab_size)`, the last being the
    decoder-side vocabulary size actually used.
  """
  def Embedder(vocab_size, embedding_mode):
    if vocab_size is not None:
      embedding = tl.Embedding(vocab_size, d_model,
                               use_bfloat16=use_bfloat16)
    else:
      embedding = tl.Dense(d_model, use_bfloat16=use_bfloat16)
    return [embedding,
            tl.Dropout(rate=embedding_dropout,
                       shared_axes=dropout_shared_axes, mode=embedding_mode)]

  def Encoder(embedder, encoder_mode):
    return embedder + [PositionalEncoder(
        encoder_mode, dropout=embedding_dropout, max_len=max_len,
        pos_type=pos_type, pos_axial_shape=pos_axial_shape,
        pos_d_axial_embs=pos_d_axial_embs,
        pos_start_from_zero_prob=pos_start_from_zero_prob,
        pos_max_offset_to_add=pos_max_offset_to_add,
        use_bfloat16=use_bfloat16)]

  encoder_mode = 'eval' if mode == 'predict' else mode
  in_embedder = Embedder(input_vocab_size, encoder_mode)
  in_encoder = Encoder(in_embedder, encoder_mode)
  out_embedder = (in_embedder if output_vocab_size is None else
                  Embedder(output_vocab_size, mode))
  out_encoder = Encoder(out_embedder, mode)
  if output_vocab_size is None:
    output_vocab_size = input_vocab_size
  # Vector inputs (no vocabulary) go through a Dense layer: any width.
  in_spec = '...a->...b' if input_vocab_size is None else '...->...d'
  in_encoder = tl.AssertFunction(in_spec, in_encoder)
  out_encoder = tl.AssertFunction('...->...d', out_encoder)
  return in_encoder, out_encoder, output_vocab_size
