"""Options of the configurable models that pick one of Trax's sparse layers.

Trax's configurable Transformer, Reformer and Terraformer reach into its
research layers (`trax.layers.research.sparsity`) for sparse feed-forward
blocks, sparse output layers and sparse cross-attention projections. These
helpers build those layers from the options, looking each one up in
`tfnp_trax.layers` when a model is built: where a layer is missing, the
option raises an error that names the argument, its value and the layer,
instead of building a model that silently differs from Trax's.
Positional-encoding options are checked here too, so errors name the model
the user called.
"""

from tfnp_trax import layers as tl

__all__ = ['unavailable', 'check_ff_sparsity', 'check_pos_type',
           'check_enc_dec_attention_sparsity', 'output_dense',
           'parse_ff_sparsity', 'sparse_feed_forward']

# pos_type values that build a layer of their own; any other non-empty
# pos_type selects the axial encoding, as in Trax.
_POS_TYPES = ('sin-cos', 'fixed-base', 'infinite', 'infinite-affine',
              'time-bin', 'no')

# ff_sparsity_type values and the sparse feed-forward layer each one builds.
_FF_SPARSITY_LAYERS = {
    '1inN': 'SparseFF',
    'Block': 'BlockSparseFF',
    'Switch': 'SwitchSparseFF',
}

# loss_sparsity_type values (with loss_sparsity != 0) and their layers.
_LOSS_SPARSITY_LAYERS = {
    'mult': 'FactoredDense',
    'lowrank': 'LowRankDense',
    'einsum': 'EinsumDense',
    'local': 'LocallyConnectedDense',
    'local3': 'LocallyConnectedDense',
}


def unavailable(where, arg, value, layer, fix):
  """The error for an option whose Trax layer tfnp_trax does not have.

  Args:
    where: the model or block the option was given to.
    arg: the argument's name.
    value: the value given.
    layer: the name of the Trax layer (under `tl.`) the option builds.
    fix: how to get a model without it.

  Returns:
    A NotImplementedError to raise.
  """
  return NotImplementedError(
      f"{where}: {arg}={value!r} needs tl.{layer} from Trax's research "
      f'layers, which tfnp_trax does not provide yet; {fix}.')


def _layer(name):
  """`tl.<name>`, or None while tfnp_trax does not have it."""
  return getattr(tl, name, None)


def parse_ff_sparsity(ff_sparsity):
  """Trax's string form of ff_sparsity ('4 16') as a list of numbers."""
  if isinstance(ff_sparsity, str):
    return [float(x) if '.' in x else int(x) for x in ff_sparsity.split()]
  return ff_sparsity


def check_ff_sparsity(where, ff_sparsity, ff_sparsity_type):
  """Raises if the options select a sparse FF layer tfnp_trax lacks.

  In Trax a non-zero ff_sparsity with an ff_sparsity_type outside
  '1inN'/'Block'/'Switch' falls back to the dense block; that stays allowed.
  """
  name = _FF_SPARSITY_LAYERS.get(ff_sparsity_type)
  if ff_sparsity and name and _layer(name) is None:
    raise unavailable(
        where, 'ff_sparsity', ff_sparsity,
        f'{name} (ff_sparsity_type={ff_sparsity_type!r})',
        'use ff_sparsity=0 for the dense feed-forward block')


def _sparse_ff_arguments(where, ff_sparsity, d_ff):
  """(n_elements_in_block, d_lowrank, temperature, quant_prob) for SparseFF.

  Trax reads an int n as blocks of n with rank d_ff // n, a pair as
  (n, d_lowrank), and a 4-tuple as all four; temperature and quant_prob
  default to 0.1 and 0.3.
  """
  if isinstance(ff_sparsity, (list, tuple)):
    if len(ff_sparsity) == 2:
      return tuple(ff_sparsity) + (0.1, 0.3)
    if len(ff_sparsity) == 4:
      return tuple(ff_sparsity)
    raise ValueError(
        f'{where}: ff_sparsity={ff_sparsity!r} with ff_sparsity_type='
        f"'1inN' must be an int n, a pair (n, d_lowrank) or a 4-tuple "
        f'(n, d_lowrank, temperature, quant_prob); got {len(ff_sparsity)} '
        f'values.')
  if not isinstance(ff_sparsity, int) or isinstance(ff_sparsity, bool):
    raise ValueError(
        f'{where}: ff_sparsity must be an int, a pair, a 4-tuple or a '
        f"string such as '4 16'; got {ff_sparsity!r}.")
  return ff_sparsity, d_ff // ff_sparsity, 0.1, 0.3


