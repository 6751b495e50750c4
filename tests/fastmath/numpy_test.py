"""Tests for the NumPy behaviour tfnp_trax switches on for tensors."""

import numpy as np
import pytest
import tensorflow as tf

from tfnp_trax.fastmath import numpy as jnp

_A = np.arange(24, dtype=np.float32).reshape(2, 3, 4) - 7.5


@pytest.mark.parametrize('compiled', [False, True])
def test_tensors_have_the_jax_array_methods_trax_code_calls(compiled):
  # Follows trax/layers/test_utils.py test_eval_equals_predict, which calls
  # `.take(indices=..., axis=...)` on layer outputs, as JAX arrays allow.
  def run(x):
    return dict(
        take=x.take(indices=np.array([2, 0]), axis=1),
        take_flat=x.take(np.array([0, 5])),
        sum=x.sum(axis=-1), prod=(x[0, 0] + 8.).prod(),
        any=(x > 15.).any(axis=(1, 2)), all=(x > -8.).all(),
        argmax=x.argmax(axis=-1), argmin=x.argmin(),
        squeeze=x[:, :1].squeeze(axis=1), swapaxes=x.swapaxes(0, 2),
        cumsum=x.cumsum(axis=1))
  fn = tf.function(run) if compiled else run
  got = {k: np.asarray(v) for k, v in fn(jnp.asarray(_A)).items()}
  a = _A
  want = dict(
      take=a[:, [2, 0]], take_flat=a.ravel()[[0, 5]], sum=a.sum(axis=-1),
      prod=(a[0, 0] + 8.).prod(), any=(a > 15.).any(axis=(1, 2)),
      all=(a > -8.).all(), argmax=a.argmax(axis=-1), argmin=a.argmin(),
      squeeze=a[:, 0], swapaxes=a.swapaxes(0, 2), cumsum=a.cumsum(axis=1))
  for key, value in want.items():
    np.testing.assert_allclose(got[key], value, rtol=1e-6, err_msg=key)


def test_numpy_functions_on_tensors_call_the_methods_with_out_none():
  # NumPy's np.sum(t), np.argmax(t), ... call `t.sum(axis=..., out=None)`
  # (trax/layers/combinators_test.py ChunkTest sums a layer's output so).
  t = jnp.asarray(_A)
  assert float(np.sum(t)) == float(_A.sum())
  np.testing.assert_allclose(np.sum(t, axis=1), _A.sum(axis=1))
  assert int(np.argmax(t)) == int(_A.argmax())
  assert bool(np.any(t > 15.)) and not bool(np.all(t > 0.))
  np.testing.assert_allclose(np.take(t, [1, 0], axis=2), _A[:, :, [1, 0]])
  with pytest.raises(TypeError, match=r'Tensor.sum: out= is not supported'):
    t.sum(out=np.zeros(()))
