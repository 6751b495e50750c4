"""Combinators with control flow: Scan, Cond, Chunk, Cache and friends."""

import copy
import random as _py_random

from tfnp_trax import fastmath
from tfnp_trax import shapes
from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.layers import _stack
from tfnp_trax.layers import base
from tfnp_trax.layers import combinators as cb

__all__ = ['Scan', 'Cond', 'Chunk', 'BatchLeadingAxes', 'Bidirectional',
           'SerialWithSideOutputs', 'Cache']


def _as_tuple(x, n):
  return (x,) if n == 1 else tuple(x)


def _from_tuple(xs):
  return xs[0] if len(xs) == 1 else tuple(xs)


class Scan(base.Layer):
  """Applies `layer` along `axis`, threading `n_carry` carries through.

  `layer` maps `(x_slice, *carry) -> (y_slice, *new_carry)`. Scan maps
  `(xs, *init_carry) -> (ys, *final_carry)`.
  """

  def __init__(self, layer, axis=0, n_carry=1, remat=False, mode='train'):
    super().__init__(n_in=layer.n_in, n_out=layer.n_out,
                     name=f'Scan_{layer.name}')
    del remat, mode  # Memory rematerialization is left to TensorFlow.
    self._sublayers = (layer,)
    self._axis = axis
    self._n_carry = n_carry

  def _split(self, inputs):
    inputs = _as_tuple(inputs, self.n_in)
    n_xs = self.n_in - self._n_carry
    return inputs[:n_xs], inputs[n_xs:]

  def forward(self, inputs):
    layer = self._sublayers[0]
    xs, init = self._split(inputs)
    xs = tuple(jnp.moveaxis(x, self._axis, 0) for x in xs)
    weights, state = self.weights[0], self.state[0]
    rng = self.rng

    def step(carry, x):
      (carry_vals, layer_state, i) = carry
      r = fastmath.random.fold_in(rng, i)
      out, new_state = layer.pure_fn(tuple(x) + tuple(carry_vals) if
                                     layer.n_in > 1 else x[0], weights,
                                     layer_state, r, use_cache=True)
      out = _as_tuple(out, layer.n_out)
      n_ys = layer.n_out - self._n_carry
      return (tuple(out[n_ys:]), new_state, i + 1), tuple(out[:n_ys])

    (carry, new_state, _), ys = fastmath.scan(
        step, (tuple(init), state, jnp.asarray(0, dtype=jnp.int32)), xs)
    ys = tuple(jnp.moveaxis(y, 0, self._axis) for y in ys)
    self.state = (new_state,)
    return _from_tuple(ys + tuple(carry))

  def init_weights_and_state(self, input_signature):
    xs, init = self._split(input_signature)
    slices = tuple(shapes.ShapeDtype(
        tuple(s for i, s in enumerate(x.shape) if i != self._axis % len(
            x.shape)), x.dtype) for x in xs)
    layer_sig = _from_tuple(slices + tuple(init))
    w, s = self._sublayers[0].init(layer_sig, use_cache=True)
    self.state = (s,)
    self.weights = (w,)


