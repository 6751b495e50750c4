"""Reformer models: against real Trax, reversible gradients, decoding, copy.

* Trax 1.4.1 built the same tiny models (tests/testdata/reformer/); ours
  must print and shape their weights alike, and give Trax's outputs with
  Trax's weights.
* The gradient through the reversible backward (which rebuilds each block's
  input from its output) must equal ordinary backpropagation through the
  same forward pass, eagerly, under tf.function and under XLA.
* 'predict'-mode decoding must reproduce the full forward's greedy path.
* With LSH attention, ReformerLM must learn the copy task.
"""

import functools

import numpy as np
import pytest

from tests import _layer_testing as lt
from tests.models.research import _recorded
from tfnp_trax import fastmath
from tfnp_trax import layers as tl
from tfnp_trax import optimizers
from tfnp_trax import shapes
from tfnp_trax.data import copy_task
from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.layers import _reversible_base
from tfnp_trax.layers import reversible
from tfnp_trax.layers.research import efficient_attention as ea
from tfnp_trax.models.reformer import reformer
from tfnp_trax.supervised import decoding
from tfnp_trax.supervised import trainer as trainer_lib

TINY = dict(d_model=8, d_ff=16, d_attention_key=4, d_attention_value=4,
            n_heads=2, dropout=0.0, max_len=16)
LSH = functools.partial(ea.LSHSelfAttention, chunk_len=4, n_buckets=2,
                        n_hashes=2)

# The cases of tests/testdata/reformer/make_fixtures.py, built alike.
BUILDERS = {
    'reformer_lm_selfattention': lambda: reformer.ReformerLM(
        11, n_layers=2, mode='eval', attention_type=ea.SelfAttention,
        **TINY),
    'reformer_lm_axial_sru': lambda: reformer.ReformerLM(
        11, n_layers=1, mode='eval', attention_type=ea.SelfAttention,
        pos_type='axial', pos_axial_shape=(2, 4), pos_d_axial_embs=(4, 4),
        ff_use_sru=1, ff_chunk_size=4, **TINY),
    'reformer_lm_lsh': lambda: reformer.ReformerLM(
        11, n_layers=2, mode='train', attention_type=functools.partial(
            ea.LSHSelfAttention, chunk_len=4, n_buckets=2),
        **dict(TINY, dropout=0.1)),
    'reformer_lm_default': lambda: reformer.ReformerLM(11),
    'reformer_shorten_lm': lambda: reformer.ReformerShortenLM(
        11, shorten_factor=2, d_embedding=4, n_layers=1, mode='eval',
        attention_type=ea.SelfAttention, **TINY),
    'reformer_lm_fixed_base': lambda: reformer.ReformerLM(
        11, n_layers=1, mode='eval', attention_type=ea.SelfAttention,
        pos_type='fixed-base', **TINY),
    'reformer': lambda: reformer.Reformer(
        11, d_model=8, d_ff=16, n_encoder_layers=1, n_decoder_layers=1,
        n_heads=2, dropout=0.0, max_len=16, mode='eval'),
}


@pytest.mark.parametrize('name', sorted(BUILDERS))
def test_structure_matches_trax(name):
  _recorded.assert_structure_matches(name, BUILDERS[name]())


@pytest.mark.parametrize('name', [n for n in sorted(BUILDERS)
                                  if _recorded.record(n)['values']])
def test_outputs_match_trax_with_trax_weights(name):
  _recorded.assert_outputs_match(name, BUILDERS[name]())


def _float64(tree):
  def cast(w):
    return jnp.asarray(np.asarray(w), jnp.float64) if fastmath.is_float(
        w) else w
  return fastmath.nested_map(cast, tree)


