"""fastmath.sums_of_squares and ordered_after against float64 NumPy."""

import numpy as np
import pytest
import tensorflow as tf

from tfnp_trax import fastmath

_RNG = np.random.default_rng(0)
# Sizes that divide by the 128-long rows of the XLA form and sizes that do
# not, a scalar, a 3-D array and an empty array.
_GRADS = [_RNG.normal(size=s).astype(np.float32)
          for s in [(784, 512), (512,), (300, 10), (), (2, 64, 3), (0, 4),
                    (10,), (128,)]]
_WEIGHTS = [_RNG.normal(size=s).astype(np.float32)
            for s in [(4, 256), (7,), (33, 5)]]


def _want(group):
  return sum(np.sum(np.asarray(x, np.float64) ** 2) for x in group)


def _run(mode, groups):
  def f(*flat):
    it = iter(flat)
    return fastmath.sums_of_squares([[next(it) for _ in g] for g in groups])
  flat = [tf.constant(x) for g in groups for x in g]
  if mode == 'eager':
    return f(*flat)
  return tf.function(f, jit_compile=(mode == 'xla'), autograph=False)(*flat)


@pytest.mark.parametrize('mode', ['eager', 'graph', 'xla'])
def test_sums_of_squares_per_group_match_numpy(mode):
  groups = [_GRADS, _WEIGHTS, []]
  got = _run(mode, groups)
  assert isinstance(got, list) and len(got) == 3
  for g, group in zip(got, groups):
    assert g.dtype == tf.float32 and g.shape == ()
    np.testing.assert_allclose(float(g), _want(group), rtol=2e-5)
  assert float(got[2]) == 0.0


@pytest.mark.parametrize('mode', ['eager', 'xla'])
def test_sums_of_squares_dtypes(mode):
  """float64 anywhere sums in float64 (exactly, for these integers);
  bfloat16 and integers sum in float32."""
  f64 = [np.arange(300, dtype=np.float64) + 0.5, np.float32(3.0)]
  got = _run(mode, [f64])[0]
  assert got.dtype == tf.float64
  assert float(got) == _want(f64)
  low = [tf.constant(np.arange(256.0), tf.bfloat16),
         tf.constant(np.arange(5), tf.int32)]

  def f(a, b):
    return fastmath.sums_of_squares([[a, b]])[0]
  if mode == 'xla':
    f = tf.function(f, jit_compile=True, autograph=False)
  got = f(*low)
  assert got.dtype == tf.float32
  np.testing.assert_allclose(float(got), _want([np.arange(256.0),
                                                np.arange(5)]), rtol=1e-6)


def test_in_xla_only_inside_jit_compile():
  seen = []

  def f(x):
    seen.append(fastmath.in_xla())
    return x + 1
  f(tf.constant(1.0))
  tf.function(f)(tf.constant(1.0))
  tf.function(f, jit_compile=True)(tf.constant(1.0))
  assert seen == [False, False, True]


def test_ordered_after_keeps_values_and_is_a_no_op_outside_xla():
  leaves = [tf.constant([1.5, -2.0]), tf.constant([3], tf.int32)]
  norm = tf.constant(np.nan, tf.float32)  # NaN < 0 is false: factor 1.
  out = fastmath.ordered_after(leaves, [norm, tf.constant(4.0)])
  assert out[0] is leaves[0] and out[1] is leaves[1]

  @tf.function(jit_compile=True, autograph=False)
  def ordered(a, b, value):
    return fastmath.ordered_after([a, b], [value, value * 2])
  for value in (0.0, 7.0, np.nan, np.inf):
    a, b = ordered(*leaves, tf.constant(value, tf.float32))
    np.testing.assert_array_equal(a.numpy(), [1.5, -2.0])
    assert b.dtype == tf.int32 and b.numpy().tolist() == [3]


def test_ordered_after_makes_the_arrays_depend_on_the_value():
  """Under XLA the tied array is computed after (from) the value: its HLO
  reads the value's sum of squares; untied, it does not."""
  def program(tie):
    def f(w, g):
      squares = fastmath.sums_of_squares([[g]])
      w = fastmath.ordered_after([w], squares)[0] if tie else w
      return w * 2.0, squares[0]
    return tf.function(f, jit_compile=True, autograph=False)
  w = tf.constant(_RNG.normal(size=(4,)).astype(np.float32))
  g = tf.constant(_RNG.normal(size=(256,)).astype(np.float32))
  for tie in (True, False):
    hlo = program(tie).experimental_get_compiler_ir(w, g)(stage='hlo')
    assert ('compare' in hlo) == tie
    out, _ = program(tie)(w, g)
    np.testing.assert_array_equal(out.numpy(), w.numpy() * 2)


def test_sums_of_squares_under_xla_with_a_dimension_known_at_run_time():
  """A traced input with an unknown leading dimension (compiled per shape
  by XLA) still sums correctly, in both the row and the remainder path."""
  f = tf.function(lambda a, b: fastmath.sums_of_squares([[a, b]])[0],
                  jit_compile=True, autograph=False,
                  input_signature=[tf.TensorSpec([None, 128], tf.float32),
                                   tf.TensorSpec([None], tf.float32)])
  for n in (3, 5):
    a = _RNG.normal(size=(n, 128)).astype(np.float32)
    b = _RNG.normal(size=(n,)).astype(np.float32)
    np.testing.assert_allclose(float(f(a, b)), _want([a, b]), rtol=1e-5)
