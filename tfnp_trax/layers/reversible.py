"""Reversible layers: layers whose inputs can be recomputed from outputs.

Backpropagation through a `ReversibleSerial` does not keep the activations
between its sublayers: the backward pass rebuilds each sublayer's input from
its output (`reverse`), layer by layer from the top, and backpropagates
through one sublayer at a time (`reverse_and_grad`). Activation memory is
then that of one sublayer, whatever the depth; the price is running each
sublayer's forward pass a second time. See RevNets
(https://arxiv.org/abs/1707.04585) and the Reformer
(https://arxiv.org/abs/2001.04451).

Example:
  >>> block = ReversibleSerial(
  ...     ReversibleHalfResidual(tl.Dense(4)), ReversibleSwap(),
  ...     ReversibleHalfResidual(tl.Dense(4)), ReversibleSwap())
  >>> block.n_in, block.n_out
  (2, 2)
"""

from absl import logging

from tfnp_trax import fastmath
from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.fastmath import shared_functions
from tfnp_trax.layers import _stack
from tfnp_trax.layers import base
from tfnp_trax.layers import combinators as cb
from tfnp_trax.layers._reversible_base import ReversibleLayer
from tfnp_trax.layers._reversible_residual import ReversibleHalfResidual
from tfnp_trax.layers._structural_key import structural_key

__all__ = ['ReversibleLayer', 'ReversibleConcatenatePair', 'ReversibleSelect',
           'ReversibleSwap', 'ReversibleReshape', 'ReversiblePrintShape',
           'ReversibleSerial', 'ReversibleHalfResidual']


def _gated(tree, deps):
  """`fastmath.after(tree, deps)` on the array leaves of `tree` only.

  Other leaves (None, Python numbers, cache markers) are static values in a
  traced graph, with nothing to schedule; they pass through unchanged.
  """
  return fastmath.nested_map(
      lambda t: fastmath.after(t, deps) if hasattr(t, 'dtype') else t, tree)


def _uses_cache(tree):
  """Whether `tree` is, or holds, a shared layer's cache marker."""
  if base.is_cache_marker(tree):
    return True
  if isinstance(tree, (list, tuple)):
    return any(_uses_cache(t) for t in tree)
  return False


def _as_tuple(xs):
  return tuple(xs) if isinstance(xs, (list, tuple)) else (xs,)


def _single_or_tuple(xs):
  return xs[0] if len(xs) == 1 else tuple(xs)


class ReversibleConcatenatePair(ReversibleLayer):
  """`(x, y) -> ([x, y], [x, y])`, concatenating on the last axis.

  Reversing splits the first output back into two equal halves, so `x` and
  `y` must have the same last dimension.
  """

  def __init__(self):
    super().__init__(n_in=2, n_out=2)

  def forward(self, inputs):
    x, y = inputs
    if x.shape[-1] != y.shape[-1]:
      raise ValueError(
          f'{self.name}: the two inputs must have the same last dimension to '
          f'be split back apart in reverse, got {x.shape[-1]} and '
          f'{y.shape[-1]} (shapes {tuple(x.shape)} and {tuple(y.shape)}).')
    pair = jnp.concatenate((x, y), axis=-1)
    return pair, pair

  def reverse(self, output, weights=(), state=(), new_state=(), rng=None):
    del weights, state, new_state, rng
    pair = output[0]
    if pair.shape[-1] % 2:
      raise ValueError(
          f'{self.name}: reverse splits the last dimension into two equal '
          f'halves, but it is odd: {pair.shape[-1]} (shape '
          f'{tuple(pair.shape)}). Its output must come from its forward '
          f'pass, which concatenates two equal-sized inputs.')
    x, y = jnp.split(pair, 2, axis=-1)
    return x, y


