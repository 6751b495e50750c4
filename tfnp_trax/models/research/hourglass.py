"""Hourglass: a hierarchical Transformer language model.

Trax's `models/research/hourglass.py` (Nawrot et al., 2021, "Hierarchical
Transformers Are More Efficient Language Models",
https://arxiv.org/abs/2110.13711). Token-level decoder blocks run before
and after a *valley*: the sequence is shortened by a factor, processed by
decoder blocks at the shorter length (possibly shortened again, level by
level), upsampled back and added to the activations it came from.

Causality survives the shortening because, before a shortening by k, the
activations are shifted right by k - 1 more positions: a shortened vector
then summarizes only positions before every token it is upsampled into.
"""

from tfnp_trax import layers as tl
from tfnp_trax.layers.research.rel_attention import RelativeAttentionWrapper
from tfnp_trax.layers.research.rel_attention import get_rel_att_inputs
from tfnp_trax.layers.research.resampling import AttentionResampling
from tfnp_trax.layers.research.resampling import AveragePooling
from tfnp_trax.layers.research.resampling import FeedForwardBlock
from tfnp_trax.layers.research.resampling import LinearUpsampling
from tfnp_trax.models.research.configurable_transformer import ApplyAttentionLayer

__all__ = ['HourglassLM']

# pylint: disable=invalid-name


def _RelativeDecoderBlock(attention_type, d_model, d_ff, n_heads, dropout,
                          dropout_shared_axes, mode, ff_activation,
                          context_bias_layer, location_bias_layer,
                          total_pooling):
  """Pre-norm residual attention and feed-forward, as a list of layers."""
  if attention_type == RelativeAttentionWrapper:
    attention = RelativeAttentionWrapper(
        d_model, n_heads, dropout, mode=mode,
        context_bias_layer=context_bias_layer,
        location_bias_layer=location_bias_layer, total_pooling=total_pooling)
  else:
    attention = ApplyAttentionLayer(
        attention_type, d_model, n_heads, d_model // n_heads,
        d_model // n_heads, causal=True, masked=False,
        attention_dropout=dropout, output_dropout=dropout,
        attention_chunk_size=0, mode=mode)
  feed_forward = FeedForwardBlock(d_model, d_ff, dropout, dropout_shared_axes,
                                  mode, ff_activation)

  def _Dropout():
    return tl.Dropout(rate=dropout, shared_axes=dropout_shared_axes,
                      mode=mode)

  return [
      tl.Residual(tl.LayerNorm(), attention, _Dropout()),
      tl.Residual(tl.LayerNorm(), feed_forward, _Dropout()),
  ]