def sparse_feed_forward(where, d_ff, ff_sparsity, ff_sparsity_type, dropout,
                        dropout_shared_axes, ff_chunk_size, use_bfloat16,
                        mode):
  """The sparse feed-forward layer the options select, or None for dense.

  '1inN' builds `tl.SparseFF` (which holds its own dropout and chunking),
  'Block' `tl.BlockSparseFF` and 'Switch' `tl.SwitchSparseFF`, each with
  `ff_sparsity` experts, as Trax's `FeedForwardWithOptions` does.

  Args:
    where: the caller, for error messages.
    d_ff: width of the hidden layer.
    ff_sparsity: 0 (dense), or the sparsity (see `_sparse_ff_arguments`).
    ff_sparsity_type: '1inN', 'Block' or 'Switch'; others mean dense.
    dropout: dropout rate (SparseFF's dropout_rate).
    dropout_shared_axes: axes sharing one dropout mask (SparseFF).
    ff_chunk_size: chunk size (SparseFF).
    use_bfloat16: bfloat16 weights (SparseFF).
    mode: 'train', 'eval' or 'predict'.

  Returns:
    A layer, or None when the options select the dense block.

  Raises:
    NotImplementedError: if the selected layer is not in tfnp_trax yet.
  """
  ff_sparsity = parse_ff_sparsity(ff_sparsity)
  if not ff_sparsity or ff_sparsity_type not in _FF_SPARSITY_LAYERS:
    return None
  check_ff_sparsity(where, ff_sparsity, ff_sparsity_type)
  layer = _layer(_FF_SPARSITY_LAYERS[ff_sparsity_type])
  if ff_sparsity_type == '1inN':
    n_elements_in_block, d_lowrank, temperature, quant_prob = (
        _sparse_ff_arguments(where, ff_sparsity, d_ff))
    return layer(d_ff, n_elements_in_block=n_elements_in_block,
                 d_lowrank=d_lowrank, temperature=temperature,
                 quant_prob=quant_prob, use_bfloat16=use_bfloat16,
                 mode=mode, dropout_rate=dropout,
                 dropout_shared_axes=dropout_shared_axes,
                 ff_chunk_size=ff_chunk_size)
  return layer(d_ff, n_experts=ff_sparsity, mode=mode)


def check_pos_type(where, pos_type, pos_axial_shape=None,
                   pos_d_axial_embs=None):
  """Raises for a pos_type that cannot build its positional encoding.

  'time-bin' fails as in Trax 1.4.1, whose PositionalEncoder builds
  TimeBinPositionalEncoding without its required time_bin_length. A name
  outside `_POS_TYPES` selects the axial encoding, which needs both
  pos_axial_shape and pos_d_axial_embs.
  """
  if pos_type == 'time-bin':
    raise TypeError(
        f"{where}: pos_type='time-bin' builds tl.TimeBinPositionalEncoding "
        f'without its required time_bin_length, which fails in Trax 1.4.1 '
        f'too; build the model with pos_type=None, or put '
        f'tl.TimeBinPositionalEncoding(time_bin_length) in a model of your '
        f'own.')
  if pos_type and pos_type not in _POS_TYPES and (
      not pos_axial_shape or pos_d_axial_embs is None):
    raise ValueError(
        f'{where}: pos_type={pos_type!r} selects AxialPositionalEncoding, '
        f'which needs pos_axial_shape (a grid whose product is the sequence '
        f'length) and pos_d_axial_embs (one depth per axis, summing to '
        f'd_model); got pos_axial_shape={pos_axial_shape!r}, '
        f'pos_d_axial_embs={pos_d_axial_embs!r}. Other pos_type values: '
        f'None (learned), {", ".join(repr(p) for p in _POS_TYPES)}.')


