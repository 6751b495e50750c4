"""NeuralGPU against a NumPy float64 forward; weight sharing and counts."""


import numpy as np
import pytest

from tests import _layer_testing as lt
from tests.models import _np_ref as ref
from tfnp_trax import fastmath
from tfnp_trax import layers as tl
from tfnp_trax import models
from tfnp_trax import shapes
from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.models import neural_gpu


def _diagonal_gate(x):
  """Thirds of the channels taken from columns j - 1, j and j + 1."""
  k = x.shape[-1] // 3
  padded = np.pad(x, [(0, 0), (0, 0), (1, 1), (0, 0)])
  return np.concatenate([padded[:, :, :-2, :k], padded[:, :, 1:-1, k:2 * k],
                         padded[:, :, 2:, 2 * k:]], axis=-1)


def _neural_gpu_reference(ids, weights, steps):
  w = ref.leaves(weights)
  table = next(w)
  cell = [(next(w), next(w)) for _ in range(3)]  # One cell, shared.
  dense_w, dense_b = next(w), next(w)
  s = table[ids]
  for _ in range(steps):
    s = ref.gru_cell(s, cell, ref.hard_sigmoid, ref.hard_tanh,
                     memory_fn=_diagonal_gate)
  return s @ dense_w + dense_b


@pytest.fixture(scope='module')
def model():
  m = models.NeuralGPU(d_feature=6, steps=3, vocab_size=4, mode='eval')
  m.init(shapes.ShapeDtype((2, 3, 5), jnp.int32),
         rng=fastmath.random.get_prng(0))
  # Unit-scale weights, so the hard gates leave their linear range too.
  r = np.random.default_rng(1)
  m.weights = fastmath.nested_map(
      lambda a: jnp.asarray(r.normal(size=a.shape) * 0.5, jnp.float32),
      m.weights)
  return m


@pytest.mark.parametrize('mode', lt.MODES)
def test_neural_gpu_matches_numpy(model, mode, rng):
  ids = rng.integers(0, 4, size=(2, 3, 5)).astype(np.int32)
  got, _ = lt.run_layer(model, jnp.asarray(ids), mode)
  assert tuple(got.shape) == (2, 3, 5, 4)
  np.testing.assert_allclose(np.asarray(got),
                             _neural_gpu_reference(ids, model.weights, 3),
                             rtol=1e-4, atol=1e-5)


def test_diagonal_gate_by_hand():
  x = np.arange(1, 13, dtype=np.float32).reshape((1, 1, 2, 6))
  got = np.asarray(neural_gpu.DiagonalGate()(jnp.asarray(x)))
  # Columns [1..6] and [7..12]; thirds (a, b, c) come from j-1, j, j+1.
  np.testing.assert_array_equal(got[0, 0], [[0, 0, 3, 4, 11, 12],
                                            [1, 2, 9, 10, 0, 0]])


def test_cell_weights_are_shared_across_steps():
  weights, _ = models.NeuralGPU(d_feature=6, steps=4, vocab_size=4).init(
      shapes.ShapeDtype((1, 2, 3), jnp.int32))
  # Embedding 4 x 6; one cell of three 3x3 convs 6 -> 6 with biases;
  # Dense 6 -> 4: 24 + 3 * (324 + 6) + 28.
  assert ref.n_params(weights) == 1042
  assert len(fastmath.tree_leaves(weights)) == 9


def test_default_config_weight_count():
  weights, _ = models.NeuralGPU().init(shapes.ShapeDtype((1, 2, 3),
                                                         jnp.int32))
  # d_feature 96, vocab 2: 2 * 96 + 3 * (9 * 96 * 96 + 96) + 96 * 2 + 2.
  assert ref.n_params(weights) == 249506


def test_train_mode_applies_candidate_dropout(rng):
  ids = jnp.asarray(rng.integers(0, 4, size=(1, 3, 4)), jnp.int32)
  m = models.NeuralGPU(d_feature=6, steps=2, vocab_size=4, mode='train')
  m.init(shapes.signature(ids))
  # HardSigmoid(0.5 + t) is 1 (the candidate unused) unless t < -0.5, so
  # the small initial weights hide the candidate; use unit-scale ones.
  m.weights = fastmath.nested_map(
      lambda a: jnp.asarray(rng.normal(size=a.shape), jnp.float32), m.weights)
  y1, y2 = (np.asarray(m(ids, rng=fastmath.random.get_prng(s)))
            for s in (1, 2))
  assert not np.allclose(y1, y2)


def test_d_feature_not_divisible_by_3_fails_when_run():
  model = models.NeuralGPU(d_feature=8)  # Builds, as in Trax.
  with pytest.raises(tl.LayerError, match=r'DiagonalGate: expects \(batch, '
                     r'height, width, channels\) with channels divisible by '
                     r'3 \(for NeuralGPU: d_feature\), got shape '
                     r'\(1, 2, 3, 8\)'):
    model.init(shapes.ShapeDtype((1, 2, 3), jnp.int32))
