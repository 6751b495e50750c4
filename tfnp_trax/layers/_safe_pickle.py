"""Reads Trax's pickled weight files without running code from them.

A pickle names the functions and classes it needs by `module.name` and calls
them while loading, so an ordinary `pickle.load` of a downloaded file can run
anything (`os.system` included). `load` resolves every such name through an
allow-list, before anything the file names is called, and refuses the rest
with `UnsafePickleError` naming the `module.name` it found.

What is allowed is what real Trax 1.4 files hold (checked on files written by
Trax 1.4.1 with JAX 0.4.30): NumPy arrays, dtypes and scalars; JAX arrays,
read as NumPy arrays; bfloat16 (ml_dtypes); Python containers and
`collections.defaultdict(list)` (Trax's History); and Trax's own records,
`trax.shapes.ShapeDtype` and `trax.supervised.history.History`, which become
a `tfnp_trax.shapes.ShapeDtype` and a plain `{'_values': ...}` dict (what
Trax's `History.to_dict` gives) respectively.

Writing goes the other way: `dump` stores our `ShapeDtype` under Trax's name,
so Trax itself can read files that tfnp_trax wrote.
"""

import _compat_pickle
import codecs
import collections
import io
import pickle
import struct
import types

import numpy as onp

from tfnp_trax import shapes
from tfnp_trax.fastmath import numpy as jnp

__all__ = ['WeightFileError', 'UnsafePickleError', 'load', 'dump']

_TRAX_SHAPE_DTYPE = ('trax.shapes', 'ShapeDtype')
_TRAX_HISTORY = ('trax.supervised.history', 'History')


class WeightFileError(ValueError):
  """A weight file is unreadable or does not fit the layer loading it.

  Defined here, below `weight_files` (which exports it), so that a refused
  pickle is one too: a caller that catches WeightFileError catches every
  file that cannot be loaded, whatever the reason.
  """


class UnsafePickleError(pickle.UnpicklingError, WeightFileError):
  """A pickle names a function or class that the safe loader does not allow."""


class _Record:
  """Stands in for a Trax object while loading; holds only its pickled state.

  Trax's classes are not importable here (and must not be imported even if
  they were), so the loader builds this inert record, which takes its state
  as data and runs nothing, and `load` converts it afterwards.
  """
  kind = None
  state = None
  args = ()

  def __init__(self, *args):
    # Called only when a pickle builds the record by calling the class
    # (REDUCE, as `dump` writes ShapeDtype(shape, dtype)); plain data.
    self.args = args

  def __setstate__(self, state):
    self.state = state


class _ShapeDtypeRecord(_Record):
  kind = 'ShapeDtype'


class _HistoryRecord(_Record):
  kind = 'History'


def _reconstruct_jax_array(fun, args, arr_state, aval_state):
  """JAX's `_reconstruct_array`, stopping at the NumPy array it wraps."""
  del aval_state  # Weak typing and named shapes mean nothing to NumPy.
  if fun not in _NUMPY_RECONSTRUCTORS:
    raise UnsafePickleError(
        f'jax._src.array._reconstruct_array: expected NumPy\'s array '
        f'reconstructor, got {fun!r}.')
  value = fun(*args)
  value.__setstate__(arr_state)
  return value


def _defaultdict(default_factory=None, *args):
  # Called later on a missing key, so only plain container factories pass.
  if default_factory not in (None, list, dict, tuple, set):
    raise UnsafePickleError(
        f'collections.defaultdict: default_factory {default_factory!r} is '
        f'not allowed (only list, dict, tuple, set).')
  return collections.defaultdict(default_factory, *args)


def _codecs_encode(text, encoding='utf-8'):
  # Protocol 2 stores bytes as _codecs.encode(text, 'latin1'). Other codec
  # names are refused: looking one up imports a module by that name.
  if encoding not in ('latin1', 'latin-1', 'utf-8', 'utf8', 'ascii'):
    raise UnsafePickleError(
        f'_codecs.encode: encoding {encoding!r} is not allowed (pickles '
        f'store bytes as latin1).')
  return codecs.encode(text, encoding)


def _numpy_module_names(suffix):
  return [f'numpy.core.{suffix}', f'numpy._core.{suffix}']


# NumPy's own array reconstructor, taken from NumPy rather than named.
_NUMPY_RECONSTRUCTORS = (onp.zeros(()).__reduce__()[0],)
_SCALAR_TYPES = (
    'bool_', 'int8', 'int16', 'int32', 'int64', 'uint8', 'uint16', 'uint32',
    'uint64', 'float16', 'float32', 'float64', 'longdouble', 'complex64',
    'complex128', 'clongdouble', 'intc', 'uintc', 'longlong', 'ulonglong',
    'str_', 'bytes_', 'void')


