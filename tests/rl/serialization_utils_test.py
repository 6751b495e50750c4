"""Serialization layers and wrappers against hand-computed sequences."""

import gymnasium
import numpy as np
import pytest
import tensorflow as tf

from tfnp_trax import fastmath
from tfnp_trax import layers as tl
from tfnp_trax import shapes
from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.rl import serialization_utils as su
from tfnp_trax.rl import space_serializer as ss


def discrete(n, vocab_size):
  return ss.create(gymnasium.spaces.Discrete(n), vocab_size)


def multi_discrete(nvec, vocab_size):
  return ss.create(gymnasium.spaces.MultiDiscrete(nvec), vocab_size)


def box(low, high, shape, vocab_size, precision):
  space = gymnasium.spaces.Box(low=low, high=high, shape=shape,
                               dtype=np.float32)
  return ss.BoxSpaceSerializer(space, vocab_size, precision=precision)


def OneHotModel(vocab_size):  # pylint: disable=invalid-name
  """A 'sequence model' whose logits are the one-hot input symbols."""
  return lambda mode: tl.Fn('OneHot',
                            lambda x: tl.one_hot(x, vocab_size) * 10.0)


def test_serialize_layer():
  srl = box(-1.0, 1.0, (1,), vocab_size=4, precision=2)
  x = np.array([[[-1.0], [0.0], [1.0]]])  # (batch 1, length 3, 1)
  np.testing.assert_array_equal(su.Serialize(srl)(x),
                                [[[0, 0], [2, 0], [3, 3]]])


def test_interleave_by_hand():
  x = np.array([[[1, 1], [2, 2], [3, 3]]])
  y = np.array([[[7], [8]]])
  np.testing.assert_array_equal(su.Interleave()((x, y)),
                                [[1, 1, 7, 2, 2, 8, 3, 3]])
  np.testing.assert_array_equal(su.Interleave()((x[:, :2], y)),
                                [[1, 1, 7, 2, 2, 8]])


def test_interleave_rejects_lengths_that_do_not_pair():
  x = np.zeros((1, 4, 2), np.int32)
  y = np.zeros((1, 2, 1), np.int32)
  with pytest.raises(tl.LayerError, match=r'Interleave: the first sequence '
                                          r'must be as long as the second'):
    su.Interleave()((x, y))


def test_deinterleave_by_hand_with_a_logits_axis():
  seq = np.array([[1, 1, 7, 2, 2, 8, 3, 3]])
  (x, y) = su.Deinterleave(2, 1)(seq)
  np.testing.assert_array_equal(x, [[[1, 1], [2, 2], [3, 3]]])
  np.testing.assert_array_equal(y, [[[7], [8]]])
  logits = np.stack([seq, -seq], axis=-1)  # (1, 8, 2)
  (x, y) = su.Deinterleave(2, 1)(logits)
  assert tuple(x.shape) == (1, 3, 2, 2) and tuple(y.shape) == (1, 2, 1, 2)
  np.testing.assert_array_equal(x[..., 1], [[[-1, -1], [-2, -2], [-3, -3]]])
  with pytest.raises(tl.LayerError, match=r'Deinterleave: .*got 2 symbols '
                                          r'left over'):
    su.Deinterleave(3, 1)(seq[:, :6])


def test_representation_mask_and_significance_weights():
  srl = box(0.0, 1.0, (2,), vocab_size=4, precision=2)
  mask = np.array([[1.0, 0.0]])
  rep = su.RepresentationMask(srl)(mask)
  np.testing.assert_array_equal(rep, [[[1, 1, 1, 1], [0, 0, 0, 0]]])
  np.testing.assert_array_equal(  # Extra axes are reduced with max.
      su.RepresentationMask(srl)(np.array([[[0.0, 1.0], [0.0, 0.0]]])), rep)
  weights = su.SignificanceWeights(srl, decay=0.5)(rep)
  assert weights.dtype == tf.float32
  np.testing.assert_allclose(weights, [[[1, 0.5, 1, 0.5], [0, 0, 0, 0]]])
  with pytest.raises(tl.LayerError, match=r'mask of shape \(batch, length, '
                                          r'4\).*got \(1, 2\)'):
    su.SignificanceWeights(srl, decay=0.5)(mask)


def test_serialized_model_outputs():
  obs_srl = multi_discrete([3, 3], vocab_size=3)
  act_srl = discrete(2, vocab_size=3)
  model = su.SerializedModel(OneHotModel(3), obs_srl, act_srl,
                             significance_decay=0.9)
  obs = np.array([[[0, 1], [2, 2], [1, 0]]])
  act = np.array([[1, 0]])
  mask = np.array([[1, 1, 0]])
  example = (obs, act, obs, mask)
  model.init(shapes.signature(example))
  (obs_logits, obs_repr, weights) = model(example)
  assert tuple(obs_logits.shape) == (1, 3, 2, 3)
  # One-hot logits of the interleaved sequence, split back: the argmax at
  # the observation positions is the observations again.
  np.testing.assert_array_equal(np.argmax(obs_logits, axis=-1), obs)
  np.testing.assert_array_equal(obs_repr, obs)
  np.testing.assert_allclose(weights, [[[1, 1], [1, 1], [0, 0]]])