class Cond(base.Layer):
  """Runs `true(y)` if `cond(x)` is set, else `false(y)`.

  `x` is the first `cond.n_in` stack items and `y` the next `true.n_in`
  items, so `n_in = cond.n_in + true.n_in`. `cond` must return one scalar
  boolean. Only the chosen branch runs (and updates its state); `false=None`
  is the identity.
  """

  def __init__(self, cond, true, false=None, name=None):
    false = false if false is not None else cb.Select(
        list(range(true.n_in)), n_in=true.n_in)
    if (true.n_in, true.n_out) != (false.n_in, false.n_out):
      raise ValueError(f'Cond: true and false branches must have equal n_in '
                       f'and n_out, got ({true.n_in}, {true.n_out}) and '
                       f'({false.n_in}, {false.n_out}).')
    if cond.n_out != 1:
      raise ValueError(f'Cond: the condition must have n_out=1, got '
                       f'{cond.n_out}.')
    super().__init__(n_in=cond.n_in + true.n_in, n_out=true.n_out,
                     name=name or 'Cond')
    self._sublayers = (cond, true, false)

  def _split(self, xs):
    items = _as_tuple(xs, self.n_in)
    n_cond = self._sublayers[0].n_in
    return _from_tuple(items[:n_cond]), _from_tuple(items[n_cond:])

  def forward(self, xs):
    cond, true, false = self._sublayers
    (wc, wt, wf), (sc, st, sf) = self.weights, self.state
    rc, rt, rf = [fastmath.random.fold_in(self.rng, i) for i in range(3)]
    cond_in, branch_in = self._split(xs)
    pred, sc = cond.pure_fn(cond_in, wc, sc, rc, use_cache=True)

    def run_true():
      y, s = true.pure_fn(branch_in, wt, st, rt, use_cache=True)
      return y, s, sf

    def run_false():
      y, s = false.pure_fn(branch_in, wf, sf, rf, use_cache=True)
      return y, st, s
    y, st, sf = fastmath.cond(pred, run_true, run_false)
    self.state = (sc, st, sf)
    return y

  def init_weights_and_state(self, input_signature):
    cond_in, branch_in = self._split(input_signature)
    ws, ss = [], []
    for layer, sig in zip(self._sublayers, (cond_in, branch_in, branch_in)):
      w, s = layer.init(sig, use_cache=True)
      ws.append(w)
      ss.append(s)
    self.state = tuple(ss)
    self.weights = tuple(ws)


def Chunk(layer, chunk_size, pass_unchunkable=True):  # pylint: disable=invalid-name
  """Runs `layer` on batch chunks of `chunk_size` to bound memory use.

  Inputs whose batch does not divide by `chunk_size` run whole if
  `pass_unchunkable`, else raise. `chunk_size=0` means no chunking: the
  layer itself is returned.
  """
  if chunk_size == 0:
    return layer
  if chunk_size < 0:
    raise ValueError(f'Chunk: chunk_size must be >= 0, got {chunk_size}.')
  return _Chunk(layer, chunk_size, pass_unchunkable)


class _Chunk(base.Layer):
  """Loops `layer` over batch chunks, threading its state through."""

  def __init__(self, layer, chunk_size, pass_unchunkable):
    super().__init__(n_in=layer.n_in, n_out=layer.n_out,
                     name=f'Chunk_{layer.name}')
    self._sublayers = (layer,)
    self._chunk_size = chunk_size
    self._pass = pass_unchunkable

  def forward(self, x):
    layer = self._sublayers[0]
    xs = _as_tuple(x, self.n_in)
    size = self._chunk_size
    batch = xs[0].shape[0]
    if batch % size:
      if not self._pass:
        raise ValueError(f'{self.name}: batch {batch} does not divide by '
                         f'chunk_size {size}; pick a divisor or set '
                         f'pass_unchunkable=True.')
      y, s = layer.pure_fn(x, self.weights[0], self.state[0], self.rng,
                           use_cache=True)
      self.state = (s,)
      return y
    chunks = tuple(v.reshape((-1, size) + tuple(v.shape[1:])) for v in xs)
    weights, rng = self.weights[0], self.rng

    def step(carry, chunk):
      layer_state, i = carry
      y, layer_state = layer.pure_fn(_from_tuple(chunk), weights, layer_state,
                                     fastmath.random.fold_in(rng, i),
                                     use_cache=True)
      return (layer_state, i + 1), _as_tuple(y, self.n_out)

    (state, _), ys = fastmath.scan(
        step, (self.state[0], jnp.asarray(0, dtype=jnp.int32)), chunks)
    self.state = (state,)
    return _from_tuple([y.reshape((-1,) + tuple(y.shape[2:])) for y in ys])

  def init_weights_and_state(self, input_signature):
    w, s = self._sublayers[0].init(input_signature, use_cache=True)
    self.state = (s,)
    self.weights = (w,)


