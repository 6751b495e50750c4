"""Records real Trax's relative attention, resampling, rotary and Hourglass.

NOT part of the test suite; CI never runs it (it needs Trax 1.4.1 on JAX).
Kept so that the fixtures beside it can be regenerated and audited:

    JAX_PLATFORMS=cpu /work/trax_venv/bin/python \
        tests/testdata/rel_attention/make_fixtures.py

For each case it writes into `cases.json` the layer's `str()`, n_in, n_out
and weight leaf shapes (flattened with `trax.fastmath.tree_flatten`, so a
shared layer's second occurrence adds none), and into `fixtures.npz` its
inputs (`<case>/x<i>`), weight leaves (`<case>/w<i>`) and eval-mode outputs
(`<case>/y<i>`, run with `rng=get_prng(1)`). Cases marked `values: false`
record structure only.
"""

import json
import os

os.environ.setdefault('JAX_PLATFORMS', 'cpu')
os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '3')

# pylint: disable=g-import-not-at-top,wrong-import-position
import warnings

warnings.filterwarnings('ignore')

import numpy as np
from trax import fastmath
from trax import shapes
import trax.layers as tl
from trax.layers.research import rel_attention as ra
from trax.layers.research import resampling as rs
from trax.layers.research import rotary_positional_embedding as rope
from trax.models.research import hourglass

OUT_DIR = os.path.dirname(os.path.abspath(__file__))
TINY = dict(d_model=8, d_ff=16, n_heads=2, dropout=0.0)


def _f(seed, *shape):
  return np.random.default_rng(seed).normal(size=shape).astype(np.float32)


def _mask(seed, q_len, k_len):
  m = np.random.default_rng(seed).random((2, 1, q_len, k_len)) < 0.6
  m[..., 0] = True  # Every query sees at least one key.
  return m


def _tokens(seed, shape, vocab=11):
  return np.random.default_rng(seed).integers(1, vocab, size=shape).astype(
      np.int32)


def _biases():
  return ra.get_rel_att_inputs(8, 2)


def _core_inputs(seed, q_len, k_len, width, mask):
  lb, cb = _f(seed, 1, 2, 1, 4), _f(seed + 1, 1, 2, 1, 4)
  return (lb, cb, _f(seed + 2, width, 8), _f(seed + 3, 2, q_len, 8),
          _f(seed + 4, 2, k_len, 8), _f(seed + 5, 2, k_len, 8), mask)


def _lm(pooling):
  return lambda: ra.RelativeAttentionLMLayer(8, *_biases(), pooling,
                                             n_heads=2, mode='eval')


