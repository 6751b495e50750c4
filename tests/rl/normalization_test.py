"""Running statistics and the Normalize layer against float64 NumPy."""

import gin
import numpy as np
import pytest
import tensorflow as tf

from tests import _layer_testing as lt
from tfnp_trax import fastmath
from tfnp_trax import gin_config
from tfnp_trax import layers as tl
from tfnp_trax import shapes
from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.rl import normalization as nz


def np_normalize(x, observations, epsilon):
  """(x - mean) / (std + epsilon), statistics over `observations` axis 0."""
  observations = np.asarray(observations, np.float64)
  mean, var = observations.mean(0), observations.var(0)
  return (np.asarray(x, np.float64) - mean) / (np.sqrt(var) + epsilon)


def welford(values, shape=()):
  state = nz.running_mean_and_variance_init(shape)
  for v in values:
    state = nz.running_mean_and_variance_update(v, state)
  return state


# -- Running mean and variance -----------------------------------------------


def test_init_gives_numpy_state_in_numpys_default_dtypes():
  mean, count = nz.running_mean_init((2, 3))
  assert isinstance(mean, np.ndarray) and mean.dtype == np.int64
  np.testing.assert_array_equal(mean, np.zeros((2, 3)))
  assert isinstance(count, np.ndarray) and count.dtype == np.int64
  assert count == 0
  np.testing.assert_array_equal(nz.running_mean_init((2,), 7.5).mean,
                                [7.5, 7.5])
  state = nz.running_mean_and_variance_init((4,))
  assert isinstance(state, nz.RunningMeanAndVarianceState)
  assert state.mean_state.mean.dtype == np.float64
  np.testing.assert_array_equal(nz.running_mean_and_variance_get_mean(state),
                                np.zeros(4))
  np.testing.assert_array_equal(
      nz.running_mean_and_variance_get_variance(state), np.ones(4))
  assert nz.running_mean_and_variance_get_count(state) == 0


def test_running_mean_matches_numpy_mean_after_every_value(rng):
  xs = rng.normal(size=(9, 3)) * 4.0 + 2.0
  state = nz.running_mean_init((3,))
  for i, x in enumerate(xs):
    state = nz.running_mean_update(x, state)
    np.testing.assert_allclose(nz.running_mean_get_mean(state),
                               xs[:i + 1].mean(0), rtol=1e-12)
    assert int(nz.running_mean_get_count(state)) == i + 1
  assert nz.running_mean_get_mean(state).dtype == tf.float64


def test_running_mean_hand_computed_and_plain_tuple_state():
  state = (np.array([10.0, 0.0]), np.array(3))  # A mean of 3 values.
  state = nz.running_mean_update(np.array([2.0, 4.0]), state)
  # (3 * [10, 0] + [2, 4]) / 4
  np.testing.assert_allclose(state.mean, [8.0, 1.0], rtol=1e-15)
  assert int(state.count) == 4


def test_welford_matches_numpy_over_concatenated_batches(rng):
  batches = [rng.normal(size=(n, 2, 3)) * 3.0 - 1.0 for n in (1, 4, 6)]
  state = welford(np.concatenate(batches), shape=(2, 3))
  values = np.concatenate(batches)
  np.testing.assert_allclose(nz.running_mean_and_variance_get_mean(state),
                             values.mean(0), rtol=1e-12)
  np.testing.assert_allclose(
      nz.running_mean_and_variance_get_variance(state), values.var(0),
      rtol=1e-12)
  assert int(nz.running_mean_and_variance_get_count(state)) == 11
  assert nz.running_mean_and_variance_get_variance(state).dtype == tf.float64


@pytest.mark.parametrize('values,mean,var', [
    ([5.0], 5.0, 0.0),            # One value: the initial 1 has weight 0.
    ([1.0, 3.0], 2.0, 1.0),
    ([1.0, 2.0, 3.0, 4.0], 2.5, 1.25),
    ([2.0, 2.0, 2.0], 2.0, 0.0),
])
def test_welford_hand_computed(values, mean, var):
  state = welford(values)
  assert float(nz.running_mean_and_variance_get_mean(state)) == mean
  assert float(nz.running_mean_and_variance_get_variance(state)) == var


def test_int32_counts_compute_in_float32_as_in_layers(rng):
  xs = rng.normal(size=(5, 4)).astype(np.float32)
  state = fastmath.nested_map(fastmath.canonicalize_array,
                              nz.running_mean_and_variance_init((4,)))
  assert state.mean_state.count.dtype == np.int32
  for x in xs:
    state = nz.running_mean_and_variance_update(jnp.asarray(x), state)
  assert state.mean_state.mean.dtype == tf.float32
  assert state.var_state.mean.dtype == tf.float32
  assert state.mean_state.count.dtype == tf.int32
  np.testing.assert_allclose(state.mean_state.mean, xs.mean(0), rtol=1e-5,
                             atol=1e-6)
  np.testing.assert_allclose(state.var_state.mean, xs.astype(np.float64).var(
      0), rtol=1e-5)


