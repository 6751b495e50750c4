"""Records Trax 1.4.1 outputs of the sparsity.py layers (part 1).

Run with a Trax 1.4.1 install (JAX on CPU), from this directory:

  JAX_PLATFORMS=cpu python make_fixtures.py

Writes `cases.json` (constructor, arguments, str(), weight shapes) and
`fixtures.npz` (inputs, Trax's weights as flat leaves, Trax's outputs).
"""

import json

import numpy as np
from trax import fastmath
from trax import layers as tl
from trax import shapes
from trax.layers.research import sparsity as sp

_RNG = np.random.RandomState(0)
CASES = []
ARRAYS = {}


def _x(*shape):
  return _RNG.randn(*shape).astype(np.float32)


def _record(case, layer, x, arrays):
  """Adds a case: its weights' flat leaves and the given arrays."""
  leaves = fastmath.tree_flatten(layer.weights)
  case['weight_shapes'] = [list(w.shape) for w in leaves]
  case['weight_dtypes'] = [str(w.dtype) for w in leaves]
  case['str'] = str(layer)
  key = case['key']
  ARRAYS[f'{key}/x'] = x
  for i, w in enumerate(leaves):
    ARRAYS[f'{key}/w{i}'] = np.asarray(w.astype(np.float32))
  for name, a in arrays.items():
    ARRAYS[f'{key}/{name}'] = np.asarray(a)
  CASES.append(case)


def forward_case(key, ctor, kwargs, x, seed=0):
  layer = getattr(sp, ctor)(**kwargs)
  layer.init(shapes.signature(x), rng=fastmath.random.get_prng(seed))
  y = layer(x, rng=fastmath.random.get_prng(1))
  arrays = {'y': y}
  if ctor.startswith('Reversible'):
    arrays['reverse'] = layer.reverse(x)
  _record({'key': key, 'ctor': ctor, 'kwargs': kwargs}, layer, x, arrays)


def random_layer_case(key, prob_a):
  layer = sp.RandomLayer(tl.Dense(5), tl.Dense(5), prob_a)
  x = _x(2, 8)
  layer.init(shapes.signature(x), rng=fastmath.random.get_prng(0))
  y = layer(x, rng=fastmath.random.get_prng(1))
  _record({'key': key, 'ctor': 'RandomLayer', 'kwargs': {'prob_a': prob_a}},
          layer, x, {'y': y})


def predict_case(key, ctor, kwargs, x):
  """Decodes x one position at a time in 'predict' mode; also 'eval' mode."""
  layer = getattr(sp, ctor)(mode='predict', **kwargs)
  layer.init(shapes.signature(x[:, :1]), rng=fastmath.random.get_prng(0))
  weights = layer.weights
  steps = [layer(x[:, i:i + 1]) for i in range(x.shape[1])]
  full = getattr(sp, ctor)(mode='eval', **kwargs)
  full.init(shapes.signature(x))
  full.weights = weights
  _record({'key': key, 'ctor': ctor, 'kwargs': kwargs, 'predict': True},
          layer, x, {'y': full(x), 'steps': np.concatenate(steps, axis=1)})


