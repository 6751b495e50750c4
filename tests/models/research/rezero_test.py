"""ReZero Transformers against NumPy float64 forwards.

At init every gain is 0, so each model must equal its embedding and output
layers alone; with nonzero gains the blocks compute x + g * F(LN(x)).
"""


import numpy as np
import pytest

from tests import _layer_testing as lt
from tests.models import _np_ref as ref
from tfnp_trax import fastmath
from tfnp_trax import layers as tl
from tfnp_trax import models
from tfnp_trax import shapes
from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.models.research import rezero

SMALL = dict(d_model=4, d_ff=8, n_heads=2, max_len=8, dropout=0.0)


def _ids(rng, shape, vocab, low=0):
  return rng.integers(low, vocab, size=shape).astype(np.int32)


def _init(model, sig, gains=None, seed=1):
  """Inits with unit-scale weights; gains stay 0 unless given."""
  model.init(sig, rng=fastmath.random.get_prng(0))
  r = np.random.default_rng(seed)

  def fill(w):
    if w.shape == ():  # A ReZero gain.
      value = 0.0 if gains is None else r.uniform(0.5, 1.5)
      return jnp.asarray(value, jnp.float32)
    return jnp.asarray(r.normal(size=w.shape) * 0.5, jnp.float32)
  model.weights = fastmath.nested_map(fill, model.weights)
  return model


def _lm_reference(ids, weights, n_layers, gains=True):
  w = ref.leaves(weights)
  table, positions = next(w), next(w)
  x = table[ref.shift_right(ids)] + positions[:ids.shape[1]]
  x = ref.decoder_stack(w, x, n_layers, 2, gains=gains)
  x = ref.layer_norm(x, next(w), next(w))
  return x @ next(w) + next(w)


def test_lm_is_embedding_and_output_layers_at_init(rng):
  ids = _ids(rng, (2, 6), 9)
  model = _init(models.ReZeroTransformerLM(9, n_layers=2, mode='eval',
                                           **SMALL), shapes.signature(ids))
  got = np.asarray(model(jnp.asarray(ids)))
  # The blocks are the identity: Dense(LN(embed(shift(ids)) + positions)).
  leaves = list(ref.leaves(model.weights))
  table, positions = leaves[0], leaves[1]
  scale, bias, dense_w, dense_b = leaves[-4:]
  x = table[ref.shift_right(ids)] + positions[:6]
  want = ref.layer_norm(x, scale, bias) @ dense_w + dense_b
  np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize('mode', lt.MODES)
def test_lm_with_gains_matches_numpy(mode, rng):
  ids = _ids(rng, (2, 6), 9)
  model = _init(models.ReZeroTransformerLM(9, n_layers=2, mode='eval',
                                           **SMALL), shapes.signature(ids),
                gains=True)
  got, _ = lt.run_layer(model, jnp.asarray(ids), mode)
  np.testing.assert_allclose(np.asarray(got),
                             _lm_reference(ids, model.weights, 2),
                             rtol=1e-4, atol=1e-5)


def test_encoder_is_embedding_and_output_layers_at_init(rng):
  ids = np.array([[3, 4, 5, 0], [6, 1, 0, 0]], np.int32)
  model = _init(models.ReZeroTransformerEncoder(
      9, n_classes=3, n_layers=2, mode='eval', **SMALL),
                shapes.signature(ids))
  leaves = list(ref.leaves(model.weights))
  x = leaves[0][ids] + leaves[1][:4]
  want = ref.layer_norm(x, *leaves[-4:-2]).mean(axis=1) @ leaves[-2] + (
      leaves[-1])
  np.testing.assert_allclose(np.asarray(model(jnp.asarray(ids))), want,
                             rtol=1e-4, atol=1e-5)


def test_encoder_with_gains_matches_numpy():
  ids = np.array([[3, 4, 5, 0], [6, 1, 0, 0]], np.int32)
  model = _init(models.ReZeroTransformerEncoder(
      9, n_classes=3, n_layers=1, mode='eval', **SMALL),
                shapes.signature(ids), gains=True)
  w = ref.leaves(model.weights)
  x = next(w)[ids] + next(w)[:4]
  x = ref.encoder_stack(w, x, (ids != 0)[:, None, None, :], 1, 2, gains=True)
  want = ref.layer_norm(x, next(w), next(w)).mean(axis=1) @ next(w) + next(w)
  np.testing.assert_allclose(np.asarray(model(jnp.asarray(ids))), want,
                             rtol=1e-4, atol=1e-5)


