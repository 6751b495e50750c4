"""Transformer2 and its concatenation layers against real Trax and NumPy.

`tests/testdata/transformer2/` holds Trax 1.4.1's reprs, weights and
outputs for tiny Transformer2 models (eval, train without dropout, with
chunking and sin-cos positions, three predict-mode decoding steps) and for
the concatenation layers (see the README there).
"""

import numpy as np
import pytest

from tests import _fixtures
from tests import _layer_testing as lt
from tfnp_trax import fastmath
from tfnp_trax import layers as tl
from tfnp_trax import models
from tfnp_trax import shapes
from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.models.research import transformer2 as t2

_RECORDING = _fixtures.Recording('transformer2', 'cases.json', 'cases.npz')
_RECORDS, _ARRAYS = _RECORDING.records, _RECORDING.arrays
_HELPERS = {k[len('helpers/'):]: v for k, v in _ARRAYS.items()
            if k.startswith('helpers/')}
# The sizes make_fixtures.py recorded with.
TINY = dict(d_model=8, d_ff=16, n_heads=2, dropout=0.0, ff_dropout=0.0,
            max_len=16)
CASES = {
    't2_shared': lambda: t2.Transformer2(
        11, n_encoder_layers=1, n_decoder_layers=1, mode='eval', **TINY),
    't2_out_vocab': lambda: t2.Transformer2(
        11, output_vocab_size=13, n_encoder_layers=2, n_decoder_layers=2,
        n_encoder_attention_layers=2, n_decoder_attention_layers=1,
        ff_activation=tl.Gelu, mode='eval', **TINY),
    't2_train': lambda: t2.Transformer2(
        11, n_encoder_layers=1, n_decoder_layers=1, mode='train', **TINY),
    't2_options': lambda: t2.Transformer2(
        11, n_encoder_layers=1, n_decoder_layers=1, mode='eval',
        ff_chunk_size=2, attention_chunk_size=1, pos_type='sin-cos', **TINY),
}


def _pair():
  return tuple(jnp.asarray(_ARRAYS[f'inputs/x{i}']) for i in range(2))


def _load_trax_weights(model, name):
  n = len(_RECORDS[name]['weight_shapes'])
  model.weights = fastmath.tree_unflatten(
      [jnp.asarray(_ARRAYS[f'{name}/w{i}']) for i in range(n)],
      model.weights)[0]
  return model


def _with_trax_weights(name):
  model = CASES[name]()
  model.init(shapes.signature(_pair()))
  return _load_trax_weights(model, name)


# -- Structure and outputs against real Trax ----------------------------------


@pytest.mark.parametrize('name', sorted(CASES))
def test_structure_matches_trax(name):
  model = CASES[name]()
  model.init(shapes.signature(_pair()))
  want = _RECORDS[name]
  assert str(model) == want['repr']
  assert (model.n_in, model.n_out) == (want['n_in'], want['n_out'])
  assert [list(w.shape) for w in fastmath.tree_leaves(model.weights)] == (
      want['weight_shapes'])


def test_default_arguments_build_trax_model():
  # Not initialized: the default model has ~40M weights.
  assert str(t2.Transformer2(11)) == _RECORDS['t2_defaults']['repr']


@pytest.mark.parametrize('name,modes', [('t2_shared', lt.MODES),
                                        ('t2_out_vocab', ('eager',)),
                                        ('t2_train', ('eager',)),
                                        ('t2_options', ('eager',))])
def test_outputs_match_trax(name, modes):
  model = _with_trax_weights(name)
  for mode in modes:
    (logits, targets), _ = lt.run_layer(model, _pair(), mode)
    np.testing.assert_allclose(np.asarray(logits), _ARRAYS[f'{name}/y0'],
                               rtol=1e-5, atol=2e-5, err_msg=mode)
    np.testing.assert_array_equal(np.asarray(targets), _ARRAYS[f'{name}/y1'])


@pytest.mark.parametrize('mode', ['eager', 'jit'])
def test_predict_mode_decodes_as_trax(mode):
  model = t2.Transformer2(11, n_encoder_layers=1, n_decoder_layers=1,
                          mode='predict', **TINY)
  model.init((shapes.ShapeDtype((2, 4), jnp.int32),
              shapes.ShapeDtype((2, 1), jnp.int32)))
  assert str(model) == _RECORDS['predict']['repr']
  _load_trax_weights(model, 'predict')
  state = model.state
  for step in range(3):
    xs = tuple(jnp.asarray(_ARRAYS[f'predict/step{step}_x{i}'])
               for i in range(2))
    (logits, _), state = lt.run_layer(model, xs, mode, state=state)
    np.testing.assert_allclose(np.asarray(logits),
                               _ARRAYS[f'predict/step{step}_y0'],
                               rtol=1e-5, atol=2e-5, err_msg=f'step {step}')


