"""ReversibleHalfResidual: one half of a RevNet residual block.

`[acc, *context] -> [acc + f(context), *context]` is undone by subtracting
`f(context)`, which the context (passed through unchanged) lets us
recompute. Two halves with a `ReversibleSwap` between them make a RevNet
block: `y1 = x1 + f(x2)`, `y2 = x2 + g(y1)`.
"""

from tfnp_trax import fastmath
from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.layers import _stack
from tfnp_trax.layers import combinators as cb
from tfnp_trax.layers import _reversible_base
from tfnp_trax.layers._reversible_base import ReversibleLayer

__all__ = ['ReversibleHalfResidual']


def _as_tuple(xs):
  return tuple(xs) if isinstance(xs, (list, tuple)) else (xs,)


def _stack_tuple(xs, n):
  """A layer's `n` inputs/outputs as a tuple (one item is passed bare)."""
  return _as_tuple(xs) if n != 1 else (xs,)


def _broadcasts_to(shape, target):
  """True unless `shape` surely fails to broadcast to exactly `target`."""
  shape, target = tuple(shape), tuple(target)
  if len(shape) > len(target):
    return False
  return all(d is None or t is None or d in (1, t)
             for d, t in zip(reversed(shape), reversed(target)))


class ReversibleHalfResidual(ReversibleLayer):
  """Half of a RevNet residual: `[acc, *ctx] -> [acc + f(ctx), *ctx]`.

  `f` is `Serial(*residual_layers)`, optionally followed by
  `attention_layer`. The attention layer is called through its
  `forward_and_or_backward(inputs, weights, state, rng, output_grad=...,
  compute_output=..., update_state=...)` method when it has one (so that,
  e.g., LSH attention can reuse the hash buckets of the forward pass, which
  it keeps in its state); otherwise through a generic one built from its
  `pure_fn`.

  The layer takes one more input than `f` needs: the accumulator on top.

  Args:
    *residual_layers: the layers computing the residual from the context.
    attention_layer: an optional layer applied after `residual_layers`.
    name: the layer's name (default: the class name).
  """

  def __init__(self, *residual_layers, attention_layer=None, name=None):
    super().__init__(name=name)
    self._compute_residual = cb.Serial(*residual_layers)
    self._attention_layer = attention_layer
    if attention_layer is None:
      self._sublayers = (self._compute_residual,)
    else:
      self._forward_and_or_backward = getattr(
          attention_layer, 'forward_and_or_backward', None) or (
              _forward_and_or_backward(attention_layer))
      self._sublayers = (self._compute_residual, attention_layer)
    n_needed, _ = _stack.n_inputs_n_outputs(self._sublayers)
    self._n_in = self._n_out = n_needed + 1

  def forward(self, xs):
    accumulator, *context = _as_tuple(xs)
    stack = context = tuple(context)
    new_state = []
    rngs = cb._split_rngs(self.rng, len(self.sublayers))  # pylint: disable=protected-access
    for layer, w, s, r in zip(self.sublayers, self.weights, self.state, rngs):
      inputs = _stack.inputs_from_stack(stack, layer.n_in, layer.name)
      outputs, s = layer.pure_fn(inputs, w, s, r)
      stack = _stack.outputs_onto_stack(outputs, stack, layer.n_in,
                                        layer.n_out)
      new_state.append(s)
    residual = _as_tuple(stack)[0]
    # A residual that broadcast the accumulator to a bigger shape could not
    # be subtracted back out in reverse.
    if not _broadcasts_to(residual.shape, accumulator.shape):
      raise ValueError(
          f'{self.name}: the residual (shape {tuple(residual.shape)}) must '
          f'have the shape of the accumulator (the first input, shape '
          f'{tuple(accumulator.shape)}); the residual layers must keep the '
          f'last dimension (d_model) at {accumulator.shape[-1]}.')
    output = accumulator + residual
    self.state = tuple(new_state)
    return (output,) + context

  def reverse(self, output, weights=(), state=(), new_state=(), rng=None):
    # Trax leaves this unimplemented (only reverse_and_grad is needed for
    # training); it is the same recomputation without the gradients.
    rngs = cb._split_rngs(rng, len(self.sublayers))  # pylint: disable=protected-access
    acc_out, *context = _as_tuple(output)
    context = tuple(context)
    compute_residual = self._compute_residual
    res_in = _stack.inputs_from_stack(context, compute_residual.n_in,
                                      compute_residual.name)
    res, _ = compute_residual.pure_fn(res_in, weights[0], state[0], rngs[0])
    stack = _stack.outputs_onto_stack(res, context, compute_residual.n_in,
                                      compute_residual.n_out)
    if self._attention_layer is None:
      residual = _as_tuple(stack)[0]
    else:
      attn_in = _stack.inputs_from_stack(stack, self._attention_layer.n_in,
                                         self._attention_layer.name)
      residual, _, _, _ = self._forward_and_or_backward(
          attn_in, weights[1], new_state[1], rngs[1], output_grad=None,
          compute_output=True, update_state=False)
    return (acc_out - residual,) + context

  def reverse_and_grad(self, output, grad, weights=(), state=(), new_state=(),
                       rng=None):
    rngs = cb._split_rngs(rng, len(self.sublayers))  # pylint: disable=protected-access
    acc_out, *context = _as_tuple(output)
    context = tuple(context)
    acc_ct, *context_ct = _as_tuple(grad)
    context_ct = tuple(context_ct)
    compute_residual = self._compute_residual
    attention = self._attention_layer
    n_res_out = compute_residual.n_out

    # Outputs of the residual branch that nothing downstream consumes get
    # no cotangent; they are carried as aux, outside the vjp.
    n_diff = 1 if attention is None else min(n_res_out, attention.n_in)

    residual_state = _mark_second_run(state[0], new_state[0])

    def call_compute_residual(x, w):
      res, _ = compute_residual.pure_fn(x, w, residual_state, rngs[0])
      res = _stack_tuple(res, n_res_out)
      return res[:n_diff], res[n_diff:]

    res_in = _stack.inputs_from_stack(context, compute_residual.n_in,
                                      compute_residual.name)
    diff_outs, res_vjp, aux = _reversible_base.vjp(
        call_compute_residual, res_in, weights[0], has_aux=True)
    stack = tuple(diff_outs) + tuple(aux) + context[compute_residual.n_in:]

    if attention is None:
      residual = stack[0]
      top_ct = (acc_ct,)
    else:
      attn_in = _stack.inputs_from_stack(stack, attention.n_in,
                                         attention.name)
      # Distinct tensors, so an attention layer's own vjp cannot merge the
      # cotangents of two stack items that hold one tensor (after Dup).
      attn_in = fastmath.nested_map(jnp.copy, attn_in)
      residual, _, attn_in_ct, attn_weights_ct = self._forward_and_or_backward(
          attn_in, weights[1], new_state[1], rngs[1], output_grad=acc_ct,
          compute_output=True, update_state=False)
      top_ct = _stack_tuple(attn_in_ct, attention.n_in)
    # top_ct holds the cotangents of the first len(top_ct) stack items after
    # the residual branch: its outputs, then untouched context items.
    res_in_ct, res_weights_ct = res_vjp(tuple(top_ct[:n_diff]))
    prefix_ct = (_stack_tuple(res_in_ct, compute_residual.n_in) +
                 tuple(top_ct[n_res_out:]))
    summed = tuple(_add(a, b) for a, b in zip(context_ct, prefix_ct))
    stack_ct = (acc_ct,) + summed + context_ct[len(summed):]

    reconstructed = acc_out - residual
    if attention is None:
      weights_ct = (res_weights_ct,)
    else:
      weights_ct = (res_weights_ct, attn_weights_ct)
    return (reconstructed,) + context, (stack_ct, weights_ct)

  def init_weights_and_state(self, input_signature):
    stack = tuple(input_signature[1:])
    if len(stack) == 1:
      stack = stack[0]
    compute_residual = self._compute_residual
    inputs = _stack.inputs_from_stack(stack, compute_residual.n_in,
                                      compute_residual.name)
    weights, state = compute_residual.init(inputs)
    outputs, _ = compute_residual._forward_abstract(inputs)  # pylint: disable=protected-access
    stack = _stack.outputs_onto_stack(outputs, stack, compute_residual.n_in,
                                      compute_residual.n_out)
    if self._attention_layer is None:
      self.state, self.weights = (state,), (weights,)
      return
    inputs = _stack.inputs_from_stack(stack, self._attention_layer.n_in,
                                      self._attention_layer.name)
    attn_weights, attn_state = self._attention_layer.init(inputs)
    self.state = (state, attn_state)
    self.weights = (weights, attn_weights)


