"""Configurable Transformers against real Trax, TransformerLM and decoding.

Trax 1.4.1 built the same tiny models; loading its weights into ours must
give its outputs (tests/testdata/reformer/). The default LM must equal our
TransformerLM under shared weights. The sparse options (Trax's sparsity
layers) must match Trax too (tests/testdata/terraformer/sparse_options.*),
and, with such a layer missing, fail with an error naming it.
"""


import numpy as np
import pytest

from tests import _fixtures
from tests import _layer_testing as lt
from tests.models.research import _recorded
from tfnp_trax import fastmath
from tfnp_trax import layers as tl
from tfnp_trax import models
from tfnp_trax import shapes
from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.layers.research import efficient_attention
from tfnp_trax.models.research import configurable_transformer as ct
from tfnp_trax.supervised import decoding

TINY = dict(d_model=8, d_ff=16, n_heads=2, dropout=0.0)

# The cases of tests/testdata/reformer/make_fixtures.py, built here with the
# same arguments.
BUILDERS = {
    'ct_lm': lambda: ct.ConfigurableTransformerLM(
        11, n_layers=2, max_len=16, mode='eval', **TINY),
    'ct_lm_chunked_sru': lambda: ct.ConfigurableTransformerLM(
        11, n_layers=1, max_len=16, mode='eval', ff_chunk_size=4,
        ff_use_sru=(1, 8), attention_chunk_size=1, ff_activation=tl.Gelu,
        **TINY),
    'ct_encoder_axial': lambda: ct.ConfigurableTransformerEncoder(
        11, n_classes=3, n_layers=1, max_len=16, mode='eval',
        pos_type='axial', pos_axial_shape=(2, 4), pos_d_axial_embs=(4, 4),
        ff_use_sru=1, **TINY),
    'ct_transformer': lambda: ct.ConfigurableTransformer(
        11, n_encoder_layers=1, n_decoder_layers=1, max_len=16, mode='eval',
        **TINY),
    'ct_transformer_two_vocabs': lambda: ct.ConfigurableTransformer(
        11, output_vocab_size=13, n_encoder_layers=1, n_decoder_layers=1,
        max_len=16, mode='train', **TINY),
    'ct_lm_selfattention': lambda: ct.ConfigurableTransformerLM(
        11, n_layers=1, max_len=16, mode='eval',
        attention_type=efficient_attention.SelfAttention, **TINY),
    'ct_lm_sin_cos': lambda: ct.ConfigurableTransformerLM(
        11, n_layers=1, max_len=16, mode='eval', pos_type='sin-cos', **TINY),
    'ct_lm_infinite': lambda: ct.ConfigurableTransformerLM(
        11, n_layers=1, max_len=16, mode='eval', pos_type='infinite',
        **TINY),
    'ct_lm_infinite_affine': lambda: ct.ConfigurableTransformerLM(
        11, n_layers=1, max_len=16, mode='eval', pos_type='infinite-affine',
        **TINY),
    'ct_lm_no_pos': lambda: ct.ConfigurableTransformerLM(
        11, n_layers=1, max_len=16, mode='eval', pos_type='no', **TINY),
    'ct_lm_pos_offset': lambda: ct.ConfigurableTransformerLM(
        11, n_layers=1, max_len=16, mode='train',
        pos_start_from_zero_prob=0.5, pos_max_offset_to_add=4, **TINY),
    'ct_encoder_fixed_base': lambda: ct.ConfigurableTransformerEncoder(
        11, n_classes=3, n_layers=1, max_len=16, mode='eval',
        pos_type='fixed-base', **TINY),
}


@pytest.mark.parametrize('name', sorted(BUILDERS))
def test_structure_matches_trax(name):
  _recorded.assert_structure_matches(name, BUILDERS[name]())


@pytest.mark.parametrize('name', [n for n in sorted(BUILDERS)
                                  if _recorded.record(n)['values']])
def test_outputs_match_trax_with_trax_weights(name):
  _recorded.assert_outputs_match(name, BUILDERS[name](),
                                modes=lt.MODES if name == 'ct_lm' else ('eager',))


def test_default_lm_equals_transformer_lm(rng):
  """Trax's definitions coincide: same leaves give the same logits."""
  kwargs = dict(d_model=8, d_ff=16, n_layers=2, n_heads=2, max_len=16,
                dropout=0.0, mode='eval')
  ours = ct.ConfigurableTransformerLM(11, **kwargs)
  plain = models.TransformerLM(11, **kwargs)
  sig = shapes.ShapeDtype((2, 8), jnp.int32)
  ours.init(sig, rng=fastmath.random.get_prng(0))
  plain.init(sig, rng=fastmath.random.get_prng(1))
  leaves = fastmath.tree_flatten(ours.weights)
  assert ([w.shape for w in leaves] ==
          [w.shape for w in fastmath.tree_flatten(plain.weights)])
  plain.weights, _ = fastmath.tree_unflatten(leaves, plain.weights)
  tokens = jnp.asarray(rng.integers(0, 11, size=(2, 8)).astype(np.int32))
  np.testing.assert_allclose(np.asarray(ours(tokens)),
                             np.asarray(plain(tokens)), rtol=1e-5, atol=1e-6)


