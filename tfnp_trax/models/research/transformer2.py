"""Transformer2: an encoder-decoder whose decoder attends over one sequence.

Instead of encoder-decoder attention, the decoder runs causal
self-attention over the encoder's output followed by the shifted target:
each example's encoder vectors are cut at its last real (non-zero) token
and the decoder vectors are written right after them
(`ConcatWithPadding`); after the decoder blocks the target part is cut
out again (`StripFromConcatenateWithPadding`). The blocks and embeddings
are those of the configurable Transformer.

In 'predict' mode the encoder runs once and is cached; the first call
concatenates and later calls (one target token each) run the decoder on
the target alone, its attention caches holding the encoder part. The
concatenation layers tell the first call from later ones by their state's
shape, () before and (1,) after, as Trax's do. (In 'train' and 'eval'
mode Trax reshapes that state too; here it keeps its shape, so that
`training.Loop` can hold it in a variable. Outputs are the same.)
"""

from tfnp_trax import layers as tl
from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.models.research import _configurable_options as options
from tfnp_trax.models.research._configurable_blocks import DecoderBlock
from tfnp_trax.models.research._configurable_blocks import EncoderBlock
from tfnp_trax.models.research._configurable_embeddings import EmbeddingAndPositionalEncodings

__all__ = ['Transformer2', 'ConcatWithPadding', 'ConcatWithPadding2',
           'StripFromConcatenateWithPadding']

# Layer constructors are CamelCase functions, as in Trax.
# pylint: disable=invalid-name


