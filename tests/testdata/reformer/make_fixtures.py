"""Records real Trax's configurable Transformers and Reformers as fixtures.

NOT part of the test suite; CI never runs it (it needs Trax 1.4.1 on JAX).
Kept so that the fixtures beside it can be regenerated and audited:

    JAX_PLATFORMS=cpu /work/trax_venv/bin/python \
        tests/testdata/reformer/make_fixtures.py

For each case it writes, into `models.json`, the model's `str()`, n_in,
n_out, and the shapes of its weight leaves (flattened with
`trax.fastmath.tree_flatten`); for the cases marked `values`, it also
writes into `models.npz` the model's weight leaves (`<case>/w<i>`) and its
eval-mode outputs (`<case>/y<i>`), so tests can load Trax's weights into
tfnp_trax's model and compare outputs. Every case's inputs are stored as
`<case>/x<i>`.
"""

import functools
import json
import os

os.environ.setdefault('JAX_PLATFORMS', 'cpu')
os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '3')

# pylint: disable=g-import-not-at-top,wrong-import-position
import warnings

warnings.filterwarnings('ignore')

import jax
from jax._src import prng as jax_prng
import numpy as np
import trax
from trax import fastmath
from trax import shapes
import trax.layers as tl
from trax.layers.research import position_encodings
from trax.models.reformer import reformer
from trax.models.research import configurable_transformer as ct

# JAX 0.4.30 no longer exports jax.random.threefry_2x32, which Trax 1.4.1's
# InfinitePositionalEncoding ('infinite' pos_type) calls; restore it.
if not hasattr(jax.random, 'threefry_2x32'):
  jax.random.threefry_2x32 = jax_prng.threefry_2x32

OUT_DIR = os.path.dirname(os.path.abspath(__file__))
TINY = dict(d_model=8, d_ff=16, n_heads=2, dropout=0.0)


def _tokens(seed, shape, vocab):
  return np.random.default_rng(seed).integers(1, vocab, size=shape).astype(
      np.int32)


def _cases():
  """(name, builder, inputs, record_values)."""
  toks8 = _tokens(0, (2, 8), 11)
  src, tgt = _tokens(1, (2, 8), 11), _tokens(2, (2, 8), 11)
  src[1, 6:] = 0  # Padding, so the masks matter.
  pair = (src, tgt)
  return [
      ('ct_lm', lambda: ct.ConfigurableTransformerLM(
          11, n_layers=2, max_len=16, mode='eval', **TINY), (toks8,), True),
      ('ct_lm_chunked_sru', lambda: ct.ConfigurableTransformerLM(
          11, n_layers=1, max_len=16, mode='eval', ff_chunk_size=4,
          ff_use_sru=(1, 8), attention_chunk_size=1, ff_activation=tl.Gelu,
          **TINY), (toks8,), True),
      ('ct_encoder_axial', lambda: ct.ConfigurableTransformerEncoder(
          11, n_classes=3, n_layers=1, max_len=16, mode='eval',
          pos_type='axial', pos_axial_shape=(2, 4), pos_d_axial_embs=(4, 4),
          ff_use_sru=1, **TINY), (src,), True),
      ('ct_transformer', lambda: ct.ConfigurableTransformer(
          11, n_encoder_layers=1, n_decoder_layers=1, max_len=16,
          mode='eval', **TINY), pair, True),
      ('ct_transformer_two_vocabs', lambda: ct.ConfigurableTransformer(
          11, output_vocab_size=13, n_encoder_layers=1, n_decoder_layers=1,
          max_len=16, mode='train', **TINY), pair, False),
      ('ct_lm_selfattention', lambda: ct.ConfigurableTransformerLM(
          11, n_layers=1, max_len=16, mode='eval',
          attention_type=tl.SelfAttention, **TINY), (toks8,), True),
      ('reformer_lm_selfattention', lambda: reformer.ReformerLM(
          11, d_model=8, d_ff=16, d_attention_key=4, d_attention_value=4,
          n_layers=2, n_heads=2, dropout=0.0, max_len=16, mode='eval',
          attention_type=tl.SelfAttention), (toks8,), True),
      ('reformer_lm_axial_sru', lambda: reformer.ReformerLM(
          11, d_model=8, d_ff=16, d_attention_key=4, d_attention_value=4,
          n_layers=1, n_heads=2, dropout=0.0, max_len=16, mode='eval',
          attention_type=tl.SelfAttention, pos_type='axial',
          pos_axial_shape=(2, 4), pos_d_axial_embs=(4, 4), ff_use_sru=1,
          ff_chunk_size=4), (toks8,), True),
      ('reformer_lm_lsh', lambda: reformer.ReformerLM(
          11, d_model=8, d_ff=16, d_attention_key=4, d_attention_value=4,
          n_layers=2, n_heads=2, max_len=16, mode='train',
          attention_type=functools.partial(
              tl.LSHSelfAttention, chunk_len=4, n_buckets=2)),
       (toks8,), False),
      ('reformer_lm_default', lambda: reformer.ReformerLM(11),
       (np.zeros((1, 8), np.int32),), False),
      ('reformer_shorten_lm', lambda: reformer.ReformerShortenLM(
          11, shorten_factor=2, d_embedding=4, d_model=8, d_ff=16,
          d_attention_key=4, d_attention_value=4, n_layers=1, n_heads=2,
          dropout=0.0, max_len=16, mode='eval',
          attention_type=tl.SelfAttention), (toks8,), True),
      ('reformer_lm_fixed_base', lambda: reformer.ReformerLM(
          11, d_model=8, d_ff=16, d_attention_key=4, d_attention_value=4,
          n_layers=1, n_heads=2, dropout=0.0, max_len=16, mode='eval',
          attention_type=tl.SelfAttention, pos_type='fixed-base'),
       (toks8,), True),
      ('ct_lm_sin_cos', lambda: ct.ConfigurableTransformerLM(
          11, n_layers=1, max_len=16, mode='eval', pos_type='sin-cos',
          **TINY), (toks8,), True),
      ('ct_lm_infinite', lambda: ct.ConfigurableTransformerLM(
          11, n_layers=1, max_len=16, mode='eval', pos_type='infinite',
          **TINY), (toks8,), True),
      ('ct_lm_infinite_affine', lambda: ct.ConfigurableTransformerLM(
          11, n_layers=1, max_len=16, mode='eval',
          pos_type='infinite-affine', **TINY), (toks8,), False),
      ('ct_lm_no_pos', lambda: ct.ConfigurableTransformerLM(
          11, n_layers=1, max_len=16, mode='eval', pos_type='no', **TINY),
       (toks8,), True),
      ('ct_lm_pos_offset', lambda: ct.ConfigurableTransformerLM(
          11, n_layers=1, max_len=16, mode='train',
          pos_start_from_zero_prob=0.5, pos_max_offset_to_add=4, **TINY),
       (toks8,), False),
      ('ct_encoder_fixed_base', lambda: ct.ConfigurableTransformerEncoder(
          11, n_classes=3, n_layers=1, max_len=16, mode='eval',
          pos_type='fixed-base', **TINY), (src,), True),
      ('reformer', lambda: reformer.Reformer(
          11, d_model=8, d_ff=16, n_encoder_layers=1, n_decoder_layers=1,
          n_heads=2, dropout=0.0, max_len=16, mode='eval'), pair, True),
  ]


