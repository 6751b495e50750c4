"""Type checks of hyperparameters, with a message that shows the fix.

A gin config passes whatever it says: `Adam.b1 = "high"` reaches the
constructor as the string 'high', and would fail deep inside the first
update. `check_numbers` stops it at construction, naming the component and
the parameter, what it expected and what it got, and the line a gin file
should have. It rejects only what Trax's optimizers reject too: Trax turns
every hyperparameter into `jnp.array(value)`, which takes Python and NumPy
numbers, arrays and tensors of numbers, and nested lists of them, but no
strings or None.
"""

import inspect
import numbers

import numpy as onp

__all__ = ['HyperparameterTypeError', 'is_number', 'is_integer',
           'number_error', 'check_numbers', 'check_integers', 'default_of']


class HyperparameterTypeError(TypeError):
  """A hyperparameter (or `train` argument) of the wrong type.

  Its own class so that the command line can report it as a usage error
  (a gin binding of the wrong type) without hiding other TypeErrors.
  """


def is_number(value):
  """Whether `jnp.array(value)` would hold numbers (or bools)."""
  if value is None or isinstance(value, (str, bytes)):
    return False
  if isinstance(value, numbers.Number):  # Python and NumPy scalars.
    return True
  dtype = getattr(value, 'dtype', None)
  if dtype is not None:  # NumPy arrays, tensors (tf.DType converts).
    try:
      dtype = onp.dtype(getattr(dtype, 'as_numpy_dtype', dtype))
    except TypeError:
      return False
    return dtype.kind in 'biufc'
  if isinstance(value, (list, tuple)):
    return bool(value) and all(is_number(v) for v in value)
  return False


def is_integer(value):
  """Whether `value` is a whole number: an int, a NumPy int, or 1e3."""
  if isinstance(value, numbers.Integral):
    return True
  # `train.steps = 1e5` is a float in gin, and Trax's loops take it.
  return isinstance(value, numbers.Real) and float(value).is_integer()


def default_of(component_class, param):
  """The default of `param` in `component_class`'s signature, or None."""
  try:
    parameter = inspect.signature(component_class).parameters.get(param)
  except (TypeError, ValueError):
    return None
  if parameter is None or parameter.default is inspect.Parameter.empty:
    return None
  return parameter.default


def number_error(component, param, value, expected='a number', example=None):
  """The message for a hyperparameter of the wrong type.

  Args:
    component: the optimizer's (or function's) name, as gin binds it.
    param: the parameter's name.
    value: what it got.
    expected: what it must be, e.g. 'a number' or 'an integer'.
    example: a good value, for the gin line shown (None: no line).

  Returns:
    e.g. "Adam: b1 must be a number, got 'high' (str); in a gin file write
    Adam.b1 = 0.9 (a number, not in quotes)."
  """
  text = (f'{component}: {param} must be {expected}, got {value!r} '
          f'({type(value).__name__})')
  if example is not None:
    text += (f'; in a gin file write {component}.{param} = {example!r} '
             f'(no quotes around a number)')
  return text + '.'


def _check(component, params, optional, test, kind):
  for param, value in params.items():
    if value is None and param in optional:
      continue
    if not test(value):
      expected = kind + (' or None' if param in optional else '')
      example = default_of(component, param)
      raise HyperparameterTypeError(number_error(
          component.__name__, param, value, expected,
          example if test(example) else None))


def check_numbers(component_class, params, optional=()):
  """Raises HyperparameterTypeError for a value that is not a number.

  Args:
    component_class: the class (or function) the values were given to; its
      name and signature defaults go into the message.
    params: `{name: value}`.
    optional: names whose value may also be None.
  """
  _check(component_class, params, optional, is_number, 'a number')


def check_integers(function, params, optional=(), lists=()):
  """Raises HyperparameterTypeError for a value that is not a whole number.

  Args:
    function: the function the values were given to (e.g. `train`); its
      name and signature defaults go into the message.
    params: `{name: value}`.
    optional: names whose value may also be None.
    lists: names whose value is a collection of whole numbers (Trax's
      `checkpoints_at`), checked item by item.
  """
  for param, value in params.items():
    if value is None and param in optional:
      continue
    if param not in lists:
      _check(function, {param: value}, optional, is_integer,
             'a whole number')
      continue
    expected = 'a list of whole numbers' + (
        ' or None' if param in optional else '')
    if isinstance(value, (str, bytes)) or not hasattr(value, '__iter__'):
      raise HyperparameterTypeError(number_error(
          function.__name__, param, value, expected, [100, 200]))
    bad = [v for v in value if not is_integer(v)]
    if bad:
      raise HyperparameterTypeError(
          f'{number_error(function.__name__, param, value, expected)[:-1]}'
          f', and {bad[0]!r} is not one.')