def _allowed():
  """The allow-list: `(module, name)` -> the object a pickle may use."""
  table = {
      ('numpy', 'ndarray'): onp.ndarray,
      ('numpy', 'dtype'): onp.dtype,
      ('builtins', 'list'): list,
      ('builtins', 'tuple'): tuple,
      ('builtins', 'dict'): dict,
      ('builtins', 'set'): set,
      ('builtins', 'frozenset'): frozenset,
      ('builtins', 'bytearray'): bytearray,
      ('builtins', 'complex'): complex,
      ('collections', 'OrderedDict'): collections.OrderedDict,
      ('collections', 'defaultdict'): _defaultdict,
      ('_codecs', 'encode'): _codecs_encode,
      ('jax._src.array', '_reconstruct_array'): _reconstruct_jax_array,
      _TRAX_SHAPE_DTYPE: _ShapeDtypeRecord,
      _TRAX_HISTORY: _HistoryRecord,
  }
  for name in _SCALAR_TYPES:
    if hasattr(onp, name):
      table[('numpy', name)] = getattr(onp, name)
  for module in _numpy_module_names('multiarray'):
    table[(module, '_reconstruct')] = _NUMPY_RECONSTRUCTORS[0]
    table[(module, 'scalar')] = _numpy_scalar()
  for module in _numpy_module_names('numeric'):
    table[(module, '_frombuffer')] = _numpy_frombuffer()
  # bfloat16 is ml_dtypes' type (JAX's and TensorFlow's alike); older
  # ml_dtypes releases kept it in private submodules.
  bfloat16 = onp.dtype(jnp.bfloat16).type
  for module in ('ml_dtypes', 'ml_dtypes._custom_floats',
                 'ml_dtypes._ml_dtypes_ext', 'jax.numpy', 'jax._src.dtypes'):
    table[(module, 'bfloat16')] = bfloat16
  return table


def _numpy_scalar():
  # NumPy pickles scalars as `multiarray.scalar(dtype, bytes)`; take that
  # function from NumPy itself rather than naming a private module here.
  return onp.float32(0).__reduce__()[0]


def _numpy_frombuffer():
  # NumPy (>= 1.16) pickles arrays under protocol 5 with `_frombuffer`.
  return onp.zeros(2).__reduce_ex__(5)[0]


_ALLOWED = _allowed()


class _SafeUnpickler(pickle._Unpickler):  # pylint: disable=protected-access
  """An Unpickler whose globals come only from the allow-list.

  The Python implementation, not the C one, because BUILD must be
  intercepted too: NumPy pickles a dtype as `numpy.dtype(type)` plus a
  `__setstate__`, and for ml_dtypes' bfloat16 `numpy.dtype(...)` hands back
  the process-wide bfloat16 dtype itself, so applying the state (flags from
  whichever NumPy wrote the file) changes that shared object and its hash,
  breaking every table keyed by bfloat16 afterwards. Plain `pickle.load`
  of Trax's bf16 files does exactly that.
  """

  dispatch = dict(pickle._Unpickler.dispatch)  # pylint: disable=protected-access

  def __init__(self, file, source, max_bytes=None):
    super().__init__(file)
    self._source = source
    self._max_bytes = max_bytes

  def load_bytearray8(self):
    # The base class allocates the length it reads before reading the
    # bytes: a corrupt length would ask for exabytes (MemoryError). A
    # bytearray cannot be longer than the pickle holding it.
    length, = struct.unpack('<Q', self.read(8))
    if self._max_bytes is not None and length > self._max_bytes:
      raise pickle.UnpicklingError(
          f'BYTEARRAY8 of {length} bytes in a pickle of {self._max_bytes}: '
          f'pickle data was truncated or is corrupt')
    self.stack.append(bytearray(length))
    self.readinto(self.stack[-1])

  dispatch[pickle.BYTEARRAY8[0]] = load_bytearray8

  # The base class raises a bare KeyError for a byte that is no opcode (a
  # corrupt or foreign file); these say what it is instead.
  for _code in set(range(256)) - set(dispatch):
    dispatch[_code] = lambda self, code=_code: _invalid_opcode(code)
  del _code

  def load_build(self):
    inst = self.stack[-2]
    if isinstance(inst, onp.dtype) and inst is onp.dtype(inst.type):
      self.stack.pop()  # A shared dtype: keep it as NumPy registered it.
      return
    super().load_build()

  dispatch[pickle.BUILD[0]] = load_build

  def find_class(self, module, name):
    # Protocols 0-2 may use Python 2 names (__builtin__.list); map them as
    # the default find_class would, then look up the Python 3 name.
    if (module, name) in _compat_pickle.NAME_MAPPING:
      module, name = _compat_pickle.NAME_MAPPING[(module, name)]
    module = _compat_pickle.IMPORT_MAPPING.get(module, module)
    found = _ALLOWED.get((module, name))
    if found is None:
      raise UnsafePickleError(
          f'{self._source}: refusing to load {module}.{name}: the file asks '
          f'to call or build it, and weight files may only hold NumPy/JAX '
          f'arrays, dtypes, Python containers and Trax ShapeDtype/History '
          f'records. Load only files you trust, and re-save them with Trax '
          f'as plain weights if they came from elsewhere.')
    return found

  def persistent_load(self, pid):
    raise UnsafePickleError(
        f'{self._source}: refusing persistent id {pid!r}; Trax weight files '
        f'have none.')