@pytest.mark.parametrize('mode', ['jit', 'xla'])
def test_update_compiled_matches_eager(mode, rng):
  xs = rng.normal(size=(3, 2)).astype(np.float32)
  state = fastmath.nested_map(fastmath.canonicalize_array,
                              nz.running_mean_and_variance_init((2,)))
  update = lt.compile_fn(nz.running_mean_and_variance_update, mode)
  eager = compiled = state
  for x in xs:
    eager = nz.running_mean_and_variance_update(x, eager)
    compiled = update(x, compiled)
  lt.assert_close(lt.leaves(compiled), lt.leaves(eager), rtol=1e-6, atol=0)


# -- Normalize ---------------------------------------------------------------


def test_normalize_defaults_and_gin_denylist():
  layer = nz.Normalize()
  assert layer.name == 'Normalize' and (layer.n_in, layer.n_out) == (1, 1)
  assert (layer._sample_limit, layer._epsilon, layer._mode) == (
      float('inf'), 1e-5, 'train')
  state = layer.init(shapes.ShapeDtype((2, 3, 4, 5)))[1]
  # Statistics per position of x.shape[2:], in the dtypes JAX holds them.
  assert state.mean_state.mean.shape == (4, 5)
  assert state.mean_state.mean.dtype == np.float32
  assert state.var_state.count.dtype == np.int32


@pytest.mark.parametrize('mode', lt.MODES)
def test_collect_adds_last_time_steps_then_normalizes(mode, rng):
  x = rng.normal(size=(3, 4, 2, 5)).astype(np.float32) * 2.0 + 1.0
  layer = lt.initialized(nz.Normalize(mode='collect', epsilon=1e-3), x)
  y, state = lt.run_layer(layer, x, mode)
  last = x[:, -1]
  lt.assert_close(y, np_normalize(x, last, 1e-3), rtol=1e-5, atol=1e-5)
  lt.assert_close(nz.running_mean_and_variance_get_mean(state),
                  last.astype(np.float64).mean(0), rtol=1e-5, atol=1e-6)
  lt.assert_close(nz.running_mean_and_variance_get_variance(state),
                  last.astype(np.float64).var(0), rtol=1e-5, atol=1e-6)
  assert int(nz.running_mean_and_variance_get_count(state)) == 3
  assert int(state.var_state.count) == 3
  assert [t.dtype for t in fastmath.tree_leaves(state)] == [
      tf.float32, tf.int32, tf.float32, tf.int32]
  assert y.dtype == tf.float32


@pytest.mark.parametrize('mode', lt.MODES)
def test_collect_accumulates_over_calls_up_to_sample_limit(mode, rng):
  xs = [rng.normal(size=(3, 2, 4)).astype(np.float32) for _ in range(3)]
  layer = lt.initialized(nz.Normalize(sample_limit=5, mode='collect'), xs[0])
  state = layer.state
  for x in xs:
    y, state = lt.run_layer(layer, x, mode, state=state)
  seen = np.concatenate([x[:, -1] for x in xs])[:5]  # Stops at the limit.
  assert int(nz.running_mean_and_variance_get_count(state)) == 5
  lt.assert_close(y, np_normalize(xs[-1], seen, 1e-5), rtol=1e-5, atol=1e-5)


