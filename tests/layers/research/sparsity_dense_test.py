"""sparsity.py, part 1: permutations and the Dense replacements.

References: NumPy float64 functions written here from the layers'
definitions (with finite-difference gradients, via tests/_layer_testing),
hand-derived values, and outputs of Trax 1.4.1 recorded with the same
weights (tests/testdata/sparsity_part1/). The attentions built on these
layers are tested in sparsity_attention_test.py.
"""

import math

import numpy as np
import pytest

from tests import _fixtures
from tests import _layer_testing as lt
from tfnp_trax import fastmath
from tfnp_trax import layers as tl
from tfnp_trax import shapes
from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.layers.research import _local_conv
from tfnp_trax.layers.research import sparsity as sp

CASES = {c['key']: c for c in
         _fixtures.json_file('sparsity_part1', 'cases.json')['cases']}
ARRAYS = _fixtures.arrays('sparsity_part1', 'fixtures.npz')


# -- NumPy references (float64) ---------------------------------------------


def leaves(w):
  return list(fastmath.tree_flatten(w))


def dense_ref(x, w, b=None):
  return x @ w + (0 if b is None else b)


def locally_connected_ref(x, w, b, n_modules):
  """Output module o = sum_i x_module[(o - h + i) mod M] @ w[that module, i]."""
  xs = x.reshape(x.shape[:-1] + (n_modules, -1))
  k = w.shape[1]
  h = (k - 1) // 2
  out = []
  for o in range(n_modules):
    acc = b[o].copy()
    for i in range(k):
      src = (o - h + i) % n_modules
      acc = acc + xs[..., src, :] @ w[src, i]
    out.append(acc)
  return np.stack(out, -2).reshape(x.shape[:-1] + (-1,))