def BatchLeadingAxes(layer, n_last_axes_to_keep=1):  # pylint: disable=invalid-name
  """Runs `layer` with all leading axes folded into one batch axis.

  Every input keeps its last `n_last_axes_to_keep` axes; the rest are folded
  into one batch axis, and unfolded again (as the first input's) on the
  output.
  """
  if layer.n_out != 1:
    raise ValueError(f'BatchLeadingAxes: layer must have n_out=1, got '
                     f'n_out={layer.n_out}.')
  return _BatchLeading(layer, n_last_axes_to_keep)


class _BatchLeading(base.Layer):
  """Folds leading axes into one before `layer`, unfolds them after."""

  def __init__(self, layer, n_keep):
    super().__init__(n_in=layer.n_in, n_out=1,
                     name=f'BatchLeadingAxes_{layer.name}')
    self._sublayers = (layer,)
    self._n_keep = n_keep

  def _lead_and_kept(self, shape):
    cut = len(shape) - self._n_keep
    return tuple(shape[:cut]), tuple(shape[cut:])

  def forward(self, x):
    xs = _as_tuple(x, self.n_in)
    lead, _ = self._lead_and_kept(tuple(xs[0].shape))
    folded = [v.reshape((-1,) + self._lead_and_kept(tuple(v.shape))[1])
              for v in xs]
    y, s = self._sublayers[0].pure_fn(_from_tuple(folded), self.weights[0],
                                      self.state[0], self.rng, use_cache=True)
    self.state = (s,)
    return y.reshape(lead + tuple(y.shape[1:]))

  def init_weights_and_state(self, input_signature):
    sigs = []
    for sig in _as_tuple(input_signature, self.n_in):
      lead, kept = self._lead_and_kept(sig.shape)
      batch = 1
      for d in lead:
        batch *= d
      sigs.append(shapes.ShapeDtype((batch,) + kept, sig.dtype))
    w, s = self._sublayers[0].init(_from_tuple(sigs), use_cache=True)
    self.state = (s,)
    self.weights = (w,)


def Bidirectional(forward_layer, axis=1, merge_layer=None):  # pylint: disable=invalid-name
  """Runs a copy of `forward_layer` on the reversed sequence too; merges.

  The backward copy has its own weights. Outputs are merged with
  `merge_layer` (concatenation on the last axis by default).
  """
  merge_layer = merge_layer or cb.Concatenate()
  backward_layer = copy.deepcopy(forward_layer)
  # A copy would share the original's seeds and so start from the same
  # weights; give each of its layers fresh ones.
  _reseed(backward_layer)
  flip = base.Fn('FlipAlongAxis', lambda x: jnp.flip(x, axis=axis))
  return cb.Serial(cb.Branch(forward_layer,
                             cb.Serial(flip, backward_layer, flip)),
                   merge_layer, name='Bidirectional')


def _reseed(layer):
  # pylint: disable=protected-access
  layer._rng = None
  layer._rng_seed_int = _py_random.randint(0, 2**31 - 1)
  # pylint: enable=protected-access
  for sub in layer.sublayers:
    _reseed(sub)


