"""LayerDrop Transformer LMs: no skipping equals a plain TransformerLM (and
NumPy); skipped blocks are exactly the identity."""

import itertools

import numpy as np
import pytest

from tests import _layer_testing as lt
from tests.models import _np_ref as ref
from tfnp_trax import fastmath
from tfnp_trax import models
from tfnp_trax import shapes
from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.models.research import layerdrop_transformer

SMALL = dict(d_model=4, d_ff=8, n_heads=2, max_len=8, dropout=0.0)
VOCAB = 9


def _ids(seed=0):
  return np.random.default_rng(seed).integers(0, VOCAB, size=(2, 5)).astype(
      np.int32)


def _init(model, seed=1):
  model.init(shapes.ShapeDtype((2, 5), jnp.int32),
             rng=fastmath.random.get_prng(0))
  r = np.random.default_rng(seed)
  model.weights = fastmath.nested_map(
      lambda w: jnp.asarray(r.normal(size=w.shape) * 0.5, jnp.float32),
      model.weights)
  return model


def _reference(ids, weights, keep):
  """log_softmax(TransformerLM) running only the blocks where keep[i]."""
  w = ref.leaves(weights)
  x = next(w)[ref.shift_right(ids)] + next(w)[:ids.shape[1]]
  block_leaves = 2 + 8 + 2 + 4  # LN, attention, LN, feed-forward.
  for kept in keep:
    block = [next(w) for _ in range(block_leaves)]
    if kept:
      x = ref.decoder_stack(iter(block), x, 1, 2)
  x = ref.layer_norm(x, next(w), next(w))
  return ref.log_softmax(x @ next(w) + next(w))


def _plain_lm(weights, n_layers):
  """A TransformerLM with the same weights, plus the final LogSoftmax."""
  lm = models.TransformerLM(VOCAB, n_layers=n_layers, mode='eval', **SMALL)
  lm.init(shapes.ShapeDtype((2, 5), jnp.int32))
  lm.weights = fastmath.tree_unflatten(list(weights), lm.weights)[0]

  def run(ids):
    y = lm(jnp.asarray(ids))
    return np.asarray(y - fastmath.logsumexp(y, axis=-1, keepdims=True))
  return run


@pytest.mark.parametrize('mode', lt.MODES)
def test_layerdrop_without_dropping_is_a_transformer_lm(mode):
  model = _init(layerdrop_transformer.LayerDropTransformerLM(
      VOCAB, n_layers=2, mode='eval', skip_fraction=0.0,
      eval_skip_fraction=0.0, **SMALL))
  ids = _ids()
  got, _ = lt.run_layer(model, jnp.asarray(ids), mode)
  np.testing.assert_allclose(np.asarray(got),
                             _reference(ids, model.weights, [True, True]),
                             rtol=1e-4, atol=1e-5)
  plain = _plain_lm(fastmath.tree_leaves(model.weights), 2)
  np.testing.assert_allclose(np.asarray(got), plain(ids), rtol=1e-4,
                             atol=1e-5)


def test_skipping_lm_in_eval_runs_every_block():
  model = _init(models.SkippingTransformerLM(VOCAB, n_layers=2, mode='eval',
                                             **SMALL))
  ids = _ids()
  np.testing.assert_allclose(np.asarray(model(jnp.asarray(ids))),
                             _reference(ids, model.weights, [True, True]),
                             rtol=1e-4, atol=1e-5)


def test_every_other_skips_the_chosen_blocks_as_identities():
  ids = _ids()
  for skip_mode, keep in [('even', [False, True, False, True]),
                          ('odd', [True, False, True, False]),
                          ('1half', [False, False, True, True]),
                          ('2half', [True, True, False, False])]:
    model = _init(models.EveryOtherLayerDropTransformerLM(
        VOCAB, n_layers=4, mode='eval', skip_mode=skip_mode,
        eval_skip_fraction=1.0, **SMALL))
    np.testing.assert_allclose(np.asarray(model(jnp.asarray(ids))),
                               _reference(ids, model.weights, keep),
                               rtol=1e-4, atol=1e-5, err_msg=skip_mode)
  # Skipping the even blocks of 2 leaves a 1-block TransformerLM with the
  # second block's weights.
  model = _init(models.EveryOtherLayerDropTransformerLM(
      VOCAB, n_layers=2, mode='eval', eval_skip_fraction=1.0, **SMALL))
  leaves = fastmath.tree_leaves(model.weights)
  plain = _plain_lm(leaves[:2] + leaves[18:], 1)
  np.testing.assert_allclose(np.asarray(model(jnp.asarray(ids))), plain(ids),
                             rtol=1e-4, atol=1e-5)


