"""Runs an optimizer for a few steps next to a NumPy float64 reference.

The weight tree mixes ranks (2-D, 1-D, 3-D) and holds an empty tuple, as a
model with a weightless layer does. References are per-leaf functions
`ref_init(w) -> state` and `ref_update(step, g, w, state) -> (w, state)`
over float64 arrays, written in each test from the optimizer's equations.
"""

import functools

import numpy as np

from tfnp_trax import fastmath
from tfnp_trax.fastmath import numpy as jnp

SHAPES = [(3, 4), (4,), (2, 3, 4)]


def random_problem(n_steps=5, seed=0):
  """Float32 weights and `n_steps` gradient lists, one array per shape."""
  rng = np.random.default_rng(seed)
  weights = [rng.normal(size=s).astype(np.float32) for s in SHAPES]
  grads = [[rng.normal(size=s).astype(np.float32) for s in SHAPES]
           for _ in range(n_steps)]
  return weights, grads


def as_tree(leaves):
  a2, a1, a3 = leaves
  return ((a2, ()), (a1, a3))


def leaves_of(tree):
  (a2, empty), (a1, a3) = tree
  assert empty == ()
  return [a2, a1, a3]


def check_against_reference(opt, ref_init, ref_update, mode='eager',
                            n_steps=5, rtol=2e-5, atol=2e-6):
  """Runs `opt.tree_update` and the reference side by side, every step."""
  weights, grads = random_problem(n_steps)
  tree = as_tree([jnp.asarray(w) for w in weights])
  slots, opt_params = opt.tree_init(tree)
  update = opt.tree_update
  if mode == 'jit':
    update = fastmath.jit(functools.partial(opt.tree_update,
                                            store_slots=False))
  ref_w = [w.astype(np.float64) for w in weights]
  ref_s = [ref_init(w) for w in ref_w]
  for step in range(n_steps):
    grad_tree = as_tree([jnp.asarray(g) for g in grads[step]])
    tree, slots, _ = update(jnp.asarray(step, jnp.int32), grad_tree, tree,
                            slots, opt_params)
    for i, g in enumerate(grads[step]):
      ref_w[i], ref_s[i] = ref_update(step, g.astype(np.float64), ref_w[i],
                                      ref_s[i])
    for i, (got, want) in enumerate(zip(leaves_of(tree), ref_w)):
      assert got.dtype == np.float32
      np.testing.assert_allclose(got.numpy(), want, rtol=rtol, atol=atol,
                                 err_msg=f'step {step}, leaf {i}')


def assert_opt_params(opt, want):
  """`opt.opt_params` holds exactly `want`, with Trax's scalar dtypes.

  Trax stores `jnp.array(value)` (64-bit types off): Python floats become
  float32 scalars and Python ints int32 ones.
  """
  params = opt.opt_params
  assert set(params) == set(want)
  for name, value in want.items():
    dtype = np.int32 if isinstance(value, int) else np.float32
    assert params[name].dtype == dtype, name
    assert params[name].numpy() == dtype(value), name
