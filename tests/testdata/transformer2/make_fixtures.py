"""Records real Trax Transformer2 models and helpers as test fixtures.

NOT part of the test suite; CI never runs it (it needs Trax 1.4.1 on JAX).
Kept so that the fixtures beside it can be regenerated and audited:

    JAX_PLATFORMS=cpu /work/trax_venv/bin/python \
        tests/testdata/transformer2/make_fixtures.py

Writes:
  cases.json   per model case: str(), n_in, n_out, weight leaf shapes.
  cases.npz    per model case: weight leaves `<case>/w<i>` (Trax's init
               plus noise), inputs `<case>/x<i>` and Trax's outputs
               `<case>/y<i>`; for the 'predict' case, the outputs of each
               decoding step `<case>/step<k>_y<i>` (inputs
               `<case>/step<k>_x<i>`); and the inputs and outputs of
               ConcatWithPadding, ConcatWithPadding2 (forward and reverse)
               and StripFromConcatenateWithPadding (`helpers/...`).
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
import trax.layers as tl
from trax.models.research import transformer2 as t2

OUT_DIR = os.path.dirname(os.path.abspath(__file__))
TINY = dict(d_model=8, d_ff=16, n_heads=2, dropout=0.0, ff_dropout=0.0,
            max_len=16)


def _pair():
  src = np.array([[3, 4, 5, 0, 0, 0], [6, 7, 8, 9, 10, 2],
                  [1, 2, 0, 0, 0, 0]], np.int32)
  tgt = np.array([[2, 3, 4, 5, 0], [6, 1, 2, 0, 0],
                  [7, 8, 9, 10, 1]], np.int32)
  return src, tgt


def _cases():
  """(name, model, record_values)."""
  return [
      ('t2_shared', t2.Transformer2(11, n_encoder_layers=1,
                                    n_decoder_layers=1, mode='eval', **TINY),
       True),
      ('t2_out_vocab', t2.Transformer2(
          11, output_vocab_size=13, n_encoder_layers=2, n_decoder_layers=2,
          n_encoder_attention_layers=2, n_decoder_attention_layers=1,
          ff_activation=tl.Gelu, mode='eval', **TINY), True),
      ('t2_train', t2.Transformer2(11, n_encoder_layers=1,
                                   n_decoder_layers=1, mode='train', **TINY),
       True),
      ('t2_options', t2.Transformer2(
          11, n_encoder_layers=1, n_decoder_layers=1, mode='eval',
          ff_chunk_size=2, attention_chunk_size=1, pos_type='sin-cos',
          **TINY), True),
      ('t2_defaults', t2.Transformer2(11), False),
  ]


def _noisy(model, seed):
  rng = np.random.default_rng(seed)
  leaves = fastmath.tree_flatten(model.weights)
  new = [jnp.asarray(np.asarray(w) + rng.normal(size=w.shape).astype(
      np.float32) * 0.3) for w in leaves]
  model.weights = fastmath.tree_unflatten(new, model.weights)[0]


def _record_models(records, arrays):
  xs = _pair()
  for i, x in enumerate(xs):
    arrays[f'inputs/x{i}'] = x
  for seed, (name, model, values) in enumerate(_cases()):
    model.init(shapes.signature(xs))
    weights = fastmath.tree_flatten(model.weights)
    records[name] = dict(repr=str(model), n_in=model.n_in,
                         n_out=model.n_out,
                         weight_shapes=[list(w.shape) for w in weights])
    if not values:
      continue
    _noisy(model, seed)
    for i, w in enumerate(fastmath.tree_flatten(model.weights)):
      arrays[f'{name}/w{i}'] = np.asarray(w)
    for i, y in enumerate(model(xs)):
      arrays[f'{name}/y{i}'] = np.asarray(y)


def _record_predict(records, arrays):
  """Three decoding steps after an eval model's weights are loaded."""
  name = 'predict'
  src = np.array([[3, 4, 5, 0], [6, 7, 8, 9]], np.int32)
  model = t2.Transformer2(11, n_encoder_layers=1, n_decoder_layers=1,
                          mode='predict', **TINY)
  sig = (shapes.ShapeDtype(src.shape, np.int32),
         shapes.ShapeDtype((2, 1), np.int32))
  model.init(sig)
  records[name] = dict(repr=str(model), n_in=model.n_in, n_out=model.n_out,
                       weight_shapes=[list(w.shape) for w in
                                      fastmath.tree_flatten(model.weights)])
  _noisy(model, 11)
  for i, w in enumerate(fastmath.tree_flatten(model.weights)):
    arrays[f'{name}/w{i}'] = np.asarray(w)
  for step, tok in enumerate(([[1], [2]], [[3], [4]], [[5], [6]])):
    tok = np.array(tok, np.int32)
    arrays[f'{name}/step{step}_x0'] = src
    arrays[f'{name}/step{step}_x1'] = tok
    for i, y in enumerate(model((src, tok))):
      arrays[f'{name}/step{step}_y{i}'] = np.asarray(y)


