"""The Layer contract: Layer, PureLayer, Fn and LayerError.

A layer is a function from inputs to outputs with weights, state and an rng.
Its pure core is `pure_fn(x, weights, state, rng) -> (y, new_state)`; the
object also keeps its current weights and state so that it can be called
directly. Inputs follow the data-stack convention: a layer with `n_in == 1`
takes a bare tensor, one with `n_in > 1` a tuple of `n_in` tensors; likewise
for outputs and `n_out`.
"""

import inspect
import random as _py_random
from typing import Any, NamedTuple

import numpy as onp

from tfnp_trax import debug
from tfnp_trax import shapes
from tfnp_trax.fastmath import abstract
from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.fastmath import random as frandom
from tfnp_trax.fastmath import transforms
from tfnp_trax.layers import _diagnostics as diag
from tfnp_trax.layers import _inputs
from tfnp_trax.layers import _markers
from tfnp_trax.layers import _per_call
from tfnp_trax.layers import _stack
from tfnp_trax.layers import forward_only
from tfnp_trax.layers import weight_files

__all__ = ['Layer', 'PureLayer', 'Fn', 'LayerError', 'LayerSnapshot',
           'EMPTY_WEIGHTS', 'EMPTY_STATE', 'GET_WEIGHTS_FROM_CACHE',
           'GET_STATE_FROM_CACHE', 'is_cache_marker', 'to_list',
           # Trax's weight-file helpers, from weight_files.py.
           'N_WEIGHTS_SHARDS', 'flatten_weights_and_state',
           'unflatten_weights_and_state', 'np_to_file', 'np_from_file',
           'shard', 'unshard']

# Trax's names for the markers of empty and shared weights (see _markers).
EMPTY_WEIGHTS = _markers.EMPTY_WEIGHTS
EMPTY_STATE = _markers.EMPTY_STATE
GET_WEIGHTS_FROM_CACHE = _markers.GET_WEIGHTS_FROM_CACHE
GET_STATE_FROM_CACHE = _markers.GET_STATE_FROM_CACHE
is_cache_marker = _markers.is_cache_marker

# Trax defines its weight-file helpers in trax.layers.base; ours live in
# weight_files.py, which builds on _markers, not on this module.
N_WEIGHTS_SHARDS = weight_files.N_WEIGHTS_SHARDS
flatten_weights_and_state = weight_files.flatten_weights_and_state
unflatten_weights_and_state = weight_files.unflatten_weights_and_state
np_to_file = weight_files.np_to_file
np_from_file = weight_files.np_from_file
shard = weight_files.shard
unshard = weight_files.unshard

# The public attributes `Layer.__setattr__` lets callers assign.
_SETTABLE_ATTRS = ('weights', 'state', 'rng')


class LayerSnapshot(NamedTuple):
  """What `Layer.restore` puts back: a layer's values at `Layer.snapshot`."""
  weights: Any
  state: Any
  rng: Any
  initialized: bool


class LayerError(Exception):
  """An error raised inside a layer, annotated with where the layer is.

  The message names the layer, the file and line that created it, the
  input signature it was called with, and the original error.
  """

  def __init__(self, layer_name, function_name, caller, input_signature,
               traceback_string, hint=''):
    self.layer_name = layer_name
    self.function_name = function_name
    self.caller = caller
    self.input_signature = input_signature
    self.traceback_string = traceback_string
    msg = (f'Exception passing through layer {layer_name} (in '
           f'{function_name}):\n  layer created in file {caller}\n'
           f'  layer input shapes: {input_signature}\n')
    if hint:
      msg += f'  hint: {hint}\n'
    msg += '\n' + traceback_string
    super().__init__(msg)


