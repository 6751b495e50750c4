"""Tests for L2Loss and SmoothL1Loss."""

import numpy as np
import pytest

from tfnp_trax import layers as tl
from tests.layers import _metric_harness as h


def ref_l2(y, t, w):
  d = y.astype(np.float64) - t
  return np.sum(w * d * d) / np.sum(w.astype(np.float64))


def ref_smooth_l1(y, t, w):
  d = np.abs(y.astype(np.float64) - t)
  per = np.array([0.5 * v * v if v < 1 else v - 0.5 for v in d.ravel()])
  return np.sum(w.ravel() * per) / np.sum(w.astype(np.float64))


def _data(seed):
  rng = np.random.default_rng(seed)
  y = rng.normal(scale=2.0, size=(4, 3)).astype(np.float32)
  t = rng.normal(size=(4, 3)).astype(np.float32)
  w = rng.uniform(size=(4, 3)).astype(np.float32)
  w[0] = 0.0
  return y, t, w


@pytest.mark.parametrize('mode', h.MODES)
@pytest.mark.parametrize('make,ref', [(tl.L2Loss, ref_l2),
                                      (tl.SmoothL1Loss, ref_smooth_l1)])
def test_matches_reference(mode, make, ref):
  y, t, w = _data(0)
  h.assert_close(h.run_layer(make(), (y, t, w), mode), ref(y, t, w))


def test_smooth_l1_by_hand():
  y = np.array([0.5, 3.0, -2.0], np.float32)
  t = np.zeros(3, np.float32)
  w = np.array([2.0, 1.0, 1.0], np.float32)
  # Per element: 0.125, 2.5, 1.5; weighted: (0.25 + 2.5 + 1.5) / 4.
  h.assert_close(tl.SmoothL1Loss()((y, t, w)), 4.25 / 4)


@pytest.mark.parametrize('mode', h.MODES)
def test_all_zero_weights_give_zero(mode):
  y, t, w = _data(1)
  for layer in (tl.L2Loss(), tl.SmoothL1Loss()):
    h.assert_close(h.run_layer(layer, (y, t, np.zeros_like(w)), mode), 0.0)


def test_shapes_must_match_exactly():
  y, t, w = _data(2)
  h.assert_layer_value_error(
      tl.L2Loss(), (y, t[:, :1], w),
      r'L2Loss: targets shape \(4, 1\) does not match model_output shape '
      r'\(4, 3\); targets must have exactly the shape of model_output')
  h.assert_layer_value_error(
      tl.SmoothL1Loss(), (y, t, w[:, 0]),
      r'SmoothL1Loss: weights shape \(4,\) does not match model_output shape '
      r'\(4, 3\).*jnp.broadcast_to\(weights\[:, None\], \(4, 3\)\)')
