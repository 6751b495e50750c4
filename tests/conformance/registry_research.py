"""Conformance entries of Trax's research layers and models.

Kept apart from `registry.py` (which calls `register`) so that each file
stays readable. `follows_dtype=False` marks layers that, as in Trax, compute
with float32 weights or constants whatever the input dtype (einsum-based
dense variants, rotary sines and cosines, relative-attention outputs).
"""

import functools

from tfnp_trax import layers as tl
from tfnp_trax import models

__all__ = ['register']


def _rel_biases():
  return tl.get_rel_att_inputs(8, 2)


def register(add, f, i, b):
  """Adds the research entries with registry.py's `_add`, `_f`, `_i`, `_b`."""
  _sparsity(add, f, b)
  _relative_and_resampling(add, f, i, b)
  _research_models(add, i)


def _sparsity(add, f, b):
  # FAVOR attention and sparse feed-forward in eval and predict modes: no
  # random choices, so eager and XLA agree.
  add('FavorAttention', lambda: tl.FavorAttention(d_feature=8, n_heads=2),
      (f(4, 5, 4), f(4, 5, 4), f(4, 5, 4), b(2, 1, 1, 5)),
      follows_dtype=False)
  add('FavorAttention_softmax',
      lambda: tl.FavorAttention(d_feature=8, n_heads=2, n_random_features=8,
                                use_approximate_softmax=True),
      (f(4, 5, 4), f(4, 5, 4), f(4, 5, 4), b(2, 1, 1, 5)),
      follows_dtype=False, tolerance=1e-4)
  add('Favor', lambda: tl.Favor(8, n_heads=2), (f(2, 5, 8), b(2, 1, 1, 5)),
      follows_dtype=False)
  add('CausalFavorAttention', tl.CausalFavorAttention, (f(4, 5, 4),) * 3,
      follows_dtype=False)
  add('CausalFavor', lambda: tl.CausalFavor(8, n_heads=2), f(2, 5, 8),
      follows_dtype=False)
  add('SparseFF', lambda: tl.SparseFF(16, n_elements_in_block=4, d_lowrank=4,
                                      mode='eval'), f(2, 3, 8),
      follows_dtype=False)
  add('SparseFF_predict',
      lambda: tl.SparseFF(16, n_elements_in_block=4, d_lowrank=4,
                          mode='predict', multiply_by_controller_output=True),
      f(2, 3, 8), follows_dtype=False)
  add('BlockSparseFF', lambda: tl.BlockSparseFF(16, n_experts=4, mode='eval'),
      f(2, 3, 8), follows_dtype=False)
  add('SwitchSparseFF', lambda: tl.SwitchSparseFF(16, n_experts=4,
                                                  mode='eval'),
      f(2, 3, 8), follows_dtype=False)
  add('ReversibleReshapePermute', tl.ReversibleReshapePermute, f(2, 3, 8))
  add('ReversibleRandomPermute', tl.ReversibleRandomPermute, f(2, 3, 6))
  add('SplitLastAxis_MergeLastTwoAxes', lambda: tl.Serial(
      tl.SplitLastAxis(2), tl.Tanh(), tl.MergeLastTwoAxes()), f(2, 3, 8))
  add('LocallyConnectedDense', lambda: tl.LocallyConnectedDense(
      2, 3, kernel_size=3), f(2, 3, 8))
  add('LocallyConvDense', lambda: tl.LocallyConvDense(
      2, 3, mode='eval', kernel_size=3, length_kernel_size=2), f(2, 3, 8))
  add('LowRankDense', lambda: tl.LowRankDense(5, 2), f(2, 3, 8))
  add('EinsumDense', lambda: tl.EinsumDense(8, 5, use_bias=True), f(2, 8),
      follows_dtype=False)
  add('FactoredDense', lambda: tl.FactoredDense(2, 8, 6), f(2, 3, 8),
      follows_dtype=False)
  add('MultiplicativeModularSparseDense',
      lambda: tl.MultiplicativeModularSparseDense(2, 8), f(2, 3, 8),
      follows_dtype=False)
  add('RandomLayer', lambda: tl.RandomLayer(tl.Dense(3), tl.Dense(3), 0.5),
      f(2, 4), stochastic=True)
  add('SparseDenseWithOptions', lambda: tl.SparseDenseWithOptions(
      8, d_input=8, sparsity_type='mult', sparsity=2, prob_sparse=0.5,
      mode='eval'), f(2, 8), follows_dtype=False)
  add('ModularCausalAttention', lambda: tl.ModularCausalAttention(
      8, n_heads=2, mode='eval'), f(2, 4, 8))
  add('ConvCausalAttention', lambda: tl.ConvCausalAttention(
      8, n_heads=2, kernel_size=3, mode='eval'), f(2, 4, 8))
  add('LowRankCausalAttention', lambda: tl.LowRankCausalAttention(
      8, n_heads=2, lowrank=2, mode='eval'), f(2, 4, 8))
  add('MultiplicativeCausalAttention',
      lambda: tl.MultiplicativeCausalAttention(8, n_heads=2, mode='eval'),
      f(2, 4, 8), follows_dtype=False)
  add('MultiplicativeModularCausalAttention',
      lambda: tl.MultiplicativeModularCausalAttention(8, n_heads=2,
                                                      mode='eval'),
      f(2, 4, 8), follows_dtype=False)
  add('MultiplicativeConvCausalAttention',
      lambda: tl.MultiplicativeConvCausalAttention(
          8, n_heads=2, output_layer_type='multconv', v_concat_type='fixed',
          mode='eval'), f(2, 4, 8), follows_dtype=False)