def test_predict_mode_decoding_matches_full_forward(rng):
  kwargs = dict(d_model=8, d_ff=16, n_layers=2, n_heads=2, max_len=16,
                dropout=0.0)
  full = ct.ConfigurableTransformerLM(11, mode='eval', **kwargs)
  full.init(shapes.ShapeDtype((1, 6), jnp.int32),
            rng=fastmath.random.get_prng(0))
  fast = ct.ConfigurableTransformerLM(11, mode='predict', **kwargs)
  fast.init(shapes.ShapeDtype((1, 1), jnp.int32))
  fast.weights = full.weights
  tokens = decoding.autoregressive_sample(fast, temperature=0.0, eos_id=-1,
                                          max_length=6)
  tokens = np.asarray(tokens)
  # Greedy decoding: each token is the argmax of the full forward's logits
  # at its position, given the tokens before it.
  logits = np.asarray(full(jnp.asarray(tokens)))
  np.testing.assert_array_equal(tokens, logits.argmax(-1))


def test_chunked_feed_forward_equals_unchunked(rng):
  plain = ct.ConfigurableTransformerLM(11, n_layers=1, max_len=16,
                                       mode='eval', **TINY)
  chunked = ct.ConfigurableTransformerLM(11, n_layers=1, max_len=16,
                                         mode='eval', ff_chunk_size=3,
                                         attention_chunk_size=1, **TINY)
  sig = shapes.ShapeDtype((2, 6), jnp.int32)
  plain.init(sig, rng=fastmath.random.get_prng(0))
  chunked.init(sig, rng=fastmath.random.get_prng(1))
  chunked.weights, _ = fastmath.tree_unflatten(
      fastmath.tree_flatten(plain.weights), chunked.weights)
  tokens = jnp.asarray(rng.integers(0, 11, size=(2, 6)).astype(np.int32))
  np.testing.assert_allclose(np.asarray(chunked(tokens)),
                             np.asarray(plain(tokens)), rtol=1e-5, atol=1e-6)


# Each option, and the layers it needs; the test takes them out of `tl`, as
# before tfnp_trax had them, so the message stays checked.
@pytest.mark.parametrize('kwargs, missing, pattern', [
    (dict(ff_sparsity=4), ['SparseFF'],
     r"ConfigurableTransformerLM: ff_sparsity=4 needs "
     r"tl\.SparseFF \(ff_sparsity_type='1inN'\) from Trax's research layers, "
     r'which tfnp_trax does not provide yet; use ff_sparsity=0'),
    (dict(ff_sparsity='4 16', ff_sparsity_type='1inN'), ['SparseFF'],
     r'ff_sparsity=\[4, 16\] needs tl\.SparseFF'),
    (dict(ff_sparsity=2, ff_sparsity_type='Block'), ['BlockSparseFF'],
     r'ff_sparsity=2 needs tl\.BlockSparseFF'),
    (dict(ff_sparsity=2, ff_sparsity_type='Switch'), ['SwitchSparseFF'],
     r'ff_sparsity=2 needs tl\.SwitchSparseFF'),
    (dict(loss_sparsity=2), ['SparseDenseWithOptions'],
     r'loss_sparsity=2 needs tl\.FactoredDense'),
    (dict(loss_sparsity=2, loss_sparsity_type='lowrank'),
     ['SparseDenseWithOptions'], r'loss_sparsity=2 needs tl\.LowRankDense'),
    (dict(loss_sparsity_prob=0.5), ['SparseDenseWithOptions'],
     r'loss_sparsity_prob=0\.5 needs tl\.RandomLayer'),
])
def test_missing_layers_are_named(kwargs, missing, pattern, monkeypatch):
  for name in missing:
    monkeypatch.delattr(tl, name, raising=False)
  with pytest.raises(NotImplementedError, match=pattern):
    ct.ConfigurableTransformerLM(11, **kwargs)


