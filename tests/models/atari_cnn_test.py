"""AtariCnn, AtariCnnBody and FrameStackMLP against NumPy float64 forwards."""


import numpy as np
import pytest

from tests import _layer_testing as lt
from tests.layers import _np_conv
from tests.models import _np_ref as ref
from tfnp_trax import fastmath
from tfnp_trax import models
from tfnp_trax import shapes
from tfnp_trax.fastmath import numpy as jnp


def _frame_stack(x, n_frames):
  """[x_t, x_{t-1}, ..., x_{t-n+1}] on the last axis, zeros before t=0."""
  frames = []
  for k in range(n_frames):
    shifted = np.zeros_like(x)
    shifted[:, k:] = x[:, :x.shape[1] - k]
    frames.append(shifted)
  return np.concatenate(frames, axis=-1)


def _conv(x, w, b, stride, padding):
  """A conv over (B, T, H, W, C) with the (B, T) axes folded."""
  lead = x.shape[:2]
  x = x.reshape((-1,) + x.shape[2:])
  strides = (stride, stride)
  pads = (_np_conv.same_pads(x.shape[1:3], w.shape[:2], strides)
          if padding == 'SAME' else [(0, 0), (0, 0)])
  y = _np_conv.conv(x, w, strides, pads, (1, 1)) + b
  return y.reshape(lead + y.shape[1:])


def _cnn_reference(frames, weights, n_frames, convs):
  w = ref.leaves(weights)
  x = _frame_stack(frames / 255.0, n_frames)
  for stride, padding in convs:
    x = ref.relu(_conv(x, next(w), next(w), stride, padding))
  x = x.reshape(x.shape[:2] + (-1,))
  return ref.relu(x @ next(w) + next(w))


def _unit_weights(model, seed=1):
  r = np.random.default_rng(seed)
  model.weights = fastmath.nested_map(
      lambda a: jnp.asarray(r.normal(size=a.shape), jnp.float32),
      model.weights)


@pytest.mark.parametrize('mode', lt.MODES)
def test_atari_cnn_matches_numpy(mode, rng):
  frames = rng.integers(0, 256, size=(2, 3, 8, 8, 3)).astype(np.uint8)
  model = models.AtariCnn(n_frames=2, hidden_sizes=(2, 3), output_size=5)
  weights, _ = model.init(shapes.signature(frames))
  # Conv 5x5, 6 -> 2; conv 5x5, 2 -> 3; 8x8 -> 4x4 -> 2x2, so Dense 12 -> 5.
  assert ref.n_params(weights) == (150 * 2 + 2) + (50 * 3 + 3) + (
      12 * 5 + 5) == 520
  _unit_weights(model)
  got, _ = lt.run_layer(model, jnp.asarray(frames), mode)
  assert tuple(got.shape) == (2, 3, 5) and got.dtype == jnp.float32
  want = _cnn_reference(frames.astype(np.float64), model.weights, 2,
                        [(2, 'SAME'), (2, 'SAME')])
  np.testing.assert_allclose(np.asarray(got), want, rtol=1e-4, atol=1e-4)


def test_atari_cnn_body_matches_numpy(rng):
  frames = rng.integers(0, 256, size=(1, 2, 36, 36, 1)).astype(np.uint8)
  model = models.AtariCnnBody(n_frames=2, hidden_sizes=(2, 2, 2),
                              output_size=3)
  weights, _ = model.init(shapes.signature(frames))
  # 'VALID': 36 -> 8 -> 3 -> 1, so the Dense sees 1 * 1 * 2 features.
  assert ref.n_params(weights) == (64 * 2 * 2 + 2) + (16 * 2 * 2 + 2) + (
      9 * 2 * 2 + 2) + (2 * 3 + 3) == 371
  _unit_weights(model)
  got = model(jnp.asarray(frames))
  assert tuple(got.shape) == (1, 2, 3)
  want = _cnn_reference(frames.astype(np.float64), model.weights, 2,
                        [(4, 'VALID'), (2, 'VALID'), (1, 'VALID')])
  np.testing.assert_allclose(np.asarray(got), want, rtol=1e-4, atol=1e-4)