def _invalid_opcode(code):
  raise pickle.UnpicklingError(
      f'invalid load key {bytes([code])!r}: no pickle opcode; the data is '
      f'corrupt or not a pickle')


def _convert(obj):
  """Replaces Trax records by ours and defaultdicts by dicts, recursively."""
  if isinstance(obj, _Record):
    state = obj.state
    if isinstance(state, tuple) and len(state) == 2:  # (dict, slots) form.
      state = {**(state[0] or {}), **(state[1] or {})}
    state = _convert(state or {})
    if obj.kind == 'ShapeDtype':
      if obj.args:
        return shapes.ShapeDtype(*_convert(obj.args))
      return shapes.ShapeDtype(state['shape'], state['dtype'])
    return {'_values': state.get('_values', {})}
  if isinstance(obj, dict):
    return {k: _convert(v) for k, v in obj.items()}
  if isinstance(obj, list):
    return [_convert(v) for v in obj]
  if isinstance(obj, tuple) and not hasattr(obj, '_fields'):
    return tuple(_convert(v) for v in obj)
  return obj


def load(file_obj, source='<pickle>', max_bytes=None):
  """Unpickles `file_obj` through the allow-list and converts Trax records.

  Args:
    file_obj: a binary file object positioned at a pickle.
    source: how to name the file in errors (usually its path).
    max_bytes: the pickle's size if known; a length field beyond it is
      refused (as truncated or corrupt) before anything is allocated.

  Returns:
    The unpickled object, with Trax's ShapeDtype as ours and Trax's History
    as a `{'_values': {mode: {metric: [(step, value), ...]}}}` dict.

  Raises:
    UnsafePickleError: if the pickle names anything outside the allow-list;
      nothing it names has run by then.
  """
  return _convert(_SafeUnpickler(file_obj, source, max_bytes).load())


class _TraxNamePickler(pickle._Pickler):  # pylint: disable=protected-access
  """Pickles under the names Trax 1.4's environment can import.

  Two renames: our ShapeDtype is written as `trax.shapes.ShapeDtype`, and
  NumPy 2's `numpy._core.*` functions as `numpy.core.*`, the names NumPy 1.x
  (Trax 1.4's) has and NumPy 2 still reads. The C pickler checks that every
  name it writes imports here, which `trax.shapes` does not; the Python
  pickler lets `save_global` write the names directly.
  """

  def save_global(self, obj, name=None):
    if obj is _TraxShapeDtypeStub:
      module, name = _TRAX_SHAPE_DTYPE
    else:
      name = name or getattr(obj, '__qualname__', None) or obj.__name__
      module = pickle.whichmodule(obj, name)
      if not module.startswith('numpy._core.'):
        super().save_global(obj, name)
        return
      module = 'numpy.core.' + module[len('numpy._core.'):]
    self.save(module)
    self.save(name)
    self.write(pickle.STACK_GLOBAL)
    self.memoize(obj)

  # The base class's dispatch table holds its own save_global for Python
  # functions (NumPy's `_frombuffer` is one); point it at ours.
  dispatch = dict(pickle._Pickler.dispatch)  # pylint: disable=protected-access
  dispatch[types.FunctionType] = save_global


class _TraxShapeDtypeStub:
  """Written in place of our ShapeDtype; exists only to be named."""


def _reduce_shape_dtype(sig):
  # Rebuilt by calling ShapeDtype(shape, dtype) when read, in Trax or here.
  return (_TraxShapeDtypeStub, (sig.shape, sig.dtype))


def _reduce_bfloat16_dtype(dtype):
  # Without NumPy's dtype state, which a reader would apply to its own
  # shared bfloat16 dtype (see _SafeUnpickler); NumPy 2's flags break
  # JAX's bfloat16 under Trax's NumPy 1.
  return (onp.dtype, (dtype.type,))


def dump(obj, file_obj):
  """Pickles `obj` as Trax does (highest protocol), ShapeDtypes as Trax's."""
  pickler = _TraxNamePickler(file_obj, protocol=pickle.HIGHEST_PROTOCOL)
  pickler.dispatch_table = {
      shapes.ShapeDtype: _reduce_shape_dtype,
      type(onp.dtype(jnp.bfloat16)): _reduce_bfloat16_dtype,
  }
  pickler.dump(obj)


def dumps(obj):
  buffer = io.BytesIO()
  dump(obj, buffer)
  return buffer.getvalue()
