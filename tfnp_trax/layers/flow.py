"""Combinators with control flow: Scan, Cond, Chunk, Cache and friends."""

import copy
import random as _py_random

from tfnp_trax import fastmath
from tfnp_trax import shapes
from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.layers import _layer_lists
from tfnp_trax.layers import base
from tfnp_trax.layers import combinators as cb

__all__ = ['Scan', 'Cond', 'Chunk', 'BatchLeadingAxes', 'Bidirectional',
           'SerialWithSideOutputs', 'Cache']


def _as_tuple(x, n):
  return (x,) if n == 1 else tuple(x)


def _scalar_to_array(x):
  # Python numbers get JAX's default (weak) dtypes, as lax.cond gives them
  # in Trax; an eager tf.cond would hand them back unconverted.
  if isinstance(x, bool):
    return jnp.asarray(x, dtype=jnp.bool_)
  if isinstance(x, int):
    return jnp.asarray(x, dtype=jnp.int32)
  if isinstance(x, float):
    return jnp.asarray(x, dtype=jnp.float32)
  if isinstance(x, complex):
    return jnp.asarray(x, dtype=jnp.complex64)
  return jnp.asarray(x)


def _as_arrays(outputs):
  """`outputs` (one value or a tuple) with every leaf made an array."""
  return fastmath.nested_map(_scalar_to_array, outputs)


def _from_tuple(xs):
  return xs[0] if len(xs) == 1 else tuple(xs)


def _dtype_name(leaf):
  if not hasattr(leaf, 'dtype'):  # A Python number: JAX's default dtype.
    return fastmath.result_type(leaf).name
  dtype = leaf.dtype
  return getattr(dtype, 'name', None) or getattr(dtype, '__name__', str(dtype))


def _leaf_dtypes(outputs):
  """The dtype names of an output signature's leaves."""
  return [_dtype_name(leaf) for leaf in fastmath.tree_flatten(outputs)]


def _apply(layer, x, weights, state, rng):
  return layer.pure_fn(x, weights, state, rng, use_cache=True)


def _rematerialized(layer, x, weights, state, rng):
  """`layer.pure_fn`, its activations recomputed in the backward pass."""
  return fastmath.recompute_grad(
      lambda x, w, s: _apply(layer, x, w, s, rng))(x, weights, state)