def test_default_shapes_and_weight_counts():
  cnn = models.AtariCnn()
  w, _ = cnn.init(shapes.ShapeDtype((1, 2, 16, 16, 3), jnp.uint8))
  # 5x5 convs 12 -> 32 -> 32 ('SAME', 16 -> 8 -> 4); Dense 512 -> 128.
  assert ref.n_params(w) == (300 * 32 + 32) + (800 * 32 + 32) + (
      512 * 128 + 128) == 100928
  body = models.AtariCnnBody()
  w, _ = body.init(shapes.ShapeDtype((1, 2, 84, 84, 1), jnp.uint8))
  # The DQN body on 84x84: 84 -> 20 -> 9 -> 7, Dense 3136 -> 512.
  assert ref.n_params(w) == (256 * 32 + 32) + (512 * 64 + 64) + (
      576 * 64 + 64) + (3136 * 512 + 512) == 1684128
  assert body.output_signature(
      shapes.ShapeDtype((1, 2, 84, 84, 1), jnp.uint8)).shape == (1, 2, 512)
  mlp = models.FrameStackMLP()
  w, _ = mlp.init(shapes.ShapeDtype((1, 5, 3)))
  assert ref.n_params(w) == (12 * 64 + 64) + (64 * 64 + 64) == 4992


@pytest.mark.parametrize('mode', lt.MODES)
def test_frame_stack_mlp_matches_numpy(mode, rng):
  x = rng.normal(size=(2, 5, 3)).astype(np.float32)
  model = models.FrameStackMLP(n_frames=3, hidden_sizes=(4,), output_size=2)
  weights, _ = model.init(shapes.signature(x))
  assert ref.n_params(weights) == (9 * 4 + 4) + (4 * 2 + 2) == 50
  got, _ = lt.run_layer(model, jnp.asarray(x), mode)
  w = ref.leaves(model.weights)
  h = ref.relu(_frame_stack(x.astype(np.float64), 3) @ next(w) + next(w))
  np.testing.assert_allclose(np.asarray(got), h @ next(w) + next(w),
                             rtol=1e-5, atol=1e-6)


def test_frame_stack_by_hand():
  x = np.array([[[1.], [2.], [3.]]], np.float32)  # (B=1, T=3, D=1)
  model = models.FrameStackMLP(n_frames=3, hidden_sizes=(), output_size=3)
  model.init(shapes.signature(x))
  eye = np.eye(3, dtype=np.float32)
  weights, _ = fastmath.tree_unflatten(
      [jnp.asarray(eye), jnp.zeros(3, jnp.float32)], model.weights)
  y = model(jnp.asarray(x), weights=weights)
  # Step t sees (x_t, x_{t-1}, x_{t-2}), zeros before the start.
  np.testing.assert_array_equal(np.asarray(y)[0],
                                [[1, 0, 0], [2, 1, 0], [3, 2, 1]])


def test_one_frame_needs_no_stacking():
  model = models.FrameStackMLP(n_frames=1, hidden_sizes=(), output_size=2)
  w, _ = model.init(shapes.ShapeDtype((1, 4, 3)))
  assert ref.n_params(w) == 3 * 2 + 2


def test_float_frames_keep_their_dtype(rng):
  frames = rng.uniform(0, 255, size=(1, 2, 8, 8, 1)).astype(np.float32)
  model = models.AtariCnn(n_frames=2, hidden_sizes=(2, 2), output_size=3)
  model.init(shapes.signature(frames))
  y32 = model(jnp.asarray(frames))
  y16 = model(jnp.asarray(frames).astype('bfloat16'))
  assert y32.dtype == jnp.float32 and y16.dtype.name == 'bfloat16'
  np.testing.assert_allclose(np.asarray(y16.astype(jnp.float32)),
                             np.asarray(y32), rtol=0.05, atol=0.05)


def test_bad_arguments_raise_clear_errors():
  with pytest.raises(ValueError, match=r'AtariCnn: hidden_sizes must have 2 '
                     r'entries, got \(32,\)'):
    models.AtariCnn(hidden_sizes=(32,))
  with pytest.raises(ValueError, match=r'AtariCnnBody: hidden_sizes must '
                     r'have 3 entries'):
    models.AtariCnnBody(hidden_sizes=(32, 64))
  with pytest.raises(ValueError, match=r'FrameStack: n_frames must be at '
                     r'least 1, got 0'):
    models.FrameStackMLP(n_frames=0)
