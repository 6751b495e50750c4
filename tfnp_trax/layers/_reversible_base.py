"""ReversibleLayer: a layer whose inputs can be recomputed from its outputs.

Kept apart from `reversible.py` so that the residual half
(`_reversible_residual.py`) and the simple reversible layers can both build
on it without importing each other.
"""

import contextlib

from tfnp_trax import fastmath
from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.layers import _per_call
from tfnp_trax.layers import base

__all__ = ['ReversibleLayer', 'per_call_scope', 'vjp']


def vjp(f, *primals, has_aux=False):
  """`fastmath.vjp` with every primal leaf made a distinct tensor.

  A data stack may hold one tensor twice (after `Dup`). A gradient tape
  cannot tell two uses of one tensor apart, so each source would get the
  sum of both cotangents; JAX's vjp treats them as separate primals, and so
  do we by copying each leaf first.
  """
  primals = fastmath.nested_map(jnp.copy, primals)
  return fastmath.vjp(f, *primals, has_aux=has_aux)


@contextlib.contextmanager
def per_call_scope():
  """Opens a per-call overlay unless a `pure_fn` call already holds one.

  `reverse_and_grad` is called directly by the reversible trainer and by
  users, outside any `pure_fn`. Setting a layer's weights there without an
  overlay would write the shared values that other replica threads read.
  """
  if _per_call.in_call():
    yield
    return
  _per_call.begin_call()
  try:
    yield
  finally:
    _per_call.end_call()


class ReversibleLayer(base.Layer):
  """A layer that can recompute its inputs from its outputs.

  Subclasses implement `forward` and `reverse` (or `reverse_and_grad`
  directly, when the two share work). The gradient of every reversible layer
  is computed by `reverse_and_grad`, through the `has_backward`/`backward`
  hook of `Layer`: backpropagation rebuilds each layer's inputs from its
  outputs instead of keeping them, which is what makes a `ReversibleSerial`
  of any depth need the activation memory of a single layer.
  """

  def reverse(self, output, weights=(), state=(), new_state=(), rng=None):
    """Computes the layer's input from its `output`.

    Args:
      output: the layer's output (a tuple of `n_out` arrays if `n_out > 1`).
      weights: the weights the forward pass used.
      state: the state the forward pass started from.
      new_state: the state the forward pass returned.
      rng: the rng key the forward pass used.

    Returns:
      The reconstructed input, in the layer's `n_in` stack form.
    """
    raise NotImplementedError(
        f'{self.name}: reverse is not implemented; a ReversibleLayer must '
        f'implement reverse or reverse_and_grad.')

  def _pure_forward(self, x, weights, state, rng):
    """`self.forward(x)` with the given weights, state and rng; output only."""
    with per_call_scope():
      old_weights, old_state, old_rng = self.weights, self.state, self._rng
      try:
        self._set_weights_state_quietly(weights, state)
        self._rng = rng
        return self.forward(x)
      finally:
        self._rng = old_rng
        self._set_weights_state_quietly(old_weights, old_state)

  def reverse_and_grad(self, output, grad, weights=(), state=(), new_state=(),
                       rng=None):
    """Reconstructs the input and backpropagates `grad` through the layer.

    Args:
      output: the layer's output activations (possibly a tuple).
      grad: the cotangent of `output`, with the same structure.
      weights: the layer's weights.
      state: the state the forward pass started from.
      new_state: the state the forward pass returned.
      rng: the rng key the forward pass used.

    Returns:
      `(x, (x_grad, weights_grad))`: the reconstructed input, its gradient
      and the gradient of the weights.
    """
    x = self.reverse(output, weights, state, new_state, rng)
    _, vjp_fn = vjp(
        lambda xs, ws: self._pure_forward(xs, ws, state, rng), x, weights)
    x_grad, weights_grad = vjp_fn(grad)
    return x, (x_grad, weights_grad)

  @property
  def has_backward(self):
    return True

  def backward(self, inputs, output, grad, weights, state, new_state, rng):
    # The inputs kept by the forward pass are deliberately unused: they are
    # rebuilt from the output, so a reversible stack need not keep them.
    del inputs
    _, inputs_weights_grad = self.reverse_and_grad(
        output, grad, weights, state, new_state, rng)
    return inputs_weights_grad
