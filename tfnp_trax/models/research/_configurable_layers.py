"""Feed-forward and attention sub-layers of the configurable Transformer.

`FeedForwardWithOptions` and `ApplyAttentionLayer` are the two places where
Trax's configurable models (and the Reformer, which reuses them) pick a
layer from their options; the blocks and models only arrange them.
"""

import inspect

from tfnp_trax import layers as tl
from tfnp_trax.models.research import _configurable_options as options

__all__ = ['FeedForwardWithOptions', 'ApplyAttentionLayer']

# Layer constructors are CamelCase functions, as in Trax.
# pylint: disable=invalid-name


def _FeedForward(d_model, d_ff, dropout, activation, act_dropout,
                 use_bfloat16, mode):
  """Dense(d_ff) -> Dropout -> activation -> Dense(d_model)."""
  if act_dropout is None:
    act_dropout = dropout
  return [
      tl.Dense(d_ff, use_bfloat16=use_bfloat16),
      # One mask for every position of a sequence ([-2] is the length axis).
      tl.Dropout(rate=act_dropout, shared_axes=[-2], mode=mode),
      activation(),
      tl.Dense(d_model, use_bfloat16=use_bfloat16),
  ]


def FeedForwardWithOptions(d_model, d_ff, dropout, dropout_shared_axes,
                           ff_activation, ff_dropout, ff_chunk_size,
                           ff_use_sru, ff_sparsity, center_layernorm, mode,
                           use_bfloat16=False, ff_sparsity_type='1inN'):
  """The feed-forward part of a block: LayerNorm, FF, Dropout (+ options).

  Without options it is `[LayerNorm, Dense(d_ff), Dropout, activation,
  Dense(d_model), Dropout]`, vectors to vectors; the caller adds the
  residual. `ff_chunk_size > 0` runs it on chunks of that many positions
  (all leading axes folded into one), which bounds the memory of the d_ff
  activations. `ff_use_sru` adds SRU layers on a parallel branch whose
  output is summed with the feed-forward output.

  Args:
    d_model: width of the activations.
    d_ff: width of the hidden Dense layer.
    dropout: dropout rate after the block (and default for `ff_dropout`).
    dropout_shared_axes: axes sharing one dropout mask.
    ff_activation: activation layer constructor, e.g. `tl.Relu`.
    ff_dropout: dropout rate after the hidden Dense layer; None means
      `dropout`.
    ff_chunk_size: if > 0, process this many positions at a time.
    ff_use_sru: an int n or a pair (n, n_units): add n SRU layers of n_units
      units (32 by default) on a residual branch.
    ff_sparsity: 0 for the dense block; else the sparsity of the layer
      `ff_sparsity_type` selects: for '1inN' (`tl.SparseFF`) an int n
      (blocks of n, rank d_ff // n), a pair (n, d_lowrank), a 4-tuple
      (n, d_lowrank, temperature, quant_prob) or such numbers in a string
      ('4 16'); for 'Block'/'Switch' the number of experts.
    center_layernorm: LayerNorm subtracts the mean (True) or only rescales,
      as RMS normalization does (False).
    mode: 'train', 'eval' or 'predict'; dropout runs only in 'train'.
    use_bfloat16: keep the Dense weights in bfloat16.
    ff_sparsity_type: '1inN', 'Block' or 'Switch' select `tl.SparseFF`,
      `tl.BlockSparseFF` and `tl.SwitchSparseFF` when ff_sparsity is set;
      other values keep the dense block.

  Returns:
    A list holding one layer (or list of layers), vectors to vectors.

  Raises:
    NotImplementedError: if the options select a sparse feed-forward layer
      that tfnp_trax does not have yet.
  """
  ff_sparsity = options.parse_ff_sparsity(ff_sparsity)
  ff = options.sparse_feed_forward(
      'FeedForwardWithOptions', d_ff, ff_sparsity, ff_sparsity_type, dropout,
      dropout_shared_axes, ff_chunk_size, use_bfloat16, mode)
  if ff is None:
    ff = _FeedForward(d_model, d_ff, dropout, ff_activation, ff_dropout,
                      use_bfloat16, mode)
  res = [tl.LayerNorm(center=center_layernorm), ff]
  # SparseFF ('1inN') holds its own dropout and chunking.
  if ff_sparsity_type != '1inN' or not ff_sparsity:
    res.append(tl.Dropout(rate=dropout, shared_axes=dropout_shared_axes,
                          mode=mode))
    if ff_chunk_size > 0:
      res = tl.BatchLeadingAxes(tl.Chunk(tl.Serial(res), ff_chunk_size))
  if ff_use_sru:
    if isinstance(ff_use_sru, (list, tuple)):
      sru_n_layers, sru_n_units = ff_use_sru
    else:
      sru_n_layers, sru_n_units = ff_use_sru, 32
    sru = [tl.SRU(sru_n_units, mode=mode) for _ in range(sru_n_layers)]
    block = ([tl.LayerNorm(center=center_layernorm), tl.Dense(sru_n_units)]
             + sru + [tl.Dense(d_model)])
    res = tl.Residual(block, shortcut=res)
  return [res]


def _takes_qk_arguments(attention_type):
  """Whether `attention_type` has the efficient-attention signature.

  Trax tries that signature and falls back on TypeError; looking at the
  signature instead keeps a TypeError raised inside a constructor from
  being mistaken for a signature mismatch.
  """
  try:
    params = inspect.signature(attention_type).parameters.values()
  except (TypeError, ValueError):  # Not introspectable: try it, as Trax.
    return None
  return any(p.name == 'd_qk' or p.kind == p.VAR_KEYWORD for p in params)


def ApplyAttentionLayer(attention_type, d_model, n_heads, d_qk, d_v, causal,
                        masked, attention_dropout, output_dropout,
                        attention_chunk_size, mode):
  """Builds `attention_type` from the options both attention APIs share.

  Efficient-attention layers (`SelfAttention`, `LSHSelfAttention`, ...)
  take `n_heads, d_qk, d_v, causal, masked, output_dropout,
  attention_dropout, mode`; the classic ones (`tl.Attention`,
  `tl.CausalAttention`) take `d_model, n_heads, dropout, mode`, with
  `attention_dropout` as their dropout. The layer is then run on batch
  chunks of `attention_chunk_size` (0: unchunked).

  Args:
    attention_type: the attention layer constructor.
    d_model: width of the activations (classic layers only).
    n_heads: number of heads.
    d_qk: width of each head's queries and keys (efficient layers only).
    d_v: width of each head's values (efficient layers only).
    causal: attend only to earlier positions (efficient layers only).
    masked: take a padding mask input (efficient layers only).
    attention_dropout: dropout on the attention weights.
    output_dropout: dropout on the output (efficient layers only).
    attention_chunk_size: batch chunk size, 0 for none.
    mode: 'train', 'eval' or 'predict'.

  Returns:
    The attention layer, possibly wrapped in `tl.Chunk`.
  """
  efficient_kwargs = dict(
      n_heads=n_heads, d_qk=d_qk, d_v=d_v, causal=causal, masked=masked,
      output_dropout=output_dropout, attention_dropout=attention_dropout,
      mode=mode)
  efficient = _takes_qk_arguments(attention_type)
  if efficient is None:
    try:
      attention = attention_type(**efficient_kwargs)
    except TypeError:
      efficient = False
    else:
      efficient = True
  elif efficient:
    attention = attention_type(**efficient_kwargs)
  if not efficient:
    attention = attention_type(d_model, n_heads=n_heads,
                               dropout=attention_dropout, mode=mode)
  return tl.Chunk(attention, attention_chunk_size)
