"""Records real Trax ConfigurableTerraformer models (tiny configs) as fixtures.

NOT part of the test suite; CI never runs it (it needs Trax 1.4.1 on JAX).
Kept so that the fixtures beside it can be regenerated and audited:

    JAX_PLATFORMS=cpu /work/trax_venv/bin/python \
        tests/testdata/terraformer/make_fixtures.py

Writes:
  cases.json   per case: the model's str(), n_in, n_out, weight leaf shapes.
  cases.npz    per case: weight leaves `<case>/w<i>` (Trax's init plus
               noise, so that zero-initialized biases matter), inputs
               `<case>/x<i>` and Trax's eval-mode outputs `<case>/y<i>`.
               Predict-mode cases (`<case>` ending in `_predict`) hold the
               logits of each decoding step `<case>/step<t>`, the model fed
               the source and, per call, 0 and then the target tokens one by
               one, with the weights of the eval case they name in
               cases.json (`weights_from`).
  terra_eval.pkl.gz  the `terra_eval` model with its weights, written by
               Trax's own `Layer.save_to_file` (gzipped pickle, Trax's
               layout).
"""

import functools
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
from trax import layers as tl
from trax import shapes
from trax.models.research import terraformer

OUT_DIR = os.path.dirname(os.path.abspath(__file__))
TINY = dict(input_vocab_size=16, d_model=8, d_ff=16, n_heads=2,
            max_len=16, dropout=0.1)
# Source ids (0 is padding) and target ids.
TOK_E = np.array([[3, 4, 5, 0], [6, 7, 8, 9]], np.int32)
TOK_D = np.array([[1, 2, 3, 4, 0, 0], [4, 5, 6, 7, 8, 0]], np.int32)
# SelfAttention needs its decoding cache sizes in predict mode.
SELF_ATTN = functools.partial(tl.SelfAttention, predict_mem_len=16,
                              predict_drop_len=16)


def _cases():
  """(name, kwargs, inputs)."""
  vec_e = np.random.default_rng(5).normal(size=(2, 4, 3)).astype(np.float32)
  mask_e = (TOK_E != 0).astype(np.int32)
  return [
      ('terra_eval', dict(n_encoder_layers=1, n_decoder_layers=1),
       (TOK_E, TOK_D)),
      # Reversible encoder, a forgetting layer, RMS norm, SRU, a list of
      # attention types and target ids of their own vocabulary. (Trax
      # 1.4.1 cannot build half_before_layer: it makes float widths.)
      ('terra_variants', dict(
          output_vocab_size=12, n_encoder_layers=2, n_decoder_layers=4,
          reversible_encoder=True, use_two_swaps_per_encoder_block=False,
          n_layers_forget=1, center_layernorm=False,
          ff_use_sru=(1, 4), n_decoder_attention_layers=1,
          encoder_decoder_attention_type=[tl.SelfAttention,
                                          tl.CausalAttention],
          pos_type='sin-cos', d_attention_key=2, d_attention_value=6),
       (TOK_E, TOK_D % 12)),
      # Decoder layers after the first at double width.
      ('terra_double', dict(n_encoder_layers=1, n_decoder_layers=2,
                            double_after_layer=0, forget_dense=False,
                            n_layers_forget=1),
       (TOK_E, TOK_D)),
      # Source vectors and mask instead of source ids.
      ('terra_vectors', dict(input_vocab_size=None, output_vocab_size=16,
                             n_encoder_layers=1, n_decoder_layers=1,
                             pos_type=None, ff_chunk_size=2),
       (vec_e, mask_e, TOK_D)),
      # Trax's sparse feed-forward and output layers.
      ('terra_sparse', dict(n_encoder_layers=1, n_decoder_layers=1,
                            ff_sparsity=4, loss_sparsity=2,
                            loss_sparsity_type='mult'),
       (TOK_E, TOK_D)),
  ]


# (name, eval case to take the weights from, kwargs, source, target).
PREDICT_CASES = [
    ('terra_self_predict', 'terra_self',
     dict(n_encoder_layers=1, n_decoder_layers=2,
          encoder_decoder_attention_type=SELF_ATTN),
     np.array([[3, 4, 5, 2], [6, 7, 8, 9]], np.int32), TOK_D),
    # Causal attention reads the source padding mask through Trax's portal
    # (batch 1 only in Trax 1.4.1).
    ('terra_causal_predict', 'terra_causal',
     dict(n_encoder_layers=1, n_decoder_layers=1,
          encoder_decoder_attention_type=tl.CausalAttention),
     TOK_E[:1], TOK_D[:1]),
]


def _noisy(model, seed):
  rng = np.random.default_rng(seed)
  leaves = fastmath.tree_flatten(model.weights)
  new = [jnp.asarray(np.asarray(w) + rng.normal(size=w.shape).astype(
      np.float32) * 0.3) for w in leaves]
  model.weights = fastmath.tree_unflatten(new, model.weights)[0]


def _record(records, arrays, name, model, xs, seed):
  model.init(shapes.signature(xs))
  _noisy(model, seed)
  ys = model(xs)
  weights = fastmath.tree_flatten(model.weights)
  records[name] = dict(repr=str(model), n_in=model.n_in, n_out=model.n_out,
                       weight_shapes=[list(w.shape) for w in weights])
  for i, w in enumerate(weights):
    arrays[f'{name}/w{i}'] = np.asarray(w)
  for i, x in enumerate(xs):
    arrays[f'{name}/x{i}'] = np.asarray(x)
  for i, y in enumerate(ys):
    arrays[f'{name}/y{i}'] = np.asarray(y)
  return model


def main():
  records, arrays = {}, {}
  seed = 0
  for seed, (name, kwargs, xs) in enumerate(_cases()):
    model = terraformer.ConfigurableTerraformer(mode='eval',
                                                **dict(TINY, **kwargs))
    _record(records, arrays, name, model, xs, seed)
    if name == 'terra_eval':
      model.save_to_file(os.path.join(OUT_DIR, 'terra_eval.pkl.gz'),
                         input_signature=shapes.signature(xs))
  for name, eval_name, kwargs, tok_e, tok_d in PREDICT_CASES:
    seed += 1
    evaluator = terraformer.ConfigurableTerraformer(
        mode='eval', **dict(TINY, **kwargs))
    _record(records, arrays, eval_name, evaluator, (tok_e, tok_d), seed)
    model = terraformer.ConfigurableTerraformer(mode='predict',
                                                **dict(TINY, **kwargs))
    model.init(shapes.signature((tok_e, tok_d[:, :1])))
    model.weights = fastmath.tree_unflatten(
        fastmath.tree_flatten(evaluator.weights), model.weights)[0]
    # As decoding does: 0 first, then each target token in turn (the eval
    # model shifts the target right by itself).
    fed = np.concatenate([np.zeros_like(tok_d[:, :1]), tok_d[:, :-1]], 1)
    n_steps = tok_d.shape[1]
    for t in range(n_steps):
      logits, _ = model((tok_e, fed[:, t:t + 1]))
      arrays[f'{name}/step{t}'] = np.asarray(logits)
    records[name] = dict(repr=str(model), weights_from=eval_name,
                         n_steps=n_steps)
  with open(os.path.join(OUT_DIR, 'cases.json'), 'w') as f:
    json.dump({'cases': records}, f, indent=1, sort_keys=True)
  np.savez_compressed(os.path.join(OUT_DIR, 'cases.npz'), **arrays)


if __name__ == '__main__':
  main()
