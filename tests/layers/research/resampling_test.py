"""Tests of the resampling layers (layers/research/resampling.py)."""

import numpy as np
import pytest

from tests import _layer_testing as lt
from tests.layers.research import _rel_fixtures as fx
from tfnp_trax import layers as tl
from tfnp_trax.layers.research import rel_attention as ra
from tfnp_trax.layers.research import resampling as rs


def _attention_resampling(is_upsampling, resampling_fn):
  return lambda: tl.Serial(rs.AttentionResampling(
      2, 8, is_upsampling, 16, 2, 0.0, None, 'eval', tl.FastGelu,
      *ra.get_rel_att_inputs(8, 2), 1, resampling_fn))


# The same constructors as tests/testdata/rel_attention/make_fixtures.py.
CASES = {
    'average_pooling': lambda: rs.AveragePooling(2),
    'linear_pooling': lambda: rs.LinearPooling(2, 8, mode='eval'),
    'linear_upsampling': lambda: rs.LinearUpsampling(3, 8, mode='eval'),
    'naive_upsampling': lambda: rs.NaiveUpsampling(2, 8),
    'no_upsampling': lambda: rs.NoUpsampling(2, 8),
    'feed_forward_block': lambda: tl.Serial(rs.FeedForwardBlock(
        8, 16, 0.0, None, 'eval', tl.FastGelu)),
    'attention_resampling_down': _attention_resampling(False,
                                                       rs.AveragePooling),
    'attention_resampling_up': _attention_resampling(True,
                                                     rs.LinearUpsampling),
}
# Compiled too (eager and XLA; tf.function is covered by the smaller layers).
COMPILED = ('attention_resampling_down', 'attention_resampling_up')


@pytest.mark.parametrize('name', sorted(CASES))
def test_structure_and_outputs_match_trax(name):
  fx.assert_structure_matches(name, CASES[name]())
  modes = ('eager', 'xla') if name in COMPILED else ('eager',)
  fx.assert_outputs_match(name, CASES[name](), modes=modes)


def test_resampling_layers_match_numpy_with_gradients():
  rng = np.random.default_rng(0)
  x = lt.random(rng, 2, 6, 4)
  short = lt.random(rng, 2, 2, 4)
  lt.check_parallel([
      (rs.AveragePooling(3), x,
       lambda xx, _: xx.reshape(2, 2, 3, 4).mean(axis=2)),
      # Each window's positions side by side, then the projection.
      (rs.LinearPooling(3, 5, mode='eval'), x,
       lambda xx, w: xx.reshape(2, 2, 12) @ w[1][0] + w[1][1]),
      (rs.LinearUpsampling(3, 5, mode='eval'), short,
       lambda xx, w: (xx @ w[0][0] + w[0][1]).reshape(2, 6, 5)),
      (rs.NaiveUpsampling(3, 4), short,
       lambda xx, _: np.stack([xx] * 3, axis=2).reshape(2, 6, 4)),
      (rs.NoUpsampling(3, 4), short, lambda xx, _: np.zeros((2, 6, 4))),
  ], modes=lt.MODES)


def test_feed_forward_block_matches_numpy():
  x = lt.random(np.random.default_rng(1), 2, 3, 4)
  relu = lambda a: np.maximum(a, 0.0)
  lt.check_layer(
      tl.Serial(rs.FeedForwardBlock(4, 6, 0.0, None, 'eval', tl.Relu)), x,
      lambda xx, w: relu(xx @ w[0][0] + w[0][1]) @ w[3][0] + w[3][1])


def test_upsampling_keeps_the_full_input_below():
  layer = _attention_resampling(True, rs.NaiveUpsampling)()
  x = fx.inputs('attention_resampling_up')
  lt.init_layer(layer, x)
  out, full = layer(x)
  assert out.shape == (2, 6, 8)
  np.testing.assert_array_equal(full, x[1])


def test_linear_pooling_needs_divisible_length():
  layer = rs.LinearPooling(4, 8)
  with pytest.raises(tl.LayerError, match=r'LinearPooling: expects \(batch, '
                     r'length, d\) with length a multiple of shorten_factor '
                     r'4, got shape \(2, 6, 3\)'):
    lt.init_layer(layer, np.zeros((2, 6, 3), np.float32))