def Transformer2(input_vocab_size, output_vocab_size=None, d_model=512,
                 d_ff=2048, n_encoder_layers=6, n_decoder_layers=6,
                 n_heads=8, dropout=0.1, dropout_shared_axes=None,
                 max_len=2048, mode='train', ff_activation=tl.Relu,
                 ff_dropout=0.1, ff_chunk_size=0, ff_use_sru=0,
                 ff_sparsity=0, ff_sparsity_type='1inN',
                 attention_chunk_size=0, encoder_attention_type=tl.Attention,
                 n_encoder_attention_layers=1,
                 decoder_attention_type=tl.CausalAttention,
                 n_decoder_attention_layers=2, pos_type=None,
                 pos_axial_shape=None, pos_d_axial_embs=None):
  """`(source_ids, target_ids) -> (logits, target_ids)`.

  Source id 0 is padding; the target is shifted right, so the logits at
  position t predict target token t. Without `output_vocab_size` source
  and target share one embedding.

  Example:
    >>> from tfnp_trax import shapes
    >>> model = Transformer2(10, d_model=8, d_ff=16, n_encoder_layers=1,
    ...                      n_decoder_layers=1, n_heads=2, mode='eval')
    >>> src = jnp.array([[3, 4, 0]], jnp.int32)
    >>> tgt = jnp.array([[5, 6]], jnp.int32)
    >>> _ = model.init(shapes.signature((src, tgt)))
    >>> logits, _ = model((src, tgt))
    >>> tuple(logits.shape)
    (1, 2, 10)

  Args:
    input_vocab_size: number of source token ids.
    output_vocab_size: number of target ids; None to share the source's.
    d_model: width of the activations and embeddings.
    d_ff: width of the feed-forward hidden layers.
    n_encoder_layers: number of encoder blocks.
    n_decoder_layers: number of decoder blocks.
    n_heads: number of attention heads.
    dropout: dropout rate in the blocks, embeddings and attention.
    dropout_shared_axes: axes sharing one dropout mask.
    max_len: longest sequence, for the positional encodings.
    mode: 'train', 'eval' or 'predict'.
    ff_activation: activation layer constructor of the feed-forward parts.
    ff_dropout: dropout rate after the feed-forward hidden layers.
    ff_chunk_size: if > 0, run the feed-forward parts on position chunks.
    ff_use_sru: n or (n, n_units): SRU layers beside each feed-forward part.
    ff_sparsity: if nonzero, a sparse feed-forward block (see
      `FeedForwardWithOptions`); NotImplementedError names the layer if
      tfnp_trax lacks it.
    ff_sparsity_type: '1inN', 'Block' or 'Switch' (with ff_sparsity).
    attention_chunk_size: if > 0, run attention on batch chunks this size.
    encoder_attention_type: the encoder's attention layer constructor.
    n_encoder_attention_layers: attention sub-blocks per encoder block.
    decoder_attention_type: the decoder's causal attention constructor.
    n_decoder_attention_layers: attention sub-blocks per decoder block.
    pos_type: positional encoding type (see `PositionalEncoder`).
    pos_axial_shape: the axial grid, for axial positional encodings.
    pos_d_axial_embs: features per axial axis, summing to d_model.

  Returns:
    A layer with n_in=2, n_out=2.
  """
  where = 'Transformer2'
  options.check_ff_sparsity(where, options.parse_ff_sparsity(ff_sparsity),
                            ff_sparsity_type)
  options.check_pos_type(where, pos_type, pos_axial_shape, pos_d_axial_embs)
  in_encoder, out_encoder, output_vocab_size = EmbeddingAndPositionalEncodings(
      input_vocab_size, d_model, mode, dropout, dropout_shared_axes, max_len,
      output_vocab_size=output_vocab_size, pos_type=pos_type,
      pos_axial_shape=pos_axial_shape, pos_d_axial_embs=pos_d_axial_embs)
  block_args = (d_model, d_ff, n_heads, dropout, dropout_shared_axes, mode,
                ff_activation, ff_dropout, ff_chunk_size, ff_use_sru,
                ff_sparsity, ff_sparsity_type, attention_chunk_size)
  encoder_blocks = [
      EncoderBlock(*block_args, encoder_attention_type,
                   n_encoder_attention_layers)
      for _ in range(n_encoder_layers)]
  encoder = tl.Serial(in_encoder, encoder_blocks, tl.LayerNorm())
  if mode == 'predict':
    encoder = tl.Cache(encoder)
  decoder_blocks = [
      DecoderBlock(*block_args, decoder_attention_type,
                   n_decoder_attention_layers)
      for _ in range(n_decoder_layers)]
  return tl.Serial(
      tl.Select([0, 0, 1, 1]),             # tok_e tok_e tok_d tok_d
      tl.Branch([], tl.PaddingMask()),     # tok_e mask tok_e tok_d tok_d
      encoder,                             # vec_e mask tok_e tok_d tok_d
      # The decoder needs a plain (batch, length) mask of real tokens.
      tl.Select([2, 0, 2], n_in=3),        # tok_e vec_e tok_e tok_d tok_d
      tl.Fn('EncoderMask', lambda x: x != 0, n_out=1),
      tl.Select([3, 1, 0, 2]),             # tok_d vec_e mask_e tok_e tok_d
      tl.ShiftRight(mode=mode),
      out_encoder,                         # vec_d vec_e mask_e tok_e tok_d
      tl.Select([1, 0]),                   # vec_e vec_d mask_e tok_e tok_d
      ConcatWithPadding(mode=mode),        # vec_ed tok_e tok_d
      decoder_blocks,
      tl.LayerNorm(),
      tl.Select([0, 1, 2, 2]),             # vec_ed tok_e tok_d tok_d
      StripFromConcatenateWithPadding(mode=mode),  # vec_d tok_d
      tl.Dense(output_vocab_size))         # logits tok_d


def _positions(length):
  return jnp.arange(length, dtype=jnp.int32)


def _gather_rows(x, index):
  """`x[b, index[b, p], :]` for x (B, L, H) and int32 index (B, P)."""
  return jnp.take_along_axis(x, index[:, :, None], axis=1)


def _check_shape(where, what, shape, want):
  if tuple(shape) != tuple(want):
    raise ValueError(f'{where}: {what} has shape {tuple(shape)}, expected '
                     f'{tuple(want)} (batch, length[, depth]) to match the '
                     f'encoder vectors.')