@pytest.mark.parametrize('mode', lt.MODES)
def test_reversible_gradient_equals_backprop(mode, monkeypatch):
  """Gradients via reverse_and_grad equal autodiff of the same forward.

  Run in float64, so the input reconstruction (acc - F(x), exact up to
  rounding) leaves the gradients equal far below the 1e-5 tolerance, while
  any wrong cotangent or weight routing would show at order 1. Eager and
  tf.function run LSH and SelfAttention layers with SRUs; XLA, whose
  compile time grows quickly with the model, SelfAttention layers only.
  """
  attention = (ea.SelfAttention if mode == 'xla' else
               [LSH, ea.SelfAttention])
  model = reformer.ReformerLM(11, n_layers=2, mode='train',
                              attention_type=attention,
                              ff_use_sru=0 if mode == 'xla' else 1, **TINY)
  tokens = jnp.asarray(np.random.default_rng(0).integers(
      1, 11, size=(2, 16)).astype(np.int32))
  model.init(shapes.signature(tokens), rng=fastmath.random.get_prng(0))
  weights, state = _float64(model.weights), model.state
  cotangent = jnp.asarray(np.random.default_rng(1).normal(size=(2, 16, 11)))
  calls = []
  original = reversible.ReversibleHalfResidual.reverse_and_grad

  def counting(self, *args, **kwargs):
    calls.append(self.name)
    return original(self, *args, **kwargs)
  monkeypatch.setattr(reversible.ReversibleHalfResidual, 'reverse_and_grad',
                      counting)

  def loss(w):
    y, _ = model.pure_fn(tokens, w, state, fastmath.random.get_prng(3))
    return jnp.sum(y * cotangent)

  def grads():
    return fastmath.tree_flatten(lt.compile_fn(
        lambda w: fastmath.grad(loss)(w), mode)(weights))

  got = grads()
  # 2 blocks x (attention half, feed-forward half); traced, structurally
  # equal halves share one trace of their backward.
  assert (len(calls) == 4 if mode == 'eager' else 2 <= len(calls) <= 4)
  if mode == 'xla':
    assert len(calls) == 2, calls  # Both blocks are equal here.
  monkeypatch.setattr(_reversible_base.ReversibleLayer, 'has_backward',
                      property(lambda self: False))
  n_calls = len(calls)
  want = grads()
  assert len(calls) == n_calls  # Plain autodiff: no reverse pass ran.
  assert len(got) == len(want)
  for i, (g, w) in enumerate(zip(got, want)):
    np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-5,
                               atol=1e-9, err_msg=f'weight leaf {i}')


@pytest.mark.parametrize('attention', [
    functools.partial(ea.SelfAttention, predict_mem_len=16,
                      predict_drop_len=16),
    functools.partial(LSH, predict_mem_len=8, predict_drop_len=8),
], ids=['self_attention', 'lsh'])
def test_predict_mode_decoding_matches_full_forward(attention):
  kwargs = dict(TINY, n_layers=2, attention_type=attention, ff_use_sru=1)
  full = reformer.ReformerLM(11, mode='eval', **kwargs)
  full.init(shapes.ShapeDtype((1, 8), jnp.int32),
            rng=fastmath.random.get_prng(0))
  fast = reformer.ReformerLM(11, mode='predict', **kwargs)
  fast.init(shapes.ShapeDtype((1, 1), jnp.int32))
  fast.weights = full.weights
  tokens = np.asarray(decoding.autoregressive_sample(
      fast, temperature=0.0, eos_id=-1, max_length=8))
  # Greedy: each token is the argmax of the full forward at its position.
  logits = np.asarray(full(jnp.asarray(tokens)))
  np.testing.assert_array_equal(tokens, logits.argmax(-1))


def _sequence_accuracy(model, weights, batch):
  inputs, targets, mask = batch
  model.weights = weights
  predicted = np.asarray(model(jnp.asarray(inputs))).argmax(-1)
  correct = (predicted == targets) | (mask == 0)
  return float(np.mean(np.all(correct, axis=1)))


