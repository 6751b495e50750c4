"""Recurrent models: two language models and an LSTM seq2seq with attention.

The language models map token ids to logits over a vocabulary, as in Trax
(the losses apply the log-softmax); LSTMSeq2SeqAttn ends in a LogSoftmax, as
Trax's does. Target inputs are shifted right so position i sees only
targets < i.
"""

from tfnp_trax import layers as tl
from tfnp_trax.fastmath import numpy as jnp

__all__ = ['RNNLM', 'GRULM', 'LSTMSeq2SeqAttn']


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
      tl.Parallel(None, tl.Concatenate(n_items=n_layers)))


def RNNLM(vocab_size, d_model=512, n_layers=2, rnn_cell=tl.LSTMCell,  # pylint: disable=invalid-name
          rnn_cell_d_state_multiplier=2, dropout=0.1, mode='train'):
  """An RNN language model: embedding, stacked RNN cells, Dense.

  As in Trax, the model returns logits; the losses (e.g.
  `tl.WeightedCategoryCrossEntropy`) apply the log-softmax.

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
    A layer mapping ids (batch, length) to logits (batch, length,
    vocab_size).
  """
  if n_layers < 1:
    raise ValueError(f'RNNLM: n_layers must be at least 1, got {n_layers}.')
  zero_state = tl.MakeZeroState(
      depth_multiplier=n_layers * rnn_cell_d_state_multiplier)
  return tl.Serial(
      tl.ShiftRight(mode=mode),
      tl.Embedding(vocab_size, d_model),
      tl.Dropout(rate=dropout, mode=mode),
      tl.Branch([], zero_state),  # [] prints as Trax's does.
      tl.Scan(_MultiRNNCell(rnn_cell, d_model, n_layers), axis=1, mode=mode),
      tl.Select([0], n_in=2),  # Drops the final state.
      tl.Dense(vocab_size))


def GRULM(vocab_size=256, d_model=512, n_layers=1, mode='train'):  # pylint: disable=invalid-name
  """A GRU language model: embedding, `n_layers` GRUs, Dense.

  As in Trax, the model returns logits; the losses apply the log-softmax.

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
    A layer mapping ids (batch, length) to logits (batch, length,
    vocab_size).
  """
  return tl.Serial(
      tl.ShiftRight(mode=mode),
      tl.Embedding(vocab_size, d_model),
      [tl.GRU(d_model, mode=mode) for _ in range(n_layers)],
      tl.Dense(vocab_size))


def _PrepareAttentionInputs():  # pylint: disable=invalid-name
  """`(enc, dec, input_ids) -> (q=dec, k=enc, v=enc, mask)`.

  The mask, (batch, 1, dec_len, enc_len) float32, is 1 where the input id
  is not padding (0), broadcast over decoder positions as in Trax.
  """
  def f(encoder_activations, decoder_activations, input_tokens):
    if input_tokens.ndim != 2:
      raise ValueError(
          f'LSTMSeq2SeqAttn: expects input ids of shape (batch, length), got '
          f'shape {tuple(input_tokens.shape)}.')
    batch, enc_len = input_tokens.shape
    mask = (input_tokens != 0).reshape((batch, 1, 1, enc_len))
    mask = jnp.broadcast_to(
        mask, (batch, 1, decoder_activations.shape[1], enc_len))
    return (decoder_activations, encoder_activations, encoder_activations,
            mask.astype(jnp.float32))
  return tl.Fn('PrepareAttentionInputs', f, n_out=4)


def LSTMSeq2SeqAttn(input_vocab_size=256, target_vocab_size=256,  # pylint: disable=invalid-name
                    d_model=512, n_encoder_layers=2, n_decoder_layers=2,
                    n_attention_heads=1, attention_dropout=0.0,
                    mode='train'):
  """An LSTM encoder-decoder whose decoder attends over the encoder.

  Takes `(input_ids, target_ids)` and returns `(log_probs, target_ids)`:
  an LSTM encoder reads the inputs; a one-layer LSTM reads the shifted
  targets and its outputs attend (as queries) over the encoder outputs
  (keys and values), input padding (id 0) masked out; the attention result
  plus the queries runs through `n_decoder_layers` LSTMs, a Dense layer and
  a LogSoftmax. In 'predict' mode targets are fed one token per call: the
  decoder LSTMs keep their state and the attention keeps its projected
  keys and values from the first call.

  Example:
    >>> from tfnp_trax import shapes
    >>> model = LSTMSeq2SeqAttn(7, 5, d_model=4, mode='eval')
    >>> sig = (shapes.ShapeDtype((2, 3), jnp.int32),
    ...        shapes.ShapeDtype((2, 4), jnp.int32))
    >>> _ = model.init(sig)
    >>> ids = (jnp.ones((2, 3), dtype=jnp.int32),
    ...        jnp.ones((2, 4), dtype=jnp.int32))
    >>> [tuple(y.shape) for y in model(ids)]
    [(2, 4, 5), (2, 4)]

  Args:
    input_vocab_size: number of input token ids.
    target_vocab_size: number of target token ids.
    d_model: embedding depth, also every LSTM's n_units.
    n_encoder_layers: LSTM layers in the encoder.
    n_decoder_layers: LSTM layers after the attention.
    n_attention_heads: attention heads; must divide d_model.
    attention_dropout: dropout rate on the attention weights ('train').
    mode: 'train', 'eval' or 'predict'.

  Returns:
    A layer with n_in=2, n_out=2.
  """
  if d_model % n_attention_heads:
    raise ValueError(f'LSTMSeq2SeqAttn: n_attention_heads '
                     f'({n_attention_heads}) must divide d_model '
                     f'({d_model}).')
  input_encoder = tl.Serial(
      tl.Embedding(input_vocab_size, d_model),
      [tl.LSTM(d_model) for _ in range(n_encoder_layers)],
  )
  pre_attention_decoder = tl.Serial(
      tl.ShiftRight(mode=mode),
      tl.Embedding(target_vocab_size, d_model),
      tl.LSTM(d_model, mode=mode),
  )
  return tl.Serial(                # in_toks, target_toks
      tl.Select([0, 1, 0, 1]),     # in_toks, target_toks, in_toks, target_toks
      tl.Parallel(input_encoder, pre_attention_decoder),
      _PrepareAttentionInputs(),   # q, k, v, mask, target_toks
      tl.Residual(
          tl.AttentionQKV(d_model, n_heads=n_attention_heads,
                          dropout=attention_dropout, mode=mode,
                          cache_KV_in_predict=True)
      ),                           # dec_vecs, mask, target_toks
      tl.Select([0, 2]),           # dec_vecs, target_toks
      [tl.LSTM(d_model, mode=mode) for _ in range(n_decoder_layers)],
      tl.Dense(target_vocab_size),
      tl.LogSoftmax(),
  )
