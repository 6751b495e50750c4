"""Space serializers against hand-computed digits and a NumPy reference."""

import gin
import gymnasium
import numpy as np
import pytest
import tensorflow as tf

from tfnp_trax.rl import space_serializer as ss


def box(low, high, shape):
  return gymnasium.spaces.Box(low=low, high=high, shape=shape,
                              dtype=np.float32)


def np_box_digits(x, low, high, vocab_size, precision):
  """Float64 reference: base-vocab_size digits of (x - low) / (high - low)."""
  u = np.clip((np.asarray(x, np.float64) - low) / (high - low), 0.0, 1.0)
  digits = []
  for position in range(1, precision + 1):
    digit = np.floor(u * vocab_size ** position).astype(np.int64) % vocab_size
    digits.append(np.where(u == 1.0, vocab_size - 1, digit))
  return np.stack(digits, axis=-1).reshape((u.shape[0], -1))


def test_box_digits_by_hand():
  # Base 4 on [-1, 1]: 0.375 -> u = 0.6875 = 2/4 + 3/16 + 0/64.
  srl = ss.BoxSpaceSerializer(box(-1.0, 1.0, (1,)), vocab_size=4,
                              precision=3)
  x = np.array([[0.375], [-1.0], [1.0], [0.0]])
  np.testing.assert_array_equal(
      srl.serialize(x), [[2, 3, 0], [0, 0, 0], [3, 3, 3], [2, 0, 0]])
  assert srl.serialize(x).dtype == tf.int32
  assert srl.representation_length == 3
  np.testing.assert_array_equal(srl.significance_map, [0, 1, 2])
  # Digits back to values: 2/4 + 3/16 = 0.6875 -> 0.375; 3,3,3 -> 63/64.
  np.testing.assert_allclose(
      srl.deserialize(np.array([[2, 3, 0], [3, 3, 3]])),
      [[0.375], [2 * 63 / 64 - 1]], rtol=1e-6)


def test_box_matches_numpy_reference_and_round_trips():
  rng = np.random.default_rng(0)
  low = np.array([-3.0, 0.0], np.float32)
  high = np.array([5.0, 2.0], np.float32)
  srl = ss.BoxSpaceSerializer(box(low, high, (2,)), vocab_size=16,
                              precision=2)
  x = rng.uniform(low, high, size=(32, 2)).astype(np.float32)
  np.testing.assert_array_equal(srl.serialize(x),
                                np_box_digits(x, low, high, 16, 2))
  np.testing.assert_array_equal(srl.significance_map, [0, 1, 0, 1])
  fine = ss.BoxSpaceSerializer(box(low, high, (2,)), vocab_size=257,
                               precision=4)
  back = fine.deserialize(fine.serialize(x))
  assert tuple(back.shape) == (32, 2) and back.dtype == tf.float32
  np.testing.assert_allclose(back, x, atol=1e-5)


def test_box_batch_axis_is_kept_as_in_trax():
  # Trax reshapes to (batch, -1): 2 values in one row of a 1-value space.
  srl = ss.BoxSpaceSerializer(box(-1.0, 1.0, (1,)), vocab_size=4,
                              precision=2)
  np.testing.assert_array_equal(srl.serialize(np.array([[-1.0, 1.0]])),
                                [[0, 0, 3, 3]])


def test_box_scalar_space():
  srl = ss.BoxSpaceSerializer(box(0.0, 1.0, ()), vocab_size=2, precision=1)
  np.testing.assert_array_equal(srl.serialize(np.array([0.2, 0.7, 1.0])),
                                [[0], [1], [1]])
  np.testing.assert_allclose(srl.deserialize(np.array([[0], [1]])), [0, 0.5])


