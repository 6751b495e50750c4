"""Hyperparameters of the wrong type: caught at construction, not stricter
than Trax (whose optimizers keep `jnp.array(value)` of each)."""

import inspect

import numpy as np
import pytest
import tensorflow as tf

from tfnp_trax import optimizers
from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.optimizers import validation

_OPTIMIZERS = (optimizers.SGD, optimizers.Momentum, optimizers.RMSProp,
               optimizers.Adam, optimizers.Adafactor, optimizers.SM3)


@pytest.mark.parametrize('value', [
    0.9, 1, True, np.float32(0.9), np.int64(3), np.array(0.9),
    np.array([0.9, 0.99]), tf.constant(0.9), jnp.asarray(2), [0.9], [[1, 2]],
    np.bool_(False), 1 + 2j,
], ids=repr)
def test_numbers_trax_accepts(value):
  assert validation.is_number(value)


@pytest.mark.parametrize('value', [
    'high', '0.9', b'1', None, tf.constant('x'), np.array(['a']), object(),
    [], ['a'], [0.9, None], {'b1': 0.9},
], ids=lambda v: 'object' if type(v) is object else repr(v))  # pylint: disable=unidiomatic-typecheck
def test_non_numbers(value):
  assert not validation.is_number(value)


def test_whole_numbers():
  for good in (3, np.int64(3), 1e3, True, np.float32(4.0)):
    assert validation.is_integer(good), good
  for bad in (2.5, '3', None, float('nan'), float('inf'), np.array(3), [3]):
    assert not validation.is_integer(bad), bad


def _numeric_hyperparameters(cls):
  """(name, default) of the constructor's numeric, non-structural params."""
  for name, parameter in inspect.signature(cls).parameters.items():
    default = parameter.default
    if type(default) in (int, float):  # Not bools, nor SM3's enum.
      yield name, default


@pytest.mark.parametrize('cls', _OPTIMIZERS, ids=lambda c: c.__name__)
def test_every_numeric_hyperparameter_rejects_a_string(cls):
  names = []
  for name, default in _numeric_hyperparameters(cls):
    names.append(name)
    if name == 'learning_rate':  # Its own message, which names schedules.
      continue
    with pytest.raises(TypeError, match=(
        rf"^{cls.__name__}: {name} must be a number, got 'x' \(str\); in a "
        rf"gin file write {cls.__name__}\.{name} = {default!r} \(no quotes "
        r"around a number\)\.$")):
      cls(**{name: 'x'})
  assert 'learning_rate' in names and (len(names) >= 2 or cls is
                                       optimizers.SGD), names


@pytest.mark.parametrize('cls', _OPTIMIZERS, ids=lambda c: c.__name__)
def test_numpy_and_tensor_hyperparameters_are_accepted(cls):
  hyper = dict(_numeric_hyperparameters(cls))
  as_numpy = cls(**{n: np.float32(v) for n, v in hyper.items()})
  as_arrays = cls(**{n: np.array(v) for n, v in hyper.items()})
  as_tensors = cls(**{n: tf.constant(float(v)) for n, v in hyper.items()})
  for opt in (as_numpy, as_arrays, as_tensors):
    for name, value in hyper.items():
      assert float(opt.opt_params[name]) == pytest.approx(value, rel=1e-6)


def test_clip_grad_norm_may_be_none_or_a_number():
  optimizers.Adam(clip_grad_norm=None)
  optimizers.Adam(clip_grad_norm=np.float32(1.0))
  with pytest.raises(TypeError, match=(
      r"^Adam: clip_grad_norm must be a number or None, got '1' \(str\)\.$")):
    optimizers.Adam(clip_grad_norm='1')


def test_number_error_wording():
  assert validation.number_error('Adam', 'b1', 'high', example=0.9) == (
      "Adam: b1 must be a number, got 'high' (str); in a gin file write "
      "Adam.b1 = 0.9 (no quotes around a number).")
  assert validation.number_error('train', 'steps', None, 'a whole number'
                                  ) == ('train: steps must be a whole number, '
                                        'got None (NoneType).')
  assert validation.default_of(optimizers.Adam, 'b2') == 0.999
  assert validation.default_of(optimizers.Adam, 'nope') is None


def test_check_integers_lists_and_optional():
  def run(steps=1000, checkpoints_at=None):
    del steps, checkpoints_at
  validation.check_integers(run, {'steps': 10, 'checkpoints_at': None},
                             optional=('checkpoints_at',),
                             lists=('checkpoints_at',))
  validation.check_integers(run, {'steps': 1e3, 'checkpoints_at': (1, 2)},
                             lists=('checkpoints_at',))
  with pytest.raises(TypeError, match=(
      r"^run: checkpoints_at must be a list of whole numbers, got \[1, 'x'\] "
      r"\(list\), and 'x' is not one\.$")):
    validation.check_integers(run, {'checkpoints_at': [1, 'x']},
                               lists=('checkpoints_at',))
  with pytest.raises(TypeError, match=(
      r"^run: steps must be a whole number, got None \(NoneType\); in a gin "
      r"file write run\.steps = 1000")):
    validation.check_integers(run, {'steps': None})
