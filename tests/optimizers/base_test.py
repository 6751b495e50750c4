"""Tree-level behaviour shared by all optimizers: clipping, stats, XLA,
retracing, low-precision weights, tree shapes and input errors."""

import numpy as np
import pytest

from tests.optimizers import _harness
from tfnp_trax import fastmath
from tfnp_trax import optimizers
from tfnp_trax.fastmath import numpy as jnp

_FACTORIES = {
    'sgd': lambda: optimizers.SGD(learning_rate=0.1),
    'momentum': lambda: optimizers.Momentum(learning_rate=0.1),
    'rms_prop': lambda: optimizers.RMSProp(learning_rate=0.01),
    'adam': lambda: optimizers.Adam(learning_rate=0.01, clip_grad_norm=2.0),
    'adafactor': lambda: optimizers.Adafactor(do_momentum=True, beta1=0.9),
    'sm3': lambda: optimizers.SM3(second_moment_averaging=0.9),
}


def _tensors(leaves, dtype=np.float32):
  return [jnp.asarray(x.astype(dtype)) for x in leaves]


@pytest.mark.parametrize('clip', [0.5, 100.0])
def test_clip_grad_norm_and_stats_match_numpy(clip):
  weights, grads = _harness.random_problem(n_steps=1)
  grads = grads[0]
  lr = 0.1
  opt = optimizers.SGD(learning_rate=lr, clip_grad_norm=clip)
  tree = _harness.as_tree(_tensors(weights))
  slots, params = opt.tree_init(tree)
  new, _, stats = opt.tree_update(0, _harness.as_tree(_tensors(grads)), tree,
                                  slots, params)

  g64 = [g.astype(np.float64) for g in grads]
  w64 = [w.astype(np.float64) for w in weights]
  g_norm = np.sqrt(sum(np.sum(g ** 2) for g in g64))
  w_norm = np.sqrt(sum(np.sum(w ** 2) for w in w64))
  scale = min(1.0, clip / g_norm)
  np.testing.assert_allclose(float(stats['gradients_l2']), g_norm, rtol=1e-6)
  np.testing.assert_allclose(float(stats['weights_l2']), w_norm, rtol=1e-6)
  for got, w, g in zip(_harness.leaves_of(new), w64, g64):
    np.testing.assert_allclose(got.numpy(), w - lr * scale * g, rtol=1e-5,
                               atol=1e-6)
  assert (clip < g_norm) == (clip == 0.5)  # Both branches are exercised.


def test_l2_norm_of_mixed_ranks_matches_numpy():
  """Scalars, vectors, matrices, 3-D and empty arrays all count once."""
  r = np.random.default_rng(3)
  leaves = [np.float32(2.5), r.normal(size=(5,)).astype(np.float32),
            r.normal(size=(3, 4)).astype(np.float32),
            r.normal(size=(2, 3, 4)).astype(np.float32),
            np.zeros((0, 3), np.float32)]
  want = np.sqrt(sum(np.sum(np.asarray(x, np.float64) ** 2) for x in leaves))
  got = optimizers.l2_norm((leaves[0], [leaves[1], (leaves[2],)],
                            {'c': leaves[3], 'd': leaves[4]}))
  assert got.dtype == np.float32
  np.testing.assert_allclose(float(got), want, rtol=1e-6)
  assert float(optimizers.l2_norm(())) == 0.0


def test_l2_norm_and_clip_grads_match_numpy():
  tree = {'a': np.arange(6.0, dtype=np.float32).reshape(2, 3),
          'b': ((), np.asarray([3.0], np.float32))}
  norm = np.sqrt(np.sum(np.arange(6.0) ** 2) + 9.0)
  np.testing.assert_allclose(float(optimizers.l2_norm(tree)), norm, rtol=1e-6)
  clipped = optimizers.clip_grads(tree, 2.0)
  np.testing.assert_allclose(clipped['b'][1].numpy(), [3.0 * 2.0 / norm],
                             rtol=1e-6)
  assert clipped['b'][0] == ()


def _run_steps(opt, update, n_steps=3):
  """Runs `update` with step tensors and a changing learning rate."""
  weights, grads = _harness.random_problem(n_steps)
  tree = _harness.as_tree(_tensors(weights))
  slots, params = opt.tree_init(tree)
  for step in range(n_steps):
    params = dict(params, learning_rate=jnp.asarray(0.1 / (step + 1),
                                                    jnp.float32))
    tree, slots, stats = update(jnp.asarray(step, jnp.int32),
                                _harness.as_tree(_tensors(grads[step])), tree,
                                slots, params)
  return tree, slots, stats


@pytest.mark.parametrize('name', sorted(_FACTORIES))
def test_xla_matches_eager_without_retracing(name):
  traces = []

  def update(step, grads, weights, slots, params):
    traces.append(step)  # Runs once per trace, not once per call.
    return opt.tree_update(step, grads, weights, slots, params,
                           store_slots=False)

  opt = _FACTORIES[name]()
  got, got_slots, got_stats = _run_steps(
      opt, fastmath.jit(update, jit_compile=True))
  assert len(traces) == 1
  want, want_slots, want_stats = _run_steps(opt, opt.tree_update)
  for a, b in zip(fastmath.tree_leaves((got, got_slots, got_stats)),
                  fastmath.tree_leaves((want, want_slots, want_stats))):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5,
                               atol=1e-6)


