"""The one routine that fits stored leaves to a model's tree, both rules.

Expectations are written out by hand: which stored array lands where, and
the exact message for each way a file can fail to fit.
"""

import numpy as np
import pytest

from tfnp_trax import layers as tl
from tfnp_trax import shapes
from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.layers import base
from tfnp_trax.layers import weight_files as wf

_SIG = ((shapes.ShapeDtype((2,)), (shapes.ShapeDtype((3, 4)),)), (),
        {'b': shapes.ShapeDtype((5,)), 'a': shapes.ShapeDtype(())})


def _stored():
  # tree_flatten order: dict entries by sorted key, so 'a' before 'b'.
  return [np.full(2, 1.), np.full((3, 4), 2.), np.array(3.), np.full(5, 4.)]


def test_strict_puts_each_leaf_where_the_flat_order_says():
  a, b, c, d = _stored()
  fitted = wf.fit_leaves([a, b, c, d], _SIG)
  assert fitted[0][0] is a and fitted[0][1][0] is b
  assert fitted[1] == ()
  assert fitted[2]['a'] is c and fitted[2]['b'] is d
  assert list(fitted[2]) == ['b', 'a']  # The model's key order is kept.


def test_strict_keeps_cache_markers_and_namedtuples():
  sig = (base.GET_WEIGHTS_FROM_CACHE, shapes.ShapeDtype((1,)))
  fitted = wf.fit_leaves([np.zeros(1)], sig)
  assert fitted[0] == base.GET_WEIGHTS_FROM_CACHE
  assert fitted[1].shape == (1,)


def test_strict_takes_the_model_integer_dtype_and_bfloat16_bits():
  bf16 = np.dtype(jnp.bfloat16)
  sig = (shapes.ShapeDtype((), np.int64), shapes.ShapeDtype((2,), bf16))
  bits = np.array([1.5, -2.], dtype=bf16).view(np.uint16)
  counter, table = wf.fit_leaves([np.array(7, np.int32), bits], sig)
  assert counter.dtype == np.int64 and int(counter) == 7
  assert table.dtype == bf16
  assert table.astype(np.float32).tolist() == [1.5, -2.]


def test_strict_mismatched_shape_names_the_leaf_and_both_shapes():
  stored = _stored()
  stored[1] = np.zeros((4, 3))
  with pytest.raises(wf.WeightFileError,
                     match=r'^weights\[0\]\[1\]\[0\] has shape \(4, 3\) in the '
                     r'file but the model expects \(3, 4\)\. The file was '
                     r'saved from a different model'):
    wf.fit_leaves(stored, _SIG)


def test_strict_counts_missing_and_extra_leaves():
  with pytest.raises(wf.WeightFileError,
                     match=r"^m\.pkl\.gz: the file has 2 state leaves but the "
                     r"model needs more; the first missing one is "
                     r"state\[2\]\['a'\] of shape \(\)"):
    wf.fit_leaves(_stored()[:2], _SIG, 'state', source='m.pkl.gz')
  with pytest.raises(wf.WeightFileError,
                     match=r'the file has 5 weights leaves but the model only '
                     r'4; the first extra one has shape \(6,\)'):
    wf.fit_leaves(_stored() + [np.zeros(6)], _SIG)


def test_strict_names_the_sublayer_when_given_the_layer():
  model = tl.Serial(tl.Dense(3), tl.Relu(), tl.Dense(2))
  model.init(shapes.ShapeDtype((1, 4)))
  stored = [np.zeros((4, 3)), np.zeros(3), np.zeros((3, 2)), np.zeros(5)]
  with pytest.raises(wf.WeightFileError,
                     match=r'weights\[2\]\[1\] \(in Serial/2:Dense_2\) has '
                     r'shape \(5,\) in the file but the model expects '
                     r'\(2,\)'):
    wf.fit_leaves(stored, model.weights, layer=model)


def test_check_values_refuses_numbers_for_arrays_and_non_finite_values():
  sig = (shapes.ShapeDtype((2,), np.float32),)
  assert wf.fit_leaves([None], sig)[0] is None  # Not checked by default.
  with pytest.raises(wf.WeightFileError,
                     match=r'^f: weights\[0\] is None in the file but the '
                     r'model expects an array of shape \(2,\)'):
    wf.fit_leaves([None], sig, source='f', check_values=True)
  with pytest.raises(wf.WeightFileError,
                     match=r'^f: weights\[0\] holds 1 NaN or Inf of 2 values'):
    wf.fit_leaves([np.array([1., np.inf], np.float32)], sig, source='f',
                  check_values=True)


def test_by_shape_is_trax_lenient_match():
  # Trax's `_match_by_shape`: walk the model's leaves; take the next stored
  # leaf where its shape matches, else keep the model's own value.
  model = [np.zeros(2), np.zeros((3, 4)), np.zeros(5), np.zeros(2)]
  stored = [np.full((3, 4), 1.), np.full(2, 2.)]
  fitted = wf.fit_leaves(stored, model, 'weight', by_shape=True)
  assert fitted[0] is model[0]      # (2,) vs next stored (3, 4): kept.
  assert fitted[1] is stored[0]     # (3, 4) matches: taken.
  assert fitted[2] is model[2]      # (5,) vs next stored (2,): kept.
  assert fitted[3] is stored[1]     # (2,) matches: taken.


def test_by_shape_keeps_none_and_leftover_model_leaves():
  model = [None, np.zeros(()), np.zeros(3)]
  stored = [np.array(9.)]
  fitted = wf.fit_leaves(stored, model, 'state', by_shape=True)
  assert fitted[0] is None and fitted[1] is stored[0]
  assert fitted[2] is model[2]


def test_by_shape_refuses_a_stored_leaf_that_finds_no_place():
  model = [np.zeros(2), np.zeros(3)]
  with pytest.raises(wf.WeightFileError,
                     match=r'^Loop\.load_checkpoint: slot array 1 of the '
                     r'checkpoint \(shape \(4,\)\) matches no remaining slot '
                     r'of the model \(shapes \[\(2,\), \(3,\)\]\); the '
                     r'checkpoint was written for a different model\.$'):
    wf.fit_leaves([np.ones(3), np.ones(4)], model, 'slot', by_shape=True,
                  source='Loop.load_checkpoint')
  # A WeightFileError is a ValueError, which Trax's callers catch.
  assert issubclass(wf.WeightFileError, ValueError)


def test_unflatten_weights_and_state_is_the_strict_rule():
  sig_w, sig_s = _SIG, (shapes.ShapeDtype((1,)),)
  weights, state = wf.unflatten_weights_and_state(_stored(), [np.ones(1)],
                                                  (sig_w, sig_s))
  assert weights[2]['b'].shape == (5,) and state[0].shape == (1,)