class ReversibleSelect(ReversibleLayer):
  """Permutes the top `n_in` stack items; reversible since nothing is lost.

  Unlike `Select`, every input must appear among `indices` exactly once,
  so that `reverse` can put each item back.
  """

  def __init__(self, indices, n_in=None, name=None):
    if name is None:
      # Named from the indices as given: a tuple prints as (1,0), as in Trax.
      name = f'ReversibleSelect{indices}'.replace(' ', '')
    indices = list(indices)
    if n_in is None:
      n_in = max(indices) + 1
    super().__init__(n_in=n_in, n_out=len(indices), name=name)
    missing = [i for i in range(n_in) if i not in indices]
    if missing:
      raise ValueError(
          f'{name}: to be reversible, every input index in range({n_in}) must '
          f'appear in indices {indices}; missing {missing}. Use Select for a '
          f'selection that drops items.')
    self._indices = indices
    # Where each input went: the position of its first copy.
    self._reverse_indices = [indices.index(i) for i in range(n_in)]

  def forward(self, inputs):
    xs = _as_tuple(inputs) if self.n_in > 1 else (inputs,)
    return _single_or_tuple([xs[i] for i in self._indices])

  def reverse(self, output, weights=(), state=(), new_state=(), rng=None):
    del weights, state, new_state, rng
    ys = _as_tuple(output) if self.n_out > 1 else (output,)
    return _single_or_tuple([ys[i] for i in self._reverse_indices])


def ReversibleSwap():  # pylint: disable=invalid-name
  """Swaps the two top stack items; a `ReversibleSelect` named as such."""
  return ReversibleSelect([1, 0], name='ReversibleSwap')


class ReversibleReshape(ReversibleLayer):
  """Reshapes the leading axes of each input from `shape1` to `shape2`.

  Trailing axes beyond `len(shape1)` are kept; `reverse` maps `shape2` back
  to `shape1`. As in Trax, `n_in` inputs are each reshaped the same way.
  """

  def __init__(self, shape1, shape2, n_in=1):
    self._shape1 = list(shape1)
    self._shape2 = list(shape2)
    super().__init__(n_in=n_in, n_out=n_in,
                     name=f'ReversibleReshape_{shape1}_{shape2}')

  def _reshape(self, xs, old, new):
    xs = _as_tuple(xs) if self.n_in > 1 else (xs,)
    return _single_or_tuple([
        jnp.reshape(x, new + list(x.shape)[len(old):]) for x in xs])

  def forward(self, inputs):
    return self._reshape(inputs, self._shape1, self._shape2)

  def reverse(self, output, weights=(), state=(), new_state=(), rng=None):
    del weights, state, new_state, rng
    return self._reshape(output, self._shape2, self._shape1)


class ReversiblePrintShape(ReversibleLayer):
  """Prints (and logs) the shapes and dtypes of `n_in` inputs; an identity.

  For debugging reversible stacks; under `tf.function` it prints while
  tracing, like `PrintShape`.
  """

  def __init__(self, n_in=1, msg=''):
    super().__init__(n_in=n_in, n_out=n_in)
    self._msg = msg

  def forward(self, xs):
    # One input is a bare tensor: show its shape, not one line per row.
    tensors = _as_tuple(xs) if self.n_in > 1 else (xs,)
    texts = ', '.join(
        f'{tuple(x.shape)}[{getattr(x.dtype, "name", x.dtype)}]'
        for x in tensors)
    info = f'PrintShape: {self._msg}: [{texts}]'
    print(info)
    logging.info(info)
    return xs

  def reverse(self, output, weights=(), state=(), new_state=(), rng=None):
    del weights, state, new_state, rng
    return output