@pytest.mark.parametrize('name', sorted(_FACTORIES))
def test_bfloat16_weights_are_updated_in_float32_and_stay_bfloat16(name):
  weights, grads = _harness.random_problem(n_steps=1)
  opt = _FACTORIES[name]()
  bf16 = [jnp.asarray(w).astype('bfloat16') for w in weights]
  g_bf16 = [jnp.asarray(g).astype('bfloat16') for g in grads[0]]
  tree = _harness.as_tree(bf16)
  slots, params = opt.tree_init(tree)
  new, slots, _ = opt.tree_update(0, _harness.as_tree(g_bf16), tree, slots,
                                  params)
  # The same step on the float32 values, rounded once at the end.
  f32 = _harness.as_tree([x.astype(jnp.float32) for x in bf16])
  f32_slots, _ = opt.tree_init(f32)
  ref, _, _ = opt.tree_update(
      0, _harness.as_tree([g.astype(jnp.float32) for g in g_bf16]), f32,
      f32_slots, params)
  for got, want in zip(_harness.leaves_of(new), _harness.leaves_of(ref)):
    assert got.dtype.name == 'bfloat16'
    np.testing.assert_array_equal(got.astype(jnp.float32).numpy(),
                                  want.astype('bfloat16').astype(
                                      jnp.float32).numpy())
  assert all(s.dtype.name in ('float32', 'bfloat16')
             for s in fastmath.tree_leaves(slots))
  # Further compiled steps keep the dtype and the slot structure.
  jitted = fastmath.jit(lambda *a: opt.tree_update(*a, store_slots=False))
  for step in (1, 2):
    new, slots, _ = jitted(jnp.asarray(step), _harness.as_tree(g_bf16), new,
                           slots, params)
  assert all(x.dtype.name == 'bfloat16' for x in _harness.leaves_of(new))


def test_nested_trees_with_empty_tuples_and_dicts_keep_their_structure():
  w = {'dense': (np.ones((2, 3), np.float32), np.zeros((3,), np.float32)),
       'relu': (), 'norm': [((), np.ones((3,), np.float32))]}
  opt = optimizers.Adam()
  slots, params = opt.tree_init(w)
  assert len(slots) == 3
  new, _, _ = opt.tree_update(jnp.asarray(0.0), w, w, slots, params)
  assert new['relu'] == () and new['norm'][0][0] == ()
  assert isinstance(new['norm'], list) and isinstance(new['dense'], tuple)
  assert tuple(new['dense'][0].shape) == (2, 3)


def test_store_slots():
  opt = optimizers.Momentum()
  w = (jnp.ones((2,), jnp.float32),)
  slots, params = opt.tree_init(w)
  assert opt.slots is slots
  _, kept, _ = opt.tree_update(0, w, w, slots, params, store_slots=False)
  assert opt.slots is slots
  _, stored, _ = opt.tree_update(0, w, w, kept, params)
  assert opt.slots is stored


def test_float64_opt_params_do_not_widen_slots():
  opt = optimizers.Adam()
  w = (jnp.ones((2,), jnp.float32),)
  slots, params = opt.tree_init(w)
  params = dict(params, learning_rate=np.float64(0.1), b1=0.5)
  new, slots, _ = opt.tree_update(0, w, w, slots, params)
  assert new[0].dtype == np.float32
  assert all(s.dtype == np.float32 for s in fastmath.tree_flatten(slots))


def test_mismatched_gradient_shape_names_leaf_and_shapes():
  opt = optimizers.Adam()
  w = ((jnp.zeros((3,), jnp.float32), ()), (jnp.zeros((5, 4), jnp.float32),))
  slots, params = opt.tree_init(w)
  g = ((jnp.zeros((3,), jnp.float32), ()), (jnp.zeros((4, 5), jnp.float32),))
  with pytest.raises(ValueError, match=(
      r'Adam\.tree_update: gradient leaf 1 has shape \(4, 5\) but weight '
      r'leaf 1 has shape \(5, 4\) \(weight path \[1\]\[0\]\)\. The gradient '
      r'tree must mirror the weight tree')):
    opt.tree_update(0, g, w, slots, params)


def test_mismatched_gradient_leaf_count():
  opt = optimizers.SGD()
  w = (jnp.zeros((3,), jnp.float32), jnp.zeros((2,), jnp.float32))
  slots, params = opt.tree_init(w)
  with pytest.raises(ValueError, match=(
      r'SGD\.tree_update: gradient tree has 1 leaves but weight tree has 2 '
      r'leaves')):
    opt.tree_update(0, (w[0],), w, slots, params)


def test_slots_from_another_tree():
  opt = optimizers.RMSProp()
  w = (jnp.zeros((3,), jnp.float32), jnp.zeros((2,), jnp.float32))
  slots, params = opt.tree_init(w[:1])
  with pytest.raises(ValueError, match=(
      r'RMSProp\.tree_update: got 1 slot entries for 2 weight leaves\. '
      r'Create slots with .*tree_init')):
    opt.tree_update(0, w, w, slots, params)