class SerialWithSideOutputs(base.Layer):
  """Serial where each layer also emits side outputs collected aside.

  With layers `l_i: x -> (y, side_i)`, computes the chain and returns
  `(y_final, side_1, ..., side_n)`. In general layer `i`'s last
  `n_side_outputs[i]` outputs go to the bottom of the stack, in order.

  Args:
    layers: the layers to run in sequence.
    n_side_outputs: an int for every layer, or one int per layer.
  """

  def __init__(self, layers, n_side_outputs=1):
    layers = _stack.ensure_flat(layers)
    if isinstance(n_side_outputs, int):
      n_side_outputs = [n_side_outputs] * len(layers)
    if len(n_side_outputs) != len(layers):
      raise ValueError(f'SerialWithSideOutputs: n_side_outputs has '
                       f'{len(n_side_outputs)} entries for {len(layers)} '
                       f'layers.')
    running_max = running_total = 0
    for layer, n_side in zip(layers, n_side_outputs):
      if n_side > layer.n_out:
        raise ValueError(f'SerialWithSideOutputs: {layer.name} has n_out='
                         f'{layer.n_out}, fewer than its {n_side} side '
                         f'outputs.')
      running_total += layer.n_in
      running_max = max(running_max, running_total)
      running_total -= layer.n_out - n_side
    super().__init__(n_in=running_max,
                     n_out=running_max - running_total + sum(n_side_outputs),
                     name='SerialWithSideOutputs')
    self._sublayers = tuple(layers)
    self._n_sides = tuple(n_side_outputs)

  def forward(self, xs):
    stack, sides, new_state = xs, [], []
    keys = fastmath.random.split(self.rng, max(2, len(self._sublayers)))
    for i, (layer, w, s) in enumerate(zip(self._sublayers, self.weights,
                                          self.state)):
      inputs = _stack.inputs_from_stack(stack, layer.n_in, layer.name)
      out, s = layer.pure_fn(inputs, w, s, keys[i], use_cache=True)
      main, side = self._main_and_side(out, layer, self._n_sides[i])
      sides.extend(side)
      # A single main output goes on the stack bare, not as a 1-tuple.
      stack = _stack.outputs_onto_stack(_from_tuple(main), stack, layer.n_in,
                                        len(main))
      new_state.append(s)
    self.state = tuple(new_state)
    return _from_tuple(_as_tuple(stack, _stack.stack_size(stack)) +
                       tuple(sides))

  @staticmethod
  def _main_and_side(out, layer, n_side):
    out = _as_tuple(out, layer.n_out)
    n_main = layer.n_out - n_side
    return out[:n_main], out[n_main:]

  def init_weights_and_state(self, input_signature):
    stack, ws, ss = input_signature, [], []
    for layer, n_side in zip(self._sublayers, self._n_sides):
      inputs = _stack.inputs_from_stack(stack, layer.n_in, layer.name)
      w, s = layer.init(inputs, use_cache=True)
      out, _ = layer._forward_abstract(inputs)  # pylint: disable=protected-access
      main, _ = self._main_and_side(out, layer, n_side)
      # A single main output goes on the stack bare, not as a 1-tuple.
      stack = _stack.outputs_onto_stack(_from_tuple(main), stack, layer.n_in,
                                        len(main))
      ws.append(w)
      ss.append(s)
    self.state = tuple(ss)
    self.weights = tuple(ws)


class Cache(base.Layer):
  """Runs `layer` on the first call and returns the cached outputs after.

  The state is `(layer_state, cached_outputs, is_full)`; once full, the
  wrapped layer is skipped.
  """

  def __init__(self, layer):
    super().__init__(n_in=layer.n_in, n_out=layer.n_out, name='Cache')
    self._sublayers = (layer,)

  # The cache lives in `_state`, next to the sublayer's marker slot, so it is
  # per call (and per replica thread) like every other layer value.
  @property
  def state(self):
    mark, cached, full = (self._state if len(self._state) == 3 else
                          (None, (), ()))
    layer_state = (mark if base.is_cache_marker(mark) else
                   self._sublayers[0].state)
    return layer_state, cached, full

  @state.setter
  def state(self, state):
    if base.is_cache_marker(state):
      return
    layer_state, cached, full = state
    if base.is_cache_marker(layer_state):
      mark = layer_state
    else:
      mark = None
      self._sublayers[0].state = layer_state
    self._state = (mark, cached, full)

  def forward(self, x):
    layer = self._sublayers[0]
    layer_state, cached, full = self.state

    def compute():
      return layer.pure_fn(x, self.weights[0], layer_state, self.rng,
                           use_cache=True)
    y, new_layer_state = fastmath.cond(full, lambda: (cached, layer_state),
                                       compute)
    self.state = (new_layer_state, y, jnp.asarray(True))
    return y

  def init_weights_and_state(self, input_signature):
    w, s = self._sublayers[0].init(input_signature, use_cache=True)
    out = self._sublayers[0].output_signature(input_signature)
    zeros = fastmath.nested_map(
        lambda sd: jnp.zeros(sd.shape, dtype=sd.dtype), out)
    self.weights = (w,)
    self.state = (s, zeros, jnp.asarray(False))
