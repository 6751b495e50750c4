"""Shape assertions in an einsum-like language: `assert_shape('bld->bl')`.

A spec names each tensor's axes with one character per axis:

* a letter is a named dimension: every axis with the same letter, in any
  input or output, must have the same size;
* a digit is that size itself ('3' must be 3);
* '...' stands for any number of axes (at most one per tensor); all the
  axes covered by '...' in every tensor must be the same;
* ',' separates tensors and '->' separates inputs from outputs.

Checks use static shapes, so they run eagerly and while tracing under
`tf.function` (once per trace); an axis of unknown size is not checked.
"""

import functools
import inspect
import string
import sys
import threading

from tfnp_trax.layers import _per_call
from tfnp_trax.layers import _stack
from tfnp_trax.layers import base
from tfnp_trax.layers import combinators

__all__ = ['assert_shape', 'AssertFunction', 'AssertShape']

_ALLOWED = set(string.ascii_letters + string.digits + '.')


def _caller(depth):
  frame = sys._getframe(depth + 1)  # pylint: disable=protected-access
  return f'Defined at {frame.f_code.co_filename}:{frame.f_lineno}'


def _parse(spec, full_spec):
  """'ab,...c' -> ['ab', '.c'] with one '.' per ellipsis, checked.

  A spec with other characters raises AssertionError, the type Trax's
  assert gives it. More than one ellipsis (or a stray '.') in a part is
  reported when the layer runs, as in Trax, where it is a LayerError.
  """
  specs = spec.replace('...', '.').split(',')
  for part in specs:
    bad = sorted(set(part) - _ALLOWED)
    if bad:
      raise AssertionError(
          f"AssertShape: spec {full_spec!r} has characters {bad} in "
          f"{part!r}; {_SPEC_HINT}")
  return specs


_SPEC_HINT = ("use letters (named dimensions), digits (sizes), one '...' per "
              "tensor, ',' between tensors and '->' between inputs and "
              "outputs.")


class _Checker:
  """Checks tensors against specs, recording sizes as it goes."""

  # What `structural_key` compares (see `layers._structural_key`).
  STRUCTURAL_ATTRS = ('full_spec', 'context', 'message')

  def __init__(self, full_spec, context, message):
    self.full_spec = full_spec
    self.context = context  # e.g. ' (around layer Serial)'.
    self.message = message

  def fail(self, problem, bindings):
    shapes = ', '.join(f'{kind}s {list(s)}'
                       for kind, s in bindings['_shapes'].items())
    raise ValueError(f'AssertShape: spec {self.full_spec!r}{self.context}: '
                     f'{problem} ({shapes}). {self.message}')

  def check(self, xs, specs, kind, bindings):
    """Checks tensors `xs` (of the `kind` 'input' or 'output')."""
    shapes = [tuple(x.shape) for x in xs]
    bindings['_shapes'][kind] = shapes
    if len(xs) != len(specs):
      self.fail(f'expected {len(specs)} {kind}s but got {len(xs)}', bindings)
    for spec in specs:
      if spec.count('.') > 1:
        self.fail(f'more than one ellipsis in {spec!r}; {_SPEC_HINT}',
                  bindings)
    for i, (shape, spec) in enumerate(zip(shapes, specs)):
      where = f'{kind} {i}'
      named = spec.replace('.', '')
      if '.' in spec:
        if len(shape) < len(named):
          self.fail(f'{where} has rank {len(shape)} but {spec!r} needs rank '
                    f'at least {len(named)}', bindings)
        before, after = spec.split('.')
        tail = len(shape) - len(after)
        dims = list(zip(before, shape)) + list(zip(after, shape[tail:]))
        self._ellipsis(shape[len(before):tail], where, bindings)
      else:
        if len(shape) != len(spec):
          self.fail(f'{where} has rank {len(shape)} but {spec!r} needs rank '
                    f'{len(spec)}', bindings)
        dims = list(zip(spec, shape))
      for letter, size in dims:
        self._dimension(letter, size, where, bindings)

  def _dimension(self, letter, size, where, bindings):
    if size is None:
      return  # Unknown while tracing: nothing to check.
    if letter.isdigit():
      if size != int(letter):
        self.fail(f'dimension {letter!r} must be {letter} but is {size} in '
                  f'{where}', bindings)
      return
    if letter in bindings:
      seen, seen_where = bindings[letter]
      if seen != size:
        self.fail(f'dimension {letter!r} is {seen} in {seen_where} but '
                  f'{size} in {where}', bindings)
    else:
      bindings[letter] = (size, where)

  def _ellipsis(self, dims, where, bindings):
    if '.' in bindings:
      seen, seen_where = bindings['.']
      known = all(a is not None and b is not None for a, b in zip(seen, dims))
      if len(seen) != len(dims) or (known and tuple(seen) != tuple(dims)):
        self.fail(f"the dimensions under '...' are {tuple(seen)} in "
                  f'{seen_where} but {tuple(dims)} in {where}', bindings)
    else:
      bindings['.'] = (tuple(dims), where)


