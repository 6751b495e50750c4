"""Guards the TensorFlow internals that fastmath/_numpy.py patches.

`_skip_same_dtype_casts` replaces TensorFlow's private
`override_binary_operator.maybe_promote_tensors`, which every Tensor
operator calls under NumPy behaviour, so that `a * b` adds no Cast op for
an operand that already has the result dtype. When an upgrade renames or
moves that function, the patch steps aside without a word and the no-op
Casts come back (a third of the ops of a traced training step). These
tests fail instead, naming what is gone: then port the patch to the new
internal, or drop it knowingly.
"""

import inspect

import numpy as np
import pytest
import tensorflow as tf
from tensorflow.python.framework import ops as tf_ops  # pylint: disable=g-direct-tensorflow-import
from tensorflow.python.framework import override_binary_operator as binary_ops  # pylint: disable=g-direct-tensorflow-import
from tensorflow.python.ops.numpy_ops import np_dtypes  # pylint: disable=g-direct-tensorflow-import

from tfnp_trax.fastmath import _numpy

_FIX = ('TensorFlow {version} changed an internal that '
        'tfnp_trax/fastmath/_numpy.py:_skip_same_dtype_casts patches: {what}. '
        '{effect}; port the patch to the new internal (or remove it and this '
        'test knowingly).')
_SILENT = ('The patch now steps aside silently and every Tensor operator '
           'adds a Cast per operand again')

_USED = [  # (module, name, what happens without it)
    (binary_ops, 'maybe_promote_tensors', _SILENT),
    (binary_ops, '_maybe_get_dtype',
     'Mixed-dtype operators now go to TensorFlow\'s promotion, which casts '
     'every operand'),
    (tf_ops, 'is_numpy_style_type_promotion',
     'Every mixed-dtype Tensor operator now raises AttributeError'),
    (tf_ops, 'is_auto_dtype_conversion_enabled',
     'Every mixed-dtype Tensor operator now raises AttributeError'),
    (np_dtypes, '_result_type',
     'Every mixed-dtype Tensor operator now raises AttributeError'),
]


def _patched():
  return binary_ops.maybe_promote_tensors


def _tensorflows_own():
  """TensorFlow's maybe_promote_tensors, which the patch falls back to."""
  patched = _patched()
  if not getattr(patched, '_tfnp_trax', False):
    return patched  # Not installed (test_the_patch_is_installed says so).
  cells = dict(zip(patched.__code__.co_freevars,
                   (c.cell_contents for c in patched.__closure__)))
  return cells['promote']


def _casts(fn, *specs):
  graph = tf.function(fn, autograph=False).get_concrete_function(
      *specs).graph
  return [op.type for op in graph.get_operations() if op.type == 'Cast']


_F32 = tf.TensorSpec([3], tf.float32)
_I32 = tf.TensorSpec([3], tf.int32)


@pytest.mark.parametrize('module, name, effect', _USED,
                         ids=[f'{m.__name__}.{n}' for m, n, _ in _USED])
def test_the_patched_internals_still_exist(module, name, effect):
  assert callable(getattr(module, name, None)), _FIX.format(
      version=tf.__version__, what=f'{module.__name__}.{name} is gone',
      effect=effect)


def test_maybe_promote_tensors_keeps_its_signature():
  params = inspect.signature(_tensorflows_own()).parameters
  assert [(p.name, p.kind) for p in params.values()] == [
      ('tensors', inspect.Parameter.VAR_POSITIONAL),
      ('force_same_dtype', inspect.Parameter.KEYWORD_ONLY)], _FIX.format(
          version=tf.__version__,
          what=f'maybe_promote_tensors now takes {list(params)}',
          effect='The patch may now drop or misplace arguments')


def test_the_patch_is_installed():
  assert _numpy._ENABLED
  assert getattr(_patched(), '_tfnp_trax', False), (
      'override_binary_operator.maybe_promote_tensors is not the tfnp_trax '
      'patch: _skip_same_dtype_casts did not install it (see its fallbacks)')
  assert not getattr(_tensorflows_own(), '_tfnp_trax', False)
  _numpy._skip_same_dtype_casts()  # A second call must not wrap the patch.
  assert not getattr(_tensorflows_own(), '_tfnp_trax', False)


@pytest.mark.parametrize('fn, specs', [
    (lambda a, b: a * b, (_F32, _F32)),
    (lambda a, b: a + b, (_F32, _F32)),
    (lambda a, b: a / b, (_F32, _F32)),
    (lambda b: 1.0 - b, (_F32,)),
    (lambda a: a * 2, (_F32,)),
], ids=['mul', 'add', 'truediv', 'python_float_rsub', 'python_int_mul'])
def test_operators_cast_no_operand_of_the_result_dtype(fn, specs):
  assert _casts(fn, *specs) == [], _FIX.format(
      version=tf.__version__,
      what='its Tensor operators add a Cast for an operand already of the '
           'result dtype, so they no longer call '
           'override_binary_operator.maybe_promote_tensors',
      effect='The patch is installed but nothing calls it')


def test_mixed_dtypes_cast_only_the_other_operand():
  assert _casts(lambda a, b: a * b, _I32, _F32) == ['Cast']


def test_without_the_patch_the_casts_come_back(monkeypatch):
  # The measurement above can fail: TensorFlow's own promotion casts both.
  monkeypatch.setattr(binary_ops, 'maybe_promote_tensors', _tensorflows_own())
  assert _casts(lambda a, b: a * b, _F32, _F32) == ['Cast', 'Cast']
  assert _casts(lambda b: 1.0 - b, _F32) == ['Cast']


@pytest.mark.parametrize('operands', [
    (np.int32, np.float32), (np.float32, 0.5), (np.int32, 0.5),
    (np.int32, 3), (np.int8, np.int32), (np.float16, 2), (np.uint8, 1.5),
    (np.int64, np.float32), (np.float32, np.float64), (np.bool_, np.int32),
], ids=str)
def test_the_result_dtype_is_tensorflows(operands):
  tensors = [tf.constant(np.ones(2, x)) if isinstance(x, type) else x
             for x in operands]
  want = _tensorflows_own()(*tensors)
  got = _patched()(*tensors)
  assert [t.dtype for t in got] == [tf.convert_to_tensor(t).dtype
                                    for t in want]
  for g, w in zip(got, want):
    np.testing.assert_array_equal(g, w)
