"""Compiled forward passes of a model: collection, inference and metrics.

Each function is traced once per input shape. `Forward` and
`PolicySampler`, called once per environment step, hold the weights in
`tf.Variable`s that the compiled function reads: `set_weights` assigns
them, so new weights never retrace, and a call passes only the
observations, not the whole weight tree (matching the tree's structure to
the traced signature cost most of a millisecond per call).
"""

import tensorflow as tf

from tfnp_trax import fastmath
from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.supervised.loop import evals as evals_lib

__all__ = ['Forward', 'PolicySampler', 'Metrics', 'HeldTree', 'as_tensors']


def as_tensors(tree):
  """Converts every array leaf to a tensor once, so calls don't re-convert."""
  return fastmath.nested_map(jnp.asarray, tree)


def _head(outputs, index):
  return outputs if index is None else outputs[index]


class HeldTree:
  """A tree of arrays held in tf.Variables, read inside compiled calls."""

  def __init__(self):
    self._template = None
    self._variables = None

  def assign(self, tree):
    """Holds `tree`: new variables the first time, assigned afterwards.

    Raises:
      ValueError: if `tree` has other leaves than the first one held (the
        compiled functions read the first variables).
    """
    leaves = fastmath.tree_flatten(tree)
    if self._variables is not None and len(leaves) != len(self._variables):
      raise ValueError(
          f'HeldTree: the tree now has {len(leaves)} leaves, the one held '
          f'had {len(self._variables)}; weights keep their structure.')
    if self._variables is None:
      self._template = tree
      self._variables = [
          None if x is None else tf.Variable(x, trainable=False)
          for x in leaves]
      return
    for variable, x in zip(self._variables, leaves):
      if variable is not None:
        variable.assign(x)

  def read(self):
    """The tree of the variables' values (inside the compiled function)."""
    leaves = [None if v is None else jnp.asarray(v.value())
              for v in self._variables]
    return fastmath.tree_unflatten(leaves, self._template)[0]


class Forward:
  """`x -> model(x)[head]` under `fastmath.jit`, with settable weights."""

  def __init__(self, model, head=None, jit_compile=True):
    self._model = model
    self._held = HeldTree()
    rng = fastmath.random.get_prng(0)

    def apply(x):
      weights, state = self._held.read()
      return _head(model.pure_fn(x, weights, state, rng)[0], head)
    self._apply = fastmath.jit(apply, jit_compile=jit_compile)

  def set_weights(self, weights, state):
    self._held.assign((weights, state))

  def __call__(self, x):
    return self._apply(jnp.asarray(x))


class PolicySampler:
  """Samples actions from a policy model's head at a fixed temperature.

  Calling it with a batch of observations returns NumPy
  `(actions, dist_inputs)`; each call folds a counter into the key, so
  successive calls draw fresh samples without host-side key work.
  """

  def __init__(self, model, distribution, temperature=1.0, head=None,
               jit_compile=True):
    self._held = HeldTree()
    # The key and a call counter live in variables too; each call folds the
    # counter into the key and advances it, all inside the graph.
    self._key = tf.Variable(fastmath.random.get_prng(0), trainable=False)
    self._counter = tf.Variable(0, dtype=tf.int32, trainable=False)

    def step(obs):
      weights, state = self._held.read()
      key = fastmath.random.fold_in(jnp.asarray(self._key.value()),
                                    jnp.asarray(self._counter.value()))
      self._counter.assign_add(1)
      dist_inputs = _head(model.pure_fn(obs, weights, state, key)[0], head)
      actions = distribution.sample(dist_inputs, temperature, key=key)
      return actions, dist_inputs
    self._step = fastmath.jit(step, jit_compile=jit_compile)

  def set_weights(self, weights, state):
    self._held.assign((weights, state))

  def set_key(self, key):
    self._key.assign(jnp.asarray(key))
    self._counter.assign(0)

  def __call__(self, observations):
    actions, dist_inputs = self._step(jnp.asarray(observations))
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
