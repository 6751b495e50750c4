"""Compiled forward passes of a model: collection, inference and metrics.

Each function is traced once per input shape; the weights are passed in as
tensors, so updating them never retraces.
"""

from tfnp_trax import fastmath
from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.supervised.loop import evals as evals_lib

__all__ = ['Forward', 'PolicySampler', 'Metrics', 'as_tensors']


def as_tensors(tree):
  """Converts every array leaf to a tensor once, so calls don't re-convert."""
  return fastmath.nested_map(jnp.asarray, tree)


def _head(outputs, index):
  return outputs if index is None else outputs[index]


class Forward:
  """`x -> model(x)[head]` under `fastmath.jit`, with settable weights."""

  def __init__(self, model, head=None, jit_compile=True):
    self._model = model

    def apply(x, weights, state, rng):
      return _head(model.pure_fn(x, weights, state, rng)[0], head)
    self._apply = fastmath.jit(apply, jit_compile=jit_compile)
    self._weights = self._state = None
    self._rng = fastmath.random.get_prng(0)

  def set_weights(self, weights, state):
    self._weights, self._state = as_tensors(weights), as_tensors(state)

  def __call__(self, x):
    return self._apply(jnp.asarray(x), self._weights, self._state, self._rng)


class PolicySampler:
  """Samples actions from a policy model's head at a fixed temperature.

  Calling it with a batch of observations returns NumPy
  `(actions, dist_inputs)`; each call folds a counter into the key, so
  successive calls draw fresh samples without host-side key work.
  """

  def __init__(self, model, distribution, temperature=1.0, head=None,
               jit_compile=True):
    def step(obs, weights, state, key, counter):
      key = fastmath.random.fold_in(key, counter)
      dist_inputs = _head(model.pure_fn(obs, weights, state, key)[0], head)
      actions = distribution.sample(dist_inputs, temperature, key=key)
      return actions, dist_inputs
    self._step = fastmath.jit(step, jit_compile=jit_compile)
    self._weights = self._state = None
    self._key = fastmath.random.get_prng(0)
    self._counter = 0

  def set_weights(self, weights, state):
    self._weights, self._state = as_tensors(weights), as_tensors(state)

  def set_key(self, key):
    self._key = jnp.asarray(key)
    self._counter = 0

  def __call__(self, observations):
    counter = jnp.asarray(self._counter, dtype=jnp.int32)
    self._counter += 1
    actions, dist_inputs = self._step(jnp.asarray(observations),
                                      self._weights, self._state, self._key,
                                      counter)
    return actions.numpy(), dist_inputs.numpy()


class Metrics:
  """Named metric layers on top of a model, compiled as one function.

  Calling it with a batch and the model's weights and state returns a dict
  of floats; `head`s are whatever the model leaves on the data stack. Built
  on the Loop's evaluator (`supervised.loop.evals.MetricsFunction`).
  """

  def __init__(self, model, metrics, sample_batch, jit_compile=True):
    self.names = list(metrics)
    self._fn = evals_lib.MetricsFunction(
        model, list(metrics.values()), sample_batch, jit_compile=jit_compile)

  def __call__(self, batch, weights, state):
    values = self._fn(batch, as_tensors(weights), as_tensors(state))
    return {name: float(v) for name, v in zip(self.names, values)}
