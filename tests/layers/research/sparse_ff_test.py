"""SparseFF, BlockSparseFF and SwitchSparseFF.

Checked against float64 NumPy references written below from the layers'
definitions (outputs and finite-difference gradients, in eager, tf.function
and XLA) and against outputs recorded from Trax 1.4.1 given Trax's weights
(tests/testdata/sparsity_part2). Straight-through estimators are checked by
freezing, in the reference, the stop-gradient terms at the evaluation point.
Random parts (Gumbel noise, the hard/soft coin) are checked by their
distributions.
"""

import numpy as np
import pytest

from tests import _layer_testing as lt
from tests.layers.research import _sparsity_part2_fixtures as rec
from tfnp_trax import fastmath
from tfnp_trax import layers as tl
from tfnp_trax import shapes
from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.layers.research import _gumbel
from tfnp_trax.layers.research import sparsity

D_MODEL, D_FF, N_BLOCK, D_LOW = 8, 16, 4, 3
D1 = D_FF // N_BLOCK


# -- NumPy references ----------------------------------------------------------


def _softmax(z):
  e = np.exp(z - z.max(-1, keepdims=True))
  return e / e.sum(-1, keepdims=True)


def _one_hot(i, n):
  return (np.asarray(i)[..., None] == np.arange(n)).astype(np.float64)


def _sparse_weights(rs):
  """SparseFF's weight tree, in Trax's layout, from a NumPy generator."""
  m1, m2, mb = (lt.random(rs, D_MODEL, D_LOW), lt.random(rs, D_LOW, D1, N_BLOCK),
                lt.random(rs, D1, N_BLOCK, scale=0.3))
  w1, w2, b2 = (lt.random(rs, D_MODEL, D1, N_BLOCK),
                lt.random(rs, N_BLOCK, D1, D_MODEL), lt.random(rs, D_MODEL))
  return (((), ((), (m1, m2, mb), (w1, w2, b2), (), (), ()), ()),)


def _unpack(w):
  return w[0][1][1], w[0][1][2]


def _controller(x, m1, m2, mb):
  logits = np.einsum('bd,dl,lxy->bxy', x, m1, m2) + mb
  return logits.argmax(-1), _softmax(logits)


def sparse_ff_ref(x, w, block_mask_fn=None, multiply=False, frozen=None,
                  active=None):
  """SparseFF on (..., d_model) x: unit (j, e) reads w1[:, j, e], writes w2[e, j].

  `block_mask_fn(choice, mask)` gives the (tokens, d1, d2) factor on the
  hidden layer (default: one-hot of the choice). `frozen`, if given, holds
  the (choice, mask) taken as constants, for straight-through gradients.
  `active`, if given, is the Relu's on/off pattern, held fixed: Relu's
  gradient is 0 at 0, where masked-out units sit, which central differences
  cannot see.
  """
  (m1, m2, mb), (w1, w2, b2) = _unpack(w)
  flat = x.reshape(-1, x.shape[-1])
  choice, mask = _controller(flat, m1, m2, mb)
  if frozen is not None:
    choice = frozen[0]
  block = (_one_hot(choice, N_BLOCK) if block_mask_fn is None else
           block_mask_fn(choice, mask))
  pre = np.einsum('bd,dxy->bxy', flat, w1) * block
  hidden = np.maximum(pre, 0.0) if active is None else pre * active
  if multiply:
    hidden = hidden * (mask if frozen is None else frozen[1])
  return (np.einsum('bxy,yxd->bd', hidden, w2) + b2).reshape(x.shape)


