"""Tokenize with keys=None: the text fields of an example, on both paths."""

import numpy as np
import pytest
import tensorflow as tf

from tfnp_trax import data


def test_keys_none_tokenizes_text_fields_and_keeps_numbers_on_both_paths():
  example = ('hi', np.array([7], np.int64))
  step = data.Tokenize(vocab_type='char')
  from_python = next(step(iter([example])))
  dataset = tf.data.Dataset.from_tensors((tf.constant('hi'),
                                          tf.constant([7], tf.int64)))
  from_dataset = next(data.to_stream(step(dataset)))
  for text_ids, number in (from_python, from_dataset):
    np.testing.assert_array_equal(text_ids, [104, 105])  # UTF-8 'h', 'i'.
    np.testing.assert_array_equal(number, [7])


def test_keys_none_tokenizes_bytes_and_zero_rank_string_arrays():
  step = data.Tokenize(vocab_type='char', n_reserved_ids=2)
  got = next(step(iter([(b'a', np.array('b'), {'x': 1})])))
  np.testing.assert_array_equal(got[0], [99])  # ord('a') + 2.
  np.testing.assert_array_equal(got[1], [100])
  assert got[2] == {'x': 1}


def test_a_chosen_field_that_is_not_text_is_named():
  step = data.Tokenize(keys=[0], vocab_type='char')
  with pytest.raises(ValueError, match=r'a field chosen for tokenizing holds '
                     r'int 5; only text'):
    next(step(iter([(5,)])))
