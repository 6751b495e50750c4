"""fastmath.checks: value checks that raise eagerly and assert when traced."""

import numpy as np
import pytest
import tensorflow as tf

from tfnp_trax import shapes
from tfnp_trax.fastmath import abstract
from tfnp_trax.fastmath import checks


def test_assert_finite_passes_finite_and_non_float_values():
  checks.assert_finite(np.ones((2, 3), np.float32), 'x')
  checks.assert_finite(np.array([1, 2], np.int32), 'ids')  # Not checked.
  checks.assert_finite(np.zeros((0,), np.float32), 'empty')


def test_assert_finite_counts_nan_and_inf_eagerly():
  x = np.array([[1.0, np.nan], [np.inf, -np.inf]], np.float32)
  with pytest.raises(FloatingPointError,
                     match=r'^Dense: input: expected finite values but found '
                     r'1 NaN and 2 Inf of 4 values \(shape \(2, 2\), dtype '
                     r'float32; first at index \(0, 1\)\)\.$'):
    checks.assert_finite(x, 'Dense: input')


def test_assert_finite_traced_fails_the_step():
  f = tf.function(lambda x: checks.assert_finite(x, 'Layer: w') or x + 1)
  np.testing.assert_array_equal(f(tf.ones(3)), [2.0, 2.0, 2.0])
  with pytest.raises(tf.errors.InvalidArgumentError,
                     match=r'Layer: w: expected finite values but found NaN '
                     r'or Inf \(shape \(3,\), dtype float32\)'):
    f(tf.constant([1.0, np.nan, 2.0]))


def test_assert_ids_in_range_eagerly():
  checks.assert_ids_in_range(np.array([0, 4]), 5, 'ids')
  checks.assert_ids_in_range(np.zeros((0,), np.int32), 5, 'ids')
  checks.assert_ids_in_range(np.array([0.5, 9.0]), 5, 'floats')  # Skipped.
  with pytest.raises(ValueError,
                     match=r'^Loss: targets: expected ids in \[0, 5\) but got '
                     r'2 of 3 outside \(min -1, max 5; shape \(3,\)\)\. Fix '
                     r'it\.$'):
    checks.assert_ids_in_range(np.array([-1, 2, 5]), 5, 'Loss: targets',
                               'Fix it.')


def test_assert_ids_in_range_traced():
  f = tf.function(lambda x: checks.assert_ids_in_range(x, 5, 'E: ids') or x)
  f(tf.constant([0, 4]))
  f(tf.zeros((0,), tf.int32))
  with pytest.raises(tf.errors.InvalidArgumentError,
                     match=r'E: ids: expected ids in \[0, 5\) but got values '
                     r'outside; min and max:\] \[0\] \[7\]'):
    f(tf.constant([0, 7]))


def test_suspended_turns_checks_off_and_nests():
  bad = np.array([np.nan], np.float32)
  with checks.suspended():
    with checks.suspended():
      checks.assert_finite(bad, 'x')
    checks.assert_ids_in_range(np.array([9]), 2, 'ids')
  with pytest.raises(FloatingPointError):
    checks.assert_finite(bad, 'x')


@pytest.mark.parametrize('size', [4, 1 << 22])  # Run on zeros, or traced.
def test_shape_eval_suspends_checks(size):
  def f(x):
    checks.assert_finite(jnp_log(x), 'log')  # log(0) = -inf on the zeros.
    return x
  out = abstract.shape_eval(f)(shapes.ShapeDtype((size,), np.float32))
  assert out.shape == (size,)


def jnp_log(x):
  return tf.math.log(x)


def test_is_traced():
  assert not checks.is_traced(tf.ones(2))
  seen = []
  tf.function(lambda x: seen.append(checks.is_traced(x)) or x)(tf.ones(2))
  assert seen == [True]
