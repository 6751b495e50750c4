"""Quality (Q-value head) against NumPy float64 forwards."""


import numpy as np
import pytest

from tests import _layer_testing as lt
from tests.models import _np_ref as ref
from tfnp_trax import fastmath
from tfnp_trax import layers as tl
from tfnp_trax import models
from tfnp_trax import shapes
from tfnp_trax.fastmath import numpy as jnp


def _body(mode):
  del mode
  return tl.Serial(tl.Dense(5), tl.Relu())


def _normalizer(mode):
  del mode
  return tl.Fn('Halve', lambda x: x * 0.5)


@pytest.mark.parametrize('mode', lt.MODES)
def test_quality_matches_numpy(mode, rng):
  x = rng.normal(size=(3, 4)).astype(np.float32)
  model = models.Quality(body=_body, normalizer=_normalizer, n_actions=3)
  weights, _ = model.init(shapes.signature(x))
  # Dense 4 -> 5 in the body, Dense 5 -> 3 head.
  assert ref.n_params(weights) == (4 * 5 + 5) + (5 * 3 + 3) == 43
  got, _ = lt.run_layer(model, jnp.asarray(x), mode)
  w = ref.leaves(model.weights)
  h = ref.relu(0.5 * x.astype(np.float64) @ next(w) + next(w))
  np.testing.assert_allclose(np.asarray(got), h @ next(w) + next(w),
                             rtol=1e-5, atol=1e-6)


def test_default_is_a_two_action_dense_head():
  model = models.Quality()
  weights, _ = model.init(shapes.ShapeDtype((2, 7)))
  assert ref.n_params(weights) == 7 * 2 + 2
  assert model.output_signature(shapes.ShapeDtype((2, 7))).shape == (2, 2)


def test_batch_axes_fold_leading_axes(rng):
  x = rng.normal(size=(2, 3, 4)).astype(np.float32)
  folded = models.Quality(body=_body, batch_axes=1, n_actions=2)
  plain = models.Quality(body=_body, n_actions=2)
  folded.init(shapes.signature(x))
  plain.init(shapes.signature(x))
  weights, _ = fastmath.tree_unflatten(fastmath.tree_leaves(plain.weights),
                                       folded.weights)
  got = folded(jnp.asarray(x), weights=weights)
  np.testing.assert_allclose(np.asarray(got), np.asarray(plain(x)),
                             rtol=1e-6)
  assert tuple(got.shape) == (2, 3, 2)


def test_head_init_range_bounds_the_head_kernel():
  model = models.Quality(n_actions=4, head_init_range=1e-3)
  weights, _ = model.init(shapes.ShapeDtype((2, 50)))
  kernel = np.asarray(weights[-1][0])
  assert kernel.shape == (50, 4) and np.abs(kernel).max() <= 1e-3


def test_body_and_normalizer_get_the_mode():
  seen = []

  def body(mode):
    seen.append(mode)
    return []
  models.Quality(body=body, normalizer=body, mode='eval')
  assert seen == ['eval', 'eval']


def test_rejects_bad_n_actions():
  with pytest.raises(ValueError, match=r'Quality: n_actions must be a '
                     r'positive int, got 0'):
    models.Quality(n_actions=0)