def test_decoder_on_vectors_with_gains_matches_numpy(rng):
  x = rng.normal(size=(2, 5, 3)).astype(np.float32)
  model = _init(models.ReZeroTransformerDecoder(n_layers=1, mode='eval',
                                                **SMALL),
                shapes.signature(x), gains=True)
  w = ref.leaves(model.weights)
  h = x.astype(np.float64) @ next(w) + next(w)
  h = h + next(w)[:5]
  h = ref.decoder_stack(w, h, 1, 2, gains=True)
  want = ref.layer_norm(h, next(w), next(w))
  np.testing.assert_allclose(np.asarray(model(jnp.asarray(x))), want,
                             rtol=1e-4, atol=1e-5)


def test_encoder_decoder_with_gains_matches_numpy(rng):
  src = np.array([[1, 2, 3, 0, 0], [4, 5, 6, 7, 8]], np.int32)
  tgt = _ids(rng, (2, 3), 7)
  model = _init(models.ReZeroTransformer(
      9, 7, n_encoder_layers=1, n_decoder_layers=1, mode='eval', **SMALL),
                shapes.signature((src, tgt)), gains=True)
  logits, passed = model((jnp.asarray(src), jnp.asarray(tgt)))
  np.testing.assert_array_equal(np.asarray(passed), tgt)
  w = ref.leaves(model.weights)
  mask = (src != 0)[:, None, None, :]
  enc = next(w)[src] + next(w)[:5]
  enc = ref.encoder_stack(w, enc, mask, 1, 2, gains=True)
  enc = ref.layer_norm(enc, next(w), next(w))
  dec = next(w)[ref.shift_right(tgt)] + next(w)[:3]
  dec = ref.encoder_decoder_stack(w, dec, enc, mask, 1, 2, gains=True)
  want = ref.layer_norm(dec, next(w), next(w)) @ next(w) + next(w)
  np.testing.assert_allclose(np.asarray(logits), want, rtol=1e-4, atol=1e-5)


def test_encoder_decoder_is_target_embedding_and_output_at_init(rng):
  src, tgt = _ids(rng, (2, 5), 9, low=1), _ids(rng, (2, 3), 9)
  # One shared embedding (no output_vocab_size).
  model = _init(models.ReZeroTransformer(
      9, n_encoder_layers=1, n_decoder_layers=2, mode='eval', **SMALL),
                shapes.signature((src, tgt)))
  leaves = list(ref.leaves(model.weights))
  table = leaves[0]
  # Embedding, encoder positions, 18 encoder-block leaves, encoder
  # LayerNorm; the shared target embedding adds none; then positions.
  dec_positions = leaves[22]
  assert dec_positions.shape == (8, 4)
  x = table[ref.shift_right(tgt)] + dec_positions[:3]
  want = ref.layer_norm(x, *leaves[-4:-2]) @ leaves[-2] + leaves[-1]
  np.testing.assert_allclose(
      np.asarray(model((jnp.asarray(src), jnp.asarray(tgt)))[0]), want,
      rtol=1e-4, atol=1e-5)


def test_gain_gradient_is_the_block_output(rng):
  # d(sum y)/d(alpha) = sum F(x) at alpha = 0, so ReZero learns from the
  # first step, while F's own weights get no gradient yet.
  x = rng.normal(size=(2, 3)).astype(np.float32)
  layer = rezero.ResidualZero(tl.Dense(3))
  layer.init(shapes.signature(x))
  w, b, gain = fastmath.tree_leaves(layer.weights)
  assert tuple(gain.shape) == () and float(gain) == 0.0

  def loss(weights):
    y, _ = layer.pure_fn(jnp.asarray(x), weights, layer.state,
                         fastmath.random.get_prng(0))
    return jnp.sum(y)
  grads = fastmath.tree_leaves(fastmath.grad(loss)(layer.weights))
  want = np.sum(x.astype(np.float64) @ np.asarray(w, np.float64) +
                np.asarray(b, np.float64))
  np.testing.assert_allclose(float(grads[2]), want, rtol=1e-4)
  np.testing.assert_array_equal(np.asarray(grads[0]), 0.0)