def test_box_bounds_are_clipped_to_max_range():
  space = box(-1e18, 1e18, (1,))
  srl = ss.BoxSpaceSerializer(space, vocab_size=10, precision=2,
                              max_range=(-10.0, 10.0))
  # The caller's space keeps its bounds; the serializer's copy is clipped.
  assert space.low[0] == np.float32(-1e18)
  np.testing.assert_array_equal(srl.serialize(np.array([[0.0], [1e6]])),
                                [[5, 0], [9, 9]])


def test_box_precision_from_gin():
  with gin.config_scope('space_serializer_test'):
    gin.bind_parameter('space_serializer_test/BoxSpaceSerializer.precision',
                       3)
    srl = ss.create(box(0.0, 1.0, (2,)), vocab_size=8)
  assert srl.representation_length == 6


def test_discrete():
  srl = ss.create(gymnasium.spaces.Discrete(3), vocab_size=3)
  assert isinstance(srl, ss.DiscreteSpaceSerializer)
  r = srl.serialize(np.array([2, 0, 1]))
  np.testing.assert_array_equal(r, [[2], [0], [1]])
  assert r.dtype == tf.int32
  np.testing.assert_array_equal(srl.deserialize(r), [2, 0, 1])
  np.testing.assert_array_equal(srl.significance_map, [0])
  assert srl.representation_length == 1


def test_multi_discrete():
  srl = ss.create(gymnasium.spaces.MultiDiscrete([2, 5]), vocab_size=5)
  r = srl.serialize(np.array([[1, 4], [0, 2]]))
  np.testing.assert_array_equal(r, [[1, 4], [0, 2]])
  assert r.dtype == tf.int32
  assert srl.representation_length == 2
  np.testing.assert_array_equal(srl.significance_map, [0, 0])


def test_gym_spaces_are_accepted_too():
  gym = pytest.importorskip('gym')
  assert isinstance(ss.create(gym.spaces.Box(-1, 1, (2,)), 4),
                    ss.BoxSpaceSerializer)
  assert isinstance(ss.create(gym.spaces.Discrete(2), 2),
                    ss.DiscreteSpaceSerializer)
  assert isinstance(ss.create(gym.spaces.MultiDiscrete([2, 2]), 2),
                    ss.MultiDiscreteSpaceSerializer)


def test_vocab_too_small_is_an_assertion_error_as_in_trax():
  with pytest.raises(AssertionError, match=r'n=5 values but vocab_size is 3'):
    ss.create(gymnasium.spaces.Discrete(5), vocab_size=3)
  with pytest.raises(ss.SpaceSerializerError,
                     match=r'a component has 7 categories'):
    ss.create(gymnasium.spaces.MultiDiscrete([2, 7]), vocab_size=4)


def test_wrong_space_for_a_serializer():
  with pytest.raises(ss.SpaceSerializerError,
                     match=r'DiscreteSpaceSerializer: expected a Discrete '
                           r'space.*Use space_serializer.create'):
    ss.DiscreteSpaceSerializer(box(0.0, 1.0, (1,)), vocab_size=2)
  with pytest.raises(AssertionError, match=r'expected a Box space'):
    ss.BoxSpaceSerializer(gymnasium.spaces.Discrete(2), vocab_size=2)


def test_create_rejects_other_spaces():
  with pytest.raises(ss.UnsupportedSpaceError,
                     match=r'no serializer for .*MultiBinary.*supported are'):
    ss.create(gymnasium.spaces.MultiBinary(3), vocab_size=2)
  with pytest.raises(KeyError):  # What Trax raises.
    ss.create(gymnasium.spaces.MultiBinary(3), vocab_size=2)


def test_serialize_in_a_graph_with_unknown_batch():
  srl = ss.BoxSpaceSerializer(box(-1.0, 1.0, (1,)), vocab_size=4,
                              precision=3)
  f = tf.function(lambda x: srl.deserialize(srl.serialize(x)),
                  input_signature=[tf.TensorSpec([None, 1], tf.float32)],
                  autograph=False)
  np.testing.assert_allclose(f(np.array([[0.375], [0.0]], np.float32)),
                             [[0.375], [0.0]], atol=1e-6)
