"""Records Trax's configurable models with sparse options as fixtures.

NOT part of the test suite; CI never runs it (it needs Trax 1.4.1 on JAX):

    JAX_PLATFORMS=cpu /work/trax_venv/bin/python \
        tests/testdata/terraformer/make_sparse_fixtures.py

Writes sparse_options.json (per case: str(), weight leaf shapes) and
sparse_options.npz (per case: weight leaves `<case>/w<i>`, Trax's init plus
noise; inputs `<case>/x<i>`; eval-mode outputs `<case>/y<i>`), for
ConfigurableTransformerLM, ConfigurableTransformer and ReformerLM built with
the options that select Trax's sparsity layers.
"""

import json
import os

os.environ.setdefault('JAX_PLATFORMS', 'cpu')
os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '3')

# pylint: disable=g-import-not-at-top,wrong-import-position
import warnings

warnings.filterwarnings('ignore')

import jax.numpy as jnp
import numpy as np
from trax import fastmath
from trax import shapes
from trax.models.reformer import reformer
from trax.models.research import configurable_transformer as ct

OUT_DIR = os.path.dirname(os.path.abspath(__file__))
TINY = dict(d_model=8, d_ff=16, n_heads=2, max_len=16, dropout=0.1,
            mode='eval')
TOKENS = np.array([[3, 4, 5, 6, 7, 8, 9, 10], [2, 3, 4, 5, 0, 0, 0, 0]],
                  np.int32)

# name -> (constructor, kwargs, inputs); the tests build the same.
CASES = {
    'lm_sparse_ff_1inN': (ct.ConfigurableTransformerLM,
                          dict(n_layers=1, ff_sparsity=4), (TOKENS,)),
    'lm_sparse_ff_pair': (ct.ConfigurableTransformerLM,
                          dict(n_layers=1, ff_sparsity='4 8'), (TOKENS,)),
    'lm_block_ff': (ct.ConfigurableTransformerLM,
                    dict(n_layers=1, ff_sparsity=2, ff_sparsity_type='Block'),
                    (TOKENS,)),
    'lm_switch_ff': (ct.ConfigurableTransformerLM,
                     dict(n_layers=1, ff_sparsity=2,
                          ff_sparsity_type='Switch'), (TOKENS,)),
    'lm_loss_mult': (ct.ConfigurableTransformerLM,
                     dict(n_layers=1, loss_sparsity=2), (TOKENS,)),
    'lm_loss_lowrank': (ct.ConfigurableTransformerLM,
                        dict(n_layers=1, loss_sparsity=2,
                             loss_sparsity_type='lowrank', loss_d_lowrank=3),
                        (TOKENS,)),
    'lm_loss_einsum': (ct.ConfigurableTransformerLM,
                       dict(n_layers=1, loss_sparsity=2,
                            loss_sparsity_type='einsum'), (TOKENS,)),
    'lm_loss_local': (ct.ConfigurableTransformerLM,
                      dict(n_layers=1, loss_sparsity=2,
                           loss_sparsity_type='local'), (TOKENS,)),
    'lm_loss_prob': (ct.ConfigurableTransformerLM,
                     dict(n_layers=1, loss_sparsity=2,
                          loss_sparsity_prob=0.5), (TOKENS,)),
    'transformer_enc_dec_sparse': (
        ct.ConfigurableTransformer,
        dict(n_encoder_layers=1, n_decoder_layers=1,
             enc_dec_attention_sparsity=2), (TOKENS, TOKENS)),
    'reformer_lm_sparse_ff': (reformer.ReformerLM,
                              dict(n_layers=1, ff_sparsity=4,
                                   d_attention_key=4, d_attention_value=4),
                              (TOKENS,)),
}


def _noisy(model, seed):
  rng = np.random.default_rng(seed)
  leaves = fastmath.tree_flatten(model.weights)
  new = [jnp.asarray(np.asarray(w) + rng.normal(size=w.shape).astype(
      np.float32) * 0.3) for w in leaves]
  model.weights = fastmath.tree_unflatten(new, model.weights)[0]


def main():
  records, arrays = {}, {}
  for seed, (name, (make, kwargs, xs)) in enumerate(sorted(CASES.items())):
    model = make(16, **dict(TINY, **kwargs))
    inputs = xs if len(xs) > 1 else xs[0]
    model.init(shapes.signature(inputs))
    _noisy(model, seed)
    ys = model(inputs)
    ys = ys if isinstance(ys, tuple) else (ys,)
    weights = fastmath.tree_flatten(model.weights)
    records[name] = dict(repr=str(model),
                         weight_shapes=[list(w.shape) for w in weights])
    for i, w in enumerate(weights):
      arrays[f'{name}/w{i}'] = np.asarray(w)
    for i, x in enumerate(xs):
      arrays[f'{name}/x{i}'] = np.asarray(x)
    for i, y in enumerate(ys):
      arrays[f'{name}/y{i}'] = np.asarray(y)
  with open(os.path.join(OUT_DIR, 'sparse_options.json'), 'w') as f:
    json.dump({'cases': records}, f, indent=1, sort_keys=True)
  np.savez_compressed(os.path.join(OUT_DIR, 'sparse_options.npz'), **arrays)


if __name__ == '__main__':
  main()