def _parse_hierarchy(hierarchy):
  """'n1@f1 n2@f2 ... n1@f1' -> ([n1, n2, ...], per-level shorten factors).

  Each level `n@f` has n decoder blocks running at total shortening f; f
  must be a multiple of the previous level's, and the string a palindrome
  (the way down mirrors the way up).
  """
  levels = hierarchy.split(' ')
  if levels != levels[::-1]:
    raise ValueError(f'HourglassLM: hierarchy {hierarchy!r} is not a '
                     f'palindrome; write it as e.g. "1@2 2@6 1@2".')
  n_layers, totals = [], []
  for level in levels[:1 + len(levels) // 2]:
    parts = level.split('@')
    if len(parts) != 2 or not all(p.isdigit() for p in parts):
      raise ValueError(f'HourglassLM: hierarchy level {level!r} of '
                       f'{hierarchy!r} is not of the form '
                       f'"<n_layers>@<total_shorten_factor>", e.g. "6@3".')
    n_layers.append(int(parts[0]))
    totals.append(int(parts[1]))
  factors = []
  for total, previous in zip(totals, [1] + totals[:-1]):
    if total <= 0 or total % previous:
      raise ValueError(
          f'HourglassLM: hierarchy {hierarchy!r}: total shorten factor '
          f'{total} is not a positive multiple of the previous level\'s '
          f'{previous}.')
    factors.append(total // previous)
  return n_layers, factors


class _Hourglass(tl.Serial):
  """The model's Serial, which checks the sequence length on the way in.

  Prints, and behaves, as Trax's plain `Serial`; the check turns a length
  the shortening cannot divide into a clear error instead of a shape
  mismatch deep inside an attention layer.
  """

  def __init__(self, *layers, total_shortening):
    super().__init__(*layers, name='Serial')
    self._total_shortening = total_shortening

  def _check_length(self, shape):
    length = shape[1] if len(shape) > 1 else None
    if length is not None and length % self._total_shortening:
      raise ValueError(
          f'HourglassLM: sequence length {length} (input shape '
          f'{tuple(shape)}) is not divisible by the total shorten factor '
          f'{self._total_shortening} of its hierarchy; pad the sequences to '
          f'a multiple of {self._total_shortening}.')

  def init(self, input_signature, rng=None, use_cache=False):
    self._check_length(tuple(input_signature.shape))
    return super().init(input_signature, rng=rng, use_cache=use_cache)

  def pure_fn(self, x, weights, state, rng, use_cache=False):
    self._check_length(tuple(x.shape))
    return super().pure_fn(x, weights, state, rng, use_cache=use_cache)


def HourglassLM(vocab_size, d_model=512, d_ff=2048, vanilla_layers=(1, 1),
                hierarchy='6@3', n_heads=8, dropout=0.1,
                dropout_shared_axes=None, mode='train',
                ff_activation=tl.FastGelu,
                vanilla_attn_type=RelativeAttentionWrapper,
                middle_attn_type=RelativeAttentionWrapper,
                downsampling_fn=AttentionResampling,
                upsampling_fn=AttentionResampling,
                attention_downsampling_fn=AveragePooling,
                attention_upsampling_fn=LinearUpsampling):
  """A hierarchical Transformer language model: tokens -> logits.

  Input: int tokens (batch, length), 0 for padding; the length must be a
  multiple of the hierarchy's total shorten factor. Output: (batch, length,
  vocab_size) unnormalized scores (a final `Dense`, as in Trax).

  Args:
    vocab_size: number of token ids.
    d_model: width of the activations.
    d_ff: hidden width of the feed-forward blocks.
    vanilla_layers: (pre, post): token-level decoder blocks before and after
      the valley.
    hierarchy: levels `n@f` (n blocks at total shortening f), a palindrome,
      e.g. '1@2 2@6 1@2'.
    n_heads: number of attention heads.
    dropout: dropout rate (train mode).
    dropout_shared_axes: axes sharing one dropout mask.
    mode: 'train' or 'eval' ('predict' is not supported, as in Trax).
    ff_activation: activation layer constructor of the feed-forward blocks.
    vanilla_attn_type: attention of the token-level blocks.
    middle_attn_type: attention of the blocks on shortened sequences.
    downsampling_fn: shortening layer (`AttentionResampling`,
      `LinearPooling`, ...), called with the resampling arguments.
    upsampling_fn: upsampling layer, likewise.
    attention_downsampling_fn: query shortening for `AttentionResampling`.
    attention_upsampling_fn: query upsampling for `AttentionResampling`.

  Returns:
    The model.

  Raises:
    ValueError: for mode 'predict' or a malformed hierarchy.

  Example:
    >>> model = HourglassLM(11, d_model=8, d_ff=16, n_heads=2,
    ...                     hierarchy='1@2', mode='eval')
    >>> tokens = onp.ones((1, 4), onp.int32)
    >>> _ = model.init(shapes.signature(tokens))
    >>> tuple(model(tokens).shape)
    (1, 4, 11)
  """
  if mode == 'predict':
    raise ValueError("HourglassLM: mode='predict' is not supported (Trax "
                     "1.4.1 has no fast decoding for it); use 'train' or "
                     "'eval' and rerun the model on the growing sequence.")
  hierarchy_n_layers, hierarchy_factors = _parse_hierarchy(hierarchy)
  context_bias_layer, location_bias_layer = get_rel_att_inputs(d_model,
                                                               n_heads)

  def decoder_blocks(n_layers, total_pooling, attention_type):
    blocks = [_RelativeDecoderBlock(
        attention_type, d_model, d_ff, n_heads, dropout, dropout_shared_axes,
        mode, ff_activation, context_bias_layer, location_bias_layer,
        total_pooling) for _ in range(n_layers)]
    return blocks + [tl.LayerNorm()]

  resampling_kwargs = dict(
      d_ff=d_ff, n_heads=n_heads, dropout=dropout,
      dropout_shared_axes=dropout_shared_axes, mode=mode,
      ff_activation=ff_activation, context_bias_layer=context_bias_layer,
      location_bias_layer=location_bias_layer)

  def valley(factors, n_layers, total_pooling):
    factor, inner_pooling = factors[0], total_pooling * factors[0]
    shorten = downsampling_fn(
        factor, d_model, is_upsampling=False, total_pooling=total_pooling,
        resampling_fn=attention_downsampling_fn, **resampling_kwargs)
    upsample = upsampling_fn(
        factor, d_model=d_model, is_upsampling=True,
        total_pooling=total_pooling, resampling_fn=attention_upsampling_fn,
        **resampling_kwargs)
    if len(factors) > 1:
      middle = [
          decoder_blocks(n_layers[0], inner_pooling, middle_attn_type),
          *valley(factors[1:], n_layers[1:], inner_pooling),
          decoder_blocks(n_layers[0], inner_pooling, middle_attn_type),
      ]
      # Trax passes `mode` to this ShiftRight only above the deepest level.
      shift = tl.ShiftRight(factor - 1, mode=mode)
    else:
      middle = [decoder_blocks(n_layers[0], inner_pooling, middle_attn_type)]
      shift = tl.ShiftRight(factor - 1)
    return [tl.Dup(), shift, shorten, *middle, upsample, tl.LayerNorm(),
            tl.Add()]

  n_pre, n_post = vanilla_layers
  total_shortening = 1
  for factor in hierarchy_factors:
    total_shortening *= factor
  return _Hourglass(
      tl.ShiftRight(mode=mode),                             # tokens
      tl.Embedding(vocab_size, d_model),
      tl.Dropout(rate=dropout, shared_axes=dropout_shared_axes, mode=mode),
      decoder_blocks(n_pre, 1, vanilla_attn_type),          # vecs
      valley(hierarchy_factors, hierarchy_n_layers, 1),     # vecs
      decoder_blocks(n_post, 1, vanilla_attn_type),         # vecs
      tl.Dense(vocab_size),                                 # logits
      total_shortening=total_shortening)