def _concat_with_padding(where, vec_e, vec_d, mask_e):
  """Per example: vec_e with vec_d written over it from its mask's length.

  Row b of the result, of length L1 + L2, is vec_e[b] padded with zeros,
  overwritten at positions n_b .. n_b + L2 - 1 by vec_d[b], where n_b is
  the number of nonzero entries of mask_e[b] (so any encoder vectors past
  n_b + L2 are kept, as Trax keeps them).
  """
  batch, len_e, depth = vec_e.shape
  len_d = vec_d.shape[1]
  _check_shape(where, 'the decoder vector', vec_d.shape,
               (batch, len_d, depth))
  _check_shape(where, 'the encoder mask', mask_e.shape, (batch, len_e))
  n_real = jnp.sum(mask_e.astype(jnp.int32), axis=1, keepdims=True)
  offset = _positions(len_e + len_d)[None, :] - n_real      # (B, L1 + L2)
  in_decoder = (offset >= 0) & (offset < len_d)
  from_d = _gather_rows(vec_d, jnp.clip(offset, 0, len_d - 1))
  from_e = jnp.concatenate([vec_e, jnp.zeros_like(vec_d)], axis=1)
  return jnp.where(in_decoder[:, :, None], from_d, from_e)


def _strip_from_concatenate_with_padding(where, vec_ed, tok_e, tok_d):
  """Per example: the L2 vectors of vec_ed from the encoder's length on."""
  batch, length, _ = vec_ed.shape
  len_e, len_d = tok_e.shape[1], tok_d.shape[1]
  if length != len_e + len_d:
    raise ValueError(
        f'{where}: the concatenated vectors have length {length}, but the '
        f'encoder and decoder tokens have lengths {len_e} + {len_d}.')
  _check_shape(where, 'the encoder tokens', tok_e.shape, (batch, len_e))
  _check_shape(where, 'the decoder tokens', tok_d.shape, (batch, len_d))
  n_real = jnp.sum((tok_e != 0).astype(jnp.int32), axis=1, keepdims=True)
  return _gather_rows(vec_ed, n_real + _positions(len_d)[None, :])


def _is_first_call(layer):
  """True unless this is a decoding step after the first one.

  In 'predict' mode the state, () at init, becomes (1,) on the first call;
  its shape is static, so the test is a Python branch even inside a
  compiled function. Other modes leave the state as it is: Trax reshapes
  it there too, to no effect on any output, but a state whose shape
  changes cannot live in the fixed-shape variables `training.Loop` keeps.
  """
  if layer._mode != 'predict':  # pylint: disable=protected-access
    return True
  # jnp.ndim, not `not state.shape`: a TensorShape of rank 0 is truthy.
  if jnp.ndim(layer.state) == 0:
    layer.state = jnp.reshape(layer.state, (1,))
    return True
  return False


def _encoder_part(vec_ed, tok_e):
  """The encoder vectors of vec_ed, zero at padding (for `reverse`)."""
  mask_e = tok_e != 0
  return vec_ed[:, :tok_e.shape[1], :] * mask_e[:, :, None].astype(
      vec_ed.dtype)


class _FirstCallLayer(tl.ReversibleLayer):
  """Base of the concatenation layers: state () before the first call."""

  def __init__(self, n_in, n_out, mode='train'):
    super().__init__(n_in=n_in, n_out=n_out)
    self._mode = mode

  def init_weights_and_state(self, input_signature):
    del input_signature
    self.state = jnp.array(0, dtype=jnp.int32)

  def _is_first_call(self):
    return _is_first_call(self)

  def _check_reversible(self):
    if self._mode == 'predict':
      raise ValueError(f'{self.name}: cannot reverse in predict mode (later '
                       f'decoding steps do not concatenate).')


