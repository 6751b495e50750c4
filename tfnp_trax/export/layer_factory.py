"""LayerFactory: a layer constructor plus arguments, serializable as JSON.

A built layer does not remember the arguments it was made with, so a saved
Keras model that wraps it (see `AsKeras`) records how to build it again:
the constructor's import path and its keyword arguments. Arguments may be
JSON values (numbers, strings, bools, None, lists, dicts with string keys),
tuples, and constructors (functions or classes, e.g. `tl.Relu`); instances
such as initializer closures cannot be recorded.

Only constructors inside the `tfnp_trax` package, or ones registered with
`register_layer_constructor`, are rebuilt when loading: a config file cannot
make the loader import and call arbitrary code.
"""

import importlib

__all__ = ['LayerFactory', 'register_layer_constructor']

_REGISTERED = {}
_TRUSTED_PREFIX = 'tfnp_trax.'


def _path(fn):
  """The name configs record for `fn`: its registered name, or its path."""
  for name, registered in _REGISTERED.items():
    if registered is fn:
      return name
  return f'{fn.__module__}.{fn.__qualname__}'


def register_layer_constructor(fn=None, name=None):
  """Lets LayerFactory configs name `fn` (usable as a decorator).

  Example:
    >>> @register_layer_constructor
    ... def TinyModel(width=4):
    ...   return tl.Serial(tl.Dense(width), tl.Relu())
    >>> LayerFactory(TinyModel, width=2)().name
    'Serial'

  Args:
    fn: a function or class returning a tfnp_trax layer.
    name: the name recorded in configs; `module.qualname` by default.

  Returns:
    `fn`.
  """
  if fn is None:
    return lambda f: register_layer_constructor(f, name)
  _REGISTERED[name or f'{fn.__module__}.{fn.__qualname__}'] = fn
  return fn


def _resolve(path, what):
  if path in _REGISTERED:
    return _REGISTERED[path]
  if not path.startswith(_TRUSTED_PREFIX):
    raise ValueError(
        f'LayerFactory: {what} {path!r} is neither inside tfnp_trax nor '
        f'registered. Decorate it with '
        f'@tfnp_trax.export.register_layer_constructor and import its module '
        f'before loading.')
  module_name, _, qualname = path.rpartition('.')
  while module_name:
    try:
      obj = importlib.import_module(module_name)
      break
    except ImportError:
      module_name, _, head = module_name.rpartition('.')
      qualname = f'{head}.{qualname}'
  else:
    raise ValueError(f'LayerFactory: cannot import {what} {path!r}.')
  for part in qualname.split('.'):
    obj = getattr(obj, part)
  return obj


def _encode(value, where):
  if value is None or isinstance(value, (bool, int, float, str)):
    return value
  if isinstance(value, tuple):
    return {'__tuple__': [_encode(v, where) for v in value]}
  if isinstance(value, list):
    return [_encode(v, where) for v in value]
  if isinstance(value, dict) and all(isinstance(k, str) for k in value):
    return {k: _encode(v, where) for k, v in value.items()}
  if callable(value) and hasattr(value, '__qualname__') and (
      '<' not in value.__qualname__):
    path = _path(value)
    _resolve(path, 'argument')  # Fail now, not when loading.
    return {'__callable__': path}
  raise TypeError(
      f'LayerFactory: argument {where} = {value!r} (type '
      f'{type(value).__name__}) cannot be recorded. Use JSON values, tuples '
      f'or named constructors (functions or classes, not instances); '
      f'otherwise register a constructor that builds it.')


def _decode(value):
  if isinstance(value, list):
    return [_decode(v) for v in value]
  if isinstance(value, dict):
    if set(value) == {'__tuple__'}:
      return tuple(_decode(v) for v in value['__tuple__'])
    if set(value) == {'__callable__'}:
      return _resolve(value['__callable__'], 'argument')
    return {k: _decode(v) for k, v in value.items()}
  return value


class LayerFactory:
  """Builds a layer from a recorded constructor and keyword arguments.

  Example:
    >>> factory = LayerFactory(models.MLP, layer_widths=(8, 3))
    >>> factory.get_config()['constructor']
    'tfnp_trax.models.mlp.MLP'
    >>> LayerFactory.from_config(factory.get_config())().name  # As in Trax.
    'Serial'
  """

  def __init__(self, constructor, **kwargs):
    """Records `constructor(**kwargs)`; raises TypeError if unrecordable."""
    if not callable(constructor):
      raise TypeError(f'LayerFactory: constructor must be callable, got '
                      f'{constructor!r}.')
    self._constructor = constructor
    self._kwargs = dict(kwargs)
    self._config = {
        'constructor': _path(constructor),
        'kwargs': {k: _encode(v, k) for k, v in kwargs.items()}}
    _resolve(self._config['constructor'], 'constructor')

  def __call__(self):
    """A new layer, freshly constructed (not initialized)."""
    return self._constructor(**self._kwargs)

  def get_config(self):
    return {'constructor': self._config['constructor'],
            'kwargs': dict(self._config['kwargs'])}

  @classmethod
  def from_config(cls, config):
    constructor = _resolve(config['constructor'], 'constructor')
    return cls(constructor, **{k: _decode(v)
                               for k, v in config['kwargs'].items()})
