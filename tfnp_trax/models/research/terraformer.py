"""The Terraformer: a reversible encoder-decoder over one joint sequence.

From "Sparse is Enough in Scaling Transformers" (Jaszczur et al., 2021,
https://arxiv.org/abs/2111.12763). The encoder is a stack of reversible
Reformer encoder blocks. The decoder does not cross-attend: the encoder
output and the decoder input are joined into one sequence (the decoder
part placed right after the encoder's last real token) and run through
reversible causal decoder blocks; the decoder part is then cut back out
and projected to the output vocabulary. Defaults and arguments follow
Trax's `trax.models.research.terraformer`.
"""

from tfnp_trax import layers as tl
# Modules, not names: the Reformer's package imports this package back.
from tfnp_trax.models.reformer import _reformer_blocks as reformer
from tfnp_trax.models.research import _configurable_options as options
from tfnp_trax.models.research import _terraformer_layers as tfl
from tfnp_trax.models.research import configurable_transformer as ct

__all__ = ['ConfigurableTerraformer']

# Layer constructors are CamelCase functions, as in Trax.
# pylint: disable=invalid-name


def _transformer2():
  """Trax's `transformer2` joining layers (imported when a model is built)."""
  from tfnp_trax.models.research import transformer2  # pylint: disable=g-import-not-at-top
  return transformer2