def test_other_missing_layers_are_named(monkeypatch):
  for name in ('SparseFF', 'FactoredDense', 'LocallyConvDense'):
    monkeypatch.delattr(tl, name, raising=False)
  with pytest.raises(NotImplementedError,
                     match=r'ConfigurableTransformer: '
                     r'enc_dec_attention_sparsity=2 needs tl\.FactoredDense '
                     r'and tl\.LocallyConvDense'):
    ct.ConfigurableTransformer(11, enc_dec_attention_sparsity=2)
  with pytest.raises(NotImplementedError,
                     match=r'ConfigurableTransformerEncoder: ff_sparsity=8'):
    ct.ConfigurableTransformerEncoder(11, ff_sparsity=8)
  with pytest.raises(NotImplementedError,
                     match=r'FeedForwardWithOptions: ff_sparsity=8'):
    ct.FeedForwardWithOptions(8, 16, 0.0, None, tl.Relu, 0.0, 0, 0, 8, True,
                              'eval')


def test_bad_options():
  with pytest.raises(ValueError, match=r"unknown loss_sparsity_type 'bad'"):
    ct.ConfigurableTransformerLM(11, loss_sparsity=2,
                                 loss_sparsity_type='bad')
  with pytest.raises(ValueError, match=r"ff_sparsity=\[4, 8, 2\] with "
                     r"ff_sparsity_type='1inN' must be an int n, a pair"):
    ct.FeedForwardWithOptions(8, 16, 0.0, None, tl.Relu, 0.0, 0, 0,
                              [4, 8, 2], True, 'eval')
  with pytest.raises(ValueError, match=r"pos_type='axial' selects "
                     r'AxialPositionalEncoding, which needs pos_axial_shape'):
    ct.ConfigurableTransformerLM(11, pos_type='axial')
  # Trax 1.4.1 builds TimeBinPositionalEncoding without its time_bin_length.
  with pytest.raises(TypeError, match=r"ConfigurableTransformer: "
                     r"pos_type='time-bin' builds tl\.TimeBinPositional"
                     r'Encoding without its required time_bin_length'):
    ct.ConfigurableTransformer(11, pos_type='time-bin')


# Sparse options against Trax: tests/testdata/terraformer/sparse_options.*,
# from make_sparse_fixtures.py there (same constructors and arguments).
_SPARSE = dict(d_model=8, d_ff=16, n_heads=2, max_len=16, dropout=0.1,
               mode='eval')
SPARSE_CASES = {
    'lm_sparse_ff_1inN': (ct.ConfigurableTransformerLM,
                          dict(n_layers=1, ff_sparsity=4)),
    'lm_sparse_ff_pair': (ct.ConfigurableTransformerLM,
                          dict(n_layers=1, ff_sparsity='4 8')),
    'lm_block_ff': (ct.ConfigurableTransformerLM,
                    dict(n_layers=1, ff_sparsity=2,
                         ff_sparsity_type='Block')),
    'lm_switch_ff': (ct.ConfigurableTransformerLM,
                     dict(n_layers=1, ff_sparsity=2,
                          ff_sparsity_type='Switch')),
    'lm_loss_mult': (ct.ConfigurableTransformerLM,
                     dict(n_layers=1, loss_sparsity=2)),
    'lm_loss_lowrank': (ct.ConfigurableTransformerLM,
                        dict(n_layers=1, loss_sparsity=2,
                             loss_sparsity_type='lowrank', loss_d_lowrank=3)),
    'lm_loss_einsum': (ct.ConfigurableTransformerLM,
                       dict(n_layers=1, loss_sparsity=2,
                            loss_sparsity_type='einsum')),
    'lm_loss_local': (ct.ConfigurableTransformerLM,
                      dict(n_layers=1, loss_sparsity=2,
                           loss_sparsity_type='local')),
    # In eval mode Trax always takes the sparse branch of the RandomLayer.
    'lm_loss_prob': (ct.ConfigurableTransformerLM,
                     dict(n_layers=1, loss_sparsity=2,
                          loss_sparsity_prob=0.5)),
    'transformer_enc_dec_sparse': (
        ct.ConfigurableTransformer,
        dict(n_encoder_layers=1, n_decoder_layers=1,
             enc_dec_attention_sparsity=2)),
}
_SPARSE_RECORDING = _fixtures.Recording(
    'terraformer', 'sparse_options.json', 'sparse_options.npz')
sparse_case_arrays = _SPARSE_RECORDING.numbered


def check_sparse_case(name, make, kwargs):
  """Builds the case with Trax's weights; compares str, shapes, outputs."""
  model = make(16, **dict(_SPARSE, **kwargs))
  xs = [jnp.asarray(x) for x in sparse_case_arrays(name, 'x')]
  xs = tuple(xs) if len(xs) > 1 else xs[0]
  model.init(shapes.signature(xs))
  record = _SPARSE_RECORDING.records[name]
  assert str(model) == record['repr']
  assert [list(w.shape) for w in fastmath.tree_flatten(model.weights)] == (
      record['weight_shapes'])
  leaves = [jnp.asarray(w) for w in sparse_case_arrays(name, 'w')]
  model.weights = fastmath.tree_unflatten(leaves, model.weights)[0]
  ys = model(xs)
  ys = ys if isinstance(ys, tuple) else (ys,)
  for y, want in zip(ys, sparse_case_arrays(name, 'y')):
    np.testing.assert_allclose(np.asarray(y, np.float64), want, rtol=1e-4,
                               atol=1e-5, err_msg=name)


