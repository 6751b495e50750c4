"""Runs a layer's forward and gradients next to a NumPy float64 reference.

The layer's gradients of `sum(y * ct)` with respect to its inputs and
weights come from TensorFlow autodiff (eagerly, under `fastmath.jit`, or
under XLA); the reference gradients are central differences of the NumPy
float64 reference function, so both sides are computed independently.
"""

import numpy as np

from tfnp_trax import fastmath
from tfnp_trax import shapes
from tfnp_trax.fastmath import numpy as jnp

from tests._modes import MODES  # pylint: disable=g-bad-import-order
from tests._modes import compile_fn  # pylint: disable=g-bad-import-order


def _as_list(x):
  return list(x) if isinstance(x, (list, tuple)) else [x]


def forward_and_grads(layer, x, weights, state, ct, mode, rng=None):
  """Returns `(y, new_state, grad_x, grad_weights)` for loss sum(y * ct)."""
  rng = rng if rng is not None else fastmath.random.get_prng(0)
  cts = [jnp.asarray(c) for c in _as_list(ct)]

  def loss(xx, ww):
    y, new_state = layer.pure_fn(xx, ww, state, rng)
    total = sum(jnp.sum(yi * ci.astype(yi.dtype))
                for yi, ci in zip(_as_list(y), cts))
    return total, (y, new_state)

  value_and_grad = fastmath.value_and_grad(loss, argnums=(0, 1), has_aux=True)

  def run(xx, ww):
    (_, (y, new_state)), (gx, gw) = value_and_grad(xx, ww)
    return y, new_state, gx, gw
  return compile_fn(run, mode)(x, weights)


def numeric_grads(f, args, ct, eps=1e-6):
  """Central-difference gradients of sum(f(*args) * ct) wrt each of args."""
  args = [np.asarray(a, np.float64) for a in args]
  cts = [np.asarray(c, np.float64) for c in _as_list(ct)]

  def objective(values):
    return sum(float(np.sum(o * c)) for o, c in zip(_as_list(f(*values)),
                                                     cts))
  grads = []
  for i, a in enumerate(args):
    g = np.zeros_like(a)
    for idx in np.ndindex(a.shape):
      plus = [b.copy() for b in args]
      minus = [b.copy() for b in args]
      plus[i][idx] += eps
      minus[i][idx] -= eps
      g[idx] = (objective(plus) - objective(minus)) / (2 * eps)
    grads.append(g)
  return grads


def assert_close(got, want, rtol=1e-4, atol=1e-5, err_msg=''):
  got = [np.asarray(g, np.float64) for g in _as_list(got)]
  want = [np.asarray(w, np.float64) for w in _as_list(want)]
  assert len(got) == len(want), (len(got), len(want), err_msg)
  for i, (g, w) in enumerate(zip(got, want)):
    assert g.shape == w.shape, (i, g.shape, w.shape, err_msg)
    np.testing.assert_allclose(g, w, rtol=rtol, atol=atol,
                               err_msg=f'{err_msg} (item {i})')


def leaves(tree):
  """The array leaves of a weight tree, in order."""
  return [np.asarray(t) for t in fastmath.tree_leaves(tree)]


def init_layer(layer, *arrays):
  """Initializes `layer` for inputs shaped like `arrays`; returns it."""
  sig = shapes.signature(arrays[0] if len(arrays) == 1 else tuple(arrays))
  layer.init(sig)
  return layer


def random(rng, *shape, scale=1.0):
  return (rng.normal(size=shape) * scale).astype(np.float32)