class _SharedBindings(threading.local):
  """What the input check saw, for the output check of the same call.

  Per thread, since replicas of a tf.distribute strategy run in threads.
  """

  # Scratch space of one call: nothing in it describes the computation.
  STRUCTURAL_ATTRS = ()

  # A copy (copy.deepcopy of a model, pickling) starts with empty scratch
  # space; a thread-local itself cannot be copied.
  def __deepcopy__(self, memo):
    return type(self)()

  def __reduce__(self):
    return (type(self), ())

  def __init__(self):
    super().__init__()
    self.values = None


class AssertShape(base.Layer):
  """Checks the shapes of its inputs against a spec and passes them through.

  Example:
    >>> layer = AssertShape('ab,b')
    >>> x, v = layer((jnp.ones((2, 3)), jnp.ones((3,))))
    >>> tuple(x.shape)
    (2, 3)
  """

  def __init__(self, spec, message=None, visible_layer=False):
    """Creates a layer checking `spec` (no '->': inputs are the outputs).

    Args:
      spec: one shape spec per tensor, joined by ','.
      message: text appended to errors; by default where the layer was made.
      visible_layer: name the layer 'AssertShape'; by default, as in Trax,
        its name is '' and a one-tensor check is left out when printing.

    Raises:
      AssertionError: (Trax's error) the spec has characters other than
        letters, digits, '...' and ','.
    """
    self._specs = _parse(spec, spec)
    super().__init__(n_in=len(self._specs), n_out=len(self._specs),
                     name='AssertShape' if visible_layer else '')
    message = _caller(1) if message is None else message
    self._checker = _Checker(spec, '', message)
    self._kind = 'input'
    self._shared = None  # Set by _link: this checks outputs of a layer.

  def _link(self, checker, before, kind):
    """Checks as part of `checker`'s spec, after `before` (if given)."""
    self._checker = checker
    self._kind = kind
    # pylint: disable=protected-access
    self._shared = (before._shared if before is not None else
                    _SharedBindings())

  @property
  def uses_rng(self):
    return False  # Checks shapes only.

  def pure_fn(self, x, weights, state, rng, use_cache=False):
    """Checks `x` and returns the very objects given, as Trax's layer does.

    Called directly (not inside another layer), the inputs are not replaced
    by their tensor copies: `layer(x)` is `x` itself, NumPy arrays included.
    """
    outermost = not _per_call.in_call()
    outputs, new_state = super().pure_fn(x, weights, state, rng, use_cache)
    return (x if outermost else outputs), new_state

  def forward(self, xs):
    tensors = list(xs) if isinstance(xs, (list, tuple)) else [xs]
    if self._shared is None or self._kind == 'input':
      bindings = {'_shapes': {}}
      if self._shared is not None:
        self._shared.values = bindings
    else:
      bindings = self._shared.values or {'_shapes': {}}
    self._checker.check(tensors, self._specs, self._kind, bindings)
    return xs


