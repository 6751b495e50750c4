"""Combinators: layers built from other layers, wired by the data stack."""

from tfnp_trax import _reexport
from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.fastmath import random as frandom
from tfnp_trax.layers import _stack
from tfnp_trax.layers import _layer_lists
from tfnp_trax.layers import base
from tfnp_trax.layers._stack import inputs_from_stack
from tfnp_trax.layers._stack import outputs_onto_stack

__all__ = ['Serial', 'Parallel', 'Branch', 'Residual', 'Select', 'Dup',
           'Drop', 'Swap', 'Add', 'SubtractTop', 'Multiply', 'Gate',
           'Concatenate', 'Split', 'FlattenList', 'inputs_from_stack',
           'outputs_onto_stack', 'Scan', 'Cond', 'Chunk', 'Cache',
           'BatchLeadingAxes', 'Bidirectional', 'SerialWithSideOutputs']


def _split_rngs(rng, n, layers=None):
  """`n` keys split from `rng`, one per sublayer.

  When none of `layers` draws random numbers (`uses_rng`), each gets `rng`
  itself and no split is computed: their keys are never read.
  """
  if n == 0:
    return []
  if n == 1 or (layers is not None and not any(l.uses_rng for l in layers)):
    return [rng] * n
  keys = frandom.split(rng, n)
  return [keys[i] for i in range(n)]


class Serial(base.Layer):
  """Runs sublayers one after another over the data stack.

  Example:
    >>> model = Serial(Dup(), Add())  # x -> 2x
  """

  def __init__(self, *sublayers, name=None, sublayers_to_print=None):
    layers = _layer_lists.ensure_flat(sublayers)
    # With no sublayers Serial is the identity on one input, as in Trax.
    n_in, n_out = _stack.n_inputs_n_outputs(layers) if layers else (1, 1)
    super().__init__(n_in=n_in, n_out=n_out, name=name,
                     sublayers_to_print=sublayers_to_print)
    self._sublayers = tuple(layers)

  @property
  def uses_rng(self):
    # Serial itself draws nothing; a subclass with its own forward may.
    if type(self).forward is not Serial.forward:
      return True
    return any(layer.uses_rng for layer in self._sublayers)

  def forward(self, xs):
    stack = xs
    new_state = []
    rngs = _split_rngs(self.rng, len(self._sublayers), self._sublayers)
    for layer, w, s, r in zip(self._sublayers, self.weights, self.state,
                              rngs):
      inputs = _stack.inputs_from_stack(stack, layer.n_in, layer.name)
      outputs, s = layer.pure_fn(inputs, w, s, r, use_cache=True)
      stack = _stack.outputs_onto_stack(outputs, stack, layer.n_in,
                                        layer.n_out)
      new_state.append(s)
    self.state = tuple(new_state)
    return stack

  def init_weights_and_state(self, input_signature):
    weights, states = [], []
    stack = input_signature
    for layer in self._sublayers:
      inputs = _stack.inputs_from_stack(stack, layer.n_in, layer.name)
      w, s = layer.init(inputs, use_cache=True)
      outputs, _ = layer._forward_abstract(inputs)  # pylint: disable=protected-access
      stack = _stack.outputs_onto_stack(outputs, stack, layer.n_in,
                                        layer.n_out)
      weights.append(w)
      states.append(s)
    self.state = tuple(states)
    self.weights = tuple(weights)
    # The signatures just propagated answer later output_signature calls.
    self._signature_cache = (input_signature, stack)


