"""GeneralGRUCell and ConvGRUCell against NumPy float64 references."""

import numpy as np
import pytest

from tests import _layer_testing as lt
from tests.models import _np_ref as ref
from tfnp_trax import fastmath
from tfnp_trax import layers as tl
from tfnp_trax import shapes
from tfnp_trax.fastmath import numpy as jnp


def _cell_weights(weights):
  w = ref.leaves(weights)
  return [(next(w), next(w)) for _ in range(3)]


def test_conv_gru_cell_matches_numpy_with_gradients(rng):
  s = rng.normal(size=(2, 3, 4, 3))

  def numpy_fn(x, weights):
    return ref.gru_cell(x, _cell_weights(weights), ref.sigmoid, np.tanh)
  lt.check_layer(tl.ConvGRUCell(3, mode='eval'), s, numpy_fn,
                 rtol=1e-4, atol=1e-5, grad_rtol=1e-3, grad_atol=1e-4,
                 modes=('eager', 'xla'))


def test_general_gru_cell_gates_memory_against_candidate_by_hand():
  cell = tl.GeneralGRUCell(lambda: tl.Dense(2),
                           gate_nonlinearity=tl.HardSigmoid,
                           candidate_nonlinearity=tl.HardTanh,
                           sigmoid_bias=0.0, mode='eval')
  s = np.array([[0.5, -2.0]], np.float32)
  cell.init(shapes.signature(s))
  eye, zero = np.eye(2, dtype=np.float32), np.zeros(2, np.float32)
  # Weights: (Select, (memory, update gate, candidate)), Gate. As in Trax,
  # HardSigmoid() and HardTanh() come wrapped in shape checks: ((), (), ()).
  checked = ((), (), ())
  update = ((-0.5 * eye, zero), (), checked)  # u = clip(1 - s / 2, 0, 1)
  # Dup, reset gate (Dense, bias, HardSigmoid) with r = clip(1 + 0) = 1,
  # Multiply, Dense, HardTanh, Dropout: c = clip(3 s, -1, 1).
  candidate = ((), (0.0 * eye, zero), (), checked, (), (3.0 * eye, zero),
               checked, ())
  weights = (((), ((), update, candidate)), ())
  y = np.asarray(cell(jnp.asarray(s), weights=lt.to_tensors(weights)))
  # u = [0.75, 1.0], c = [1.0, -1.0]; Trax's gate is u * s + (1 - u) * c.
  np.testing.assert_allclose(y, [[0.75 * 0.5 + 0.25 * 1.0, -2.0]],
                             rtol=1e-6)


def test_conv_gru_cell_weight_count_and_shapes():
  cell = tl.ConvGRUCell(4, kernel_size=(3, 3))
  weights, _ = cell.init(shapes.ShapeDtype((2, 5, 5, 4)))
  # Three 3x3 convolutions, 4 -> 4 channels, with biases.
  assert ref.n_params(weights) == 3 * (3 * 3 * 4 * 4 + 4) == 444
  assert [tuple(w.shape) for w in fastmath.tree_leaves(weights)] == [
      (3, 3, 4, 4), (4,)] * 3


def test_candidate_dropout_follows_mode(rng):
  s = jnp.asarray(rng.normal(size=(2, 4, 4, 3)), jnp.float32)

  def run(mode, seed):
    cell = tl.ConvGRUCell(3, mode=mode)
    cell.init(shapes.signature(s), rng=fastmath.random.get_prng(0))
    return np.asarray(cell(s, rng=fastmath.random.get_prng(seed)))
  np.testing.assert_array_equal(run('eval', 1), run('eval', 2))
  # Trax's default: the candidate dropout is always on.
  assert not np.allclose(run('train', 1), run('train', 2))


def test_bfloat16_stays_bfloat16(rng):
  lt.check_bfloat16(tl.ConvGRUCell(3, mode='eval'),
                    rng.normal(size=(1, 3, 3, 3)), modes=('eager',))


def test_conv_gru_cell_rejects_depth_mismatch():
  cell = tl.ConvGRUCell(3, mode='eval')
  with pytest.raises(tl.LayerError, match=r"GeneralGRUCell: candidate_"
                     r"transform must keep the state's shape \(1, 3, 3, 2\), "
                     r"got \(1, 3, 3, 3\)"):
    cell.init(shapes.ShapeDtype((1, 3, 3, 2)))
