"""Structural keys: equal for layers that compute the same function.

Two layers with equal keys give equal outputs for equal inputs, weights,
state and rng: they are of the same class, with equal hyperparameters
(plain Python values, recursively through containers, sublayers, partial
applications and the code and closed-over values of functions) and
structurally equal sublayers. What differs between otherwise identical
layers is left out: weights, state, rng keys, seeds, and where the layer was
created. A helper object held by a layer can list the attributes that
describe it in a `STRUCTURAL_ATTRS` class attribute. Anything else the key
cannot describe by value (an array, an arbitrary object) is described by its
identity, so layers holding different such
objects never share a key: sharing is only lost, never wrong.

`ReversibleSerial` uses these keys to trace one function per distinct
block of a deep stack and call it per block (see
`fastmath.shared_functions`).
"""

import functools
import types

__all__ = ['structural_key']

# Per-instance attributes of `base.Layer` that do not change what it computes.
_IGNORED = frozenset([
    '_weights', '_state', '_rng', '_rng_seed_int', '_caller',
    '_signature_cache', '_init_cached', '_initialized',
    # Where `_per_call.PerCallSlot` keeps weights, state and rng.
    '_shared_weights', '_shared_state', '_shared_rng',
])

_PLAIN = (bool, int, float, complex, str, bytes, type(None), type(Ellipsis))


def structural_key(layer):
  """A hashable key of `layer`'s class, hyperparameters and sublayers."""
  return _key(layer, set())


def _key(obj, active):
  if isinstance(obj, _PLAIN):
    return (type(obj), obj)
  if id(obj) in active:  # A cycle (e.g. a closure over its own layer).
    return ('cycle', id(obj))
  active.add(id(obj))
  try:
    return _compound_key(obj, active)
  finally:
    active.discard(id(obj))


def _compound_key(obj, active):
  from tfnp_trax.layers import base  # pylint: disable=g-import-not-at-top
  if isinstance(obj, base.Layer):
    attrs = tuple((name, _key(value, active))
                  for name, value in sorted(vars(obj).items())
                  if name not in _IGNORED)
    return ('layer', type(obj), attrs)
  if isinstance(obj, (list, tuple)):
    return (type(obj), tuple(_key(x, active) for x in obj))
  if isinstance(obj, (set, frozenset)):
    return (type(obj), frozenset(_key(x, active) for x in obj))
  if isinstance(obj, dict):
    items = [(_key(k, active), _key(v, active)) for k, v in obj.items()]
    return ('dict', tuple(sorted(items, key=repr)))
  if isinstance(obj, functools.partial):
    return ('partial', _key(obj.func, active), _key(obj.args, active),
            _key(obj.keywords, active))
  if isinstance(obj, types.FunctionType):
    cells = tuple(_cell_key(c, active) for c in obj.__closure__ or ())
    return ('function', obj.__code__, _key(obj.__defaults__, active),
            _key(obj.__kwdefaults__, active), cells)
  if isinstance(obj, types.MethodType):
    return ('method', _key(obj.__func__, active), _key(obj.__self__, active))
  if isinstance(obj, (type, types.BuiltinFunctionType, types.ModuleType)):
    return ('named', obj)  # Module-level objects: the same for every layer.
  described = getattr(type(obj), 'STRUCTURAL_ATTRS', None)
  if described is not None:  # A helper object naming what it computes by.
    return ('described', type(obj),
            tuple((a, _key(getattr(obj, a), active)) for a in described))
  return ('object', id(obj))


def _cell_key(cell, active):
  try:
    contents = cell.cell_contents
  except ValueError:  # An empty cell (a name not yet bound).
    return ('empty',)
  return _key(contents, active)