def test_layerdrop_eval_every_other_prunes_even_blocks():
  # skip_fraction 0.4 -> int(1 / 0.4) = 2: blocks 0 and 2 always skipped.
  model = _init(models.LayerDropTransformerLM(VOCAB, n_layers=3, mode='eval',
                                              **SMALL))
  ids = _ids()
  np.testing.assert_allclose(np.asarray(model(jnp.asarray(ids))),
                             _reference(ids, model.weights,
                                        [False, True, False]),
                             rtol=1e-4, atol=1e-5)


def _matching_subset(got, ids, weights, n_layers):
  for keep in itertools.product([False, True], repeat=n_layers):
    if np.allclose(got, _reference(ids, weights, keep), rtol=1e-4,
                   atol=1e-5):
      return keep
  return None


def test_train_mode_runs_a_random_subset_of_blocks():
  ids = _ids()
  layerdrop = _init(models.LayerDropTransformerLM(
      VOCAB, n_layers=2, skip_fraction=0.5, **SMALL))
  skipping = _init(models.SkippingTransformerLM(VOCAB, n_layers=2,
                                                skip_fraction=0.5, **SMALL))
  seen_ld, seen_sk = set(), set()
  for seed in range(12):
    key = fastmath.random.get_prng(seed)
    keep = _matching_subset(np.asarray(layerdrop(jnp.asarray(ids), rng=key)),
                            ids, layerdrop.weights, 2)
    assert keep is not None, seed
    seen_ld.add(keep)
    keep = _matching_subset(np.asarray(skipping(jnp.asarray(ids), rng=key)),
                            ids, skipping.weights, 2)
    # Skipping keeps a prefix of the blocks.
    assert keep in {(False, False), (True, False), (True, True)}, seed
    seen_sk.add(keep)
  assert len(seen_ld) > 1 and len(seen_sk) > 1


@pytest.mark.parametrize('make', [
    lambda mode: models.SkippingTransformerLM(VOCAB, n_layers=2, mode=mode,
                                              **SMALL),
    lambda mode: models.LayerDropTransformerLM(VOCAB, n_layers=3, mode=mode,
                                               **SMALL),
    lambda mode: models.EveryOtherLayerDropTransformerLM(
        VOCAB, n_layers=2, mode=mode, eval_skip_fraction=1.0, **SMALL),
])
def test_predict_mode_matches_eval_one_token_at_a_time(make):
  model = _init(make('eval'))
  ids = _ids()
  want = np.asarray(model(jnp.asarray(ids)))
  fast = make('predict')
  fast.init(shapes.ShapeDtype((2, 1), jnp.int32))
  fast.weights = fastmath.tree_unflatten(
      fastmath.tree_leaves(model.weights), fast.weights)[0]
  fed = ref.shift_right(ids)
  for t in range(ids.shape[1]):
    got = np.asarray(fast(jnp.asarray(fed[:, t:t + 1])))
    np.testing.assert_allclose(got[:, 0], want[:, t], rtol=1e-4, atol=1e-5,
                               err_msg=f'step {t}')


def test_weight_counts_equal_transformer_lm():
  # 9x4 embedding, 8x4 positions, per block 2 * 8 + 80 + 76, LayerNorm 8,
  # Dense 4x9 + 9: the TransformerLM's; the skipping adds no weights.
  want = 36 + 32 + 2 * 172 + 8 + 45
  assert want == 465
  for make in (models.SkippingTransformerLM, models.LayerDropTransformerLM,
               models.EveryOtherLayerDropTransformerLM):
    weights, _ = make(VOCAB, n_layers=2, **SMALL).init(
        shapes.ShapeDtype((1, 5), jnp.int32))
    assert ref.n_params(weights) == want, make.__name__


def test_bad_arguments_raise_clear_errors():
  with pytest.raises(ValueError, match=r'LayerDropTransformerLM: '
                     r'skip_fraction must have one entry per layer '
                     r'\(n_layers=3\), got 2'):
    models.LayerDropTransformerLM(VOCAB, n_layers=3, skip_fraction=[0.1, 0.2])
  with pytest.raises(ValueError, match=r"EveryOtherLayerDropTransformerLM: "
                     r"skip_mode must be one of .*got 'third'"):
    models.EveryOtherLayerDropTransformerLM(VOCAB, skip_mode='third')
