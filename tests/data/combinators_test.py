"""Shuffle, Batch, UnBatch and Parallel: what they take, on both paths."""

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
  # Inside Serial, after a Dataset source, Shuffle works on blocks.
  from_blocks = [int(x[0]) for x, in data.Serial(lambda _: dataset, step)()]
  for order in (from_python, from_dataset, from_blocks):
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


def _dict_examples():
  return [{'a': np.array([1, 2], np.int32), 'b': np.array([5], np.int32)},
          {'a': np.array([3], np.int32), 'b': np.array([6, 7], np.int32)}]


def _dict_dataset():
  spec = tf.TensorSpec([None], tf.int32)
  return tf.data.Dataset.from_generator(lambda: iter(_dict_examples()),
                                        output_signature={'a': spec,
                                                          'b': spec})


def test_batch_stacks_dicts_key_by_key_on_both_paths():
  step = data.Batch(2)
  from_python = next(step(iter(_dict_examples())))
  from_dataset = next(data.to_stream(step(_dict_dataset())))
  for got in (from_python, from_dataset):
    assert sorted(got) == ['a', 'b']
    # Each key padded with zeros to its longest value, as padded_batch does.
    np.testing.assert_array_equal(got['a'], [[1, 2], [3, 0]])
    np.testing.assert_array_equal(got['b'], [[5, 0], [6, 7]])


def test_unbatch_splits_dict_batches_on_both_paths():
  step = data.Serial(data.Batch(2), data.UnBatch())
  from_python = list(step(iter(_dict_examples())))
  from_dataset = list(data.to_stream(step(_dict_dataset())))
  for got in (from_python, from_dataset):
    np.testing.assert_array_equal(got[0]['a'], [1, 2])
    np.testing.assert_array_equal(got[1]['a'], [3, 0])
    np.testing.assert_array_equal(got[1]['b'], [6, 7])


def test_batch_names_dicts_whose_keys_differ():
  examples = [{'a': np.ones(2)}, {'b': np.ones(2)}]
  with pytest.raises(ValueError, match=r"Batch: example 1 has keys \['b'\], "
                     r"but example 0 has \['a'\]"):
    next(data.Batch(2)(iter(examples)))


def test_parallel_takes_whole_float_counters_as_ints():
  a = [(np.array([i]),) for i in range(0, 30)]
  b = [(np.array([i]),) for i in range(100, 130)]

  def first(counters, n=9):
    mixed = data.Parallel([lambda: iter(a), lambda: iter(b)],
                          counters=counters)()
    return [int(next(mixed)[0][0]) for _ in range(n)]
  got = first([2.0, 1])
  assert got == first([2, 1])
  # Two from the first stream for each one from the second, in order.
  assert [x for x in got if x < 100] == list(range(6))
  assert [x for x in got if x >= 100] == [100, 101, 102]


def test_parallel_takes_negative_counters_as_trax_does():
  # trax/data/inputs.py, Parallel: a stream is drawn while its count is
  # under its counter, and the counts reset when their sum reaches the
  # counters' sum. With (2, -1, 1) that sum is 2, reached after one draw
  # from each of streams 0 and 2: by hand, 0, 2, 0, 2, ...
  sources = [lambda k=k: iter([(np.array([k]),)] * 20) for k in range(3)]
  mixed = data.Parallel(sources, counters=[2, -1, 1])()
  assert [int(next(mixed)[0][0]) for _ in range(6)] == [0, 2] * 3