def test_serialized_model_seq_model_parts_and_predict_model():
  modes = []
  def seq_model(mode):
    modes.append(mode)
    return tl.Serial(tl.Embedding(4, 3), tl.Dense(4))
  model = su.SerializedModel(seq_model, discrete(2, 4), discrete(2, 4),
                             significance_decay=0.5, mode='eval')
  sig = shapes.ShapeDtype((1, 2), np.int32)
  model.init((sig, shapes.ShapeDtype((1, 1), np.int32), sig, sig))
  inner = model.sublayers[2]
  for ours, theirs in zip(tl_leaves(model.seq_model_weights),
                          tl_leaves(inner.weights)):
    np.testing.assert_array_equal(ours, theirs)
  assert len(tl_leaves(model.seq_model_weights)) == 3  # Embedding, Dense.
  model.make_predict_model()
  assert modes == ['eval', 'predict']
  with pytest.raises(AssertionError, match=r"mode must be 'train' or 'eval'"):
    su.SerializedModel(seq_model, discrete(2, 4), discrete(2, 4), 0.5,
                       mode='predict')


def tl_leaves(tree):
  return [np.asarray(w) for w in fastmath.tree_leaves(tree)]


def test_time_series_model():
  vocab = []
  def seq_model(mode, vocab_size):
    vocab.append(vocab_size)
    return OneHotModel(vocab_size)(mode)
  model = su.TimeSeriesModel(seq_model, low=-1.0, high=1.0, precision=3,
                             vocab_size=8)
  assert vocab == [8]
  srl = model.observation_serializer
  assert srl.representation_length == 3 and srl.vocab_size == 8
  # 0.5 -> u = 0.75 = 6/8.
  np.testing.assert_array_equal(srl.serialize(np.array([0.5])), [[6, 0, 0]])
  assert model.action_serializer.representation_length == 1


def test_analyze_action_space():
  assert su.analyze_action_space(gymnasium.spaces.Discrete(5)) == (1, 5)
  assert su.analyze_action_space(
      gymnasium.spaces.MultiDiscrete([3, 3, 3])) == (3, 3)
  with pytest.raises(AssertionError, match=r'same number of actions, got '
                                           r'nvec=\[2, 3\]'):
    su.analyze_action_space(gymnasium.spaces.MultiDiscrete([2, 3]))
  with pytest.raises(AssertionError, match=r'must be Discrete or '
                                           r'MultiDiscrete, got Box'):
    su.analyze_action_space(gymnasium.spaces.Box(0, 1, (2,)))


def test_raw_policy_shapes_and_heads():
  policy = su.wrap_policy(tl.Dense(5), gymnasium.spaces.Box(-1, 1, (2,)),
                          gymnasium.spaces.MultiDiscrete([4, 4]),
                          vocab_size=None)
  obs = np.ones((3, 6, 2), np.float32)
  act = np.zeros((3, 5, 2), np.int32)
  policy.init(shapes.signature((obs, act)))
  (log_probs, values) = policy((obs, act))
  assert tuple(log_probs.shape) == (3, 6, 2, 4)
  assert tuple(values.shape) == (3, 6)
  np.testing.assert_allclose(np.exp(log_probs).sum(-1), 1.0, rtol=1e-5)


def test_serialized_policy_feeds_shifted_symbols():
  seen = []
  def record(x):
    seen.append(x)
    return tl.one_hot(x, 4)
  policy = su.wrap_policy(tl.Fn('Record', record),
                          gymnasium.spaces.Discrete(4),
                          gymnasium.spaces.Discrete(4), vocab_size=4)
  obs = np.array([[1, 2, 3]])
  act = np.array([[2, 1]])
  policy.init(shapes.signature((obs, act)))
  (log_probs, values) = policy((obs, act))
  # obs/act interleaved, one dummy 0 action padded right, shifted right.
  np.testing.assert_array_equal(seen[-1], [[0, 1, 2, 2, 1, 3]])
  assert tuple(log_probs.shape) == (1, 3, 1, 4)
  assert tuple(values.shape) == (1, 3)


def test_serialized_policy_needs_one_symbol_per_control():
  with pytest.raises(ValueError, match=r'got 3 controls and 2 symbols'):
    su.SerializedPolicy(tl.Dense(2), 3, 4, discrete(4, 4),
                        multi_discrete([4, 4], 4))


def test_substitute_inner_policy():
  raw = [['sel'], ['outer'], ['dup'], ['heads']]
  assert su.substitute_inner_policy(raw, 'new', None) == [
      ['sel'], 'new', ['dup'], ['heads']]
  serialized = list(range(9))
  assert su.substitute_inner_policy(serialized, 'new', 16) == [
      0, 1, 2, 3, 'new', 5, 6, 7, 8]


def test_serialized_model_in_a_graph_with_unknown_batch():
  obs_srl = box(0.0, 1.0, (1,), vocab_size=4, precision=2)
  act_srl = discrete(2, vocab_size=4)
  model = su.SerializedModel(OneHotModel(4), obs_srl, act_srl, 0.5)
  obs = np.array([[[0.25], [0.5]]], np.float32)
  act = np.array([[1]], np.int32)
  mask = np.ones((1, 2), np.float32)
  model.init(shapes.signature((obs, act, obs, mask)))
  weights, state = model.weights, model.state
  f = tf.function(
      lambda o, a, m: model.pure_fn((o, a, o, m), weights, state, None)[0],
      input_signature=[tf.TensorSpec([None, 2, 1], tf.float32),
                       tf.TensorSpec([None, 1], tf.int32),
                       tf.TensorSpec([None, 2], tf.float32)],
      autograph=False)  # Converting the layer code would take seconds.
  (_, obs_repr, sig_weights) = f(obs, act, mask)
  np.testing.assert_array_equal(obs_repr, [[[1, 0], [2, 0]]])
  np.testing.assert_allclose(sig_weights, [[[1, 0.5], [1, 0.5]]])
  assert jnp.asarray(obs_repr).dtype == tf.int32