class Parallel(base.Layer):
  """Runs each sublayer on its own slice of the stack, side by side."""

  def __init__(self, *sublayers, name=None):
    # As in Trax, None (or []) is an empty Serial: the identity on one input.
    layers = [Serial(l) if isinstance(l, (list, tuple)) else
              (Serial() if l is None else l) for l in sublayers]
    layers = _layer_lists.ensure_flat(layers)
    super().__init__(n_in=sum(l.n_in for l in layers),
                     n_out=sum(l.n_out for l in layers), name=name)
    self._sublayers = tuple(layers)

  def _slices(self, xs):
    xs = xs if isinstance(xs, (list, tuple)) else (xs,)
    if len(xs) < self.n_in:
      raise ValueError(f'{self.name}: expects {self.n_in} inputs, got '
                       f'{len(xs)}.')
    out, start = [], 0
    for layer in self._sublayers:
      part = tuple(xs[start:start + layer.n_in])
      out.append(part[0] if layer.n_in == 1 else part)
      start += layer.n_in
    return out

  @property
  def uses_rng(self):
    # Parallel itself draws nothing; a subclass with its own forward may.
    if type(self).forward is not Parallel.forward:
      return True
    return any(layer.uses_rng for layer in self._sublayers)

  def forward(self, xs):
    outputs, new_state = [], []
    rngs = _split_rngs(self.rng, len(self._sublayers), self._sublayers)
    for layer, x, w, s, r in zip(self._sublayers, self._slices(xs),
                                 self.weights, self.state, rngs):
      y, s = layer.pure_fn(x, w, s, r, use_cache=True)
      outputs.extend([y] if layer.n_out == 1 else list(y))
      new_state.append(s)
    self.state = tuple(new_state)
    return outputs[0] if len(outputs) == 1 else tuple(outputs)

  def init_weights_and_state(self, input_signature):
    ws, ss = [], []
    for layer, sig in zip(self._sublayers, self._slices(input_signature)):
      w, s = layer.init(sig, use_cache=True)
      ws.append(w)
      ss.append(s)
    self.state = tuple(ss)
    self.weights = tuple(ws)


def Branch(*layers, name='Branch'):  # pylint: disable=invalid-name
  """Runs each layer on copies of the same inputs; stacks all outputs.

  `None` (or `[]`) stands for the identity on the first input; a list of
  layers runs in series. A single layer is returned as is.

  As in Trax, the result prints its arguments as given: in
  `Branch(None, [Dense(2), Relu()])` the branches print as `None` and as the
  Python list `[Dense_2, Relu]`.
  """
  if len(layers) == 1:
    layer = layers[0]
    if layer is None:
      return Serial()
    return Serial(layer) if isinstance(layer, (list, tuple)) else layer
  parallel_layer = Parallel(*layers)
  indices = [i for layer in parallel_layer.sublayers
             for i in range(layer.n_in)]
  return Serial(Select(indices), parallel_layer, name=name,
                sublayers_to_print=layers)


def Residual(*layers, shortcut=None):  # pylint: disable=invalid-name
  """Adds the output of `layers` to `shortcut` (identity by default).

  Built as Trax builds it, an unnamed `Serial(Branch(shortcut, body), Add())`,
  so it prints as `Serial[...]`.
  """
  layers = _layer_lists.ensure_flat(layers)
  body = layers[0] if len(layers) == 1 else Serial(*layers)
  return Serial(Branch(shortcut, body), Add())


def Select(indices, n_in=None, name=None):  # pylint: disable=invalid-name
  """Copies stack items at `indices` to the top, consuming `n_in` items.

  Example: `Select([0, 0, 1])` turns `(a, b)` into `(a, a, b)`.
  """
  # Named from the indices as given, as in Trax: a tuple prints as (0,1).
  name = name or f'Select{indices}'.replace(' ', '')
  indices = list(indices)
  n_in = n_in if n_in is not None else (max(indices) + 1 if indices else 0)
  if indices and max(indices) >= n_in:
    raise ValueError(f'Select: index {max(indices)} is out of range for '
                     f'n_in={n_in}.')

  def select(xs):
    xs = xs if isinstance(xs, (list, tuple)) and n_in != 1 else (xs,)
    out = tuple(xs[i] for i in indices)
    return out[0] if len(out) == 1 else out
  return base.PureLayer(select, n_in=n_in, n_out=len(indices), name=name)


def Dup():  # pylint: disable=invalid-name
  """Duplicates the top of the stack."""
  return base.PureLayer(lambda x: (x, x), n_in=1, n_out=2, name='Dup')


def Drop():  # pylint: disable=invalid-name
  """Removes the top of the stack."""
  return base.PureLayer(lambda x: (), n_in=1, n_out=0, name='Drop')


def Swap():  # pylint: disable=invalid-name
  """Swaps the two top stack items."""
  return base.Fn('Swap', lambda x0, x1: (x1, x0), n_out=2)


def _broadcastable(name, x0, x1):
  s0 = tuple(getattr(x0, 'shape', ()))
  s1 = tuple(getattr(x1, 'shape', ()))
  for d0, d1 in zip(reversed(s0), reversed(s1)):
    if d0 is not None and d1 is not None and 1 not in (d0, d1) and d0 != d1:
      raise ValueError(f'{name}: input shapes {s0} and {s1} do not '
                       f'broadcast together (NumPy rules: trailing axes must '
                       f'be equal or 1). Reshape one input first.')