def _split_arrow(specification):
  if specification.count('->') != 1:
    raise ValueError(f'AssertShape: spec {specification!r} needs exactly one '
                     f"'->' between the input and the output specs.")
  return specification.split('->')


def AssertFunction(specification, layer, message=None):  # pylint: disable=invalid-name
  """`layer` between checks of its inputs and outputs against one spec.

  Example:
    >>> model = AssertFunction('...d->...d', tl.Serial(tl.Relu()))
    >>> tuple(model(jnp.ones((2, 3))).shape)
    (2, 3)

  Args:
    specification: 'inputs->outputs', e.g. 'bl,bld->bld'.
    layer: the layer to check, or (as in Trax) a list of layers, which is
      spliced into the Serial: `AssertFunction(spec, [a, b])` is
      `Serial(input check, a, b, output check)`, and its weights are
      `((), weights of a, weights of b, ())`.
    message: text appended to errors; by default where this was called.

  Returns:
    `Serial(input check, layer, output check)`; the checks have no weights.
  """
  before_spec, after_spec = _split_arrow(specification)
  message = _caller(1) if message is None else message
  name = 'Serial' if isinstance(layer, (list, tuple)) else layer.name
  checker = _Checker(specification, f' (around layer {name})', message)
  before = _assert_layer(before_spec, specification, checker, None, 'input')
  after = _assert_layer(after_spec, specification, checker, before, 'output')
  if isinstance(layer, (list, tuple)):
    # Several layers: a plain Serial, which runs (and splits the rng over)
    # the checks as layers, as Trax's does.
    return combinators.Serial(before, layer, after)
  return _Checked(before, layer, after)


class _Checked(combinators.Serial):
  """`Serial(input check, layer, output check)`, named and printed Serial.

  It prints, and has weights and state trees, as Trax's plain Serial does,
  but is cheaper to run and trace, since the checks use no weights, state or
  randomness:

  * its rng goes to `layer` unsplit (Trax splits it three ways), so
    wrapping adds no ops to a traced graph and the wrapped layer draws the
    same random numbers, at init and in dropout, as it would unwrapped;
  * the checks run directly, not through `pure_fn`;
  * inside a model's call it skips its own `pure_fn` bookkeeping (which
    walks and re-sets the whole weight and state subtree, once more per
    level of nesting) and hands its slices of the trees to `layer`.
  """

  def __init__(self, before, layer, after):
    super().__init__(before, layer, after, name='Serial')

  @property
  def rng(self):
    return base.Layer.rng.fget(self)

  @rng.setter
  def rng(self, rng):
    self._rng = rng
    self._sublayers[1].rng = rng

  def _needs_init_hint(self):
    # Wrapping adds nothing to initialize.
    return self._sublayers[1]._needs_init_hint()  # pylint: disable=protected-access

  def _run(self, xs, weights, state, rng, use_cache):
    """Checks, runs `layer` and checks; returns (stack, layer's state)."""
    before, layer, after = self._sublayers
    before.forward(_stack.inputs_from_stack(xs, before.n_in, before.name))
    inputs = _stack.inputs_from_stack(xs, layer.n_in, layer.name)
    outputs, new_state = layer.pure_fn(inputs, weights, state, rng,
                                       use_cache=use_cache)
    stack = _stack.outputs_onto_stack(outputs, xs, layer.n_in, layer.n_out)
    after.forward(_stack.inputs_from_stack(stack, after.n_in, after.name))
    return stack, new_state

  def pure_fn(self, x, weights, state, rng, use_cache=False):
    # The outermost call (which sets up the per-call overlay and converts
    # inputs) takes the ordinary path.
    if not _per_call.in_call():
      return super().pure_fn(x, weights, state, rng, use_cache)
    cached = base.is_cache_marker(weights) and base.is_cache_marker(state)
    try:
      # Cache markers pass through: `layer` then reuses what it holds.
      stack, new_state = self._run(
          x, weights if cached else weights[1],
          state if cached else state[1], rng, use_cache)
    except base.LayerError:
      raise
    except Exception:  # pylint: disable=broad-except
      # A failed check or a malformed call: the ordinary path raises it
      # again, annotated as for any other layer.
      return super().pure_fn(x, weights, state, rng, use_cache)
    if cached:
      return stack, base.GET_STATE_FROM_CACHE
    return stack, (state[0], new_state, state[2])

  @property
  def uses_rng(self):
    return any(layer.uses_rng for layer in self.sublayers)  # Checks only.

  def forward(self, xs):
    weights, state = self.weights, self.state
    stack, new_state = self._run(xs, weights[1], state[1], self.rng, True)
    self.state = (state[0], new_state, state[2])
    return stack

  def init_weights_and_state(self, input_signature):
    # Checks the signatures directly: abstract evaluation of each check
    # layer, as Serial does for its sublayers, would cost two traces.
    before, layer, after = self._sublayers
    before.forward(
        _stack.inputs_from_stack(input_signature, before.n_in, before.name))
    inputs = _stack.inputs_from_stack(input_signature, layer.n_in, layer.name)
    weights, state = layer.init(inputs, use_cache=True)
    outputs, _ = layer._forward_abstract(inputs)  # pylint: disable=protected-access
    stack = _stack.outputs_onto_stack(outputs, input_signature, layer.n_in,
                                      layer.n_out)
    after.forward(_stack.inputs_from_stack(stack, after.n_in, after.name))
    self._signature_cache = (input_signature, stack)
    before.weights, after.weights = (), ()
    # `layer` holds its weights and state already; setting the trees here
    # would set them all again. Only a cache marker (a layer shared with an
    # earlier part of the model), now or from an earlier init, must be
    # recorded here.
    markers = (weights, state) + tuple(self._weights) + tuple(self._state)
    if any(base.is_cache_marker(m) for m in markers):
      self.state = ((), state, ())
      self.weights = ((), weights, ())