class Scan(base.Layer):
  """Applies `layer` along `axis`, threading `n_carry` carries through.

  `layer` maps `(x_slice, *carry) -> (y_slice, *new_carry)`. Scan maps
  `(xs, *init_carry) -> (ys, *final_carry)`.

  In 'predict' mode, as in Trax, the final carries are kept in the layer's
  state and the next call starts from them instead of from the carries on
  the stack, so a sequence can be fed in pieces (e.g. one token per call):
  calls on `x1` then `x2` give the outputs of one call on `[x1, x2]`. The
  first call after `init` starts from the carries it is given.

  The state is `(sublayer_state, kept)`; `kept` is `()` except in 'predict'
  mode with carries, where it is `(carry_1, ..., carry_n, filled)`: the kept
  carries (zeros after `init`) and an int32 scalar, 1 once a call has stored
  them (an int, not a bool, so that exporters can treat it like any other
  cache tensor). Trax instead starts `kept` empty and puts the bare carries
  there on the first call; here the state has its final structure from
  `init` on, so compiled functions and exported signatures (e.g.
  `export.decode_signatures`) can take it as fixed tensors. A Trax-style
  `kept` of just the carries is accepted too.

  Args:
    layer: the step layer.
    axis: the axis of the scanned inputs and outputs.
    n_carry: how many of the last inputs (and outputs) are carries.
    remat: recompute each step's forward pass in the backward pass instead
      of keeping its activations (as Trax's `fastmath.remat` of the step):
      gradient memory then holds one step's activations, not all of them.
      `Chunk` sets it, as in Trax.
    mode: 'train', 'eval' or 'predict'.
  """

  def __init__(self, layer, axis=0, n_carry=1, remat=False, mode='train'):
    # Named 'Scan', as in Trax: it prints as Scan_in2_out2[ <layer> ].
    super().__init__(n_in=layer.n_in, n_out=layer.n_out)
    self._remat = bool(remat)
    self._sublayers = (layer,)
    self._axis = axis
    self._n_carry = n_carry
    self._mode = mode

  @property
  def _keeps_carry(self):
    return self._mode == 'predict' and self._n_carry > 0

  # The kept carries live in `_state` beside the sublayer's cache-marker
  # slot, so they are per call (and per replica thread) like other values.
  @property
  def state(self):
    mark, kept = (self._state if isinstance(self._state, (list, tuple)) and
                  len(self._state) == 2 else (None, ()))
    layer_state = (mark if base.is_cache_marker(mark) else
                   self._sublayers[0].state)
    return layer_state, kept

  @state.setter
  def state(self, state):
    if base.is_cache_marker(state):
      return
    if not isinstance(state, (list, tuple)) or len(state) != 2:
      raise ValueError(
          f'{self.name}: state must be a pair (sublayer_state, kept_carry), '
          f'got {type(state).__name__} of length '
          f'{len(state) if isinstance(state, (list, tuple)) else 1}.')
    layer_state, kept = state
    if base.is_cache_marker(layer_state):
      mark = layer_state
    else:
      mark = None
      self._sublayers[0].state = layer_state
    self._state = (mark, tuple(kept))

  def _split(self, inputs):
    inputs = _as_tuple(inputs, self.n_in)
    n_xs = self.n_in - self._n_carry
    return inputs[:n_xs], inputs[n_xs:]

  def _resume(self, given, kept):
    """The carries to start from: the kept ones once a call stored them."""
    given = tuple(jnp.asarray(c) for c in given)
    if len(kept) == self._n_carry:  # Trax's form: bare carries, always set.
      return tuple(jnp.asarray(k).astype(c.dtype)
                   for k, c in zip(kept, given))
    if len(kept) != self._n_carry + 1:
      raise ValueError(
          f'{self.name}: predict-mode state holds {len(kept)} kept values; '
          f'expected {self._n_carry} carries and a filled flag. Re-run init.')
    *carries, filled = kept
    filled = jnp.asarray(filled) > 0
    return tuple(jnp.where(filled, jnp.asarray(k).astype(c.dtype), c)
                 for k, c in zip(carries, given))

  def forward(self, inputs):
    layer = self._sublayers[0]
    xs, init = self._split(inputs)
    xs = tuple(jnp.moveaxis(x, self._axis, 0) for x in xs)
    weights = self.weights[0]
    state, kept = self.state
    if self._keeps_carry and kept:
      init = self._resume(init, kept)
    rng = self.rng

    def step(carry, x):
      (carry_vals, layer_state, i) = carry
      r = fastmath.random.fold_in(rng, i)
      apply = _rematerialized if self._remat else _apply
      out, new_state = apply(layer, tuple(x) + tuple(carry_vals) if
                             layer.n_in > 1 else x[0], weights,
                             layer_state, r)
      out = _as_tuple(out, layer.n_out)
      # As in Trax, the last n_carry outputs are the carry and the rest are
      # ys, counted on what the layer returned rather than its n_out (a Fn
      # may declare n_out=2 and return three values).
      n_ys = len(out) - self._n_carry
      return (tuple(out[n_ys:]), new_state, i + 1), tuple(out[:n_ys])

    (carry, new_state, _), ys = fastmath.scan(
        step, (tuple(init), state, jnp.asarray(0, dtype=jnp.int32)), xs)
    ys = tuple(jnp.moveaxis(y, 0, self._axis) for y in ys)
    kept = (tuple(carry) + (jnp.ones((), dtype=jnp.int32),)
            if self._keeps_carry else ())
    self.state = (new_state, kept)
    return _from_tuple(ys + tuple(carry))

  def init_weights_and_state(self, input_signature):
    xs, init = self._split(input_signature)
    slices = tuple(shapes.ShapeDtype(
        tuple(s for i, s in enumerate(x.shape) if i != self._axis % len(
            x.shape)), x.dtype) for x in xs)
    layer_sig = _from_tuple(slices + tuple(init))
    w, s = self._sublayers[0].init(layer_sig, use_cache=True)
    kept = ()
    if self._keeps_carry:
      kept = tuple(jnp.zeros(c.shape, dtype=c.dtype) for c in init) + (
          jnp.zeros((), dtype=jnp.int32),)
    self.state = (s, kept)
    self.weights = (w,)