def test_gradients_are_finite_and_reach_every_weight():
  model = _with_trax_weights('t2_shared')
  state, rng = model.state, fastmath.random.get_prng(0)

  def loss(weights):
    (logits, _), _ = model.pure_fn(_pair(), weights, state, rng)
    return jnp.sum(logits * logits)
  grads = fastmath.grad(loss)(model.weights)
  for g in fastmath.tree_leaves(grads):
    g = np.asarray(g)
    assert np.all(np.isfinite(g))
    assert np.any(g != 0)


def test_gradient_matches_finite_differences():
  """Directional derivative wrt all weights, in float64, both ways."""
  src = np.array([[3, 4, 0], [5, 6, 7]], np.int32)
  tgt = np.array([[1, 2], [3, 0]], np.int32)
  model = t2.Transformer2(9, d_model=4, d_ff=6, n_encoder_layers=1,
                          n_decoder_layers=1, n_heads=2, max_len=8,
                          mode='eval')
  model.init(shapes.signature((src, tgt)))
  rng = np.random.default_rng(0)
  leaves = [rng.normal(size=w.shape) * 0.5
            for w in fastmath.tree_leaves(model.weights)]
  direction = [rng.normal(size=w.shape) for w in leaves]
  state, key = model.state, fastmath.random.get_prng(0)
  ct = rng.normal(size=(2, 2, 9))

  def objective(flat):
    weights = fastmath.tree_unflatten(list(flat), model.weights)[0]
    (logits, _), _ = model.pure_fn((jnp.asarray(src), jnp.asarray(tgt)),
                                   weights, state, key)
    return jnp.sum(logits * ct)

  def at(step):  # float64 weights moved `step` along `direction`.
    return [jnp.asarray(w + step * d, jnp.float64)
            for w, d in zip(leaves, direction)]
  grads = fastmath.grad(objective)(at(0.0))
  analytic = sum(float(np.sum(np.asarray(g) * d))
                 for g, d in zip(grads, direction))
  eps = 1e-5
  plus, minus = float(objective(at(eps))), float(objective(at(-eps)))
  np.testing.assert_allclose(analytic, (plus - minus) / (2 * eps), rtol=1e-5)


# -- The concatenation layers --------------------------------------------------


def _numpy_concat(vec_e, vec_d, mask_e):
  """Reference: per example, zero-pad vec_e and write vec_d after n real."""
  batch, len_e, depth = vec_e.shape
  out = np.zeros((batch, len_e + vec_d.shape[1], depth))
  for b in range(batch):
    n = int(np.sum(mask_e[b] != 0))
    out[b, :len_e] = vec_e[b]
    out[b, n:n + vec_d.shape[1]] = vec_d[b]
  return out


def _helper_inputs():
  h = _HELPERS
  return h['vec_e'], h['vec_e2'], h['vec_d'], h['tok_e'] != 0, h['tok_e'], \
      h['tok_d']


@pytest.mark.parametrize('mode', lt.MODES)
def test_concat_with_padding_matches_trax_and_numpy(mode):
  vec_e, _, vec_d, mask_e, tok_e, tok_d = _helper_inputs()
  layer = lt.initialized(t2.ConcatWithPadding(mode='eval'), vec_e, vec_d,
                         mask_e, tok_e, tok_d)
  (vec_ed, tok_e_out, tok_d_out), _ = lt.run_layer(
      layer, lt.to_tensors((vec_e, vec_d, mask_e, tok_e, tok_d)), mode)
  np.testing.assert_array_equal(np.asarray(vec_ed), _HELPERS['concat_y0'])
  np.testing.assert_allclose(np.asarray(vec_ed),
                             _numpy_concat(vec_e, vec_d, mask_e), rtol=1e-7)
  np.testing.assert_array_equal(np.asarray(tok_e_out), tok_e)
  np.testing.assert_array_equal(np.asarray(tok_d_out), tok_d)
  strip = lt.initialized(t2.StripFromConcatenateWithPadding(mode='eval'),
                         vec_ed, tok_e, tok_d)
  got, _ = lt.run_layer(strip, (vec_ed, jnp.asarray(tok_e),
                                jnp.asarray(tok_d)), mode)
  np.testing.assert_array_equal(np.asarray(got), _HELPERS['strip_y0'])
  np.testing.assert_array_equal(np.asarray(got), vec_d)


def test_concat_reverse_matches_trax():
  vec_e, vec_e2, vec_d, mask_e, tok_e, tok_d = _helper_inputs()
  concat = lt.initialized(t2.ConcatWithPadding(mode='eval'), vec_e, vec_d,
                          mask_e, tok_e, tok_d)
  rebuilt = concat.reverse((jnp.asarray(_HELPERS['concat_y0']),
                            jnp.asarray(tok_e), jnp.asarray(tok_d)))
  for i, got in enumerate(rebuilt):
    np.testing.assert_array_equal(np.asarray(got),
                                  _HELPERS[f'concat_reverse_y{i}'])
  xs = (vec_e, vec_e2, vec_d, mask_e, tok_e, tok_d)
  concat2 = lt.initialized(t2.ConcatWithPadding2(mode='eval'), *xs)
  ys = concat2(lt.to_tensors(xs))
  for i in range(2):
    np.testing.assert_array_equal(np.asarray(ys[i]),
                                  _HELPERS[f'concat2_y{i}'])
  for i, got in enumerate(concat2.reverse(ys)):
    np.testing.assert_array_equal(np.asarray(got),
                                  _HELPERS[f'concat2_reverse_y{i}'])