def _record_helpers(arrays):
  rng = np.random.default_rng(5)
  tok_e = np.array([[3, 4, 0, 0], [5, 6, 7, 8], [0, 0, 0, 0]], np.int32)
  tok_d = np.array([[1, 2, 3], [4, 0, 0], [5, 6, 7]], np.int32)
  vec_e = rng.normal(size=(3, 4, 2)).astype(np.float32)
  vec_e2 = rng.normal(size=(3, 4, 2)).astype(np.float32)
  vec_d = rng.normal(size=(3, 3, 2)).astype(np.float32)
  mask_e = tok_e != 0
  arrays.update({'helpers/tok_e': tok_e, 'helpers/tok_d': tok_d,
                 'helpers/vec_e': vec_e, 'helpers/vec_e2': vec_e2,
                 'helpers/vec_d': vec_d})
  concat = t2.ConcatWithPadding(mode='eval')
  xs = (vec_e, vec_d, mask_e, tok_e, tok_d)
  concat.init(shapes.signature(xs))
  vec_ed = np.asarray(concat(xs)[0])
  arrays['helpers/concat_y0'] = vec_ed
  reverse = concat.reverse((vec_ed, tok_e, tok_d))
  for i, y in enumerate(reverse):
    arrays[f'helpers/concat_reverse_y{i}'] = np.asarray(y)
  concat2 = t2.ConcatWithPadding2(mode='eval')
  xs2 = (vec_e, vec_e2, vec_d, mask_e, tok_e, tok_d)
  concat2.init(shapes.signature(xs2))
  ys2 = concat2(xs2)
  arrays['helpers/concat2_y0'] = np.asarray(ys2[0])
  arrays['helpers/concat2_y1'] = np.asarray(ys2[1])
  for i, y in enumerate(concat2.reverse(ys2)):
    arrays[f'helpers/concat2_reverse_y{i}'] = np.asarray(y)
  strip = t2.StripFromConcatenateWithPadding(mode='eval')
  strip.init(shapes.signature((vec_ed, tok_e, tok_d)))
  arrays['helpers/strip_y0'] = np.asarray(strip((vec_ed, tok_e, tok_d)))


def main():
  records, arrays = {}, {}
  _record_models(records, arrays)
  _record_predict(records, arrays)
  _record_helpers(arrays)
  for layer in (t2.ConcatWithPadding(), t2.ConcatWithPadding2(),
                t2.StripFromConcatenateWithPadding()):
    records[type(layer).__name__] = dict(repr=str(layer), n_in=layer.n_in,
                                         n_out=layer.n_out)
  with open(os.path.join(OUT_DIR, 'cases.json'), 'w') as f:
    json.dump({'cases': records}, f, indent=1, sort_keys=True)
  np.savez_compressed(os.path.join(OUT_DIR, 'cases.npz'), **arrays)


if __name__ == '__main__':
  main()
