"""Checks of the configurable models' options, made before building.

Trax's configurable Transformer and Reformer reach into its research layers
for sparse feed-forward blocks and sparse output layers. tfnp_trax does not
have those layers yet, so these checks turn such an option into an error
that names the argument, its value and the missing layer, instead of a
model that silently differs from Trax's. Positional-encoding options are
checked here too, so errors name the model the user called.
"""

from tfnp_trax import layers as tl

__all__ = ['unavailable', 'check_ff_sparsity', 'check_pos_type',
           'check_enc_dec_attention_sparsity', 'output_dense',
           'parse_ff_sparsity']

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


def parse_ff_sparsity(ff_sparsity):
  """Trax's string form of ff_sparsity ('4 16') as a list of numbers."""
  if isinstance(ff_sparsity, str):
    return [float(x) if '.' in x else int(x) for x in ff_sparsity.split()]
  return ff_sparsity


def check_ff_sparsity(where, ff_sparsity, ff_sparsity_type):
  """Raises if (ff_sparsity, ff_sparsity_type) selects a sparse FF block.

  In Trax a non-zero ff_sparsity with an ff_sparsity_type outside
  '1inN'/'Block'/'Switch' falls back to the dense block; that stays allowed.
  """
  if ff_sparsity and ff_sparsity_type in _FF_SPARSITY_LAYERS:
    raise unavailable(
        where, 'ff_sparsity', ff_sparsity,
        _FF_SPARSITY_LAYERS[ff_sparsity_type] +
        f" (ff_sparsity_type={ff_sparsity_type!r})",
        'use ff_sparsity=0 for the dense feed-forward block')


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
  """Raises for a sparse query projection of the cross-attention."""
  if isinstance(enc_dec_attention_sparsity, tuple):
    q_sparsity, result_sparsity = enc_dec_attention_sparsity
  elif enc_dec_attention_sparsity > 0:
    q_sparsity, result_sparsity = enc_dec_attention_sparsity, 'noop'
  else:
    return None, None
  if q_sparsity not in (None, 'noop') or result_sparsity not in (None,
                                                                 'noop'):
    raise unavailable(
        where, 'enc_dec_attention_sparsity', enc_dec_attention_sparsity,
        'FactoredDense and tl.LocallyConvDense',
        'use enc_dec_attention_sparsity=0 for Dense projections')
  return q_sparsity, result_sparsity


def output_dense(where, n_units, loss_sparsity_type, loss_sparsity,
                 loss_sparsity_prob, use_bias=True):
  """The output projection, as Trax's SparseDenseWithOptions picks it.

  Only the dense case exists here: no sparsity (`loss_sparsity == 0` or no
  `loss_sparsity_type`) and no random mixing (`loss_sparsity_prob=None`).

  Args:
    where: the model, for error messages.
    n_units: output width (the vocabulary size).
    loss_sparsity_type: Trax's sparsity_type.
    loss_sparsity: Trax's sparsity.
    loss_sparsity_prob: Trax's prob_sparse.
    use_bias: whether the Dense layer has a bias.

  Returns:
    A `tl.Dense(n_units)` inside Trax's '...a->...b' shape check (so it
    prints as `Serial[Dense_n]`, as Trax's does).
  """
  if loss_sparsity_prob is not None:
    raise unavailable(
        where, 'loss_sparsity_prob', loss_sparsity_prob, 'RandomLayer',
        'use loss_sparsity_prob=None for a plain Dense output layer')
  if loss_sparsity_type is None or loss_sparsity_type == 'None' or (
      loss_sparsity == 0):
    return tl.AssertFunction('...a->...b',
                             tl.Dense(n_units, use_bias=use_bias))
  if loss_sparsity_type in _LOSS_SPARSITY_LAYERS:
    raise unavailable(
        where, 'loss_sparsity', loss_sparsity,
        _LOSS_SPARSITY_LAYERS[loss_sparsity_type] +
        f' (loss_sparsity_type={loss_sparsity_type!r})',
        'use loss_sparsity=0 for a plain Dense output layer')
  raise ValueError(
      f'{where}: unknown loss_sparsity_type {loss_sparsity_type!r} (with '
      f'loss_sparsity={loss_sparsity!r}); expected None or one of '
      f'{sorted(_LOSS_SPARSITY_LAYERS)}.')