def test_concat_gradient_is_the_transposed_selection():
  vec_e, _, vec_d, mask_e, tok_e, tok_d = _helper_inputs()
  layer = lt.initialized(t2.ConcatWithPadding(mode='eval'), vec_e, vec_d,
                         mask_e, tok_e, tok_d)
  ct = np.random.default_rng(0).normal(size=_HELPERS['concat_y0'].shape)

  def loss(e, d):
    (vec_ed, _, _), _ = layer.pure_fn(
        (e, d, jnp.asarray(mask_e), jnp.asarray(tok_e), jnp.asarray(tok_d)),
        (), layer.state, fastmath.random.get_prng(0))
    return jnp.sum(vec_ed * ct)
  grad_e, grad_d = fastmath.grad(loss, argnums=(0, 1))(
      jnp.asarray(vec_e, jnp.float64), jnp.asarray(vec_d, jnp.float64))
  # The output is linear in (vec_e, vec_d): differences are exact.
  ones_e, ones_d = np.zeros_like(vec_e, np.float64), np.zeros_like(vec_d,
                                                                    np.float64)
  want_e = np.zeros_like(ones_e)
  want_d = np.zeros_like(ones_d)
  for idx in np.ndindex(*vec_e.shape):
    basis = ones_e.copy()
    basis[idx] = 1.0
    want_e[idx] = np.sum(_numpy_concat(basis, ones_d, mask_e) * ct)
  for idx in np.ndindex(*vec_d.shape):
    basis = ones_d.copy()
    basis[idx] = 1.0
    want_d[idx] = np.sum(_numpy_concat(ones_e, basis, mask_e) * ct)
  np.testing.assert_allclose(np.asarray(grad_e), want_e, atol=1e-12)
  np.testing.assert_allclose(np.asarray(grad_d), want_d, atol=1e-12)


def test_predict_mode_concatenates_only_on_the_first_call():
  vec_e, _, vec_d, mask_e, tok_e, tok_d = _helper_inputs()
  xs = lt.to_tensors((vec_e, vec_d[:, :1], mask_e, tok_e, tok_d[:, :1]))
  layer = lt.initialized(t2.ConcatWithPadding(mode='predict'), *xs)
  assert layer(xs)[0].shape == (3, 5, 2)
  np.testing.assert_array_equal(np.asarray(layer(xs)[0]), vec_d[:, :1])
  with pytest.raises(ValueError, match=r'cannot reverse in predict mode'):
    layer.reverse(layer(xs))


def test_bad_shapes_name_the_layer():
  vec_e, _, vec_d, mask_e, tok_e, tok_d = _helper_inputs()
  xs = lt.to_tensors((vec_e, vec_d, mask_e[:, :3], tok_e, tok_d))
  layer = lt.initialized(t2.ConcatWithPadding(mode='eval'), *xs)
  with pytest.raises(tl.LayerError, match=(
      r'ConcatWithPadding: the encoder mask has shape \(3, 3\), expected '
      r'\(3, 4\)')):
    layer(xs)
  xs = lt.to_tensors((_HELPERS['concat_y0'], tok_e, tok_d[:, :2]))
  strip = lt.initialized(t2.StripFromConcatenateWithPadding(), *xs)
  with pytest.raises(tl.LayerError, match=(
      r'StripFromConcatenateWithPadding: the concatenated vectors have '
      r'length 7, but the encoder and decoder tokens have lengths 4 \+ 2')):
    strip(xs)


def test_layer_reprs_match_trax():
  for layer in (t2.ConcatWithPadding(), t2.ConcatWithPadding2(),
                t2.StripFromConcatenateWithPadding()):
    want = _RECORDS[type(layer).__name__]
    assert str(layer) == want['repr']
    assert (layer.n_in, layer.n_out) == (want['n_in'], want['n_out'])


def test_exported_as_in_trax():
  assert models.Transformer2 is t2.Transformer2
  assert models.transformer2 is t2


def test_state_keeps_its_shapes_outside_predict_mode():
  # training.Loop keeps the state in fixed-shape variables.
  model = _with_trax_weights('t2_train')
  before = [tuple(s.shape) for s in fastmath.tree_leaves(model.state)]
  model(_pair())
  assert [tuple(s.shape) for s in fastmath.tree_leaves(model.state)] == before


def test_trains_in_loop(tmp_path):
  # pylint: disable=g-import-not-at-top
  from tfnp_trax import optimizers
  from tfnp_trax.supervised import training
  src, tgt = (np.asarray(x) for x in _pair())

  def batches():
    while True:
      yield src, tgt, (tgt != 0).astype(np.float32)
  task = training.TrainTask(batches(), tl.WeightedCategoryCrossEntropy(),
                            optimizers.Adam(0.01))
  loop = training.Loop(CASES['t2_train'](), [task], output_dir=str(tmp_path))
  loop.run(2)
  assert loop.step == 2