class Cond(base.Layer):
  """Runs `true(y)` if `cond(x)` is set, else `false(y)`.

  `x` is the first `cond.n_in` stack items and `y` the next `true.n_in`
  items, so `n_in = cond.n_in + true.n_in`. `cond` must return one scalar
  boolean. Only the chosen branch runs (and updates its state); `false=None`
  is the identity on one input (as in Trax, a `true` with several inputs
  needs an explicit `false`). As with Trax's `lax.cond`, outputs are always
  arrays: a branch returning a Python number gives an int32/float32/bool
  array.
  """

  def __init__(self, cond, true, false=None, name=None):
    default_false = false is None
    if default_false:
      false = cb.Serial()  # Trax's identity: one input, one output.
    if (true.n_in, true.n_out) != (false.n_in, false.n_out):
      hint = (f' The default false branch is the identity on one input; '
              f'for {true.n_in} inputs pass one, e.g. false=Select('
              f'{list(range(true.n_in))}).' if default_false else '')
      raise ValueError(f'Cond: true and false branches must have equal n_in '
                       f'and n_out, got ({true.n_in}, {true.n_out}) and '
                       f'({false.n_in}, {false.n_out}).{hint}')
    if cond.n_out != 1:
      raise ValueError(f'Cond: the condition must have n_out=1, got '
                       f'{cond.n_out}.')
    super().__init__(n_in=cond.n_in + true.n_in, n_out=true.n_out,
                     name=name or 'Cond')
    self._sublayers = (cond, true, false)

  def _split(self, xs):
    # As Trax's inputs_from_stack: a list or tuple is the stack, so a
    # one-input Cond given `[x]` runs on `x`.
    items = tuple(xs) if isinstance(xs, (list, tuple)) else (xs,)
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
      return _as_arrays(y), s, sf

    def run_false():
      y, s = false.pure_fn(branch_in, wf, sf, rf, use_cache=True)
      return _as_arrays(y), st, s
    self._check_branch_dtypes(branch_in)
    y, st, sf = fastmath.cond(pred, run_true, run_false)
    self.state = (sc, st, sf)
    # As Trax's outputs_onto_stack: a branch's list or tuple output is the
    # stack, so one output given as `[y]` comes back as `y`.
    return _from_tuple(tuple(y) if isinstance(y, (list, tuple)) else (y,))

  def _check_branch_dtypes(self, branch_in):
    """Raises a TypeError if the branches would return different dtypes.

    Trax's Cond is JAX's lax.cond, which traces both branches and requires
    identical output types: it does not promote, so an int32 identity
    branch beside a float one (`x / 2`) is an error there, eager or
    compiled. An eager tf.cond runs only the chosen branch, so the output
    signatures of both are compared here, once per input signature.
    """
    checked = self.__dict__.setdefault('_branch_dtypes_checked', set())
    key = shapes.signature(branch_in)
    if isinstance(key, list):  # A list input stack: a hashable set key.
      key = tuple(key)
    if key in checked:
      return
    _, true, false = self._sublayers
    # pylint: disable=protected-access
    got = [_leaf_dtypes(layer._forward_abstract(key)[0])
           for layer in (true, false)]
    # pylint: enable=protected-access
    if got[0] != got[1] and len(got[0]) == len(got[1]):
      raise TypeError(
          f'{self.name}: the true and false branches return different dtypes '
          f'({", ".join(got[0])} vs {", ".join(got[1])}). As in Trax, whose '
          f'lax.cond requires identical branch output types, they are not '
          f'promoted; cast one branch (e.g. with tl.ToFloat()).')
    checked.add(key)

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

  Built as in Trax: `Serial(ReshapeToChunks, Scan(layer, n_carry=0),
  ReshapeFromChunks)`; the batch axis of every input is split into
  (n_chunks, chunk_size) and `layer` is scanned over the chunks, its state
  threaded from one chunk to the next. Inputs whose batch does not divide by
  `chunk_size` run as one chunk if `pass_unchunkable`, else raise.
  `chunk_size=0` means no chunking: the layer itself is returned.
  """
  if chunk_size == 0:
    return layer
  if chunk_size < 0:
    raise ValueError(f'Chunk: chunk_size must be >= 0, got {chunk_size}.')

  def to_chunks(x):
    batch = x.shape[0]
    if batch % chunk_size:
      if not pass_unchunkable:
        raise ValueError(
            f'Chunk: batch size {batch} is not a multiple of chunk_size '
            f'{chunk_size} (input shape {tuple(x.shape)}); pick a chunk_size '
            f'that divides it or set pass_unchunkable=True.')
      return jnp.reshape(x, (1, batch) + tuple(x.shape[1:]))
    return jnp.reshape(x, (batch // chunk_size, chunk_size) +
                       tuple(x.shape[1:]))

  def from_chunks(x):
    return jnp.reshape(x, (x.shape[0] * x.shape[1],) + tuple(x.shape[2:]))

  return cb.Serial(
      base.PureLayer(lambda xs: fastmath.nested_map(to_chunks, xs),
                     n_in=layer.n_in, n_out=layer.n_in,
                     name='ReshapeToChunks'),
      Scan(layer, axis=0, n_carry=0, remat=True),
      base.PureLayer(lambda ys: fastmath.nested_map(from_chunks, ys),
                     n_in=layer.n_out, n_out=layer.n_out,
                     name='ReshapeFromChunks'))


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
    super().__init__(n_in=layer.n_in, n_out=1, name='BatchLeadingAxes')
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
  # Trax's structure and names: an unnamed Serial, so it prints as Serial.
  flip = base.Fn('_FlipAlongTimeAxis', lambda x: jnp.flip(x, axis=axis))
  return cb.Serial(cb.Branch(forward_layer,
                             cb.Serial(flip, backward_layer, flip)),
                   merge_layer)


def _reseed(layer):
  # pylint: disable=protected-access
  layer._rng = None
  layer._rng_seed_int = _py_random.randint(0, 2**31 - 1)
  # pylint: enable=protected-access
  for sub in layer.sublayers:
    _reseed(sub)


def SerialWithSideOutputs(layers, n_side_outputs=1):  # pylint: disable=invalid-name
  """Serial where each layer also emits side outputs collected aside.

  With layers `l_i: x -> (y, side_i)`, computes the chain and returns
  `(y_final, side_1, ..., side_n)`. In general layer `i`'s last
  `n_side_outputs[i]` outputs go to the bottom of the stack, in order.

  Built as Trax builds it: an unnamed Serial in which each layer is followed
  by a Select that moves its side outputs to the bottom of the stack.

  Args:
    layers: the layers to run in sequence.
    n_side_outputs: an int for every layer, or one int per layer.

  Returns:
    A Serial layer.
  """
  layers = _layer_lists.ensure_flat(layers)
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
  stack_size = running_max
  serial_layers = []
  for layer, n_side in zip(layers, n_side_outputs):
    serial_layers.append(layer)
    stack_size += layer.n_out - layer.n_in
    n_main = layer.n_out - n_side
    # Keep the main outputs on top, then the rest of the stack, then this
    # layer's side outputs.
    indices = (list(range(n_main)) +
               [layer.n_out + i for i in range(stack_size - layer.n_out)] +
               [n_main + i for i in range(n_side)])
    serial_layers.append(cb.Select(indices, n_in=stack_size))
  return cb.Serial(serial_layers)


def _static_dims(x):
  """`x`'s dimensions (None where unknown), or None if its rank is unknown."""
  shape = x.shape
  if getattr(shape, 'rank', 0) is None:
    return None
  return tuple(None if d is None else int(d) for d in shape)


def _same_static_shapes(a, b):
  """Whether trees `a` and `b` have leaves of equal static shapes."""
  a, b = fastmath.tree_leaves(a), fastmath.tree_leaves(b)
  return len(a) == len(b) and all(
      _static_dims(x) == _static_dims(y) for x, y in zip(a, b))


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
    if not (_same_static_shapes(y, cached) and
            _same_static_shapes(new_layer_state, layer_state)):
      # Traced with a cache of another shape than the layer now returns:
      # init's zeros for another input length (a model loaded from a file
      # written at one length and decoded at another), as Trax's Cache,
      # whose empty state `()` is filled on the first call. The two
      # branches merged to unknown dimensions, so the layer runs instead:
      # its outputs keep their static shapes, and the state takes them.
      y, new_layer_state = compute()
    self.state = (new_layer_state, y, jnp.asarray(True))
    return y

  def init_weights_and_state(self, input_signature):
    w, s = self._sublayers[0].init(input_signature, use_cache=True)
    out = self._sublayers[0].output_signature(input_signature)
    zeros = fastmath.nested_map(
        lambda sd: jnp.zeros(sd.shape, dtype=sd.dtype), out)
    self.weights = (w,)
    self.state = (s, zeros, jnp.asarray(False))
