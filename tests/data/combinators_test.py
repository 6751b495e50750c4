"""Shuffle's queue size: NumPy ints are sizes, floats are refused."""

import numpy as np
import pytest
import tensorflow as tf

from tfnp_trax import data


@pytest.mark.parametrize('queue_size', [3, np.int64(3), np.int32(3)])
def test_shuffle_takes_numpy_int_queue_sizes_on_both_paths(queue_size):
  np.random.seed(0)
  examples = [(np.array([i]),) for i in range(10)]
  step = data.Shuffle(queue_size)
  from_python = [int(x[0]) for x, in step(iter(examples))]
  dataset = tf.data.Dataset.range(10).map(lambda i: (tf.reshape(i, [1]),))
  from_dataset = [int(x[0]) for x, in data.to_stream(step(dataset))]
  for order in (from_python, from_dataset):
    assert sorted(order) == list(range(10))  # Every example, once.


def test_shuffle_refuses_a_float_queue_before_reading_the_stream():
  read = []

  def endless():
    while True:
      read.append(1)
      yield (np.zeros(1),)
  with pytest.raises(TypeError, match=r'queue_size must be an int'):
    next(data.shuffle(endless(), 4.0))
  assert not read