class Layer:
  """Base class for layers.

  Subclasses override `forward` and, if they have weights or state,
  `init_weights_and_state`. Layers with sublayers pass them to the
  constructor's caller through `self._sublayers`.

  Per-call values: while `pure_fn(x, weights, state, rng)` runs, every layer
  in the tree reads the weights, state and rng of *that call* through
  `self.weights`, `self.state` and `self.rng`. Those three attributes are
  `_per_call.PerCallSlot`s: inside a call they live in a per-thread overlay,
  so tf.distribute's replica threads (which run the same layer objects
  concurrently) never see each other's values, and the overlay is dropped
  when the outermost call returns. Outside a call they are ordinary
  attributes. `init` is refused inside a call, since it would replace the
  layer's own weights from within another computation.
  """

  _signature_cache = None  # (input_signature, output_signature) from init.
  _weights = _per_call.PerCallSlot('_weights')
  _state = _per_call.PerCallSlot('_state')
  _rng = _per_call.PerCallSlot('_rng')

  def __init__(self, n_in=1, n_out=1, name=None, sublayers_to_print=None):
    self._n_in = n_in
    self._n_out = n_out
    # Only None means 'use the class name': Trax keeps an explicit ''.
    self._name = type(self).__name__ if name is None else name
    self._sublayers = ()
    self._sublayers_to_print = sublayers_to_print
    self._weights = EMPTY_WEIGHTS
    self._state = EMPTY_STATE
    self._rng = None
    self._rng_seed_int = _py_random.randint(0, 2**31 - 1)
    self._init_cached = False
    self._initialized = False
    self._caller = diag.caller_location()

  def __repr__(self):
    # Trax's format: stack sizes only where they differ from 1, one
    # sublayer per line, indented.
    text = self._name
    if self.n_in != 1:
      text += f'_in{self.n_in}'
    if self.n_out != 1:
      text += f'_out{self.n_out}'
    # As in Trax, `sublayers_to_print` lists the objects to show in place of
    # the sublayers (Branch passes its raw arguments, so None or a list of
    # layers print as such); [] shows none, None shows all sublayers. Items
    # that print as '' (unnamed one-in/one-out layers) are left out.
    subs = (self.sublayers if self._sublayers_to_print is None else
            self._sublayers_to_print)
    if not subs:
      return text
    texts = [t for t in (str(s) for s in subs) if t]
    inner = '\n'.join('  ' + t.replace('\n', '\n  ') for t in texts)
    return f'{text}[\n{inner}\n]'

  # -- To override -------------------------------------------------------
  def forward(self, x):
    """Computes outputs from `x` using `self.weights`, `self.state`."""
    raise NotImplementedError(f'{self._name}: forward is not implemented.')

  def init_weights_and_state(self, input_signature):
    """Sets `self.weights` and `self.state` for `input_signature`."""
    del input_signature

  def accepts_weight_file_shape(self, model_shape, file_shape):
    """Whether `forward` also reads a weight stored as `file_shape`.

    Weight files are checked leaf by leaf against the model's shapes; a
    layer that reads some weight in another layout too (older Trax files
    store PositionalEncoding's table as [1, max_len, d]) returns True for
    it, and the file's leaf is assigned as it is. Default: no other shape.
    """
    del model_shape, file_shape
    return False

  @property
  def has_backward(self):
    """True if `backward` defines this layer's gradient."""
    return False

  @property
  def uses_rng(self):
    """Whether `forward` may draw random numbers from `self.rng`.

    True unless a layer class knows better: combinators derive it from their
    sublayers and split their key only when a sublayer uses it, which keeps
    key-splitting ops out of models that draw no random numbers (a
    deterministic model's traced step, and its XLA program, shrink a lot).
    A subtree that uses no randomness is handed its parent's key unsplit.
    """
    return True

  def backward(self, inputs, output, grad, weights, state, new_state, rng):
    """Custom gradient: returns `(grad_inputs, grad_weights)`."""
    raise NotImplementedError

  # -- Properties --------------------------------------------------------
  @property
  def name(self):
    return self._name

  @property
  def n_in(self):
    return self._n_in

  @property
  def n_out(self):
    return self._n_out

  @property
  def sublayers(self):
    return self._sublayers

  @property
  def weights(self):
    if not self._sublayers:
      return self._weights
    marks = self._weights if isinstance(self._weights, (list, tuple)) and len(
        self._weights) == len(self._sublayers) else (None,) * len(
            self._sublayers)
    return tuple(m if is_cache_marker(m) else layer.weights
                 for layer, m in zip(self._sublayers, marks))

  @weights.setter
  def weights(self, weights):
    if is_cache_marker(weights):
      return
    self._initialized = True
    if not self._sublayers:
      self._weights = weights
      return
    if not isinstance(weights, (list, tuple)) or len(weights) != len(
        self._sublayers):
      got = len(weights) if isinstance(weights, (list, tuple)) else type(
          weights).__name__
      raise ValueError(
          f'{self._name}: weights must be a tuple with one entry per sublayer '
          f'({len(self._sublayers)}), got {got}.')
    self._weights = tuple(w if is_cache_marker(w) else None for w in weights)
    for layer, w in zip(self._sublayers, weights):
      layer.weights = w

  @property
  def state(self):
    if not self._sublayers:
      return self._state
    marks = self._state if isinstance(self._state, (list, tuple)) and len(
        self._state) == len(self._sublayers) else (None,) * len(
            self._sublayers)
    return tuple(m if is_cache_marker(m) else layer.state
                 for layer, m in zip(self._sublayers, marks))

  @state.setter
  def state(self, state):
    if is_cache_marker(state):
      return
    if not self._sublayers:
      self._state = state
      return
    if not isinstance(state, (list, tuple)) or len(state) != len(
        self._sublayers):
      raise ValueError(f'{self._name}: state must be a tuple with one entry '
                       f'per sublayer ({len(self._sublayers)}).')
    self._state = tuple(s if is_cache_marker(s) else None for s in state)
    for layer, s in zip(self._sublayers, state):
      layer.state = s

  @property
  def rng(self):
    if self._rng is None:
      self._rng = frandom.get_prng(self._rng_seed_int)
    return self._rng

  @rng.setter
  def rng(self, rng):
    self._rng = rng
    if self._sublayers:
      rngs = frandom.split(rng, len(self._sublayers))
      for i, layer in enumerate(self._sublayers):
        layer.rng = rngs[i]

  def _settable_attrs(self):
    """Public attributes callers may assign; subclasses may extend it."""
    return _SETTABLE_ATTRS

  def __setattr__(self, attr, value):
    # As in Trax, only `weights`, `state` and `rng` may be assigned from
    # outside: a typo such as `layer.weighs = w` would otherwise silently add
    # a new attribute. Private `_names` pass after one character test, since
    # this runs on every attribute write.
    if attr[0] != '_' and attr not in self._settable_attrs():
      allowed = ', '.join(self._settable_attrs())
      raise ValueError(
          f'{type(self).__name__}: cannot set public attribute {attr!r}; '
          f'layers accept only {allowed} (and private _names). Misspelled? '
          f'A subclass that needs another public attribute lists it in '
          f'_settable_attrs().')
    super().__setattr__(attr, value)

  # -- Init ----------------------------------------------------------------
  def init(self, input_signature, rng=None, use_cache=False):
    """Initializes weights and state for inputs shaped like `input_signature`.

    Args:
      input_signature: a ShapeDtype, or a tuple of them for several inputs.
      rng: optional int32 [2] key; by default a per-layer random key.
      use_cache: if True, a layer already initialized in this pass returns
        cache markers, so shared layers keep one copy of their weights.

    Returns:
      `(weights, state)`.
    """
    if _per_call.in_call():
      raise LayerError(
          self._name, 'init', self._caller, input_signature,
          'init was called while a pure_fn call is running (inside another '
          "layer's forward or a traced step). Initialize the model before "
          'running it: call model.init(input_signature) first, then '
          'model.pure_fn(...).')
    try:
      if self._init_cached and use_cache:
        return GET_WEIGHTS_FROM_CACHE, GET_STATE_FROM_CACHE
      if rng is not None:
        self.rng = rng
      diag.check_input_signature(self._name, input_signature)
      self._check_n_in(input_signature)
      self.init_weights_and_state(input_signature)
      self._initialized = True
      if use_cache:
        self._init_cached = True
      else:
        self._clear_init_cache()
      return self.weights, self.state
    except LayerError as e:
      if not use_cache:
        self._clear_init_cache()  # A retry must not reuse half an init.
      raise e
    except Exception as e:  # pylint: disable=broad-except
      if not use_cache:
        self._clear_init_cache()
      raise LayerError(self._name, 'init', self._caller, input_signature,
                       diag.format_exception(e)) from e

  def _check_n_in(self, x):
    """Fails early when a multi-input layer gets fewer inputs than n_in."""
    if self._n_in <= 1:
      return
    size = _stack.stack_size(x)
    if size < self._n_in:
      raise ValueError(
          f'{self._name}: expects {self._n_in} inputs (a tuple of '
          f'{self._n_in} arrays) but got {size}: '
          f'{diag.short_signature(x)}. Pass the inputs as a tuple, e.g. '
          f'layer((x1, x2)).')

  def _clear_init_cache(self):
    self._init_cached = False
    for layer in self._sublayers:
      layer._clear_init_cache()  # pylint: disable=protected-access

  @property
  def initialized(self):
    """Whether `init` ran (or weights were set) on this layer."""
    return self._initialized

  def snapshot(self):
    """This layer's weights, state, rng and `initialized`, to `restore` later.

    Code that tries out an `init` (to learn the shapes it gives) or loads
    weights all or nothing takes a snapshot first and restores it when done
    or when the load fails.
    """
    return LayerSnapshot(self.weights, self.state, self.rng,
                         self._initialized)

  def restore(self, snapshot):
    """Puts back what `snapshot()` returned, `initialized` included."""
    self.rng = snapshot.rng
    self._set_weights_state_quietly(snapshot.weights, snapshot.state)
    self._initialized = snapshot.initialized

  # -- Weight files (Trax 1.4's format; see weight_files.py) ----------------
  def init_from_file(self, file_name, weights_only=False, input_signature=None):
    """Loads weights (and state unless `weights_only`) from a Trax file."""
    return weight_files.init_from_file(self, file_name, weights_only,
                                       input_signature)

  def save_to_file(self, file_name, weights_only=False, input_signature=None):
    """Saves weights (and state unless `weights_only`) as Trax 1.4 does."""
    weight_files.save_to_file(self, file_name, weights_only, input_signature)

  def weights_and_state_signature(self, input_signature):
    """`(weights, state)` as ShapeDtype trees, for `input_signature`."""
    return weight_files.weights_and_state_signature(self, input_signature)

  # -- Running -------------------------------------------------------------
  def __call__(self, x, weights=None, state=None, rng=None):
    """Runs the layer on `x`, by default with its own weights and state."""
    weights = self.weights if weights is None else weights
    rng = self.rng if rng is None else rng
    if state is not None:
      self.state = state
    outputs, new_state = self.pure_fn(x, weights, self.state, rng)
    self.state = new_state
    return outputs

  def pure_fn(self, x, weights, state, rng, use_cache=False):
    """The pure core: `(x, weights, state, rng) -> (outputs, new_state)`.

    Args:
      x: a tensor, or a tuple of `n_in` tensors.
      weights: this layer's weight tree.
      state: this layer's state tree.
      rng: an int32 [2] key.
      use_cache: if True, leave `weights` and `state` set on the layer so a
        second occurrence of the same layer in the model can reuse them.

    Returns:
      `(outputs, new_state)`.
    """
    if _per_call.in_call():
      return self._pure_fn(x, weights, state, rng, use_cache)
    # The outermost call is where data enters, as it enters jnp in Trax.
    x = _inputs.canonical_inputs(x, self._n_in)
    debug.check_tree_finite(self._name, 'inputs', x)  # Debug mode only.
    debug.check_tree_finite(self._name, 'weights', weights)
    _per_call.begin_call()
    try:
      return self._pure_fn(x, weights, state, rng, use_cache)
    finally:
      _per_call.end_call()

  def _pure_fn(self, x, weights, state, rng, use_cache):
    old_weights, old_state, old_rng = self.weights, self.state, self._rng
    try:
      self._rng = rng
      was_cached = (is_cache_marker(weights) and is_cache_marker(state))
      if was_cached:
        weights, state = self.weights, self.state
      else:
        # NumPy leaves (e.g. weights loaded from files) become tensors, so
        # forward code may call tensor methods such as .astype(tf dtype).
        weights = _markers.map_keep_markers(_inputs.numpy_to_tensor, weights)
        state = _markers.map_keep_markers(_inputs.numpy_to_tensor, state)
        self._set_weights_state_quietly(weights, state)
      self._check_n_in(x)
      if self.has_backward and not forward_only.active():
        outputs, new_state = self._do_custom_gradients(x)
      else:
        outputs = self.forward(x)
        new_state = self.state
      debug.check_tree_finite(self._name, 'outputs', outputs)
    except Exception as e:  # pylint: disable=broad-except
      # Put back what the layer held before the call, so a failed call (or
      # a failed trace) leaves no half-set or symbolic weights behind.
      self._rng = old_rng
      self._set_weights_state_quietly(old_weights, old_state)
      if isinstance(e, LayerError):
        raise
      hint = ('' if self._initialized or not self._needs_init_hint() else
              'this layer was never initialized: call '
              'layer.init(shapes.signature(x)) first.')
      raise LayerError(self._name, 'pure_fn', self._caller,
                       diag.short_signature(x), diag.format_exception(e),
                       hint) from e
    self._rng = old_rng
    if not use_cache:
      self._set_weights_state_quietly(old_weights, old_state)
    else:
      self._set_weights_state_quietly(weights, new_state)
    if was_cached:
      new_state = GET_STATE_FROM_CACHE
    return outputs, new_state

  def _needs_init_hint(self):
    return type(self).init_weights_and_state is not (
        Layer.init_weights_and_state)

  def _set_weights_state_quietly(self, weights, state):
    initialized = self._initialized
    self.weights = weights
    self.state = state
    self._initialized = initialized

  def output_signature(self, input_signature):
    """The output ShapeDtype(s) for inputs shaped like `input_signature`."""
    return self._forward_abstract(input_signature)[0]

  def _forward_abstract(self, input_signature):
    """Output and state signatures of `pure_fn` for `input_signature`.

    A combinator that already propagated signatures through its sublayers
    during `init` answers from that; otherwise the layer is evaluated on
    zeros (small inputs) or traced.
    """
    cache = self._signature_cache
    if cache is not None and diag.same_signature(cache[0],
                                                 input_signature):
      return cache[1], None
    old_weights, old_state = self.weights, self.state
    try:
      return abstract.shape_eval(
          lambda x, w, s, r: self.pure_fn(x, w, s, r, use_cache=True))(
              input_signature, old_weights, old_state,
              shapes.ShapeDtype((2,), 'int32'))
    except LayerError:
      raise
    except Exception as e:  # pylint: disable=broad-except
      raise LayerError(self._name, '_forward_abstract', self._caller,
                       input_signature, diag.format_exception(e)) from e
    finally:
      # Tracing leaves symbolic weights on the layer (use_cache=True keeps
      # them for shared sublayers); restore the concrete ones.
      self._set_weights_state_quietly(old_weights, old_state)

  # -- Custom gradients ------------------------------------------------------
  def _do_custom_gradients(self, x):
    """Runs forward with `backward` as the gradient wrt inputs and weights."""
    state, rng = self.state, self._rng

    def run_forward(inputs, weights):
      self._set_weights_state_quietly(weights, state)
      self._rng = rng
      out = self.forward(inputs)
      return out, self.state

    def f_vjp(inputs, weights):
      # `backward` alone defines the gradient, so the forward must not be
      # recorded: an eager tape would otherwise keep every activation inside
      # it alive (tf.custom_gradient does not stop recording in eager mode),
      # defeating layers such as ReversibleSerial that backprop without them.
      inputs, weights = transforms.stop_gradient((inputs, weights))
      output, new_state = run_forward(inputs, weights)

      def vjp_fn(ct):
        ct_output = ct[0]
        grad_inputs, grad_weights = self.backward(
            inputs, output, ct_output, weights, state, new_state, rng)
        return grad_inputs, grad_weights
      return (output, new_state), vjp_fn

    output, new_state = transforms.custom_grad(f_vjp, run_forward)(
        x, self.weights)
    return output, new_state