def main():
  forward_case('rrp8', 'ReversibleReshapePermute', {}, _x(2, 3, 8))
  forward_case('rrp32', 'ReversibleReshapePermute', {}, _x(2, 32))
  forward_case('rrand10', 'ReversibleRandomPermute', {}, _x(2, 3, 10))
  forward_case('split', 'SplitLastAxis', {'num_splits': 2}, _x(2, 3, 8))
  forward_case('merge', 'MergeLastTwoAxes', {}, _x(2, 3, 2, 4))
  forward_case('lcd', 'LocallyConnectedDense',
               {'n_modules': 2, 'n_units': 3}, _x(2, 3, 8))
  forward_case('lcd3', 'LocallyConnectedDense',
               {'n_modules': 4, 'n_units': 3, 'kernel_size': 3}, _x(2, 3, 8))
  forward_case('lcd1', 'LocallyConnectedDense',
               {'n_modules': 1, 'n_units': 3}, _x(2, 3, 8))
  forward_case('lconv', 'LocallyConvDense',
               {'n_modules': 2, 'n_units': 3, 'mode': 'train',
                'kernel_size': 3, 'length_kernel_size': 2}, _x(2, 4, 8))
  forward_case('lconv1', 'LocallyConvDense',
               {'n_modules': 1, 'n_units': 3, 'mode': 'train'}, _x(2, 4, 8))
  forward_case('lowrank', 'LowRankDense', {'n_units': 5, 'd_lowrank': 2},
               _x(2, 3, 8))
  forward_case('einsum', 'EinsumDense',
               {'d_input': 8, 'd_output': 5, 'use_bias': True}, _x(2, 3, 8))
  forward_case('einsum_nobias', 'EinsumDense',
               {'d_input': 8, 'd_output': 5, 'use_bias': False}, _x(2, 3, 8))
  random_layer_case('random_a', 1.0)
  random_layer_case('random_b', 0.0)
  for stype in [None, 'mult', 'lowrank', 'einsum', 'local', 'local3']:
    forward_case(f'sdwo_{stype}', 'SparseDenseWithOptions',
                 {'n_units': 8, 'd_input': 8, 'sparsity_type': stype,
                  'sparsity': 2, 'd_lowrank': 2}, _x(2, 3, 8))
  forward_case('sdwo_prob_eval', 'SparseDenseWithOptions',
               {'n_units': 8, 'd_input': 8, 'sparsity_type': 'mult',
                'sparsity': 2, 'prob_sparse': 0.5, 'mode': 'eval'},
               _x(2, 3, 8))
  forward_case('factored', 'FactoredDense',
               {'n_modules': 2, 'd_in': 8, 'd_out': 6}, _x(2, 3, 8))
  forward_case('factored_nobias', 'FactoredDense',
               {'n_modules': 2, 'd_in': 8, 'd_out': 6, 'use_bias': False},
               _x(2, 3, 8))
  forward_case('factored_bf16', 'FactoredDense',
               {'n_modules': 2, 'd_in': 8, 'd_out': 6, 'use_bfloat16': True},
               _x(2, 3, 8))
  forward_case('mmsd', 'MultiplicativeModularSparseDense',
               {'sparsity': 2, 'd_feature': 8}, _x(2, 3, 8))
  att = {'d_feature': 8, 'n_heads': 2, 'mode': 'eval'}
  forward_case('modular_att', 'ModularCausalAttention', att, _x(2, 4, 8))
  forward_case('modular_att_k3', 'ModularCausalAttention',
               dict(att, sparsity=4, kernel_size=3), _x(2, 4, 8))
  forward_case('conv_att', 'ConvCausalAttention', dict(att, kernel_size=3),
               _x(2, 4, 8))
  forward_case('lowrank_att', 'LowRankCausalAttention', dict(att, lowrank=3),
               _x(2, 4, 8))
  forward_case('mult_att', 'MultiplicativeCausalAttention', att, _x(2, 4, 8))
  forward_case('mult_modular_att', 'MultiplicativeModularCausalAttention',
               att, _x(2, 4, 8))
  forward_case('mult_conv_att', 'MultiplicativeConvCausalAttention', att,
               _x(2, 4, 8))
  forward_case('mult_conv_att_shared', 'MultiplicativeConvCausalAttention',
               dict(att, share_qk=True, output_layer_type='multconv',
                    v_concat_type='fixed'), _x(2, 4, 8))
  forward_case('mult_conv_att_orig', 'MultiplicativeConvCausalAttention',
               dict(att, output_layer_type='conv', v_concat_type='original',
                    length_kernel_size=2), _x(2, 4, 8))
  predict_case('mult_conv_att_predict', 'MultiplicativeConvCausalAttention',
               {'d_feature': 8, 'n_heads': 2, 'output_layer_type': 'conv',
                'v_concat_type': 'fixed', 'max_inference_length': 6},
               _x(2, 4, 8))
  predict_case('conv_att_predict', 'ConvCausalAttention',
               {'d_feature': 8, 'n_heads': 2, 'kernel_size': 3,
                'max_inference_length': 6}, _x(2, 4, 8))
  with open('cases.json', 'w') as f:
    json.dump({'cases': CASES}, f, indent=1)
  np.savez_compressed('fixtures.npz', **ARRAYS)


if __name__ == '__main__':
  main()