def check_enc_dec_attention_sparsity(where, enc_dec_attention_sparsity):
  """The (q_sparsity, result_sparsity) pair of the cross-attention.

  As in Trax: a pair is used as given; a number n > 0 means a sparse query
  projection of sparsity n and no output projection ('noop'); 0 means
  Dense projections (None, None). A numeric sparsity builds
  `tl.FactoredDense` and `tl.LocallyConvDense` inside `tl.AttentionQKV`.

  Raises:
    NotImplementedError: for a numeric sparsity while those layers are
      not in tfnp_trax.
  """
  if isinstance(enc_dec_attention_sparsity, tuple):
    q_sparsity, result_sparsity = enc_dec_attention_sparsity
  elif enc_dec_attention_sparsity > 0:
    q_sparsity, result_sparsity = enc_dec_attention_sparsity, 'noop'
  else:
    return None, None
  numeric = [s for s in (q_sparsity, result_sparsity)
             if s not in (None, 'noop')]
  missing = [n for n in ('FactoredDense', 'LocallyConvDense')
             if _layer(n) is None]
  if numeric and missing:
    raise unavailable(
        where, 'enc_dec_attention_sparsity', enc_dec_attention_sparsity,
        ' and tl.'.join(missing),
        'use enc_dec_attention_sparsity=0 for Dense projections')
  return q_sparsity, result_sparsity


def output_dense(where, n_units, loss_sparsity_type, loss_sparsity,
                 loss_sparsity_prob, d_input=None, d_lowrank=None,
                 use_bias=True, use_bfloat16=False, mode=None):
  """The output projection, as Trax's `SparseDenseWithOptions` builds it.

  A Dense layer without sparsity (`loss_sparsity == 0` or no
  `loss_sparsity_type`); `tl.FactoredDense` ('mult'), `tl.LowRankDense`
  ('lowrank'), `tl.EinsumDense` ('einsum') or `tl.LocallyConnectedDense`
  ('local', 'local3') otherwise; with `loss_sparsity_prob`, a
  `tl.RandomLayer` that picks the sparse layer with that probability in
  training (always outside training) and a Dense one otherwise.

  Args:
    where: the model, for error messages.
    n_units: output width (the vocabulary size).
    loss_sparsity_type: Trax's sparsity_type.
    loss_sparsity: Trax's sparsity.
    loss_sparsity_prob: Trax's prob_sparse.
    d_input: input width (for the sparse layers).
    d_lowrank: rank of the 'lowrank' layer.
    use_bias: whether the layers have a bias.
    use_bfloat16: keep the weights in bfloat16.
    mode: 'train', 'eval', 'predict' or None (as 'train').

  Returns:
    The layer inside Trax's '...a->...b' shape check (so the dense case
    prints as `Serial[Dense_n]`, as Trax's does).

  Raises:
    NotImplementedError: if the options need a layer tfnp_trax lacks.
    ValueError: for an unknown loss_sparsity_type.
  """
  dense = (loss_sparsity_type is None or loss_sparsity_type == 'None' or
           loss_sparsity == 0)
  if not dense and loss_sparsity_type not in _LOSS_SPARSITY_LAYERS:
    raise ValueError(
        f'{where}: unknown loss_sparsity_type {loss_sparsity_type!r} (with '
        f'loss_sparsity={loss_sparsity!r}); expected None or one of '
        f'{sorted(_LOSS_SPARSITY_LAYERS)}.')
  builder = _layer('SparseDenseWithOptions')
  if builder is not None:
    return builder(n_units, d_input=d_input,
                   sparsity_type=loss_sparsity_type, sparsity=loss_sparsity,
                   d_lowrank=d_lowrank, prob_sparse=loss_sparsity_prob,
                   mode=mode, use_bias=use_bias, use_bfloat16=use_bfloat16)
  if loss_sparsity_prob is not None:
    raise unavailable(
        where, 'loss_sparsity_prob', loss_sparsity_prob, 'RandomLayer',
        'use loss_sparsity_prob=None for a plain Dense output layer')
  if not dense:
    raise unavailable(
        where, 'loss_sparsity', loss_sparsity,
        _LOSS_SPARSITY_LAYERS[loss_sparsity_type] +
        f' (loss_sparsity_type={loss_sparsity_type!r})',
        'use loss_sparsity=0 for a plain Dense output layer')
  return tl.AssertFunction(
      '...a->...b', tl.Dense(n_units, use_bias=use_bias,
                             use_bfloat16=use_bfloat16))
