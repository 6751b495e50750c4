"""PrefixLM's lengths: a zero prefix is still a way through the tokens."""

import numpy as np
import tensorflow as tf

from tfnp_trax import data


def test_prefix_lm_with_no_prefix_still_advances_on_both_paths():
  tokens = np.arange(1, 8)
  step = data.PrefixLM(input_length=0, output_length=3)
  from_python = list(step(iter([tokens])))
  dataset = tf.data.Dataset.from_tensors(tf.constant(tokens))
  from_dataset = list(data.to_stream(step(dataset)))
  for got in (from_python, from_dataset):
    assert [list(y) for _, y in got] == [[1, 2, 3], [4, 5, 6], [7]]
    assert all(len(x) == 0 for x, _ in got)
