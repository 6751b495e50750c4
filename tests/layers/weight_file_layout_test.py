"""The layout check: every dict Trax writes passes, anything else is named."""

import numpy as np
import pytest

from tfnp_trax import shapes
from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.layers import _weight_file_layout as layout
from tfnp_trax.layers import weight_files as wf

_SIG = shapes.ShapeDtype((8, 3), np.float32)
_W = [np.ones((3, 4), np.float32), np.zeros(4, np.float32),
      np.ones((4, 2), jnp.bfloat16)]


# The three layouts of Trax's source (see the module docstring), as Trax
# fills them: save_to_file, training.Loop.save_checkpoint, trainer_lib.
@pytest.mark.parametrize('contents', [
    {'flat_weights': _W, 'flat_state': [np.int32(3), None],
     'input_signature': _SIG},
    {'flat_weights': _W},  # weights_only=True, no signature.
    {'step': 4, 'flat_weights': 2, 'flat_state': [np.ones(2, np.float32)],
     'flat_eval_state': [np.ones(2, np.float32)],
     'history': {'_values': {'train': {'loss': [(2, 0.5)]}}},
     'slots_per_task': 2, 'input_signature': (_SIG, _SIG),
     'version_timestamp': 'Mar-10-2021'},
    {'step': np.int64(7), 'flat_weights': _W, 'slots': (_W, ()),
     'opt_params': {'learning_rate': np.float32(0.1)}, 'history': None,
     'flat_state': [], 'input_signature': [_SIG],
     'version_timestamp': 'Jun-18-2020'},
    {'flat_weights': 0, 'flat_state': [1.5, 2, True]},  # Python numbers.
])
def test_trax_layouts_pass(contents):
  layout.check_contents(contents, 'f.pkl.gz')


@pytest.mark.parametrize('contents, match', [
    ([1, 2], r"f\.pkl\.gz: expected a dict with 'flat_weights' .*found a "
     r'list \(\[1, 2\]\)'),
    ({1: 'a', 'b': 2}, r"found a dict with keys \[\"'b'\", '1'\]"),
    ({'flat_weights': True}, r'flat_weights is a bool \(True\), expected a '
     r'list of arrays'),
    ({'flat_weights': -1}, r'flat_weights is -1; where Trax stores arrays'),
    ({'flat_weights': [np.array(['a'])]}, r'flat_weights\[0\] is an array '
     r'of dtype <U1, expected a NumPy array of numbers'),
    ({'flat_weights': [[np.ones(2)]]}, r'flat_weights\[0\] is a list'),
    ({'flat_weights': [], 'flat_eval_state': [{'a': 1}]},
     r'flat_eval_state\[0\] is a dict'),
    ({'flat_weights': [], 'step': '4'}, r"step is a str \('4'\), expected "
     r'the training step'),
    ({'flat_weights': [], 'input_signature': [(2, 3)]},
     r'input_signature is a list .*expected a ShapeDtype'),
])
def test_other_layouts_are_named(contents, match):
  with pytest.raises(wf.WeightFileError, match=match):
    layout.check_contents(contents, 'f.pkl.gz')


def test_fit_leaf_takes_bits_and_numbers_and_refuses_other_kinds():
  bf16 = shapes.ShapeDtype((2,), jnp.bfloat16)
  bits = np.array([0x3fc0, 0x4040], np.uint16)
  assert layout.fit_leaf(bits, bf16, 'w') is bits  # Viewed by the caller.
  scalar = layout.fit_leaf(2.5, shapes.ShapeDtype((), np.float32), 'w')
  assert scalar.dtype == np.float32 and float(scalar) == 2.5
  assert layout.fit_leaf(None, None, 'w') is None
  with pytest.raises(wf.WeightFileError, match=r'w has dtype float32 in the '
                     r'file but the model expects int32 \(int values, not '
                     r'float\)'):
    layout.fit_leaf(np.ones(2, np.float32), shapes.ShapeDtype((2,), np.int32),
                    'w')
  with pytest.raises(wf.WeightFileError, match=r'w is 2.5 in the file but '
                     r'the model expects an array of shape \(2,\)'):
    layout.fit_leaf(2.5, shapes.ShapeDtype((2,), np.float32), 'w')
