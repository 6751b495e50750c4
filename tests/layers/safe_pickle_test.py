"""The restricted unpickler: what it refuses (before running it) and allows."""

import collections
import io
import os
import pickle

import numpy as np
import pytest

from tfnp_trax import shapes
from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.layers import _safe_pickle

_BF16 = np.dtype(jnp.bfloat16)


def _load(data):
  return _safe_pickle.load(io.BytesIO(data), 'test.pkl')


class _RunsCommand:
  """Pickles as a call to os.system: what a malicious weight file holds."""

  def __init__(self, command):
    self.command = command

  def __reduce__(self):
    return (os.system, (self.command,))


# Stand-ins for Trax's classes, pickled here and renamed to Trax's names in
# the bytes (protocol 2 names globals as plain 'c<module>\n<name>\n' text).
class ShapeDtype:
  __slots__ = ['shape', 'dtype']

  def __init__(self, shape, dtype):
    self.shape = shape
    self.dtype = dtype


class History:

  def __init__(self, values):
    self._values = values


def _as_trax(obj, trax_module):
  data = pickle.dumps(obj, protocol=2)
  ours = f'c{__name__}\n{type(obj).__name__}\n'.encode()
  assert ours in data
  return data.replace(ours, f'c{trax_module}\n{type(obj).__name__}\n'.encode())


def test_refuses_os_system_before_running_it(tmp_path):
  marker = tmp_path / 'pwned'
  data = pickle.dumps(_RunsCommand(f'touch {marker}'))
  name = f'{os.system.__module__}.system'  # posix.system on Linux.
  with pytest.raises(_safe_pickle.UnsafePickleError,
                     match=rf'test\.pkl: refusing to load {name}'):
    _load(data)
  assert not marker.exists()
  # The same pickle through plain pickle would have run it (so the test
  # above checks something real).
  pickle.loads(data)
  assert marker.exists()


def test_refuses_handwritten_os_system_global(tmp_path):
  marker = tmp_path / 'pwned'
  data = f"cos\nsystem\n(Vtouch {marker}\ntR.".encode()
  with pytest.raises(_safe_pickle.UnsafePickleError, match=r'os\.system'):
    _load(data)
  assert not marker.exists()


@pytest.mark.parametrize('module,name', [
    ('builtins', 'eval'), ('builtins', 'getattr'), ('builtins', '__import__'),
    ('subprocess', 'Popen'), ('numpy', 'load'), ('numpy.testing', 'assert_'),
    ('trax.layers', 'Dense'), ('jax.numpy', 'array')])
def test_refuses_everything_off_the_list(module, name):
  data = f'c{module}\n{name}\n.'.encode()
  with pytest.raises(_safe_pickle.UnsafePickleError,
                     match=rf'refusing to load {module}\.{name}'):
    _load(data)


def test_refuses_defaultdict_with_a_callable_factory():
  data = pickle.dumps(collections.defaultdict(np.ndarray), protocol=2)
  with pytest.raises(_safe_pickle.UnsafePickleError,
                     match='default_factory .*ndarray.* is not allowed'):
    _load(data)


def test_refuses_codecs_other_than_the_byte_ones():
  data = b'c_codecs\nencode\n(Vabc\nVrot13\ntR.'
  with pytest.raises(_safe_pickle.UnsafePickleError,
                     match="encoding 'rot13' is not allowed"):
    _load(data)


def test_refuses_persistent_ids():
  class WithPid(pickle.Pickler):

    def persistent_id(self, obj):
      return 'x' if obj == 'secret' else None

  buffer = io.BytesIO()
  WithPid(buffer).dump(['secret'])
  with pytest.raises(_safe_pickle.UnsafePickleError, match='persistent id'):
    _load(buffer.getvalue())


@pytest.mark.parametrize('protocol', [2, 4, 5])
def test_loads_arrays_scalars_dtypes_and_containers(protocol):
  value = {
      'f32': np.arange(6, dtype=np.float32).reshape(2, 3),
      'i64': np.array([1, -2], np.int64),
      'bf16': np.array([1.5, -2.0], _BF16),
      'scalar': np.float32(0.25),
      'dtype': np.dtype('int32'),
      'type': np.float32,
      'nested': [(1, 2.5, 'a', None, True), {'k': b'bytes'}],
      'ordered': collections.OrderedDict(a=1),
      'history': collections.defaultdict(list, {'m': [(1, 0.5)]}),
      'set': {1, 2},
  }
  got = _load(pickle.dumps(value, protocol=protocol))
  assert sorted(got) == sorted(value)
  for key in ('f32', 'i64', 'bf16'):
    assert got[key].dtype == value[key].dtype
    np.testing.assert_array_equal(got[key].astype(np.float64),
                                  value[key].astype(np.float64))
  assert got['scalar'] == np.float32(0.25) and type(got['scalar']) is (
      np.float32)
  assert got['dtype'] == np.dtype('int32') and got['type'] is np.float32
  assert got['nested'] == [(1, 2.5, 'a', None, True), {'k': b'bytes'}]
  assert got['ordered'] == {'a': 1} and got['set'] == {1, 2}
  # defaultdicts come back as plain dicts (no factory left to call).
  assert got['history'] == {'m': [(1, 0.5)]}
  assert type(got['history']) is dict  # pylint: disable=unidiomatic-typecheck