def _add(a, b):
  # A None cotangent (e.g. for an integer input) adds nothing, and neither
  # does a non-float one (a boolean padding mask's, from an attention layer
  # that hands its mask input back).
  if a is None or not _is_float(a):
    return b if b is None or _is_float(b) else None
  if b is None or not _is_float(b):
    return a
  return a + b


def _is_float(x):
  dtype = jnp.asarray(x).dtype
  return dtype.is_floating or dtype.is_complex


def _mark_second_run(state, new_state):
  """Marks SparseFF's remembered state for the reverse recomputation.

  SparseFF keeps `(x, {'running_second_time': ()})`; recomputing it in the
  backward pass with `(x_of_new_state, {'running_second_time_yes': ()})`
  makes it replay the forward pass's random choices, as Trax does.
  """
  if (isinstance(state, tuple) and len(state) == 2 and
      isinstance(state[1], dict) and 'running_second_time' in state[1]):
    return (new_state[0], {'running_second_time_yes': ()})
  if isinstance(state, (tuple, list)):
    return type(state)(_mark_second_run(s, n)
                       for s, n in zip(state, new_state))
  return state


def _forward_and_or_backward(layer):
  """A generic `forward_and_or_backward` for a layer that has none.

  Args:
    layer: the attention layer.

  Returns:
    `fn(inputs, weights, state, rng, output_grad=None, compute_output=True,
    update_state=True) -> (output, new_state, inputs_grad, weights_grad)`,
    with None for each part not asked for (the gradients are computed only
    when `output_grad` is given).
  """
  def forward_and_or_backward(inputs, weights, state, rng, output_grad=None,
                              compute_output=True, update_state=True):
    output, vjp_fn, layer_new_state = _reversible_base.vjp(
        lambda x, w: layer.pure_fn(x, w, state, rng), inputs, weights,
        has_aux=True)
    inputs_grad = weights_grad = None
    if output_grad is not None:
      inputs_grad, weights_grad = vjp_fn(output_grad)
    return (output if compute_output else None,
            layer_new_state if update_state else None,
            inputs_grad, weights_grad)
  return forward_and_or_backward