def _check_sizes(d_model, n_heads):
  if d_model % 2 or (d_model // 2) % n_heads:
    raise ValueError(
        f'ConfigurableTerraformer: n_heads ({n_heads}) must divide '
        f'd_model/2 ({d_model / 2}); got d_model={d_model}. Pick d_model a '
        f'multiple of 2 * n_heads.')


def ConfigurableTerraformer(input_vocab_size, output_vocab_size=None,
                            d_model=512, d_ff=2048, d_attention_key=None,
                            d_attention_value=None, n_encoder_layers=6,
                            n_decoder_layers=6, n_heads=8, dropout=0.1,
                            max_len=2048,
                            encoder_attention_type=tl.SelfAttention,
                            encoder_decoder_attention_type=tl.SelfAttention,
                            pos_type='fixed-base', pos_axial_shape=(),
                            pos_d_axial_embs=None,
                            pos_start_from_zero_prob=1.0,
                            pos_max_offset_to_add=0, ff_activation=tl.Relu,
                            ff_use_sru=0, ff_chunk_size=0, ff_dropout=None,
                            ff_sparsity=0, loss_sparsity_type='mult',
                            loss_sparsity=0, loss_d_lowrank=0,
                            loss_sparsity_prob=None, attention_chunk_size=0,
                            n_layers_forget=0, forget_dense=True,
                            n_decoder_attention_layers=2,
                            use_bfloat16=False, reversible_encoder=False,
                            use_two_swaps_per_encoder_block=True,
                            center_layernorm=True, half_before_layer=None,
                            double_after_layer=None, mode='train'):
  """Terraformer: `(source, target) -> (logits, target)`.

  With a vocabulary (`input_vocab_size` not None) the inputs are source
  ids (batch, length_e), 0 being padding, and target ids (batch,
  length_d). Without one the inputs are `(source_vectors, source_mask,
  target)`, the vectors (batch, length_e, features) already embedded.
  The output is the logits (batch, length_d, output_vocab_size), where
  position t predicts target token t (the target is shifted right), and
  the target ids, for the loss.

  In 'predict' mode the model decodes one target token per call: the
  first call runs the encoder (then cached) on the source and the joined
  sequence, later calls only the decoder on the new position. Pass the
  same source in every call.

  Example:
    >>> model = ConfigurableTerraformer(
    ...     16, d_model=8, d_ff=16, n_heads=2, n_encoder_layers=1,
    ...     n_decoder_layers=1, max_len=16, mode='eval')
    >>> src = jnp.array([[3, 4, 5, 0]], dtype=jnp.int32)
    >>> tgt = jnp.array([[1, 2, 3]], dtype=jnp.int32)
    >>> _ = model.init(shapes.signature((src, tgt)))
    >>> logits, _ = model((src, tgt))
    >>> tuple(logits.shape)
    (1, 3, 16)

  Args:
    input_vocab_size: number of source token ids, or None for source
      vectors (then the model takes a source mask too).
    output_vocab_size: number of target ids; None to share the source's
      vocabulary and embedding.
    d_model: width of the activations (of each reversible stream).
    d_ff: width of the feed-forward hidden layers.
    d_attention_key: depth of the decoder's attention keys per head;
      None for d_model / n_heads.
    d_attention_value: depth of the decoder's attention values per head;
      None for d_model / n_heads.
    n_encoder_layers: number of reversible encoder blocks.
    n_decoder_layers: number of reversible decoder blocks.
    n_heads: number of attention heads; must divide d_model / 2.
    dropout: dropout rate in the blocks, on the attention weights and on
      the embeddings.
    max_len: longest sequence, for the learned positional encoding.
    encoder_attention_type: the encoder's attention layer constructor.
    encoder_decoder_attention_type: the decoder's causal attention layer
      constructor, or a list of them used by the blocks in turn (the
      number of blocks must be a multiple of its length).
    pos_type: the positional encoding (see
      `configurable_transformer.PositionalEncoder`).
    pos_axial_shape: the axial grid; its product is the sequence length.
    pos_d_axial_embs: features per axial axis, summing to d_model.
    pos_start_from_zero_prob: in training, how often positions start at 0.
    pos_max_offset_to_add: largest random position offset in training.
    ff_activation: activation layer constructor of the feed-forward parts.
    ff_use_sru: n or (n, n_units): SRU layers beside each feed-forward part.
    ff_chunk_size: if > 0, run the feed-forward parts on position chunks.
    ff_dropout: dropout after the feed-forward hidden layers; None means
      `dropout`.
    ff_sparsity: if not 0, sparse feed-forward parts (`tl.SparseFF`; see
      `configurable_transformer.FeedForwardWithOptions`).
    loss_sparsity_type: the sparse output layer's type (see
      `tl.SparseDenseWithOptions`); None for a Dense one.
    loss_sparsity: the output layer's sparsity; 0 for a Dense one.
    loss_d_lowrank: rank of the 'lowrank' output layer.
    loss_sparsity_prob: None, or the probability (in training) of using
      the sparse output layer rather than a Dense one.
    attention_chunk_size: if > 0, run attention on batch chunks this size.
    n_layers_forget: if > 0, a "forgetting" layer every this many blocks
      (see `ReversibleSerialForget` in `_terraformer_layers`).
    forget_dense: the forgetting layer is Dense (True) or keeps the streams.
    n_decoder_attention_layers: attention half-residuals per decoder block.
    use_bfloat16: keep weights in bfloat16.
    reversible_encoder: keep both encoder streams, joined to the decoder
      streams one by one, instead of averaging them through a Dense layer.
    use_two_swaps_per_encoder_block: end each encoder block with a swap.
    center_layernorm: LayerNorm subtracts the mean (else RMS norm).
    half_before_layer: if set, the blocks before this decoder layer (and
      the encoder) run at half d_model, d_ff and attention depths; their
      two streams are concatenated to full width after it.
    double_after_layer: if set, the decoder blocks after this one run at
      double width (streams concatenated after it).
    mode: 'train', 'eval' or 'predict'.

  Returns:
    A layer with n_in=2 (n_in=3 without an input vocabulary), n_out=2.

  Raises:
    ValueError: if n_heads does not divide d_model / 2.
  """
  _check_sizes(d_model, n_heads)
  options.check_pos_type('ConfigurableTerraformer', pos_type,
                         pos_axial_shape, pos_d_axial_embs)
  t2 = _transformer2()
  portal_mask = tfl.PortalInput() if mode == 'predict' else None
  if d_attention_key is None:
    d_attention_key = d_model // n_heads
  if d_attention_value is None:
    d_attention_value = d_model // n_heads

  # Widths of the three stages: the encoder and first decoder layers (half
  # width if asked), the middle ones (full width) and the last ones.
  full = (d_model, d_ff, d_attention_key, d_attention_value)
  first = tuple(d // 2 for d in full) if half_before_layer else full
  last = tuple(d * 2 for d in full) if double_after_layer else full
  d_model1, d_ff1 = first[:2]

  in_encoder, out_encoder, output_vocab_size = (
      ct.EmbeddingAndPositionalEncodings(
          input_vocab_size, d_model1, mode, dropout, [-2], max_len,
          output_vocab_size=output_vocab_size, pos_type=pos_type,
          pos_axial_shape=pos_axial_shape,
          pos_d_axial_embs=pos_d_axial_embs,
          pos_start_from_zero_prob=pos_start_from_zero_prob,
          pos_max_offset_to_add=pos_max_offset_to_add,
          use_bfloat16=use_bfloat16))

  def _Encoder():                  # vec_e mask_e tok_e vec_d tok_d
    blocks = [
        reformer.EncoderBlock(
            d_model1, d_ff1, n_heads, encoder_attention_type,
            dropout=dropout, ff_activation=ff_activation,
            ff_dropout=ff_dropout, ff_use_sru=ff_use_sru,
            ff_chunk_size=ff_chunk_size, ff_sparsity=ff_sparsity,
            attention_chunk_size=attention_chunk_size,
            center_layernorm=center_layernorm, use_bfloat16=use_bfloat16,
            use_two_swaps_per_block=use_two_swaps_per_encoder_block,
            mode=mode)
        for _ in range(n_encoder_layers)]
    layers = [tl.ReversibleSelect([0, 0]),
              tfl.ReversibleSerialForget(blocks, d_model1, n_layers_forget,
                                         forget_dense)]
    if not reversible_encoder:
      layers += [reformer.XYAvg(),
                 tl.Dense(d_model1, use_bfloat16=use_bfloat16),
                 tl.LayerNorm()]
    if mode == 'predict':  # The source is the same in every call.
      return tl.Cache(tl.Serial(layers))
    return tl.Serial(layers)

  attention_types = encoder_decoder_attention_type
  if not isinstance(attention_types, (tuple, list)):
    attention_types = [attention_types]
  if n_decoder_layers % len(attention_types):
    raise ValueError(
        f'ConfigurableTerraformer: n_decoder_layers ({n_decoder_layers}) '
        f'must be a multiple of the number of encoder_decoder_attention_type '
        f'entries ({len(attention_types)}), since decoder layer i uses entry '
        f'i % {len(attention_types)}.')

  def _DecoderBlocks():
    blocks = []
    for i in range(n_decoder_layers):
      d_m, d_f, d_k, d_v = first
      if half_before_layer and i >= half_before_layer:
        d_m, d_f, d_k, d_v = full
      if double_after_layer and i > double_after_layer:
        d_m, d_f, d_k, d_v = last
      blocks.append(reformer.DecoderBlock(
          d_m, d_f, d_k, d_v, n_heads,
          attention_type=attention_types[i % len(attention_types)],
          dropout=dropout, ff_activation=ff_activation,
          ff_dropout=ff_dropout, ff_use_sru=ff_use_sru,
          ff_chunk_size=ff_chunk_size, ff_sparsity=ff_sparsity,
          attention_chunk_size=attention_chunk_size,
          n_attention_layers=n_decoder_attention_layers,
          center_layernorm=center_layernorm, use_bfloat16=use_bfloat16,
          mode=mode))
      # Joining the two streams doubles the width for the next stage.
      if half_before_layer and i == half_before_layer - 1:
        blocks.append(tl.ReversibleConcatenatePair())
      if double_after_layer and i == double_after_layer:
        blocks.append(tl.ReversibleConcatenatePair())
    return blocks

  if mode == 'predict':
    # Layers that cache past positions in predict mode must skip the
    # encoder's padding inside the joined sequence; see _terraformer_layers.
    with tfl.predict_mask_hooks(portal_mask):
      decoder_blocks = _DecoderBlocks()
  else:
    decoder_blocks = _DecoderBlocks()

  if reversible_encoder:
    enc_dec_concat = [
        tl.ReversibleSelect([0, 1, 4, 2, 3]),   # v_e1 v_e2 v_d mask_e ...
        t2.ConcatWithPadding2(mode=mode),       # v_ed v_ed tok_e tok_d
    ]
  else:
    enc_dec_concat = [
        tl.ReversibleSelect([0, 3, 1, 2]),      # v_e v_d mask_e tok_e tok_d
        t2.ConcatWithPadding(mode=mode),        # v_ed tok_e tok_d
        tl.ReversibleSelect([0, 0]),            # v_ed v_ed tok_e tok_d
    ]

  if input_vocab_size is not None:
    inputs = tl.AssertFunction(
        'bl,br->bld,bl,bl,br',  # l/r: source/target length, d: depth
        tl.Serial(                                   # tok_e tok_d
            tl.Select([0, 0, 0, 1]),
            tl.Parallel(in_encoder,
                        [tl.PaddingMask(), reformer.RemoveAxes12()])))
  else:
    # The source mask stands in for the source ids: what follows only
    # tells padding (0) from the rest.
    inputs = tl.AssertFunction(
        'blf,bl,br->bld,bl,bl,br',  # f: source features
        tl.Serial(                                   # vec_e mask_e tok_d
            tl.Select([0, 1, 1, 2]),
            tl.Parallel(in_encoder, [], tfl.AsTokenIDs())))

  output_layer = options.output_dense(
      'ConfigurableTerraformer', output_vocab_size, loss_sparsity_type,
      loss_sparsity, loss_sparsity_prob, d_input=last[0],
      d_lowrank=loss_d_lowrank, use_bfloat16=use_bfloat16, mode=mode)

  return tl.Serial(
      inputs,                         # vec_e mask_e tok_e tok_d
      tl.Parallel([], portal_mask),   # Predict mode: the mask enters it.
      tl.Select([0, 1, 2, 3, 3]),     # The target ids again, for the loss.
      # Both embeddings run in one layer, as they may share weights.
      tl.Parallel([], [], [], [tl.ShiftRight(mode=mode), out_encoder]),
      _Encoder(),                     # vec_e mask_e tok_e vec_d tok_d
      enc_dec_concat,                 # vec_ed vec_ed tok_e tok_d
      tfl.ReversibleSerialForget(decoder_blocks, last[0], n_layers_forget,
                                 forget_dense),
      reformer.XYAvg(),               # vec_ed tok_e tok_d
      tl.LayerNorm(),
      tl.Select([0, 1, 2, 2]),        # vec_ed tok_e tok_d tok_d
      t2.StripFromConcatenateWithPadding(mode=mode),  # vec_d tok_d
      output_layer)                   # logits tok_d