def test_trax_shape_dtype_becomes_ours():
  data = _as_trax(ShapeDtype((2, 5), np.dtype('int32')), 'trax.shapes')
  assert b'ctrax.shapes\nShapeDtype\n' in data
  got = _load(data)
  assert isinstance(got, shapes.ShapeDtype)
  assert got == shapes.ShapeDtype((2, 5), np.int32)
  assert str(got) == 'ShapeDtype{shape:(2, 5), dtype:int32}'


def test_trax_history_becomes_its_to_dict():
  data = _as_trax(History({'train': {'loss': [(1, 0.5)]}}),
                  'trax.supervised.history')
  assert _load(data) == {'_values': {'train': {'loss': [(1, 0.5)]}}}


def test_dump_writes_trax_names_and_reads_back():
  sig = (shapes.ShapeDtype((8, 3)), shapes.ShapeDtype((8,), np.int32))
  data = _safe_pickle.dumps({'input_signature': sig,
                             'w': np.ones(2, np.float32)})
  # Trax's class name and NumPy 1.x's module names, so Trax 1.4 reads it.
  assert b'trax.shapes' in data and b'ShapeDtype' in data
  assert b'tfnp_trax' not in data and b'numpy._core' not in data
  got = _load(data)
  assert got['input_signature'] == sig
  np.testing.assert_array_equal(got['w'], np.ones(2, np.float32))


def test_bfloat16_dtype_is_not_changed_by_loading(tmp_path):
  # NumPy pickles a dtype with a state that, applied to ml_dtypes' shared
  # bfloat16 dtype (as plain pickle does), changes its flags and hash.
  arrays = [np.array([1.5, -2.0], _BF16)]
  # The state Trax's files carry (NumPy 1.26 / ml_dtypes 0.3 wrote flags 16
  # for bfloat16); written here by patching the flags byte of our own pickle.
  data = pickle.dumps(arrays, protocol=2)
  ours = b'K\x02K\x02K@t'  # (..., elsize 2, alignment 2, flags 64) in state.
  assert ours in data
  data = data.replace(ours, b'K\x02K\x02KPt')  # flags 80.
  bf16 = np.dtype(jnp.bfloat16)
  before = (hash(bf16), bf16.flags)
  got = _load(data)
  assert (hash(bf16), bf16.flags) == before
  assert got[0].dtype == _BF16
  np.testing.assert_array_equal(got[0].astype(np.float32), [1.5, -2.0])
  # The check above can fail: plain pickle does change the shared dtype
  # (process-wide, so it is put back at once).
  pickle.loads(data)
  changed = (hash(bf16), bf16.flags) != before
  bf16.__setstate__((3, '<', None, None, None, 2, 2, 64))
  assert changed and (hash(bf16), bf16.flags) == before


def _bfloat16_dtype_has_state(data):
  """Whether loading `data` would call __setstate__ on a bfloat16 dtype."""
  found = []

  class Recorder(pickle._Unpickler):  # pylint: disable=protected-access
    dispatch = dict(pickle._Unpickler.dispatch)  # pylint: disable=protected-access

    def load_build(self):
      if isinstance(self.stack[-2], np.dtype):
        found.append(self.stack[-2])
        self.stack.pop()  # Record only: never change the shared dtype here.
        return
      super().load_build()

    dispatch[pickle.BUILD[0]] = load_build

    def find_class(self, module, name):
      return (_BF16.type if name == 'bfloat16' else
              super().find_class(module, name))

  Recorder(io.BytesIO(data)).load()
  return any(d == _BF16 for d in found)


def test_dump_writes_bfloat16_without_dtype_state():
  # A reader's plain pickle would apply that state to its own shared
  # bfloat16 dtype; NumPy 2's flags there break JAX's bfloat16 in Trax.
  array = np.array([1.5, -2.0], _BF16)
  assert _bfloat16_dtype_has_state(pickle.dumps([array], protocol=5))
  data = _safe_pickle.dumps([array])
  assert not _bfloat16_dtype_has_state(data)
  got = _load(data)
  assert got[0].dtype == _BF16
  np.testing.assert_array_equal(got[0].astype(np.float32), [1.5, -2.0])