def _relative_and_resampling(add, f, i, b):
  del i
  add('RelativeAttentionWrapper', lambda: tl.RelativeAttentionWrapper(
      8, 2, mode='eval', context_bias_layer=_rel_biases()[0],
      location_bias_layer=_rel_biases()[1], total_pooling=1), f(2, 4, 8),
      follows_dtype=False,
      covers=('RelativeAttentionLMLayer', 'RelativeAttentionLayer',
              'RelativeAttention', 'PositionalEmbeddings',
              'CreateAttentionMaskLayer'))
  add('RelativeAttentionLMLayer_pooled', lambda: tl.RelativeAttentionLMLayer(
      8, *_rel_biases(), 2, n_heads=2, mode='eval'),
      (f(2, 2, 8), f(2, 4, 8), f(2, 4, 8)), follows_dtype=False)
  add('RelativeAttentionLayer', lambda: tl.RelativeAttentionLayer(
      8, *_rel_biases(), 1, False, n_heads=2, mode='eval'),
      (f(2, 4, 8), f(2, 4, 8), f(2, 4, 8), b(2, 1, 4, 4)),
      follows_dtype=False)
  add('RelativeAttention', lambda: tl.RelativeAttention(False, 2, mode='eval'),
      (f(1, 2, 1, 4), f(1, 2, 1, 4), f(7, 8), f(2, 4, 8), f(2, 2, 8),
       f(2, 2, 8), b(2, 1, 4, 2)), follows_dtype=False)
  add('ShiftRightCls', lambda: tl.ShiftRightCls(3), f(2, 4, 3))
  add('Rotate', tl.Rotate, f(2, 5, 6), follows_dtype=False)
  add('AveragePooling', lambda: tl.AveragePooling(2), f(2, 6, 4))
  add('LinearPooling', lambda: tl.LinearPooling(2, 8, mode='eval'),
      f(2, 6, 4))
  add('LinearUpsampling', lambda: tl.LinearUpsampling(3, 8, mode='eval'),
      f(2, 2, 8))
  add('NaiveUpsampling', lambda: tl.NaiveUpsampling(2, 4), f(2, 3, 4))
  add('NoUpsampling', lambda: tl.NoUpsampling(2, 4), f(2, 3, 4))
  add('FeedForwardBlock', lambda: tl.Serial(tl.FeedForwardBlock(
      8, 16, 0.0, None, 'eval', tl.Relu)), f(2, 3, 8))
  add('AttentionResampling', lambda: tl.Serial(tl.AttentionResampling(
      2, 8, False, 16, 2, 0.0, None, 'eval', tl.Relu, *_rel_biases(), 1,
      tl.AveragePooling)), f(2, 4, 8), follows_dtype=False)


def _research_models(add, i):
  add('HourglassLM', lambda: models.HourglassLM(
      11, d_model=8, d_ff=16, n_heads=2, hierarchy='1@2', dropout=0.0,
      mode='eval'), i(2, 4), int_high=11, follows_dtype=False,
      tolerance=1e-4)
  add('BERT_BERTClassifierHead',
      lambda: models.BERT(d_model=8, vocab_size=12, max_len=8,
                          type_vocab_size=12, n_heads=2, d_ff=16, n_layers=1,
                          head=functools.partial(models.BERTClassifierHead,
                                                 3)),
      (i(2, 5), i(2, 5), i(2)), int_high=12, tolerance=1e-4,
      follows_dtype=False)
  add('BERTRegressionHead',
      lambda: models.BERT(d_model=8, vocab_size=12, max_len=8,
                          type_vocab_size=12, n_heads=2, d_ff=16, n_layers=1,
                          head=models.BERTRegressionHead),
      (i(2, 5), i(2, 5), i(2)), int_high=12, tolerance=1e-4,
      follows_dtype=False, covers=('BERT',))
  add('ConfigurableTerraformer',
      lambda: models.ConfigurableTerraformer(
          12, d_model=8, d_ff=16, n_encoder_layers=1, n_decoder_layers=1,
          n_heads=2, max_len=8, mode='eval'),
      (i(2, 5), i(2, 4)), int_high=12, tolerance=1e-4, follows_dtype=False)
  # LSH attention inside the reversible stacks, in eval mode: its hash
  # rotations come from the layer's rng, the same for every run.
  add('ReformerLM_LSH', lambda: models.ReformerLM(
      16, d_model=8, d_ff=16, d_attention_key=4, d_attention_value=4,
      n_layers=2, n_heads=2, max_len=8, mode='eval',
      attention_type=functools.partial(tl.LSHSelfAttention, chunk_len=4,
                                       n_buckets=2, n_hashes=2)),
      i(2, 8), int_high=16, tolerance=1e-4, follows_dtype=False)
  add('ConfigurableTerraformer_LSH_sparse', lambda: (
      models.ConfigurableTerraformer(
          12, d_model=8, d_ff=16, n_encoder_layers=1, n_decoder_layers=1,
          n_heads=2, max_len=8, ff_sparsity=4, mode='eval',
          encoder_decoder_attention_type=functools.partial(
              tl.LSHSelfAttention, chunk_len=4, n_buckets=2, n_hashes=1))),
      (i(2, 8), i(2, 8)), int_high=12, tolerance=1e-4, follows_dtype=False)
  add('Transformer2',
      lambda: models.Transformer2(12, d_model=8, d_ff=16, n_encoder_layers=1,
                                  n_decoder_layers=1, n_heads=2, max_len=8,
                                  mode='eval'),
      (i(2, 5), i(2, 4)), int_high=12, tolerance=1e-4, follows_dtype=False)