def expert_ff_ref(x, w, switch, expert_mask=None, active=None):
  """Block/Switch FF: expert e owns units [e * n, (e + 1) * n).

  `expert_mask` is an array or a function of the router probabilities;
  `active` a fixed Relu on/off pattern (see `sparse_ff_ref`).
  """
  m1, w1, w2, b2 = w
  flat = x.reshape(-1, x.shape[-1])
  probs = _softmax(flat @ m1)
  hard = _one_hot(probs.argmax(-1), m1.shape[1])
  if expert_mask is None:
    expert_mask = hard * probs if switch else hard
  elif callable(expert_mask):
    expert_mask = expert_mask(probs)
  units = np.repeat(expert_mask, w1.shape[1] // m1.shape[1], axis=-1)
  pre = flat @ w1 * units
  hidden = np.maximum(pre, 0.0) if active is None else pre * active
  return (hidden @ w2 + b2).reshape(x.shape)


def _x(*shape, seed=0):
  return lt.random(np.random.RandomState(seed), *shape)


def _sparse_ff(mode, **kw):
  return tl.SparseFF(D_FF, n_elements_in_block=N_BLOCK, d_lowrank=D_LOW,
                     mode=mode, **kw)


# -- SparseFF against NumPy ----------------------------------------------------


@pytest.mark.parametrize('mode', ['eval', 'predict'])
@pytest.mark.parametrize('multiply', [False, True])
def test_sparse_ff_matches_numpy_in_eval_and_predict(mode, multiply):
  weights = _sparse_weights(np.random.RandomState(1))
  lt.check_layer(
      _sparse_ff(mode, multiply_by_controller_output=multiply),
      _x(2, 3, D_MODEL),
      lambda x, w: sparse_ff_ref(x, w, multiply=multiply), weights=weights)


def test_sparse_ff_train_soft_steps_match_numpy():
  # quant_prob=0: every step uses the softmax mask, all differentiable.
  weights = _sparse_weights(np.random.RandomState(2))
  lt.check_layer(_sparse_ff('train', temperature=0.0, quant_prob=0.0),
                 _x(2, 3, D_MODEL, seed=1),
                 lambda x, w: sparse_ff_ref(x, w, lambda c, m: m),
                 weights=weights)


@pytest.mark.parametrize('multiply', [False, True])
def test_sparse_ff_train_hard_steps_are_straight_through(multiply):
  # quant_prob=1: one-hot forward value; the gradient reaches the controller
  # through `one_hot + mask - stop_gradient(mask)`, and with multiply through
  # no other path (the extra factor is a stop-gradient of the mask).
  weights = _sparse_weights(np.random.RandomState(3))
  x = _x(2, 3, D_MODEL, seed=2)
  w64 = lt.to_numpy64(weights)
  (m1, m2, mb), _ = _unpack(w64)
  flat0 = x.astype(np.float64).reshape(-1, D_MODEL)
  choice0, mask0 = _controller(flat0, m1, m2, mb)
  hard0 = _one_hot(choice0, N_BLOCK)
  active0 = np.einsum('bd,dxy->bxy', flat0, _unpack(w64)[1][0]) * hard0 > 0

  def ref(x, w):
    return sparse_ff_ref(x, w, lambda c, m: hard0 + m - mask0,
                         multiply=multiply, frozen=(choice0, mask0),
                         active=active0)
  lt.check_layer(_sparse_ff('train', temperature=0.0, quant_prob=1.0,
                            multiply_by_controller_output=multiply),
                 x, ref, weights=weights)


def test_sparse_ff_chunked_equals_unchunked():
  flat_weights = _sparse_weights(np.random.RandomState(4))
  x = _x(4, 3, D_MODEL, seed=3)
  want = sparse_ff_ref(x.astype(np.float64), lt.to_numpy64(flat_weights))
  layer = _sparse_ff('eval', ff_chunk_size=4)  # 12 tokens: 3 chunks.
  layer.init(shapes.signature(x))
  # Chunk adds a level of nesting; the leaves are the same.
  weights, _ = fastmath.tree_unflatten(
      lt.leaves(lt.to_tensors(flat_weights)), layer.weights)
  weights = lt.to_tensors(weights)
  for mode in lt.MODES:
    got = lt.run_layer(layer, x, mode, weights=weights)[0]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_sparse_ff_chunked_trains_compiled():
  # Trax's SparseFF with ff_chunk_size runs in tl.Chunk, whose Scan
  # rematerializes each chunk (trax/layers/combinators.py Chunk, Scan with
  # remat=True): gradients must pass back through it in a tf.function
  # graph too, past the integer outputs of the recomputed chunk.
  flat_weights = _sparse_weights(np.random.RandomState(5))
  x = _x(4, 3, D_MODEL, seed=4)

  def make():
    return _sparse_ff('train', temperature=0.0, quant_prob=0.0,
                      ff_chunk_size=4)
  probe = make()
  probe.init(shapes.signature(x))
  weights, _ = fastmath.tree_unflatten(lt.leaves(flat_weights), probe.weights)

  def ref(x, w):
    w, _ = fastmath.tree_unflatten(lt.leaves(w), flat_weights)
    return sparse_ff_ref(x, w, lambda c, m: m)
  lt.check_layer(make(), x, ref, weights=weights, modes=('jit',))


# -- Randomness ------------------------------------------------------------------


def test_gumbel_argmax_samples_the_softmax():
  logits = np.array([0.5, -1.0, 1.5, 0.0])
  log_p = np.tile(logits - np.log(np.exp(logits).sum()), (20000, 1))
  picks = _gumbel.gumbel_argmax(fastmath.random.get_prng(0),
                                jnp.asarray(log_p, jnp.float32), 1.0)
  assert picks.dtype == jnp.int32
  freq = np.bincount(np.asarray(picks), minlength=4) / 20000
  np.testing.assert_allclose(freq, _softmax(logits), atol=0.02)
  cold = _gumbel.gumbel_argmax(fastmath.random.get_prng(1),
                               jnp.asarray(log_p[:5], jnp.float32), 0.0)
  np.testing.assert_array_equal(cold, [2] * 5)


def test_controller_samples_with_temperature_in_train_only():
  mb = np.array([[0.5, -1.0, 1.5, 0.0]], np.float32)
  tokens = 5000
  weights = (np.zeros((2, 1), np.float32), np.zeros((1, 1, 4), np.float32),
             mb)
  recalled = -np.ones((tokens, 1), np.int32)
  x = np.ones((tokens, 2), np.float32)
  for mode, want in [('train', _softmax(mb[0])), ('eval', _one_hot(2, 4))]:
    layer = sparsity._SparseFFController(  # pylint: disable=protected-access
        4, 4, 1, temperature=1.0, use_bfloat16=False, mode=mode,
        kernel_initializer=tl.GlorotUniformInitializer(),
        bias_initializer=tl.RandomNormalInitializer(1e-6),
        also_return_nondiscrete_output=True)
    layer.init(shapes.signature((x, recalled)))
    (choice, mask), _ = lt.run_layer(layer, (x, recalled), 'eager',
                                     weights=lt.to_tensors(weights))
    freq = np.bincount(np.asarray(choice)[:, 0], minlength=4) / tokens
    np.testing.assert_allclose(freq, want, atol=0.03, err_msg=mode)
    np.testing.assert_allclose(mask[0, 0], _softmax(mb[0]), rtol=1e-5)


def _hard_or_soft(layer, x, weights, keys, hard, soft):
  """Which of the two references each key's output equals."""
  seen = []
  for key in keys:
    got = np.asarray(lt.run_layer(layer, x, 'eager', weights=weights,
                                  rng=fastmath.random.get_prng(key))[0])
    is_hard = np.allclose(got, hard, rtol=1e-5, atol=1e-5)
    assert is_hard or np.allclose(got, soft, rtol=1e-5, atol=1e-5), key
    seen.append(is_hard)
  return seen


def test_sparse_ff_uses_hard_masks_on_a_quant_prob_fraction_of_steps():
  weights = lt.to_tensors(_sparse_weights(np.random.RandomState(5)))
  x = _x(2, 3, D_MODEL, seed=4)
  w64, x64 = lt.to_numpy64(weights), x.astype(np.float64)
  hard = sparse_ff_ref(x64, w64)
  soft = sparse_ff_ref(x64, w64, lambda c, m: m)
  layer = _sparse_ff('train', temperature=0.0, quant_prob=0.3)
  layer.init(shapes.signature(x))
  seen = _hard_or_soft(layer, x, weights, range(60), hard, soft)
  assert 6 <= sum(seen) <= 30, sum(seen)  # Binomial(60, 0.3): mean 18.


def test_block_sparse_ff_train_flips_between_hard_and_soft():
  rs = np.random.RandomState(6)
  weights = tuple(lt.random(rs, *s) for s in [(D_MODEL, 4), (D_MODEL, D_FF),
                                              (D_FF, D_MODEL), (D_MODEL,)])
  x = _x(2, 3, D_MODEL, seed=5)
  w64, x64 = lt.to_numpy64(weights), x.astype(np.float64)
  probs = _softmax(x64.reshape(-1, D_MODEL) @ w64[0])
  hard = expert_ff_ref(x64, w64, switch=False)
  soft = expert_ff_ref(x64, w64, switch=False, expert_mask=probs)
  layer = tl.BlockSparseFF(D_FF, n_experts=4, temperature=0.0)
  layer.init(shapes.signature(x))
  seen = _hard_or_soft(layer, x, lt.to_tensors(weights), range(16), hard,
                       soft)
  assert 0 < sum(seen) < 16, seen
  # Gradients of one hard and one soft step (eager: the keys were found
  # eagerly). Hard steps pass the gradient straight through to the router.
  flat0 = x64.reshape(-1, D_MODEL)
  onehot0 = _one_hot(probs.argmax(-1), 4)
  active0 = flat0 @ w64[1] * np.repeat(onehot0, 4, axis=-1) > 0
  refs = {True: lambda x, w: expert_ff_ref(
              x, w, False, lambda p: onehot0 + p - probs, active0),
          False: lambda x, w: expert_ff_ref(x, w, False, lambda p: p)}
  ct = np.random.RandomState(12).normal(size=x.shape)
  for is_hard in (True, False):
    key = fastmath.random.get_prng(seen.index(is_hard))
    _, _, gx, gw = lt.forward_and_grads(layer, x, lt.to_tensors(weights),
                                        layer.state, ct, 'eager', rng=key)
    want = lt.numeric_grads(lambda x, *w: refs[is_hard](x, w),
                            [x64] + list(w64), ct)
    lt.assert_close([gx] + list(gw), want, rtol=1e-4, atol=1e-4,
                    err_msg=f'hard={is_hard}')


# -- BlockSparseFF and SwitchSparseFF --------------------------------------------


def _expert_weights(seed):
  rs = np.random.RandomState(seed)
  return (lt.random(rs, D_MODEL, 4), lt.random(rs, D_MODEL, D_FF),
          lt.random(rs, D_FF, D_MODEL), lt.random(rs, D_MODEL))


@pytest.mark.parametrize('cls,switch', [(tl.BlockSparseFF, False),
                                        (tl.SwitchSparseFF, True)])
@pytest.mark.parametrize('mode,shape', [('eval', (2, 3, D_MODEL)),
                                        ('predict', (2, 3, D_MODEL)),
                                        ('predict', (1, 1, D_MODEL))])
def test_expert_ffs_match_numpy(cls, switch, mode, shape):
  # predict with one token takes the dynamic-slice path.
  lt.check_layer(cls(D_FF, n_experts=4, mode=mode), _x(*shape, seed=6),
                 lambda x, w: expert_ff_ref(x, w, switch),
                 weights=_expert_weights(7))


def test_switch_sparse_ff_trains_the_router_through_its_probability():
  # temperature 0: the argmax expert, scaled by its router probability.
  lt.check_layer(tl.SwitchSparseFF(D_FF, n_experts=4, temperature=0.0),
                 _x(2, 3, D_MODEL, seed=8),
                 lambda x, w: expert_ff_ref(x, w, switch=True),
                 weights=_expert_weights(9))


# -- Reversible recall -------------------------------------------------------------


def test_remember_in_reverse_replays_its_first_input():
  layer = sparsity._RememberInReverse()  # pylint: disable=protected-access
  first, second = np.arange(6).reshape(2, 3), np.ones((2, 3), np.int32)
  layer.init(shapes.signature(first))
  assert str(layer) == '_RememberInReverse'
  out, state = layer.pure_fn(first, (), layer.state, None)
  np.testing.assert_array_equal(out, first)
  np.testing.assert_array_equal(state[0], first)
  assert state[1] == {'running_second_time': ()}
  replay = (state[0], {'running_second_time_yes': ()})
  out, state = layer.pure_fn(second, (), replay, None)
  np.testing.assert_array_equal(out, first)
  np.testing.assert_array_equal(state[0], second)


@pytest.mark.parametrize('mode', lt.MODES)
def test_sparse_ff_reuses_the_remembered_mask_when_recomputed(mode):
  weights = lt.to_tensors(_sparse_weights(np.random.RandomState(10)))
  x = _x(2, 3, D_MODEL, seed=9)
  forced = np.random.RandomState(11).randint(0, N_BLOCK, (6, D1)).astype(
      np.int32)
  layer = _sparse_ff('train', temperature=0.0, quant_prob=1.0)
  layer.init(shapes.signature(x))
  # A first run stores its own choices in the remembering layer's state.
  _, state = lt.run_layer(layer, x, mode, weights=weights)
  w64 = lt.to_numpy64(weights)
  (m1, m2, mb), _ = _unpack(w64)
  own_choice, _ = _controller(x.astype(np.float64).reshape(-1, D_MODEL), m1,
                              m2, mb)
  np.testing.assert_array_equal(state[0][2][0], own_choice)
  # A recomputation (as reversible layers mark it) uses the stored mask.
  replay = list(state[0])
  replay[2] = (jnp.asarray(forced), {'running_second_time_yes': ()})
  got, _ = lt.run_layer(layer, x, mode, weights=weights,
                        state=(tuple(replay),))
  want = sparse_ff_ref(x.astype(np.float64), w64, frozen=(forced, None))
  np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


# -- Against Trax ------------------------------------------------------------------


@pytest.mark.parametrize('case', rec.cases_of('SparseFF', 'BlockSparseFF',
                                              'SwitchSparseFF'))
def test_outputs_and_weights_match_trax(case):
  rec.check_recorded(case)


def test_weight_dtypes_and_kernel_scaling_follow_trax():
  x = shapes.ShapeDtype((2, D_MODEL), np.float32)
  key = fastmath.random.get_prng(0)
  dtypes = lambda l: [w.dtype.name for w in fastmath.tree_leaves(l.weights)]
  layer = _sparse_ff('eval', use_bfloat16=True)
  layer.init(x, rng=key)
  assert dtypes(layer) == ['bfloat16'] * 6
  layer = _sparse_ff('eval', big_weights_in_bfloat16=True)
  layer.init(x, rng=key)
  assert dtypes(layer) == ['float32'] * 3 + ['bfloat16'] * 2 + ['float32']
  plain, scaled = _sparse_ff('eval'), _sparse_ff('eval', kernel_scaling=True)
  plain.init(x, rng=key)
  scaled.init(x, rng=key)
  w2_plain, w2_scaled = (_unpack(l.weights)[1][1] for l in (plain, scaled))
  np.testing.assert_allclose(w2_scaled, np.asarray(w2_plain) * 2.0, rtol=1e-6)


# -- Errors --------------------------------------------------------------------------


def test_blocks_must_divide_d_ff():
  with pytest.raises(ValueError, match=r'SparseFF: d_ff 10 is not a multiple '
                     r'of n_elements_in_block 4'):
    tl.SparseFF(10, n_elements_in_block=4)
  for cls in (tl.BlockSparseFF, tl.SwitchSparseFF):
    with pytest.raises(ValueError, match=rf'{cls.__name__}_10: d_ff 10 is not '
                       r'a multiple of n_experts 4'):
      cls(10, n_experts=4)


@pytest.mark.parametrize('make,name', [
    (lambda: _sparse_ff('eval'), '_SparseFFController_16'),
    (lambda: tl.BlockSparseFF(D_FF, n_experts=4), 'BlockSparseFF_16'),
    (lambda: tl.SwitchSparseFF(D_FF, n_experts=4), 'SwitchSparseFF_16')])
def test_wrong_input_width_is_named(make, name):
  layer = make()
  layer.init(shapes.ShapeDtype((2, D_MODEL), np.float32))
  with pytest.raises(tl.LayerError, match=rf'{name}: input last dim 5 does '
                     r'not match the weights\' d_model 8'):
    layer(np.ones((2, 5), np.float32))