def local_conv_ref(x, kernel, bias, n_modules):
  """Conv over (length, modules): causal in length, centred in modules."""
  lk, k = kernel.shape[:2]
  b, length, _ = x.shape
  xs = x.reshape(b, length, n_modules, -1)
  xs = np.pad(xs, [(0, 0), (lk - 1, 0), ((k - 1) // 2,) * 2, (0, 0)])
  y = np.zeros((b, length, n_modules, kernel.shape[-1]))
  for t in range(length):
    for m in range(n_modules):
      window = xs[:, t:t + lk, m:m + k, :]  # (b, lk, k, d_module)
      y[:, t, m] = np.einsum('bacd,acdu->bu', window, kernel) + bias
  return y.reshape(b, length, -1)


def factored_ref(x, gating, projection, bias=None):
  y = np.einsum('...d,nd,dm->...nm', x, gating, projection)
  y = y.reshape(x.shape[:-1] + (-1,))
  return y if bias is None else y + bias


def modular_sparse_ref(x, gating, projection, kernels, bias):
  gated = np.einsum('...d,hd->...hd', x, gating) @ projection  # (..., h, x)
  y = np.einsum('...hx,hxo->...ho', gated, kernels)
  return y.reshape(x.shape[:-1] + (-1,)) + bias


def lowrank_ref(x, w1, b1, w2, b2):
  return dense_ref(dense_ref(x, w1, b1), w2, b2)


def einsum_dense_ref(x, kernel, bias=None):
  return x @ kernel.T + (0 if bias is None else bias)


def make_x(*shape, seed=0):
  """Float32 standard-normal inputs of `shape`, from a fixed seed."""
  return np.random.RandomState(seed).normal(size=shape).astype(np.float32)


# -- Permutations ------------------------------------------------------------


@pytest.mark.parametrize('d, m', [(2, 2), (8, 2), (16, 2), (32, 4),
                                  (64, 2), (128, 8), (1024, 16)])
def test_reshape_permute_matches_numpy_and_has_longest_cycle(d, m):
  # m = 2**k with k the largest integer <= n/2 not dividing n = log2(d), or
  # 1 (worked out by hand from Trax's rule). A transpose of the (d/m, m)
  # view has cycle n / gcd(n, k).
  x = make_x(3, d)
  layer = sp.ReversibleReshapePermute()
  y = np.asarray(layer(x))
  np.testing.assert_array_equal(
      y, x.reshape(3, d // m, m).swapaxes(-1, -2).reshape(3, d))
  np.testing.assert_array_equal(layer.reverse(jnp.asarray(y)), x)
  n, k = int(math.log2(d)), int(math.log2(m))
  cycle = n // math.gcd(n, k)
  z = jnp.asarray(x)
  for i in range(1, cycle + 1):
    z = layer(z)
    assert np.array_equal(np.asarray(z), x) == (i == cycle), i


@pytest.mark.parametrize('key', ['rrp8', 'rrp32', 'rrand10'])
def test_permutes_match_trax_bit_for_bit(key):
  case = CASES[key]
  layer = getattr(sp, case['ctor'])()
  x = ARRAYS[f'{key}/x']
  assert str(layer) == case['str']
  np.testing.assert_array_equal(layer(x), ARRAYS[f'{key}/y'])
  np.testing.assert_array_equal(layer.reverse(jnp.asarray(x)),
                                ARRAYS[f'{key}/reverse'])


@pytest.mark.parametrize('mode', lt.MODES)
@pytest.mark.parametrize('ctor', [sp.ReversibleRandomPermute,
                                  sp.ReversibleReshapePermute])
def test_permutes_reverse_and_gradient(ctor, mode):
  x, ct = make_x(2, 3, 16), make_x(2, 3, 16, seed=1)
  layer = ctor()
  layer.init(shapes.signature(x))

  def round_trip(xx, cc):
    y = layer.pure_fn(xx, (), (), fastmath.random.get_prng(0))[0]
    back, (gx, _) = layer.reverse_and_grad(y, cc)
    return y, back, gx
  y, back, gx = lt.compile_fn(round_trip, mode)(jnp.asarray(x),
                                                jnp.asarray(ct))
  y = np.asarray(y)
  np.testing.assert_array_equal(back, x)
  # A permutation: the same values per row, moved.
  np.testing.assert_array_equal(np.sort(y, -1), np.sort(x, -1))
  # d sum(y * ct) / dx puts each cotangent back where its value came from.
  np.testing.assert_array_equal(np.asarray(gx), layer.reverse(ct))


def test_split_and_merge_last_axes():
  x = make_x(2, 3, 8)
  split = sp.SplitLastAxis(4)
  assert str(split) == 'Serial[\n  SplitLastAxis_4\n]'
  lt.check_layer(split, x, lambda x, w: x.reshape(2, 3, 4, 2),
                 check_grad=False)
  lt.check_layer(sp.MergeLastTwoAxes(), x, lambda x, w: x.reshape(2, 24),
                 check_grad=False)


# -- Dense replacements against NumPy ----------------------------------------


def _dense_cases():
  """(layer, input, numpy_fn) for each Dense replacement; fresh layers."""
  x = make_x(2, 3, 8)
  return [
      (sp.LocallyConnectedDense(2, 3), x,
       lambda x, w: locally_connected_ref(x, *leaves(w), 2)),
      (sp.LocallyConnectedDense(4, 2, kernel_size=3), x,
       lambda x, w: locally_connected_ref(x, *leaves(w), 4)),
      (sp.LocallyConnectedDense(1, 3, use_bias=False), x,
       lambda x, w: dense_ref(x, *leaves(w))),
      (sp.LocallyConvDense(2, 3, mode='train', kernel_size=3,
                           length_kernel_size=2), x,
       lambda x, w: local_conv_ref(x, *leaves(w), 2)),
      (sp.LowRankDense(5, 2), x, lambda x, w: lowrank_ref(x, *leaves(w))),
      (sp.EinsumDense(8, 5, use_bias=True), x,
       lambda x, w: einsum_dense_ref(x, *leaves(w))),
      (sp.EinsumDense(8, 5, use_bias=False), x,
       lambda x, w: einsum_dense_ref(x, *leaves(w))),
      (sp.FactoredDense(2, 8, 6), x,
       lambda x, w: factored_ref(x, *leaves(w))),
      (sp.FactoredDense(4, 8, 4, use_bias=False), x,
       lambda x, w: factored_ref(x, *leaves(w))),
      (sp.MultiplicativeModularSparseDense(2, 8), x,
       lambda x, w: modular_sparse_ref(x, *leaves(w))),
  ]


@pytest.mark.parametrize('index', range(len(_dense_cases())))
def test_dense_variants_match_numpy_eagerly(index):
  layer, x, ref = _dense_cases()[index]
  lt.check_layer(layer, x, ref, modes=('eager',))


def test_dense_variants_match_numpy_compiled():
  lt.check_parallel(_dense_cases(), modes=('jit', 'xla'))


_DENSE_FIXTURES = [k for k, c in CASES.items()
                   if not c['ctor'].startswith('Reversible')
                   and 'Attention' not in c['ctor']]


def make_from_case(case, mode=None):
  kwargs = dict(case['kwargs'])
  if case['ctor'] == 'RandomLayer':
    return sp.RandomLayer(tl.Dense(5), tl.Dense(5), **kwargs)
  if mode is not None:
    kwargs['mode'] = mode
  return getattr(sp, case['ctor'])(**kwargs)


def load_trax_weights(layer, key, x):
  """Inits `layer` for `x` and sets the weights recorded from Trax."""
  layer.init(shapes.signature(x))
  tree = layer.weights
  n = len(leaves(tree))
  recorded = [jnp.asarray(ARRAYS[f'{key}/w{i}']).astype(w.dtype)
              for i, w in zip(range(n), leaves(tree))]
  layer.weights = fastmath.tree_unflatten(recorded, tree)[0]


@pytest.mark.parametrize('key', _DENSE_FIXTURES)
def test_dense_layers_match_trax(key):
  case = CASES[key]
  layer = make_from_case(case)
  x = ARRAYS[f'{key}/x']
  load_trax_weights(layer, key, x)
  # Same weight tree, shapes and dtypes as Trax, so its weight files load.
  ws = leaves(layer.weights)
  assert [list(w.shape) for w in ws] == case['weight_shapes']
  assert [w.dtype.name for w in ws] == case['weight_dtypes']
  assert str(layer) == case['str']
  y = layer(x, rng=fastmath.random.get_prng(3))
  assert y.dtype.name == ARRAYS[f'{key}/y'].dtype.name
  np.testing.assert_allclose(y, ARRAYS[f'{key}/y'], rtol=1e-5, atol=1e-6)


def test_factored_dense_bfloat16_weights():
  x = make_x(2, 3, 8)
  layer = sp.FactoredDense(2, 8, 6, use_bfloat16=True)
  layer.init(shapes.signature(x))
  assert {w.dtype.name for w in leaves(layer.weights)} == {'bfloat16'}
  y = layer(x)
  assert y.dtype.name == 'float32'  # As in Trax: float32 inputs promote.
  w64 = [np.asarray(w.astype(jnp.float32), np.float64)
         for w in leaves(layer.weights)]
  np.testing.assert_allclose(y, factored_ref(x.astype(np.float64), *w64),
                             rtol=1e-5, atol=1e-5)


# -- _RememberPad and LocallyConvDense decoding ------------------------------


def test_remember_pad_train_pads_zeros_and_predict_remembers():
  x = make_x(2, 3, 4)
  train = _local_conv._RememberPad(2, mode='train')
  train.init(shapes.signature(x))
  assert train.state == ()
  np.testing.assert_array_equal(
      train(x), np.concatenate([np.zeros((2, 2, 4), np.float32), x], 1))

  predict = _local_conv._RememberPad(2, mode='predict')
  predict.init(shapes.signature(x[:, :1]))
  past, marker = predict.state
  assert tuple(past.shape) == (2, 2, 4) and marker == {'init': ()}
  outs = [np.asarray(predict(x[:, i:i + 1])) for i in range(3)]
  np.testing.assert_array_equal(outs[0][:, :2], 0)
  np.testing.assert_array_equal(outs[2], x)  # Two remembered, one new.
  past, marker = predict.state
  np.testing.assert_array_equal(past, x[:, 1:])
  assert marker == {'forward': ()}

  nothing = _local_conv._RememberPad(0, mode='predict')
  nothing.init(shapes.signature(x))
  np.testing.assert_array_equal(nothing(x), x)


class _Mask:
  def __init__(self, mask):
    self._mask = mask

  def get_value(self):
    return self._mask


def test_remember_pad_mask_hook_skips_prompt_padding():
  # With the hook (Trax's Terraformer sets it), the first call remembers the
  # items just before the padding: with 2 padding positions at the end of a
  # prompt of 5, it keeps positions 1 and 2 of the prompt.

  class Masked(_local_conv._RememberPad):

    def monkey_patched_mask(self):
      return _Mask(jnp.array([1, 1, 1, 0, 0]))

  x = make_x(1, 5, 3)
  layer = Masked(2, mode='predict')
  layer.init(shapes.signature(x))
  layer(x)
  # The remembered window ends n_padding positions before the end of
  # [past (2 zeros), x (5)]: entries 3..4 of that array, i.e. x[1:3].
  np.testing.assert_array_equal(layer.state[0], x[:, 1:3])
  layer(x[:, :1])  # Later calls take the last items.
  np.testing.assert_array_equal(layer.state[0], np.concatenate(
      [x[:, 2:3], x[:, :1]], 1))


@pytest.mark.parametrize('mode', ['eager', 'xla'])
def test_locally_conv_dense_decodes_like_full_sequence(mode):
  x = make_x(2, 5, 8)
  full = sp.LocallyConvDense(2, 3, mode='eval', kernel_size=3,
                             length_kernel_size=3)
  full.init(shapes.signature(x))
  step = sp.LocallyConvDense(2, 3, mode='predict', kernel_size=3,
                             length_kernel_size=3)
  step.init(shapes.signature(x[:, :1]))
  weights, state = full.weights, step.state
  run = lt.compile_fn(
      lambda xx, s: step.pure_fn(xx, weights, s, fastmath.random.get_prng(0)),
      mode)
  outs = []
  for i in range(5):
    y, state = run(jnp.asarray(x[:, i:i + 1]), state)
    outs.append(np.asarray(y))
  np.testing.assert_allclose(np.concatenate(outs, 1), full(x), rtol=1e-5,
                             atol=1e-6)


# -- RandomLayer and SparseDenseWithOptions ----------------------------------


def test_random_layer_picks_a_with_probability_prob_a():
  layer = sp.RandomLayer(tl.Fn('A', lambda x: x + 1.0),
                         tl.Fn('B', lambda x: x - 1.0), prob_a=0.3)
  x = jnp.zeros((1,), jnp.float32)
  layer.init(shapes.signature(x))
  run = fastmath.jit(
      lambda k: layer.pure_fn(x, layer.weights, layer.state, k)[0])
  picks = [float(run(fastmath.random.get_prng(seed))[0]) for seed in
           range(300)]
  assert set(picks) == {1.0, -1.0}
  # Binomial(300, 0.3): mean 90, sd 7.9; +-5 sd.
  assert 50 < picks.count(1.0) < 130


def test_sparse_dense_with_options_outside_training_always_sparse():
  x = make_x(2, 8)
  layer = sp.SparseDenseWithOptions(8, d_input=8, sparsity_type='mult',
                                    sparsity=2, prob_sparse=0.01, mode='eval')
  layer.init(shapes.signature(x))
  sparse_weights = leaves(layer.weights[1][1])
  want = factored_ref(x.astype(np.float64),
                      *[np.asarray(w, np.float64) for w in sparse_weights])
  for seed in range(5):
    np.testing.assert_allclose(
        layer(x, rng=fastmath.random.get_prng(seed)), want, rtol=1e-5,
        atol=1e-5)


def test_sparse_dense_with_options_sparsity_zero_is_dense():
  layer = sp.SparseDenseWithOptions(4, sparsity_type='unknown', sparsity=0)
  assert str(layer) == 'Serial[\n  Dense_4\n]'


# -- Bad input ---------------------------------------------------------------


def test_construction_errors():
  with pytest.raises(ValueError, match=r'FactoredDense: d_out \(8\) must be '
                     r'a multiple of n_modules \(3\)'):
    sp.FactoredDense(3, 8, 8)
  with pytest.raises(ValueError, match=r'MultiplicativeModularSparseDense: '
                     r'd_feature \(10\) must be a multiple of sparsity \(4\)'):
    sp.MultiplicativeModularSparseDense(4, 10)
  with pytest.raises(ValueError, match='LocallyConvDense: kernel_size must '
                     'be odd, got 2'):
    sp.LocallyConvDense(2, 3, mode='train', kernel_size=2)
  with pytest.raises(ValueError, match="SparseDenseWithOptions: unknown "
                     "sparsity_type 'dense'"):
    sp.SparseDenseWithOptions(8, sparsity_type='dense', sparsity=2)
  with pytest.raises(ValueError, match="use_bias=False is not supported for "
                     "sparsity_type 'lowrank'"):
    sp.SparseDenseWithOptions(8, sparsity_type='lowrank', sparsity=2,
                              d_lowrank=2, use_bias=False)
  with pytest.raises(ValueError, match="use_bfloat16=True is only supported "
                     "for sparsity_type 'mult' or None, got 'einsum'"):
    sp.SparseDenseWithOptions(8, d_input=8, sparsity_type='einsum',
                              sparsity=2, use_bfloat16=True)
  with pytest.raises(ValueError, match=r'SparseDenseWithOptions: n_units '
                     r'\(8\) must be a multiple of sparsity \(3\)'):
    sp.SparseDenseWithOptions(8, sparsity_type='local', sparsity=3)


def test_run_time_errors_name_the_layer_and_sizes():
  def fails(layer, x, match):
    with pytest.raises(tl.LayerError, match=match):
      layer.init(shapes.signature(x))
      layer(x)
  fails(sp.ReversibleReshapePermute(), make_x(2, 12),
        r'ReversibleReshapePermute: .*power-of-two size .* got 12')
  fails(sp.SplitLastAxis(3), make_x(2, 8), r'SplitLastAxis_3: the last axis of '
        r'the input \(shape \(2, 8\)\) must be divisible by num_splits=3')
  fails(sp.LocallyConnectedDense(3, 2), make_x(2, 8), 'SplitLastAxis_3')
  fails(sp.MergeLastTwoAxes(), make_x(4),
        r'around layer MergeLastTwoAxes\): input 0 has rank 1')
  fails(sp.LocallyConvDense(2, 3, mode='train'), make_x(2, 8),
        r'LocallyConvDense: expected inputs of shape \(batch, length, d\), '
        r'got shape \(2, 8\)')

  def wrong_width(layer, match):
    layer.init(shapes.signature(make_x(2, 8)))
    with pytest.raises(tl.LayerError, match=match):
      layer(make_x(2, 6))
  wrong_width(sp.FactoredDense(2, 8, 8),
              'FactoredDense: input last dim 6 does not match d_in 8')
  wrong_width(sp.EinsumDense(8, 4, use_bias=False),
              'EinsumDense: input last dim 6 does not match d_input 8')
  wrong_width(sp.MultiplicativeModularSparseDense(2, 8),
              'MultiplicativeModularSparseDense: input last dim 6 does not '
              'match d_feature 8')