def _cases():
  """(name, builder, inputs, record_values)."""
  qkv = lambda s, q, k: (_f(s, 2, q, 8), _f(s + 1, 2, k, 8),
                         _f(s + 2, 2, k, 8))
  causal = lambda q, k: np.broadcast_to(np.tril(np.ones((q, k), bool)),
                                        (2, 1, q, k)).copy()
  cases = [
      ('rotate', rope.Rotate, (_f(0, 2, 5, 6),), True),
      ('pos_emb_eq', lambda: ra.PositionalEmbeddings(8, False, 1),
       (_f(1, 2, 4, 8), _f(2, 2, 4, 8)), True),
      ('pos_emb_eq_pool2', lambda: ra.PositionalEmbeddings(8, False, 2),
       (_f(1, 2, 3, 8), _f(2, 2, 3, 8)), True),
      ('pos_emb_down', lambda: ra.PositionalEmbeddings(8, False, 2),
       (_f(1, 2, 2, 8), _f(2, 2, 6, 8)), True),
      ('pos_emb_up', lambda: ra.PositionalEmbeddings(8, False, 2),
       (_f(1, 2, 6, 8), _f(2, 2, 2, 8)), True),
      ('mask_eq', ra.CreateAttentionMaskLayer, qkv(3, 4, 4), True),
      ('mask_down', ra.CreateAttentionMaskLayer, qkv(3, 2, 6), True),
      ('mask_up', ra.CreateAttentionMaskLayer, qkv(3, 6, 2), True),
      ('core_eq_full', lambda: ra.RelativeAttention(False, 2, mode='eval'),
       _core_inputs(10, 4, 4, 4, np.ones((2, 1, 4, 4), bool)), True),
      ('core_eq_cls', lambda: ra.RelativeAttention(True, 2, mode='eval'),
       _core_inputs(20, 4, 4, 4, _mask(5, 4, 4)), True),
      ('core_down', lambda: ra.RelativeAttention(False, 2, mode='eval'),
       _core_inputs(30, 2, 6, 11, _mask(6, 2, 6)), True),
      ('core_up', lambda: ra.RelativeAttention(False, 2, mode='eval'),
       _core_inputs(40, 6, 2, 11, _mask(7, 6, 2)), True),
      ('core_up_cls', lambda: ra.RelativeAttention(True, 2, mode='eval'),
       _core_inputs(50, 6, 3, 11, causal(6, 3)), True),
      ('lm_eq', _lm(1), qkv(60, 5, 5), True),
      ('lm_eq_pool2', _lm(2), qkv(63, 4, 4), True),
      ('lm_down', _lm(2), qkv(66, 3, 6), True),
      ('lm_up', _lm(2), qkv(69, 6, 2), True),
      ('layer_masked', lambda: ra.RelativeAttentionLayer(
          8, *_biases(), 1, False, n_heads=2, mode='eval'),
       qkv(72, 4, 4) + (_mask(8, 4, 4),), True),
      ('wrapper', lambda: ra.RelativeAttentionWrapper(
          8, 2, mode='eval', context_bias_layer=_biases()[0],
          location_bias_layer=_biases()[1], total_pooling=1),
       (_f(75, 2, 5, 8),), True),
      ('shift_right_cls_int', lambda: ra.ShiftRightCls(5),
       (_tokens(76, (2, 4)),), True),
      ('shift_right_cls_float', lambda: ra.ShiftRightCls(3),
       (_f(77, 2, 4, 3),), True),
      ('average_pooling', lambda: rs.AveragePooling(2),
       (_f(80, 2, 6, 4),), True),
      ('linear_pooling', lambda: rs.LinearPooling(2, 8, mode='eval'),
       (_f(81, 2, 6, 4),), True),
      ('linear_upsampling', lambda: rs.LinearUpsampling(3, 8, mode='eval'),
       (_f(82, 2, 2, 8),), True),
      ('naive_upsampling', lambda: rs.NaiveUpsampling(2, 8),
       (_f(83, 2, 3, 4),), True),
      ('no_upsampling', lambda: rs.NoUpsampling(2, 8),
       (_f(84, 2, 3, 4),), True),
      ('feed_forward_block', lambda: tl.Serial(rs.FeedForwardBlock(
          8, 16, 0.0, None, 'eval', tl.FastGelu)), (_f(85, 2, 3, 8),), True),
      ('attention_resampling_down', lambda: tl.Serial(rs.AttentionResampling(
          2, 8, False, 16, 2, 0.0, None, 'eval', tl.FastGelu, *_biases(), 1,
          rs.AveragePooling)), (_f(86, 2, 6, 8),), True),
      ('attention_resampling_up', lambda: tl.Serial(rs.AttentionResampling(
          2, 8, True, 16, 2, 0.0, None, 'eval', tl.FastGelu, *_biases(), 1,
          rs.LinearUpsampling)), (_f(87, 2, 3, 8), _f(88, 2, 6, 8)), True),
      ('hourglass_tiny', lambda: hourglass.HourglassLM(
          11, hierarchy='1@2', mode='eval', **TINY),
       (_tokens(90, (2, 8)),), True),
      ('hourglass_two_levels', lambda: hourglass.HourglassLM(
          11, vanilla_layers=(1, 0), hierarchy='1@2 1@4 1@2', mode='eval',
          **TINY), (_tokens(91, (2, 8)),), True),
      ('hourglass_sf3', lambda: hourglass.HourglassLM(
          11, vanilla_layers=(0, 1), hierarchy='2@3', mode='eval', **TINY),
       (_tokens(92, (1, 6)),), True),
      ('hourglass_variants', lambda: hourglass.HourglassLM(
          11, hierarchy='1@2', mode='eval', ff_activation=tl.Relu,
          vanilla_attn_type=tl.CausalAttention,
          middle_attn_type=tl.CausalAttention,
          downsampling_fn=rs.LinearPooling, upsampling_fn=rs.NaiveUpsampling,
          **TINY), (_tokens(93, (2, 8)),), True),
      ('hourglass_train', lambda: hourglass.HourglassLM(
          11, d_model=8, d_ff=16, n_heads=2, hierarchy='1@2'),
       (_tokens(94, (2, 4)),), False),
  ]
  return cases


def main():
  records, arrays = {}, {}
  for name, build, inputs, record_values in _cases():
    layer = build()
    x = inputs[0] if len(inputs) == 1 else inputs
    layer.init(shapes.signature(x), rng=fastmath.random.get_prng(0))
    leaves = [np.asarray(w) for w in fastmath.tree_flatten(layer.weights)]
    records[name] = {
        'repr': str(layer), 'n_in': layer.n_in, 'n_out': layer.n_out,
        'weight_shapes': [list(w.shape) for w in leaves],
        'values': record_values,
    }
    for i, a in enumerate(inputs):
      arrays[f'{name}/x{i}'] = a
    if record_values:
      ys = layer(x, rng=fastmath.random.get_prng(1))
      ys = ys if isinstance(ys, (tuple, list)) else (ys,)
      for i, w in enumerate(leaves):
        arrays[f'{name}/w{i}'] = w
      for i, y in enumerate(ys):
        arrays[f'{name}/y{i}'] = np.asarray(y)
    print(name, len(leaves), 'leaves')
  records['hourglass_default_repr'] = {'repr': str(hourglass.HourglassLM(11))}
  with open(os.path.join(OUT_DIR, 'cases.json'), 'w') as f:
    json.dump({'generator': {'trax': '1.4.1', 'script':
                             'tests/testdata/rel_attention/make_fixtures.py'},
               'cases': records}, f, indent=1, sort_keys=True)
  np.savez_compressed(os.path.join(OUT_DIR, 'fixtures.npz'), **arrays)


if __name__ == '__main__':
  main()