@pytest.mark.parametrize('name', sorted(SPARSE_CASES))
def test_sparse_options_match_trax(name):
  make, kwargs = SPARSE_CASES[name]
  check_sparse_case(name, make, kwargs)


def _printout_and_weight_shapes(model, signature):
  model.init(signature)
  return (str(model).splitlines(),
          [tuple(w.shape) for w in fastmath.tree_flatten(model.weights)])


def test_options_that_keep_the_dense_layers_are_accepted():
  # As in Trax: an unknown ff_sparsity_type falls back to the dense block,
  # and loss sparsity only counts with a sparsity type.
  lm_signature = shapes.signature(np.ones((1, 8), np.int32))
  dense_lm = _printout_and_weight_shapes(
      ct.ConfigurableTransformerLM(11, n_layers=1), lm_signature)
  assert _printout_and_weight_shapes(
      ct.ConfigurableTransformerLM(11, n_layers=1, ff_sparsity=4,
                                   ff_sparsity_type='dense'),
      lm_signature) == dense_lm
  assert _printout_and_weight_shapes(
      ct.ConfigurableTransformerLM(11, n_layers=1, loss_sparsity=4,
                                   loss_sparsity_type=None),
      lm_signature) == dense_lm
  # ('noop', None) is (query, result) sparsity: as Trax's AttentionQKV does,
  # the encoder-decoder queries go unprojected (an empty Serial instead of
  # their Dense) and the result keeps its Dense; no sparse layer appears.
  pair_signature = shapes.signature((np.ones((1, 8), np.int32),) * 2)
  dense_lines, dense_shapes = _printout_and_weight_shapes(
      ct.ConfigurableTransformer(11, n_encoder_layers=1, n_decoder_layers=1),
      pair_signature)
  noop_lines, noop_shapes = _printout_and_weight_shapes(
      ct.ConfigurableTransformer(11, n_encoder_layers=1, n_decoder_layers=1,
                                 enc_dec_attention_sparsity=('noop', None)),
      pair_signature)
  assert len(noop_lines) == len(dense_lines)
  assert [(d.strip(), n.strip()) for d, n in zip(dense_lines, noop_lines)
          if d != n] == [('Dense_512', 'Serial')]
  assert len(noop_shapes) == len(dense_shapes) - 2  # The query's w and b.
  assert sorted(dense_shapes) == sorted(noop_shapes + [(512, 512), (512,)])


def test_apply_attention_layer_picks_the_constructor_api():
  classic = ct.ApplyAttentionLayer(tl.CausalAttention, 8, 2, 4, 4, True,
                                   False, 0.0, 0.0, 0, 'eval')
  efficient = ct.ApplyAttentionLayer(efficient_attention.SelfAttention, 8, 2,
                                     4, 4, True, False, 0.0, 0.0, 2, 'eval')
  assert classic.name == tl.CausalAttention(8, n_heads=2).name
  # attention_chunk_size=2 wraps the layer in tl.Chunk's Serial.
  assert 'SelfAttention' in str(efficient) and 'Scan' in str(efficient)


def test_lm_position_offsets_reach_the_positional_encoding():
  """pos_start_from_zero_prob/pos_max_offset_to_add act in training only."""
  tokens = jnp.asarray(np.arange(1, 9, dtype=np.int32).reshape(1, 8))

  def logits(mode, **kwargs):
    model = ct.ConfigurableTransformerLM(11, n_layers=1, max_len=16,
                                         mode=mode, ff_dropout=0.0,
                                         **dict(TINY, **kwargs))
    model.init(shapes.signature(tokens), rng=fastmath.random.get_prng(0))
    return [np.asarray(model(tokens, rng=fastmath.random.get_prng(seed)))
            for seed in range(4)]

  evaluated = logits('eval')[0]
  for y in logits('train'):  # Defaults: always start at position 0.
    np.testing.assert_allclose(y, evaluated, rtol=1e-5, atol=1e-6)
  shifted = logits('train', pos_start_from_zero_prob=0.0,
                   pos_max_offset_to_add=8)
  assert sum(not np.allclose(y, evaluated, atol=1e-4) for y in shifted) >= 2
  for y in logits('eval', pos_start_from_zero_prob=0.0,
                  pos_max_offset_to_add=8):
    np.testing.assert_allclose(y, evaluated, rtol=1e-5, atol=1e-6)
