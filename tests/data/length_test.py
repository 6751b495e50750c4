"""PadToLength's checked len_map: what it still accepts, on both paths."""

import numpy as np
import pytest
import tensorflow as tf

from tfnp_trax import data


def _both_paths(step, examples):
  """The step's output on a Python iterator and on a Dataset, as lists."""
  from_python = list(step(iter(examples)))
  dataset = tf.data.Dataset.from_generator(
      lambda: iter(examples), output_signature=tuple(
          tf.TensorSpec([None], tf.int64) for _ in examples[0]))
  from_dataset = list(data.to_stream(step(dataset)))
  return from_python, from_dataset


def _ids(*values):
  return np.array(values, np.int64)


def test_pad_to_length_pads_to_hand_computed_lengths_on_both_paths():
  examples = [(_ids(1, 2, 3), _ids(4, 5))]
  step = data.PadToLength(len_map={0: np.int64(5), 1: 0},
                          pad_value={0: 7, 1: -1})
  for got in _both_paths(step, examples):
    (inputs, targets), = got
    # Position 0 grows to 5 with 7s; a length of 0 pads nothing.
    np.testing.assert_array_equal(inputs, [1, 2, 3, 7, 7])
    np.testing.assert_array_equal(targets, [4, 5])


def test_pad_to_length_multiple_keeps_trax_arithmetic_on_both_paths():
  # Trax pads by length % multiple: 3 % 4 = 3 zeros, 5 % 4 = 1 zero.
  examples = [(_ids(1, 2, 3),), (_ids(1, 2, 3, 4, 5),)]
  step = data.PadToLength(len_map={0: 4}, multiple=True)
  for got in _both_paths(step, examples):
    np.testing.assert_array_equal(got[0][0], [1, 2, 3, 0, 0, 0])
    np.testing.assert_array_equal(got[1][0], [1, 2, 3, 4, 5, 0])


def test_pad_to_length_rejects_lengths_when_built():
  with pytest.raises(ValueError, match=r'len_map\[1\] is the length to pad '
                     r'to and must be >= 0, got -1'):
    data.PadToLength(len_map={0: 4, 1: -1})
  with pytest.raises(TypeError, match=r'len_map\[0\] must be an int length, '
                     r'got True'):
    data.PadToLength(len_map={0: True})


def test_filter_by_length_with_min_above_max_passes_nothing(caplog):
  # Trax accepts it: a finite stream comes out empty. We warn as well.
  examples = [(_ids(1, 2), _ids(1)), (_ids(1, 2, 3, 4), _ids(1))]
  with caplog.at_level('WARNING'):
    step = data.FilterByLength(max_length=2, min_length=5)
  assert 'min_length (5) is greater than max_length (2)' in caplog.text
  for got in _both_paths(step, examples):
    assert list(got) == []


def test_filter_by_length_still_measures_tuples_and_arrays():
  examples = [(_ids(1, 2), _ids(1)), (_ids(1, 2, 3, 4), _ids(1))]
  for got in _both_paths(data.FilterByLength(max_length=3), examples):
    assert [len(x) for x, _ in got] == [2]
  arrays = [np.ones(2), np.ones(5)]
  assert [len(x) for x in data.FilterByLength(3)(iter(arrays))] == [2]
