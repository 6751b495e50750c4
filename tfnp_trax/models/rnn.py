"""Recurrent language models: a stacked-cell RNN LM and a GRU LM.

Both map token ids (batch, length) to log-probabilities (batch, length,
vocab_size); inputs are shifted right so position i sees only tokens < i.
"""

from tfnp_trax import layers as tl

__all__ = ['RNNLM', 'GRULM']


def _MultiRNNCell(rnn_cell, n_units, n_layers):  # pylint: disable=invalid-name
  """`n_layers` cells stacked in one step: (x, state) -> (y, new_state).

  The state is the concatenation of the cells' states on the last axis.
  """
  if n_layers == 1:
    return rnn_cell(n_units=n_units)
  return tl.Serial(
      tl.Parallel(None, tl.Split(n_items=n_layers)),     # x, s_1, ..., s_n
      # Each cell maps (x, s_i) -> (y, s_i'); s_i' is set aside.
      tl.SerialWithSideOutputs(
          [rnn_cell(n_units=n_units) for _ in range(n_layers)]),
      tl.Parallel(None, tl.Concatenate(n_items=n_layers)),
      name=f'MultiRNNCell_{n_layers}')


def RNNLM(vocab_size, d_model=512, n_layers=2, rnn_cell=tl.LSTMCell,  # pylint: disable=invalid-name
          rnn_cell_d_state_multiplier=2, dropout=0.1, mode='train'):
  """An RNN language model: embedding, stacked RNN cells, Dense, LogSoftmax.

  Example:
    >>> from tfnp_trax import shapes
    >>> from tfnp_trax.fastmath import numpy as jnp
    >>> model = RNNLM(vocab_size=7, d_model=4, mode='eval')
    >>> _ = model.init(shapes.ShapeDtype((2, 5), jnp.int32))
    >>> tuple(model(jnp.ones((2, 5), dtype=jnp.int32)).shape)
    (2, 5, 7)

  Args:
    vocab_size: number of token ids.
    d_model: embedding depth, also the cells' n_units.
    n_layers: number of stacked cells (Trax supports only 2; any positive
      number works here).
    rnn_cell: cell constructor taking `n_units`, e.g. `tl.LSTMCell` or
      `tl.GRUCell`.
    rnn_cell_d_state_multiplier: a cell's state depth over d_model (2 for
      LSTMCell, 1 for GRUCell).
    dropout: dropout rate after the embedding.
    mode: 'train', 'eval' or 'predict'.

  Returns:
    A layer mapping ids (batch, length) to log-probabilities
    (batch, length, vocab_size).
  """
  if n_layers < 1:
    raise ValueError(f'RNNLM: n_layers must be at least 1, got {n_layers}.')
  zero_state = tl.MakeZeroState(
      depth_multiplier=n_layers * rnn_cell_d_state_multiplier)
  return tl.Serial(
      tl.ShiftRight(mode=mode),
      tl.Embedding(vocab_size, d_model),
      tl.Dropout(rate=dropout, mode=mode),
      tl.Branch(None, zero_state),
      tl.Scan(_MultiRNNCell(rnn_cell, d_model, n_layers), axis=1, mode=mode),
      tl.Select([0], n_in=2),  # Drops the final state.
      tl.Dense(vocab_size),
      tl.LogSoftmax(),
      name='RNNLM')


def GRULM(vocab_size=256, d_model=512, n_layers=1, mode='train'):  # pylint: disable=invalid-name
  """A GRU language model: embedding, `n_layers` GRUs, Dense, LogSoftmax.

  Example:
    >>> from tfnp_trax import shapes
    >>> from tfnp_trax.fastmath import numpy as jnp
    >>> model = GRULM(vocab_size=7, d_model=4)
    >>> _ = model.init(shapes.ShapeDtype((2, 5), jnp.int32))
    >>> tuple(model(jnp.ones((2, 5), dtype=jnp.int32)).shape)
    (2, 5, 7)

  Args:
    vocab_size: number of token ids.
    d_model: embedding depth, also the GRUs' n_units.
    n_layers: number of stacked GRU layers.
    mode: 'train', 'eval' or 'predict'.

  Returns:
    A layer mapping ids (batch, length) to log-probabilities
    (batch, length, vocab_size).
  """
  return tl.Serial(
      tl.ShiftRight(mode=mode),
      tl.Embedding(vocab_size, d_model),
      [tl.GRU(d_model, mode=mode) for _ in range(n_layers)],
      tl.Dense(vocab_size),
      tl.LogSoftmax(),
      name='GRULM')