def test_predict_mode_matches_eval_one_token_at_a_time(rng):
  ids = _ids(rng, (2, 5), 9)
  model = _init(models.ReZeroTransformerLM(9, n_layers=1, mode='eval',
                                           **SMALL), shapes.signature(ids),
                gains=True)
  want = np.asarray(model(jnp.asarray(ids)))
  fast = models.ReZeroTransformerLM(9, n_layers=1, mode='predict', **SMALL)
  fast.init(shapes.ShapeDtype((2, 1), jnp.int32))
  fast.weights = fastmath.tree_unflatten(
      fastmath.tree_leaves(model.weights), fast.weights)[0]
  fed = ref.shift_right(ids)
  for t in range(5):
    got = np.asarray(fast(jnp.asarray(fed[:, t:t + 1])))
    np.testing.assert_allclose(got[:, 0], want[:, t], rtol=1e-4, atol=1e-5,
                               err_msg=f'step {t}')


def test_encoder_decoder_predict_matches_eval(rng):
  src = np.array([[1, 2, 3, 0, 0], [4, 5, 6, 7, 8]], np.int32)
  tgt = _ids(rng, (2, 4), 9)
  model = _init(models.ReZeroTransformer(
      9, n_encoder_layers=1, n_decoder_layers=1, mode='eval', **SMALL),
                shapes.signature((src, tgt)), gains=True)
  want = np.asarray(model((jnp.asarray(src), jnp.asarray(tgt)))[0])
  fast = models.ReZeroTransformer(9, n_encoder_layers=1, n_decoder_layers=1,
                                  mode='predict', **SMALL)
  fast.init((shapes.ShapeDtype((2, 5), jnp.int32),
             shapes.ShapeDtype((2, 1), jnp.int32)))
  fast.weights = fastmath.tree_unflatten(
      fastmath.tree_leaves(model.weights), fast.weights)[0]
  fed = ref.shift_right(tgt)
  for t in range(4):
    got = np.asarray(fast((jnp.asarray(src),
                           jnp.asarray(fed[:, t:t + 1])))[0])
    np.testing.assert_allclose(got[:, 0], want[:, t], rtol=1e-4, atol=1e-5,
                               err_msg=f'step {t}')


def test_weight_counts():
  lm, _ = models.ReZeroTransformerLM(9, n_layers=2, **SMALL).init(
      shapes.ShapeDtype((1, 4), jnp.int32))
  # Embedding 9x4, positions 8x4; per block: 2 LayerNorms (8 each),
  # attention 4 x (16 + 4), FF (4x8 + 8) + (8x4 + 4), 2 gains; final
  # LayerNorm 8; Dense 4x9 + 9.
  assert ref.n_params(lm) == 36 + 32 + 2 * (16 + 80 + 76 + 2) + 8 + 45 == 469
  enc_dec, _ = models.ReZeroTransformer(
      9, n_encoder_layers=1, n_decoder_layers=1, **SMALL).init(
          (shapes.ShapeDtype((1, 4), jnp.int32),
           shapes.ShapeDtype((1, 3), jnp.int32)))
  # Shared embedding 36; 2 positional tables 64; encoder block 174, its
  # LayerNorm 8; decoder block: 3 LayerNorms, 2 attentions, FF, 3 gains
  # = 24 + 160 + 76 + 3; final LayerNorm 8; Dense 45.
  assert ref.n_params(enc_dec) == 36 + 64 + 174 + 8 + 263 + 8 + 45 == 598
  enc, _ = models.ReZeroTransformerEncoder(9, n_classes=3, n_layers=1,
                                           **SMALL).init(
                                               shapes.ShapeDtype((1, 4),
                                                                 jnp.int32))
  assert ref.n_params(enc) == 36 + 32 + 174 + 8 + (4 * 3 + 3) == 265


def test_bfloat16_vectors_stay_bfloat16(rng):
  x = rng.normal(size=(1, 3, 4)).astype(np.float32)
  model = _init(models.ReZeroTransformerDecoder(n_layers=1, mode='eval',
                                                **SMALL),
                shapes.signature(x), gains=True)
  y = model(jnp.asarray(x).astype('bfloat16'))
  assert y.dtype.name == 'bfloat16'


def test_rejects_heads_not_dividing_d_model():
  with pytest.raises(ValueError, match=r'ReZeroTransformerLM: n_heads \(3\) '
                     r'must divide d_model \(4\)'):
    models.ReZeroTransformerLM(9, d_model=4, n_heads=3)