class ConcatWithPadding(_FirstCallLayer):
  """`(vec_e, vec_d, mask_e, tok_e, tok_d) -> (vec_ed, tok_e, tok_d)`.

  Joins encoder vectors (B, L1, H) and decoder vectors (B, L2, H) into
  (B, L1 + L2, H), the decoder part of each example starting right after
  its real encoder tokens (mask_e: (B, L1), nonzero at real tokens).
  In 'predict' mode, calls after the first return vec_d unchanged.

  Example:
    >>> from tfnp_trax import shapes
    >>> tok_e = jnp.array([[5, 0, 0, 0]], jnp.int32)  # One real token.
    >>> vec_e = jnp.ones((1, 4, 1), jnp.float32)
    >>> vec_d = jnp.full((1, 2, 1), 2.0, jnp.float32)
    >>> tok_d = jnp.array([[1, 1]], jnp.int32)
    >>> xs = (vec_e, vec_d, tok_e != 0, tok_e, tok_d)
    >>> layer = ConcatWithPadding(mode='eval')
    >>> _ = layer.init(shapes.signature(xs))
    >>> layer(xs)[0][0, :, 0].numpy().tolist()
    [1.0, 2.0, 2.0, 1.0, 0.0, 0.0]
  """

  def __init__(self, mode='train'):
    super().__init__(n_in=5, n_out=3, mode=mode)

  def forward(self, inputs):
    vec_e, vec_d, mask_e, tok_e, tok_d = inputs
    if self._is_first_call():
      return (_concat_with_padding(self.name, vec_e, vec_d, mask_e), tok_e,
              tok_d)
    return vec_d, tok_e, tok_d

  def reverse(self, output, weights=(), state=(), new_state=(), rng=None):
    del weights, state, new_state, rng
    self._check_reversible()
    vec_ed, tok_e, tok_d = output
    vec_d = _strip_from_concatenate_with_padding(self.name, vec_ed, tok_e,
                                                 tok_d)
    return (_encoder_part(vec_ed, tok_e), vec_d, tok_e != 0, tok_e, tok_d)


class ConcatWithPadding2(_FirstCallLayer):
  """`ConcatWithPadding` on a pair of encoder vectors, for reversible stacks.

  `(vec_e1, vec_e2, vec_d, mask_e, tok_e, tok_d) ->
  (vec_ed1, vec_ed2, tok_e, tok_d)`, each of vec_e1 and vec_e2 joined with
  vec_d. In 'predict' mode, calls after the first return vec_d twice.
  """

  def __init__(self, mode='train'):
    super().__init__(n_in=6, n_out=4, mode=mode)

  def forward(self, inputs):
    vec_e1, vec_e2, vec_d, mask_e, tok_e, tok_d = inputs
    if self._is_first_call():
      return (_concat_with_padding(self.name, vec_e1, vec_d, mask_e),
              _concat_with_padding(self.name, vec_e2, vec_d, mask_e),
              tok_e, tok_d)
    return vec_d, vec_d, tok_e, tok_d

  def reverse(self, output, weights=(), state=(), new_state=(), rng=None):
    del weights, state, new_state, rng
    self._check_reversible()
    vec_ed1, vec_ed2, tok_e, tok_d = output
    vec_d = _strip_from_concatenate_with_padding(self.name, vec_ed1, tok_e,
                                                 tok_d)
    return (_encoder_part(vec_ed1, tok_e), _encoder_part(vec_ed2, tok_e),
            vec_d, tok_e != 0, tok_e, tok_d)


class StripFromConcatenateWithPadding(tl.Layer):
  """`(vec_ed, tok_e, tok_d) -> vec_d`: undoes `ConcatWithPadding`.

  Takes, per example, the L2 vectors starting after its real (nonzero)
  encoder tokens. In 'predict' mode, calls after the first return vec_ed
  unchanged (it is then the decoder part alone).
  """

  def __init__(self, mode='train'):
    super().__init__(n_in=3, n_out=1)
    self._mode = mode

  def init_weights_and_state(self, input_signature):
    del input_signature
    self.state = jnp.array(0, dtype=jnp.int32)

  def forward(self, inputs):
    vec_ed, tok_e, tok_d = inputs
    if _is_first_call(self):
      return _strip_from_concatenate_with_padding(self.name, vec_ed, tok_e,
                                                  tok_d)
    return vec_ed
