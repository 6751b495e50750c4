"""logsoftmax_sample, ThresholdToBinary and multigaussian_loss."""

import math

import numpy as np
import pytest

from tfnp_trax import layers as tl
from tfnp_trax.fastmath import numpy as jnp
from tests import _layer_testing as lt


def _softmax(logits):
  z = np.exp(logits - logits.max(axis=-1, keepdims=True))
  return z / z.sum(axis=-1, keepdims=True)


@pytest.mark.parametrize('temperature', [1.0, 0.5, 2.0])
def test_logsoftmax_sample_follows_tempered_softmax(temperature):
  probs = np.array([0.1, 0.2, 0.3, 0.4])
  log_probs = np.log(probs)
  n = 20000
  np.random.seed(0)
  samples = tl.logsoftmax_sample(np.tile(log_probs, (n, 1)), temperature)
  assert samples.shape == (n,)
  want = _softmax(log_probs / temperature)
  freq = np.bincount(samples, minlength=4) / n
  # Five standard errors of a frequency estimated from n draws.
  np.testing.assert_allclose(freq, want, atol=5 * np.sqrt(0.25 / n))


def test_logsoftmax_sample_is_seeded_by_numpy_and_greedy_at_zero():
  log_probs = np.log(np.array([[0.5, 0.2, 0.3], [0.1, 0.1, 0.8]]))
  np.random.seed(3)
  first = tl.logsoftmax_sample(log_probs)
  np.random.seed(3)
  np.testing.assert_array_equal(tl.logsoftmax_sample(log_probs), first)
  np.testing.assert_array_equal(
      tl.logsoftmax_sample(jnp.asarray(log_probs), temperature=0.0), [0, 2])
  batched = tl.logsoftmax_sample(np.zeros((2, 5, 3)))
  assert batched.shape == (2, 5) and batched.max() < 3


@pytest.mark.parametrize('mode', lt.MODES)
def test_threshold_to_binary(mode):
  layer = tl.ThresholdToBinary()
  assert layer.name == 'ThresholdToBinary'
  x = np.array([[0.1, 0.5, 0.51], [-3.0, 0.9, 2.0]], np.float32)
  y = lt.layer_outputs(layer, x, mode)
  assert y.dtype.name == 'int32'
  np.testing.assert_array_equal(y, [[0, 0, 1], [0, 1, 1]])
  strict = tl.ThresholdToBinary(threshold=1.0)
  np.testing.assert_array_equal(lt.layer_outputs(strict, x, mode),
                                [[0, 0, 0], [0, 0, 1]])


def _mixture_log_density(preds, targets, ngauss):
  """log sum_k w_k N(t | mu_k, diag(s_k^2 + 1e-6)) in float64, loop by loop."""
  preds = preds.astype(np.float64)
  targets = targets.astype(np.float64)
  d = targets.shape[-1]
  out = []
  for p, t in zip(preds, targets):
    logits = p[:ngauss]
    weights = np.exp(logits - logits.max())
    weights /= weights.sum()
    total = 0.0
    for k in range(ngauss):
      mu = p[ngauss + k * d:ngauss + (k + 1) * d]
      s = p[ngauss * (d + 1) + k * d:ngauss * (d + 1) + (k + 1) * d]
      var = s * s + 1e-6
      density = np.prod(np.exp(-(t - mu) ** 2 / (2 * var)) /
                        np.sqrt(2 * math.pi * var))
      total += weights[k] * density
    out.append(np.log(total))
  return np.array(out)


@pytest.mark.parametrize('ngauss,d', [(1, 1), (3, 2), (2, 4)])
@pytest.mark.parametrize('mode', lt.MODES)
def test_multigaussian_loss_matches_float64_formula(ngauss, d, mode):
  rng = np.random.RandomState(ngauss * 10 + d)
  preds = rng.normal(size=(5, ngauss * (2 * d + 1))).astype(np.float32)
  preds[:, ngauss * (d + 1):] += 1.5  # Scales away from 0.
  targets = rng.normal(size=(5, d)).astype(np.float32)
  fn = lt.compile_fn(
      lambda p, t: tl.multigaussian_loss(p, t, ngauss=ngauss), mode)
  got = np.asarray(fn(jnp.asarray(preds), jnp.asarray(targets)))
  assert got.shape == (5,)
  np.testing.assert_allclose(got, _mixture_log_density(preds, targets, ngauss),
                             rtol=1e-5, atol=1e-5)
