"""Records Trax 1.4.1's FAVOR and sparse feed-forward outputs (not run in CI).

Run with a Trax 1.4.1 install:
  JAX_PLATFORMS=cpu python make_fixtures.py
Writes, beside this file, fixtures.npz (per case: inputs, the flat weight
leaves, outputs, and for CausalFavorAttention Trax's custom gradient) and
configs.json (per case: constructor, arguments, printed layer, weight
shapes and dtypes). Cases avoid randomness (no dropout, temperature 0,
quant_prob 0 or 1; FavorAttention's random matrix is recorded), so
tfnp_trax must reproduce them given the same weights.
"""

import json
import os

import jax
import numpy as np
from trax import fastmath
from trax import layers as tl
from trax import shapes

SPARSE = dict(d_ff=16, n_elements_in_block=4, d_lowrank=4)
EXPERT = dict(d_ff=16, n_experts=4)
# name: (constructor, kwargs, inputs kind)
CASES = {
    'favor_attention_relu': ('FavorAttention', dict(d_feature=8, n_heads=2),
                             'qkvm'),
    'favor_attention_softmax': (
        'FavorAttention', dict(d_feature=8, n_heads=2, n_random_features=6,
                               use_approximate_softmax=True,
                               normalize_data=True), 'qkvm'),
    'favor_attention_softmax_raw': (
        'FavorAttention', dict(d_feature=8, n_heads=2, n_random_features=9,
                               use_approximate_softmax=True,
                               scale_by_norm=False), 'qkvm'),
    'favor': ('Favor', dict(d_feature=8, n_heads=2), 'xm'),
    'causal_favor_attention': ('CausalFavorAttention', {}, 'qkv'),
    'causal_favor': ('CausalFavor', dict(d_feature=8, n_heads=2), 'x'),
    'sparse_ff_eval': ('SparseFF', dict(SPARSE, mode='eval'), 'x'),
    'sparse_ff_eval_mult': ('SparseFF', dict(
        SPARSE, mode='eval', multiply_by_controller_output=True), 'x'),
    'sparse_ff_eval_chunked': ('SparseFF', dict(SPARSE, mode='eval',
                                                ff_chunk_size=2), 'x'),
    'sparse_ff_predict': ('SparseFF', dict(SPARSE, mode='predict'), 'x'),
    'sparse_ff_predict_mult': ('SparseFF', dict(
        SPARSE, mode='predict', multiply_by_controller_output=True), 'x'),
    'sparse_ff_train_hard': ('SparseFF', dict(
        SPARSE, mode='train', temperature=0.0, quant_prob=1.0), 'x'),
    'sparse_ff_train_soft_mult': ('SparseFF', dict(
        SPARSE, mode='train', temperature=0.0, quant_prob=0.0,
        multiply_by_controller_output=True), 'x'),
    'sparse_ff_train_hard_mult': ('SparseFF', dict(
        SPARSE, mode='train', temperature=0.0, quant_prob=1.0,
        multiply_by_controller_output=True), 'x'),
    'block_sparse_ff_eval': ('BlockSparseFF', dict(EXPERT, mode='eval'), 'x'),
    'block_sparse_ff_predict1': ('BlockSparseFF', dict(EXPERT, mode='predict'),
                                 'x1'),
    'switch_sparse_ff_eval': ('SwitchSparseFF', dict(EXPERT, mode='eval'),
                              'x'),
    'switch_sparse_ff_predict1': ('SwitchSparseFF', dict(EXPERT,
                                                         mode='predict'),
                                  'x1'),
    'switch_sparse_ff_train_t0': ('SwitchSparseFF', dict(
        EXPERT, mode='train', temperature=0.0), 'x'),
}


def _inputs(kind, rs):
  if kind == 'qkvm':
    q, k, v = (rs.normal(size=(4, 5, 4)).astype(np.float32) for _ in 'qkv')
    mask = np.ones((2, 1, 1, 5), bool)
    mask[1, ..., 3:] = False
    return (q, k, v, mask)
  if kind == 'qkv':
    return tuple(rs.normal(size=(4, 5, 3)).astype(np.float32) for _ in 'qkv')
  if kind == 'xm':
    mask = np.ones((2, 1, 1, 5), bool)
    mask[0, ..., 4:] = False
    return (rs.normal(size=(2, 5, 8)).astype(np.float32), mask)
  if kind == 'x1':
    return rs.normal(size=(1, 1, 8)).astype(np.float32)
  return rs.normal(size=(2, 3, 8)).astype(np.float32)


def main():
  rs = np.random.RandomState(0)
  arrays, configs = {}, {}
  for name, (cls, kw, kind) in CASES.items():
    inputs = _inputs(kind, rs)
    layer = getattr(tl, cls)(**kw)
    layer.init(shapes.signature(inputs), rng=fastmath.random.get_prng(3))
    y = layer(inputs, rng=fastmath.random.get_prng(5))
    flat_in = inputs if isinstance(inputs, tuple) else (inputs,)
    for i, a in enumerate(flat_in):
      arrays[f'{name}/input{i}'] = np.asarray(a)
    leaves = jax.tree_util.tree_leaves(layer.weights)
    for i, w in enumerate(leaves):
      arrays[f'{name}/weight{i}'] = np.asarray(w)
    for i, o in enumerate(y if isinstance(y, tuple) else (y,)):
      arrays[f'{name}/output{i}'] = np.asarray(o)
    if cls == 'FavorAttention' and kw.get('use_approximate_softmax'):
      arrays[f'{name}/projection'] = np.asarray(layer._projection_matrix)  # pylint: disable=protected-access
    if cls == 'CausalFavorAttention':
      ct = rs.normal(size=y.shape).astype(np.float32)
      grads = jax.grad(lambda xs: (layer(xs) * ct).sum())(inputs)
      arrays[f'{name}/ct'] = ct
      for i, g in enumerate(grads):
        arrays[f'{name}/grad{i}'] = np.asarray(g)
    configs[name] = dict(
        cls=cls, kwargs=kw, repr=str(layer), n_in=layer.n_in,
        n_out=layer.n_out, n_inputs=len(flat_in),
        weight_shapes=[list(w.shape) for w in leaves],
        weight_dtypes=[str(w.dtype) for w in leaves])
  here = os.path.dirname(os.path.abspath(__file__))
  np.savez_compressed(os.path.join(here, 'fixtures.npz'), **arrays)
  with open(os.path.join(here, 'configs.json'), 'w') as f:
    json.dump(configs, f, indent=1, sort_keys=True)


if __name__ == '__main__':
  main()