def _assert_layer(spec, full_spec, checker, before, kind):
  _parse(spec, full_spec)  # Errors name the whole spec.
  layer = AssertShape(spec, checker.message)
  layer._link(checker, before, kind)  # pylint: disable=protected-access
  return layer


def assert_shape(specification):
  """Decorator: checks the shapes going into and out of a layer.

  Applied to a function returning a layer, wraps that layer with
  `AssertFunction`; applied to a Layer subclass, checks in its `forward`.

  Example:
    >>> @assert_shape('...d->...d')
    ... def Block():
    ...   return tl.Serial(tl.Relu())
    >>> tuple(Block()(jnp.ones((2, 3))).shape)
    (2, 3)

  Args:
    specification: 'inputs->outputs' (see the module docstring).

  Returns:
    The decorator.
  """
  before_spec, after_spec = _split_arrow(specification)
  in_specs = _parse(before_spec, specification)
  out_specs = _parse(after_spec, specification)
  message = _caller(1)

  def wrap_class(cls):
    forward = cls.forward

    @functools.wraps(forward)
    def checked_forward(self, xs):
      checker = _Checker(specification, f' (in layer {self.name})', message)
      bindings = {'_shapes': {}}
      ins = list(xs) if isinstance(xs, (list, tuple)) else [xs]
      checker.check(ins, in_specs, 'input', bindings)
      ys = forward(self, xs)
      outs = list(ys) if isinstance(ys, (list, tuple)) else [ys]
      checker.check(outs, out_specs, 'output', bindings)
      return ys
    cls.forward = checked_forward
    return cls

  def wrap_function(fn):
    @functools.wraps(fn)
    def checked(*args, **kwargs):
      return AssertFunction(specification, fn(*args, **kwargs), message)
    return checked

  def wrap(fn_or_class):
    if inspect.isclass(fn_or_class):
      return wrap_class(fn_or_class)
    return wrap_function(fn_or_class)
  return wrap
