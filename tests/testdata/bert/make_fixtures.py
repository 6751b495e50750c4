"""Records real Trax BERT models (tiny configs) as test fixtures.

NOT part of the test suite; CI never runs it (it needs Trax 1.4.1 on JAX).
Kept so that the fixtures beside it can be regenerated and audited:

    JAX_PLATFORMS=cpu /work/trax_venv/bin/python \
        tests/testdata/bert/make_fixtures.py

Writes:
  cases.json   per case: the model's str(), n_in, n_out, weight leaf shapes.
  cases.npz    per case: weight leaves `<case>/w<i>` (Trax's init plus
               noise, so that zero-initialized biases matter), inputs
               `<case>/x<i>` and Trax's outputs `<case>/y<i>`; and the
               inputs and value of BERTPretrainingLoss (`loss/...`).
  bert_cls.pkl.gz  the `bert_cls` model with its weights, written by Trax's
               own `Layer.save_to_file` (gzipped pickle, Trax's layout).
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
from trax import shapes
from trax.models.research import bert

OUT_DIR = os.path.dirname(os.path.abspath(__file__))
TINY = dict(d_model=8, vocab_size=11, max_len=6, type_vocab_size=3,
            n_heads=2, d_ff=16)


def _inputs():
  tok = np.array([[2, 3, 4, 5, 0, 0], [6, 7, 8, 1, 2, 0],
                  [9, 10, 1, 2, 3, 4]], np.int32)
  seg = np.array([[0, 0, 1, 1, 0, 0], [0, 1, 1, 2, 1, 0],
                  [0, 0, 0, 1, 1, 1]], np.int32)
  idx = np.arange(3, dtype=np.int32)
  return tok, seg, idx


def _cases():
  """(name, model)."""
  return [
      ('bert_cls', bert.BERT(n_layers=2, head=functools.partial(
          bert.BERTClassifierHead, 3), **TINY)),
      ('bert_plain', bert.BERT(n_layers=1, **TINY)),
      ('bert_reg', bert.BERT(n_layers=1, head=bert.BERTRegressionHead,
                             mode='train', **TINY)),
      ('bert_mlm', bert.BERT(n_layers=1, head=functools.partial(
          bert.BERTMLMHead, vocab_size=11), **TINY)),
  ]


def _noisy(model, seed):
  rng = np.random.default_rng(seed)
  leaves = fastmath.tree_flatten(model.weights)
  new = [jnp.asarray(np.asarray(w) + rng.normal(size=w.shape).astype(
      np.float32) * 0.3) for w in leaves]
  model.weights = fastmath.tree_unflatten(new, model.weights)[0]


def main():
  records, arrays = {}, {}
  xs = _inputs()
  for i, x in enumerate(xs):
    arrays[f'inputs/x{i}'] = x
  for seed, (name, model) in enumerate(_cases()):
    model.init(shapes.signature(xs))
    _noisy(model, seed)
    ys = model(xs)
    ys = ys if isinstance(ys, tuple) else (ys,)
    weights = fastmath.tree_flatten(model.weights)
    records[name] = dict(repr=str(model), n_in=model.n_in,
                         n_out=model.n_out,
                         weight_shapes=[list(w.shape) for w in weights])
    for i, w in enumerate(weights):
      arrays[f'{name}/w{i}'] = np.asarray(w)
    for i, y in enumerate(ys):
      arrays[f'{name}/y{i}'] = np.asarray(y)
    if name == 'bert_cls':
      model.save_to_file(os.path.join(OUT_DIR, 'bert_cls.pkl.gz'),
                         input_signature=shapes.signature(xs))
  for name, head in [('head_cls', bert.BERTClassifierHead(3)),
                     ('head_reg', bert.BERTRegressionHead()),
                     ('head_mlm', bert.BERTMLMHead()),
                     ('head_pretraining', bert.BERTPretrainingHead(2)[0]),
                     ('pretraining_loss', bert.BERTPretrainingLoss())]:
    records[name] = dict(repr=str(head), n_in=head.n_in, n_out=head.n_out)
  # BERTPretrainingLoss on fixed inputs:
  # nsp_logits, mlm_logits, nsp_targets, nsp_weights, mlm_targets,
  # mlm_weights.
  rng = np.random.default_rng(7)
  loss_in = (rng.normal(size=(3, 2)).astype(np.float32),
             rng.normal(size=(3, 4, 5)).astype(np.float32),
             np.array([0, 1, 1], np.int32),
             np.array([1.0, 1.0, 0.5], np.float32),
             rng.integers(0, 5, size=(3, 4)).astype(np.int32),
             (rng.random((3, 4)) > 0.3).astype(np.float32))
  loss = bert.BERTPretrainingLoss()
  loss.init(shapes.signature(loss_in))
  for i, x in enumerate(loss_in):
    arrays[f'loss/x{i}'] = x
  arrays['loss/y0'] = np.asarray(loss(loss_in))
  with open(os.path.join(OUT_DIR, 'cases.json'), 'w') as f:
    json.dump({'cases': records}, f, indent=1, sort_keys=True)
  np.savez_compressed(os.path.join(OUT_DIR, 'cases.npz'), **arrays)


if __name__ == '__main__':
  main()