def _uncached_get_noise(get_noise):
  """InfinitePositionalEncoding._get_noise without the cache.

  Trax 1.4.1 caches the noise table on the layer while a trace (init's
  abstract evaluation, or jit) runs, and the next trace then uses a leaked
  tracer (UnexpectedTracerError), so a model with pos_type='infinite' fails
  to init. Dropping the cache first recomputes the same table every time.
  """
  def uncached(self, lo, hi, depth):
    self._noise = None  # pylint: disable=protected-access
    return get_noise(self, lo, hi, depth)
  return uncached


# The class itself, not gin's wrapper that trax.layers exports.
# pylint: disable=protected-access
position_encodings.InfinitePositionalEncoding._get_noise = (
    _uncached_get_noise(
        position_encodings.InfinitePositionalEncoding._get_noise))
# pylint: enable=protected-access


def main():
  records, arrays = {}, {}
  for name, build, inputs, record_values in _cases():
    model = build()
    x = inputs[0] if len(inputs) == 1 else inputs
    model.init(shapes.signature(x), rng=fastmath.random.get_prng(0))
    leaves = [np.asarray(w) for w in fastmath.tree_flatten(model.weights)
              if w is not None and np.ndim(w) >= 0 and hasattr(w, 'shape')]
    records[name] = {
        'repr': str(model),
        'n_in': model.n_in,
        'n_out': model.n_out,
        'weight_shapes': [list(w.shape) for w in leaves],
        'weight_dtypes': [str(w.dtype) for w in leaves],
        'values': record_values,
    }
    for i, a in enumerate(inputs):
      arrays[f'{name}/x{i}'] = a
    if record_values:
      ys = model(x, rng=fastmath.random.get_prng(1))
      ys = ys if isinstance(ys, (tuple, list)) else (ys,)
      for i, w in enumerate(leaves):
        arrays[f'{name}/w{i}'] = w
      for i, y in enumerate(ys):
        arrays[f'{name}/y{i}'] = np.asarray(y)
    print(name, len(leaves), 'leaves')
  with open(os.path.join(OUT_DIR, 'models.json'), 'w') as f:
    json.dump({'generator': {'trax': trax.__version__ if hasattr(
        trax, '__version__') else '1.4.1',
                             'script': 'tests/testdata/reformer/'
                                       'make_fixtures.py'},
               'cases': records}, f, indent=1, sort_keys=True)
  np.savez_compressed(os.path.join(OUT_DIR, 'models.npz'), **arrays)


if __name__ == '__main__':
  main()
