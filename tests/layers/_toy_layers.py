"""Tiny deterministic layers shared by the combinator tests.

Their weights and behaviour are simple enough to restate in NumPy, so tests
can check combinators without depending on the core layers.
"""

import numpy as np

from tfnp_trax import fastmath
from tfnp_trax.fastmath import numpy as jnp
import tfnp_trax.layers as tl

# Scale's weights for a last axis of 3.
W = 1. + np.arange(3) / 4.


class Scale(tl.Layer):
  """y = x * w, with w = 1 + arange(d) / 4 at init."""

  def forward(self, x):
    return x * self.weights

  def init_weights_and_state(self, input_signature):
    d = input_signature.shape[-1]
    self.weights = jnp.asarray(1. + np.arange(d) / 4., dtype=jnp.float32)


class Counter(tl.Layer):
  """Adds its call count (state) to the input, then increments it."""

  def forward(self, x):
    y = x + self.state.astype(x.dtype)
    self.state = self.state + 1
    return y

  def init_weights_and_state(self, input_signature):
    self.state = jnp.asarray(0, dtype=jnp.int32)


class Noise(tl.Layer):
  """Adds uniform noise drawn from the layer's rng."""

  def forward(self, x):
    return x + fastmath.random.uniform(self.rng, x.shape)


def Square():  # pylint: disable=invalid-name
  return tl.Fn('Square', lambda x: x * x)


def Neg():  # pylint: disable=invalid-name
  return tl.Fn('Neg', lambda x: -x)


def _as_list(x):
  return list(x) if isinstance(x, (list, tuple)) else [x]


def assert_outputs_close(got, want, rtol=1e-5, atol=1e-6):
  """Compares one output or a tuple of outputs with float64 references."""
  got, want = _as_list(got), _as_list(want)
  assert len(got) == len(want), (len(got), len(want))
  for g, w in zip(got, want):
    np.testing.assert_allclose(np.asarray(g, np.float64), w, rtol=rtol,
                               atol=atol)
