"""RNNLM, GRULM and LSTMSeq2SeqAttn: shapes, causality, NumPy references."""


import numpy as np
import pytest

from tests import _layer_testing as lt
from tests.layers import _attention_ref as attn_ref
from tests.models import _np_ref as ref
from tfnp_trax import fastmath
from tfnp_trax import layers as tl
from tfnp_trax import models
from tfnp_trax import shapes
from tfnp_trax.fastmath import numpy as jnp

_VOCAB = 7


def _models():
  return [
      ('RNNLM-2', lambda mode: models.RNNLM(_VOCAB, d_model=4, mode=mode)),
      ('RNNLM-1', lambda mode: models.RNNLM(_VOCAB, d_model=4, n_layers=1,
                                            mode=mode)),
      ('RNNLM-3-GRU', lambda mode: models.RNNLM(
          _VOCAB, d_model=4, n_layers=3, rnn_cell=tl.GRUCell,
          rnn_cell_d_state_multiplier=1, mode=mode)),
      ('GRULM', lambda mode: models.GRULM(_VOCAB, d_model=4, n_layers=2,
                                          mode=mode)),
  ]


@pytest.mark.parametrize('name,make', _models())
def test_language_models_output_logits(name, make, rng):
  # trax/models/rnn.py: RNNLM and GRULM end in Dense(vocab_size), without a
  # LogSoftmax; the losses normalise.
  ids = jnp.asarray(rng.integers(0, _VOCAB, size=(2, 5)), jnp.int32)
  model = make('train')
  model.init(shapes.signature(ids))
  y = np.asarray(model(ids))
  assert tuple(y.shape) == (2, 5, _VOCAB), name
  assert str(model.sublayers[-1]).startswith('Dense_'), name
  assert not np.allclose(np.exp(y).sum(-1), 1.0, rtol=1e-3), name


@pytest.mark.parametrize('name,make', _models())
def test_language_models_are_causal(name, make, rng):
  ids = rng.integers(0, _VOCAB, size=(2, 6))
  changed = ids.copy()
  changed[:, 3] = (ids[:, 3] + 1) % _VOCAB
  model = make('eval')
  model.init(shapes.ShapeDtype((2, 6), jnp.int32))
  # Unit-scale weights, so that every input visibly moves the outputs.
  weights = fastmath.nested_map(
      lambda w: jnp.asarray(rng.normal(size=w.shape), jnp.float32),
      model.weights)
  y = model(jnp.asarray(ids, jnp.int32), weights=weights).numpy()
  y_changed = model(jnp.asarray(changed, jnp.int32), weights=weights).numpy()
  # Inputs are shifted right: token 3 first affects the output at 4.
  np.testing.assert_array_equal(y[:, :4], y_changed[:, :4], err_msg=name)
  assert np.all(np.abs(y[:, 4:] - y_changed[:, 4:]).max(-1) > 1e-3), name


def test_rnnlm_rejects_gru_cell_with_lstm_state_multiplier():
  model = models.RNNLM(_VOCAB, d_model=4, rnn_cell=tl.GRUCell)
  # The cell is named 'GRUCell', as in Trax (trax/layers/rnn.py).
  with pytest.raises(tl.LayerError, match=r'GRUCell: state last dim 8 must '
                     r'be n_units = 4'):
    model.init(shapes.ShapeDtype((2, 5), jnp.int32))


def test_rnnlm_rejects_zero_layers():
  with pytest.raises(ValueError, match=r'RNNLM: n_layers must be at least 1, '
                     r'got 0'):
    models.RNNLM(_VOCAB, n_layers=0)


# -- LSTMSeq2SeqAttn ---------------------------------------------------------

_SEQ = dict(input_vocab_size=6, target_vocab_size=5, d_model=4,
            n_encoder_layers=1, n_decoder_layers=1)
_INPUTS = np.array([[1, 2, 3, 0], [4, 5, 0, 0]], np.int32)  # 0 is padding.
_TARGETS = np.array([[1, 2, 3], [4, 1, 2]], np.int32)


def _seq2seq_init(mode='eval', n_heads=1, seed=0):
  model = models.LSTMSeq2SeqAttn(n_attention_heads=n_heads, mode=mode,
                                 **_SEQ)
  model.init((shapes.ShapeDtype((2, 4), jnp.int32),
              shapes.ShapeDtype((2, 3), jnp.int32)),
             rng=fastmath.random.get_prng(0))
  r = np.random.default_rng(seed)
  model.weights = fastmath.nested_map(
      lambda w: jnp.asarray(r.normal(size=w.shape) * 0.7, jnp.float32),
      model.weights)
  return model


def _seq2seq_reference(inputs, targets, weights, n_heads, attention=None):
  """The model in NumPy; `attention(q, k, v, mask, w)` replaces the default."""
  w = ref.leaves(weights)
  enc = ref.lstm(next(w)[inputs], next(w), next(w))  # 1 encoder layer.
  dec = ref.lstm(next(w)[ref.shift_right(targets)], next(w), next(w))
  mask = (inputs != 0)[:, None, None, :]
  attn_w = [next(w) for _ in range(8)]
  attention = attention or (lambda q, k, v, m, aw: attn_ref.multi_head(
      q, k, v, m, aw, n_heads))
  dec = dec + attention(dec, enc, enc, mask, attn_w)
  dec = ref.lstm(dec, next(w), next(w))  # 1 decoder layer.
  return ref.log_softmax(dec @ next(w) + next(w))