def test_sample_limit_compares_count_below_limit(rng):
  x = rng.normal(size=(4, 1, 3)).astype(np.float32)
  layer = lt.initialized(nz.Normalize(sample_limit=2.5, mode='collect'), x)
  layer(x)
  # Counts 0, 1 and 2 are below 2.5, so three observations are added.
  assert int(nz.running_mean_and_variance_get_count(layer.state)) == 3
  lt.assert_close(nz.running_mean_and_variance_get_mean(layer.state),
                  x[:3, -1].mean(0), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize('layer_mode', ['train', 'eval', 'predict'])
@pytest.mark.parametrize('mode', lt.MODES)
def test_other_modes_normalize_without_changing_state(layer_mode, mode, rng):
  x = rng.normal(size=(2, 3, 4)).astype(np.float32) * 3.0
  observations = rng.normal(size=(6, 4)) * 2.0 + 5.0
  state = fastmath.nested_map(
      fastmath.canonicalize_array, welford(observations, shape=(4,)))
  layer = lt.initialized(nz.Normalize(epsilon=0.1, mode=layer_mode), x)
  y, new_state = lt.run_layer(layer, x, mode, state=state)
  lt.assert_close(y, np_normalize(x, observations, 0.1), rtol=1e-5,
                  atol=1e-5)
  lt.assert_close(lt.leaves(new_state), lt.leaves(state), rtol=0, atol=0)


def test_train_mode_on_fresh_state_divides_by_one_plus_epsilon(rng):
  x = rng.normal(size=(2, 3, 4)).astype(np.float32)
  layer = lt.initialized(nz.Normalize(), x)
  before = lt.leaves(layer.state)
  y = layer(x)
  lt.assert_close(y, x / (1.0 + 1e-5), rtol=1e-6, atol=0)
  lt.assert_close(lt.leaves(layer.state), before, rtol=0, atol=0)


def test_collect_with_batch_size_known_only_when_run(rng):
  x = rng.normal(size=(5, 2, 3)).astype(np.float32)
  layer = lt.initialized(nz.Normalize(mode='collect'), x)
  weights, state = layer.weights, layer.state

  @tf.function(input_signature=[tf.TensorSpec([None, 2, 3], tf.float32)])
  def step(x):
    return layer.pure_fn(x, weights, state, None)
  y, new_state = step(x)
  assert int(nz.running_mean_and_variance_get_count(new_state)) == 5
  lt.assert_close(y, np_normalize(x, x[:, -1], 1e-5), rtol=1e-5, atol=1e-5)


def test_collect_keeps_state_dtypes_for_integer_observations():
  x = np.arange(24, dtype=np.uint8).reshape(2, 3, 4)
  layer = lt.initialized(nz.Normalize(mode='collect', epsilon=0.0), x)
  y = layer(x)
  assert y.dtype == tf.float32
  assert [t.dtype for t in fastmath.tree_leaves(layer.state)] == [
      tf.float32, tf.int32, tf.float32, tf.int32]
  lt.assert_close(y, np_normalize(x, x[:, -1], 0.0), rtol=1e-6, atol=1e-6)


def test_rank_one_input_normalizes_outside_collect():
  # Statistics are then scalars (input_signature.shape[2:] is ()).
  x = np.array([1.0, -2.0, 4.0], np.float32)
  layer = lt.initialized(nz.Normalize(epsilon=0.0), x)
  lt.assert_close(layer(x), x, rtol=0, atol=0)


def test_collect_rejects_input_without_time_axis():
  x = np.ones((3,), np.float32)
  layer = lt.initialized(nz.Normalize(mode='collect'), x)
  with pytest.raises(tl.LayerError, match=(
      r"Normalize: mode='collect' takes observations shaped \(batch, time, "
      r'\.\.\.\).*got an input of shape \(3,\)')):
    layer(x)


def test_collect_rejects_observations_of_another_shape():
  layer = nz.Normalize(mode='collect')
  layer.init(shapes.ShapeDtype((2, 3, 4)))
  with pytest.raises(tl.LayerError, match=(
      r"Normalize: mode='collect' got observations of shape \(5,\) \(input "
      r'shape \(2, 3, 5\) .*statistics of shape \(4,\)')):
    layer(np.ones((2, 3, 5), np.float32))


def test_rejects_input_that_does_not_broadcast_with_statistics():
  layer = nz.Normalize(mode='eval')
  layer.init(shapes.ShapeDtype((2, 3, 4)))
  with pytest.raises(tl.LayerError, match=(
      r'Normalize: input shape \(2, 3, 5\) does not broadcast with '
      r'statistics of shape \(4,\)')):
    layer(np.ones((2, 3, 5), np.float32))
  # A size-1 axis broadcasts, as NumPy (and Trax) allow.
  assert layer(np.ones((2, 3, 1), np.float32)).shape == (2, 3, 4)


def test_gin_configures_normalize_under_trax_names():
  gin.clear_config()
  try:
    gin_config.parse_config([
        'import trax.rl',
        'trax.rl.normalization.Normalize.sample_limit = 30000',
        'Normalize.epsilon = 0.5',
        'LayerNormSquash.width = 7',
    ])
    layer = nz.Normalize(mode='collect')  # Direct calls see the bindings.
    assert (layer._sample_limit, layer._epsilon, layer._mode) == (
        30000, 0.5, 'collect')
    assert nz.LayerNormSquash('eval').sublayers[0].name == 'Dense_7'
    with pytest.raises(ValueError, match='denylist'):
      gin.bind_parameter('trax.rl.normalization.Normalize.mode', 'collect')
  finally:
    gin.clear_config()


# -- LayerNormSquash ---------------------------------------------------------


def test_layer_norm_squash_is_dense_layer_norm_tanh(rng):
  x = rng.normal(size=(3, 5)).astype(np.float32)
  layer = nz.LayerNormSquash('train', width=4)
  assert [l.name for l in layer.sublayers[:2]] == ['Dense_4', 'LayerNorm']
  layer.init(shapes.signature(x))
  (w, b), (scale, bias), _ = lt.to_numpy64(layer.weights)
  h = x.astype(np.float64) @ w + b
  h = (h - h.mean(-1, keepdims=True)) / np.sqrt(h.var(-1, keepdims=True) +
                                                1e-6)
  lt.assert_close(layer(x), np.tanh(h * scale + bias), rtol=1e-5, atol=1e-5)