class ReversibleSerial(ReversibleLayer, cb.Serial):
  """`Serial` of reversible sublayers, backpropagated without activations.

  Its gradient comes from `reverse_and_grad`, which walks the sublayers from
  the last to the first, rebuilding each one's input from its output.
  """

  def __init__(self, *layers):
    super().__init__(*layers)
    for i, layer in enumerate(self.sublayers):
      if not isinstance(layer, ReversibleLayer):
        raise ValueError(
            f'ReversibleSerial: sub-layer {i} ({layer.name}) is not '
            f'reversible: {layer}. Every sub-layer must be a ReversibleLayer '
            f'(e.g. ReversibleHalfResidual, ReversibleSwap, '
            f'ReversibleSelect); put other layers before or after the '
            f'ReversibleSerial.')
    # Traced, each distinct sublayer's forward and backward is one shared
    # function, called per sublayer (see `_shared_call`).
    self._shared = shared_functions.SharedFunctions()

  @property
  def uses_rng(self):
    return any(layer.uses_rng for layer in self.sublayers)

  def _rngs(self, rng):
    # The same per-sublayer keys as Serial.forward gives them.
    if rng is None:
      return [None] * len(self.sublayers)
    return cb._split_rngs(rng, len(self.sublayers), self.sublayers)  # pylint: disable=protected-access

  def _shared_call(self, kind, layer, fn, weights, *args):
    """`fn(*args)`, traced once per `kind` and structurally equal layer.

    A deep stack of identical blocks then traces as one function per
    distinct block, called once per block: the traced program (and the
    memory it costs) stops growing with depth. Eagerly, and for a layer
    whose weights come from a shared layer's cache, `fn` is called as is.
    """
    if not shared_functions.tracing() or _uses_cache(weights):
      return fn(*args)
    return self._shared.call((kind, structural_key(layer)), fn, *args)

  def forward(self, xs):
    if not shared_functions.tracing():
      return super().forward(xs)
    stack = xs
    new_state = []
    for layer, w, s, r in zip(self.sublayers, self.weights, self.state,
                              self._rngs(self.rng)):
      inputs = _stack.inputs_from_stack(stack, layer.n_in, layer.name)
      if _uses_cache(w) or _uses_cache(s):
        outputs, s = layer.pure_fn(inputs, w, s, r, use_cache=True)
      else:
        outputs, s = self._shared_call(
            'forward', layer,
            lambda x, w, s, r, layer=layer: layer.pure_fn(x, w, s, r),
            w, inputs, w, s, r)
        # As `pure_fn(..., use_cache=True)` in `Serial.forward` leaves it.
        layer._set_weights_state_quietly(w, s)  # pylint: disable=protected-access
      stack = _stack.outputs_onto_stack(outputs, stack, layer.n_in,
                                        layer.n_out)
      new_state.append(s)
    self.state = tuple(new_state)
    return stack

  def reverse(self, output, weights=(), state=(), new_state=(), rng=None):
    stack = output
    for layer, w, s, ns, r in reversed(list(zip(
        self.sublayers, weights, state, new_state, self._rngs(rng)))):
      layer_out = _stack.inputs_from_stack(stack, layer.n_out, layer.name)
      layer_in = self._shared_call(
          'reverse', layer,
          lambda y, w, s, ns, r, layer=layer: layer.reverse(y, w, s, ns,
                                                           rng=r),
          w, layer_out, w, s, ns, r)
      stack = _stack.outputs_onto_stack(layer_in, stack, layer.n_out,
                                        layer.n_in)
    return stack

  def reverse_and_grad(self, output, grad, weights=(), state=(), new_state=(),
                       rng=None):
    stack, stack_grad = output, grad
    weights_grad = []
    for layer, w, s, ns, r in reversed(list(zip(
        self.sublayers, weights, state, new_state, self._rngs(rng)))):
      layer_ct = _stack.inputs_from_stack(stack_grad, layer.n_out, layer.name)
      layer_out = _stack.inputs_from_stack(stack, layer.n_out, layer.name)
      # Start all of this layer's backward work only once its gradient has
      # arrived, so a traced backward holds one layer's tensors at a time.
      # Gating its output alone is not enough: the work that needs only its
      # weights, rng or forward state (LSH buckets and the sort orders,
      # masks and gather indices computed from them) would otherwise be
      # ready when the step starts, and a graph runs it for every layer
      # then and keeps all the results until the backward reaches them.
      layer_out, w, s, ns, r = _gated((layer_out, w, s, ns, r), layer_ct)
      layer_in, (in_ct, w_ct) = self._shared_call(
          'reverse_and_grad', layer,
          lambda y, ct, w, s, ns, r, layer=layer: layer.reverse_and_grad(
              y, ct, w, s, ns, rng=r),
          w, layer_out, layer_ct, w, s, ns, r)
      weights_grad.insert(0, w_ct)
      stack = _stack.outputs_onto_stack(layer_in, stack, layer.n_out,
                                        layer.n_in)
      stack_grad = _stack.outputs_onto_stack(in_ct, stack_grad, layer.n_out,
                                             layer.n_in)
    return stack, (stack_grad, tuple(weights_grad))