@pytest.mark.parametrize('n_heads', [1, 2])
def test_lstm_seq2seq_attn_matches_numpy(n_heads):
  model = _seq2seq_init(n_heads=n_heads)
  for mode in lt.MODES:
    (log_probs, targets), _ = lt.run_layer(
        model, (jnp.asarray(_INPUTS), jnp.asarray(_TARGETS)), mode)
    np.testing.assert_array_equal(np.asarray(targets), _TARGETS)
    np.testing.assert_allclose(
        np.asarray(log_probs),
        _seq2seq_reference(_INPUTS, _TARGETS, model.weights, n_heads),
        rtol=1e-4, atol=1e-5, err_msg=mode)


def test_lstm_seq2seq_attention_weights_by_hand():
  # With a zero query projection every logit is equal, so the attention
  # weights are 1 / n over the n non-padding inputs and 0 on padding: 1/3
  # each on row 0's first three positions, 1/2 on row 1's first two.
  model = _seq2seq_init()
  leaves = fastmath.tree_leaves(model.weights)
  wq_index = 6  # emb, lstm w, b, emb, lstm w, b, then wq, bq, ...
  assert tuple(leaves[wq_index].shape) == (4, 4)
  leaves[wq_index] = jnp.zeros((4, 4), jnp.float32)
  leaves[wq_index + 1] = jnp.zeros((4,), jnp.float32)
  weights, _ = fastmath.tree_unflatten(leaves, model.weights)
  got, _ = model((jnp.asarray(_INPUTS), jnp.asarray(_TARGETS)),
                 weights=weights)
  strengths = np.array([[1 / 3, 1 / 3, 1 / 3, 0], [1 / 2, 1 / 2, 0, 0]])

  def by_hand(q, k, v, mask, aw):
    del q, k, mask
    _, _, _, _, wv, bv, wo, bo = aw
    values = v @ wv + bv                              # (batch, 4, d)
    mixed = np.einsum('bk,bkd->bd', strengths, values)
    return (mixed @ wo + bo)[:, None, :]              # Same at every query.
  want = _seq2seq_reference(_INPUTS, _TARGETS, weights, 1, by_hand)
  np.testing.assert_allclose(np.asarray(got), want, rtol=1e-4, atol=1e-5)


def test_lstm_seq2seq_attn_ignores_trailing_padding():
  # Padding sits after the real inputs, so the encoder's outputs at real
  # positions do not see it; changing the padding embedding (row 0) then
  # only moves the masked positions and leaves the output unchanged.
  model = _seq2seq_init()
  x = (jnp.asarray(_INPUTS), jnp.asarray(_TARGETS))
  before = np.asarray(model(x)[0])
  leaves = fastmath.tree_leaves(model.weights)
  table = np.array(leaves[0])
  assert table.shape == (6, 4)  # The input embedding.
  table[0] += 5.0
  leaves[0] = jnp.asarray(table)
  weights, _ = fastmath.tree_unflatten(leaves, model.weights)
  after = np.asarray(model(x, weights=weights)[0])
  np.testing.assert_allclose(after, before, rtol=1e-5, atol=1e-6)


def test_lstm_seq2seq_attn_predict_matches_eval_one_token_at_a_time():
  model = _seq2seq_init()
  want = np.asarray(model((jnp.asarray(_INPUTS),
                           jnp.asarray(_TARGETS)))[0])
  fast = models.LSTMSeq2SeqAttn(mode='predict', **_SEQ)
  fast.init((shapes.ShapeDtype((2, 4), jnp.int32),
             shapes.ShapeDtype((2, 1), jnp.int32)))
  fast.weights = fastmath.tree_unflatten(
      fastmath.tree_leaves(model.weights), fast.weights)[0]
  # Predict mode does not shift: feed 0 first, then the previous target.
  fed = ref.shift_right(_TARGETS)
  for t in range(_TARGETS.shape[1]):
    got, _ = fast((jnp.asarray(_INPUTS), jnp.asarray(fed[:, t:t + 1])))
    np.testing.assert_allclose(np.asarray(got)[:, 0], want[:, t],
                               rtol=1e-4, atol=1e-5, err_msg=f'step {t}')


def test_lstm_seq2seq_attn_weight_count():
  weights, _ = models.LSTMSeq2SeqAttn(**_SEQ).init(
      (shapes.ShapeDtype((2, 4), jnp.int32),
       shapes.ShapeDtype((2, 3), jnp.int32)))
  # Embeddings 6x4 and 5x4; three LSTMs of (4 + 4) x 16 + 16; attention
  # 4 x (4 x 4 + 4); Dense 4 x 5 + 5.
  assert ref.n_params(weights) == 24 + 20 + 3 * 144 + 80 + 25 == 581


def test_lstm_seq2seq_attn_rejects_heads_not_dividing_d_model():
  with pytest.raises(ValueError, match=r'LSTMSeq2SeqAttn: n_attention_heads '
                     r'\(3\) must divide d_model \(4\)'):
    models.LSTMSeq2SeqAttn(d_model=4, n_attention_heads=3)