class PureLayer(Layer):
  """A layer with no weights or state, defined by a function of its inputs."""

  def __init__(self, forward_fn, n_in=1, n_out=1, name='PureLayer'):
    super().__init__(n_in=n_in, n_out=n_out, name=name)
    self._forward_fn = forward_fn

  def forward(self, x):
    return self._forward_fn(x)

  @property
  def uses_rng(self):
    return False  # The function sees only its inputs.


def Fn(name, f, n_out=1):  # pylint: disable=invalid-name
  """A weightless layer computing `f`; `n_in` is the number of f's args.

  As in Trax, every positional parameter of `f` is one input, so `f` may not
  have default values, `*args` or `**kwargs`. Keyword-only parameters are
  not inputs and are not checked (`functools.partial(g, k=2)` has one).

  Example:
    >>> layer = Fn('Double', lambda x: 2 * x)
    >>> float(layer(1.0))
    2.0

  Args:
    name: the layer's name, used in errors and printing ('' or None: 'Fn').
    f: a function of positional tensor arguments.
    n_out: how many outputs `f` returns (a tuple if more than one).

  Returns:
    A PureLayer.

  Raises:
    ValueError: if `f` has a default argument, `*args` or `**kwargs`.
  """
  name = name or 'Fn'
  params = list(inspect.signature(f).parameters.values())
  positional = [p for p in params
                if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
  fix = ('bind the extra parameters first, e.g. Fn(name, lambda x: f(x, '
         'k=2)) or Fn(name, functools.partial(f, k=2))')
  # Checked in Trax's order: defaults, then **kwargs, then *args.
  with_default = [p.name for p in positional if p.default is not p.empty]
  if with_default:
    raise ValueError(
        f'Fn {name}: function has default arguments (not allowed): '
        f'{", ".join(with_default)} in {diag.describe(f)}. Fn passes '
        f'inputs positionally and counts every positional parameter as one '
        f'input, so a default arg cannot make a parameter optional; {fix}.')
  var_kw = [p.name for p in params if p.kind == p.VAR_KEYWORD]
  if var_kw:
    raise ValueError(
        f'Fn {name}: function has keyword arguments (not allowed): '
        f'**{var_kw[0]} in {diag.describe(f)}. Inputs are passed '
        f'positionally; {fix}.')
  var_pos = [p.name for p in params if p.kind == p.VAR_POSITIONAL]
  if var_pos:
    raise ValueError(
        f'Fn {name}: function has variable args (not allowed): '
        f'*{var_pos[0]} in {diag.describe(f)}. The number of inputs '
        f'must be fixed: give the function one positional parameter per input, '
        f'e.g. lambda x0, x1: ... for two inputs.')
  n_in = len(positional)
  if n_in == 1:
    forward = f
  else:
    def forward(xs):
      if not isinstance(xs, (list, tuple)) or len(xs) != n_in:
        got = len(xs) if isinstance(xs, (list, tuple)) else 1
        raise ValueError(f'Fn {name}: expected {n_in} inputs, got {got}.')
      return f(*xs)
  return PureLayer(forward, n_in=n_in, n_out=n_out, name=name)


def to_list(outputs):
  """Layer outputs as nested Python lists, for plain `==` comparisons.

  Example:
    >>> to_list((jnp.array([1, 2]), jnp.array([[3]])))
    [[1, 2], [[3]]]

  Args:
    outputs: one array, or a tuple/list of arrays (a layer's outputs).

  Returns:
    `outputs.tolist()`, or a list with that for each array.
  """
  if isinstance(outputs, (list, tuple)):
    return [onp.asarray(y).tolist() for y in outputs]
  return onp.asarray(outputs).tolist()