def test_copy_task_with_lsh_attention_learns():
  """ReformerLM with Trax's reformer_copy.gin LSH settings learns to copy.

  From the gin file: LSHSelfAttention with chunk_len=16, n_chunks_before=1,
  n_chunks_after=0, n_hashes=2, n_parallel_heads=1, attention_dropout=0;
  vocab_size=13, 4 heads, 3 layers scaled down to 2 heads, 2 layers of
  width 32, and Adam at a constant 3e-3 instead of a 4000-step warmup.
  Sequences are `0 w 0 w` with 15 random symbols (length 32, two LSH
  chunks). Over seeds 0-5, teacher-forced sequence accuracy on the second
  copy was 0 at step 100 for all, jumped to 1.0 between steps 200 and 300,
  and was >= 0.996 at step 400 for every seed; 0.9 after 400 steps leaves a
  margin for other platforms' rounding.
  """
  length, vocab, seed = 15, 13, 0
  attention = functools.partial(
      ea.LSHSelfAttention, attention_dropout=0.0, chunk_len=16,
      n_chunks_before=1, n_chunks_after=0, n_hashes=2, n_parallel_heads=1,
      n_buckets=2)
  kwargs = dict(d_model=32, d_ff=64, d_attention_key=16,
                d_attention_value=16, n_layers=2, n_heads=2, dropout=0.0,
                max_len=2 * length + 2, attention_type=attention)
  train_batches = copy_task.copy_batches(16, length, vocab, seed)
  first = next(train_batches)
  model_with_loss = tl.Serial(reformer.ReformerLM(vocab, **kwargs),
                              tl.WeightedCategoryCrossEntropy())
  model_with_loss.init(shapes.signature(first),
                       rng=fastmath.random.get_prng(seed))
  trainer = trainer_lib.Trainer(model_with_loss, optimizers.Adam(3e-3))
  eval_batch = next(copy_task.copy_batches(256, length, vocab, 1000 + seed))
  evaluator = reformer.ReformerLM(vocab, mode='eval', **kwargs)
  evaluator.init(shapes.signature(eval_batch[0]))
  before = _sequence_accuracy(evaluator, trainer.model_weights[0],
                              eval_batch)
  for step in range(400):
    trainer.one_step(first if step == 0 else next(train_batches),
                     fastmath.random.get_prng(step), step)
  after = _sequence_accuracy(evaluator, trainer.model_weights[0], eval_batch)
  assert before < 0.05
  assert after >= 0.9, after


@pytest.mark.parametrize('build, missing, pattern', [
    (lambda: reformer.ReformerLM(11, ff_sparsity=4), 'SparseFF',
     r"ReformerLM: ff_sparsity=4 needs tl\.SparseFF \(ff_sparsity_type="
     r"'1inN'\) from Trax's research layers, which tfnp_trax does not "
     r'provide yet'),
    (lambda: reformer.ReformerLM(11, loss_sparsity=4),
     'SparseDenseWithOptions',
     r'ReformerLM: loss_sparsity=4 needs tl\.FactoredDense'),
    (lambda: reformer.ReformerShortenLM(11, ff_sparsity=2), 'SparseFF',
     r'ReformerShortenLM: ff_sparsity=2 needs tl\.SparseFF'),
])
def test_missing_layers_are_named(build, missing, pattern, monkeypatch):
  # As before tfnp_trax had Trax's sparsity layers.
  monkeypatch.delattr(tl, missing, raising=False)
  with pytest.raises(NotImplementedError, match=pattern):
    build()


def test_sparse_feed_forward_matches_trax():
  # Recorded with the configurable models' sparse options.
  from tests.models.research import configurable_transformer_test as ctt  # pylint: disable=g-import-not-at-top
  ctt.check_sparse_case('reformer_lm_sparse_ff', reformer.ReformerLM,
                        dict(n_layers=1, ff_sparsity=4, d_attention_key=4,
                             d_attention_value=4))


def test_time_bin_pos_type_fails_as_in_trax():
  # Trax 1.4.1 builds TimeBinPositionalEncoding without time_bin_length.
  with pytest.raises(TypeError, match=r"ReformerLM: pos_type='time-bin' "
                     r'builds tl\.TimeBinPositionalEncoding without'):
    reformer.ReformerLM(11, pos_type='time-bin')


def test_bad_arguments():
  with pytest.raises(ValueError, match=r'ReformerLM: n_layers \(3\) must be '
                     r'a multiple of the number of attention types given '
                     r'\(2\)'):
    reformer.ReformerLM(11, n_layers=3,
                        attention_type=[ea.SelfAttention, LSH])
  with pytest.raises(ValueError, match=r"ReformerShortenLM: mode='predict'"):
    reformer.ReformerShortenLM(11, mode='predict')
  model = reformer.ReformerShortenLM(11, shorten_factor=3, d_embedding=4,
                                     n_layers=1, mode='eval', **TINY)
  with pytest.raises(tl.LayerError, match=r'sequence length 8 is not a '
                     r'multiple of shorten_factor 3'):
    model.init(shapes.ShapeDtype((1, 8), jnp.int32))