def _binary(name, op):
  def f(x0, x1):
    _broadcastable(name, x0, x1)
    return op(x0, x1)
  return base.Fn(name, f)


def Add():  # pylint: disable=invalid-name
  """Adds the two top stack items (NumPy broadcasting applies)."""
  return _binary('Add', lambda a, b: a + b)


def SubtractTop():  # pylint: disable=invalid-name
  """Subtracts the top item from the one below it: `x1 - x0`, as in Trax."""
  return _binary('SubtractTop', lambda x0, x1: x1 - x0)


def Multiply():  # pylint: disable=invalid-name
  """Multiplies the two top stack items element-wise (broadcasting)."""
  return _binary('Multiply', lambda a, b: a * b)


def Gate():  # pylint: disable=invalid-name
  """Blends `(memory, gate, candidate)`: `g * memory + (1 - g) * candidate`.

  The input order is Trax's: the gate is the second stack item.
  """
  # ones_like, not 1.0: a Python float is a float32 here and would promote
  # bfloat16 inputs to float32.
  return base.Fn('Gate', lambda memory, gate, candidate: (
      gate * memory + (jnp.ones_like(gate) - gate) * candidate))


def Concatenate(n_items=2, axis=-1):  # pylint: disable=invalid-name
  """Concatenates the top `n_items` stack items along `axis`.

  As in Trax, the name records a non-default axis: `Concatenate(axis=0)`
  prints as `Concatenate_axis0_in2`.
  """
  if n_items < 2:
    raise ValueError(f'Concatenate: n_items must be at least 2, got '
                     f'{n_items}.')
  name = 'Concatenate' if axis == -1 else f'Concatenate_axis{axis}'

  def concat(xs):
    xs = [jnp.asarray(x) for x in xs]
    _check_concatenable(name, xs, axis)
    return jnp.concatenate(xs, axis=axis)
  return base.PureLayer(concat, n_in=n_items, n_out=1, name=name)


def _check_concatenable(name, xs, axis):
  """Raises a ValueError naming both shapes unless `xs` can be joined."""
  dims = [tuple(x.shape) if x.shape.rank is not None else None for x in xs]
  first = dims[0]
  for i, d in enumerate(dims[1:], 1):
    if first is None or d is None:
      continue
    if len(d) != len(first):
      raise ValueError(f'{name}: input {i} has shape {d} but input 0 has '
                       f'shape {first}; all inputs need the same rank.')
    ax = axis % len(first) if first else 0
    for k, (a, b) in enumerate(zip(first, d)):
      if k != ax and a is not None and b is not None and a != b:
        raise ValueError(
            f'{name}: input shapes {first} and {d} differ on axis {k}; they '
            f'may differ only on the concatenation axis {axis}.')


def Split(n_items=2, axis=-1):  # pylint: disable=invalid-name
  """Splits the top item into `n_items` equal parts along `axis`."""
  def split(x):
    size = x.shape[axis]
    if size % n_items:
      raise ValueError(f'Split: axis {axis} has size {size}, which does not '
                       f'divide into {n_items} equal parts.')
    return tuple(jnp.split(x, n_items, axis=axis))
  return base.PureLayer(split, n_in=1, n_out=n_items, name='Split')


def FlattenList():  # pylint: disable=invalid-name
  """Flattens a nested list/tuple on top of the stack into one tuple item."""
  def flatten(x):
    def walk(y):
      if isinstance(y, (list, tuple)):
        return [z for item in y for z in walk(item)]
      return [y]
    return tuple(walk(x))
  return base.PureLayer(flatten, n_in=1, n_out=1, name='FlattenList')


# Trax defines these in its combinators module; here they live in flow.py,
# which is built from this module, so they keep Trax's path as declared
# aliases (see tfnp_trax/_reexport.py) instead of a circular import.
__getattr__, __dir__ = _reexport.lazy_reexports(globals(), {
    'Scan': 'tfnp_trax.layers.flow',
    'Cond': 'tfnp_trax.layers.flow',
    'Chunk': 'tfnp_trax.layers.flow',
    'Cache': 'tfnp_trax.layers.flow',
    'BatchLeadingAxes': 'tfnp_trax.layers.flow',
    'Bidirectional': 'tfnp_trax.layers.flow',
    'SerialWithSideOutputs': 'tfnp_trax.layers.flow',
})
