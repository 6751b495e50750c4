"""Tests for the Layer contract: Layer, PureLayer, Fn and LayerError."""

import inspect
import re

import numpy as np
import pytest

from tests import _layer_testing as lt
from tfnp_trax import fastmath
from tfnp_trax import shapes
from tfnp_trax.fastmath import numpy as jnp
import tfnp_trax.layers as tl


def _x(*shape, seed=0):
  return np.random.default_rng(seed).normal(size=shape).astype(np.float32)


class Affine(tl.Layer):
  """y = x * scale + shift, with a call counter as state."""

  def forward(self, x):
    scale, shift = self.weights
    self.state = self.state + 1
    return x * scale + shift

  def init_weights_and_state(self, input_signature):
    d = input_signature.shape[-1]
    scale = fastmath.random.uniform(self.rng, (d,), minval=0.5, maxval=1.5)
    self.weights = (scale, jnp.zeros((d,), dtype=jnp.float32))
    self.state = jnp.asarray(0, dtype=jnp.int32)


class Noise(tl.Layer):
  """Adds uniform noise drawn from the layer's rng."""

  def forward(self, x):
    return x + fastmath.random.uniform(self.rng, x.shape)


# -- init, weights, state, rng -------------------------------------------------

def test_init_returns_weights_and_state():
  layer = Affine()
  weights, state = layer.init(shapes.ShapeDtype((2, 3)))
  assert len(weights) == 2 and weights[0].shape == (3,)
  assert int(state) == 0
  assert layer.weights is weights and layer.state is state
  assert layer.initialized


def test_a_failed_init_leaves_no_cached_sublayers_behind():
  # Serial inits its sublayers with use_cache=True; a failure part way must
  # not leave them answering the next init with cache markers.
  first, second = Affine(), Affine()
  bad = tl.Fn('Bad', lambda x: jnp.reshape(x, (7, 7)))
  with pytest.raises(tl.LayerError, match='Bad'):
    tl.Serial(first, second, bad).init(shapes.ShapeDtype((2, 3)))
  weights, _ = tl.Serial(first, second).init(shapes.ShapeDtype((2, 3)))
  for w in weights:
    assert isinstance(w, tuple) and w[0].shape == (3,)


def test_init_with_rng_is_deterministic():
  sig = shapes.ShapeDtype((3,))
  w1, _ = Affine().init(sig, rng=fastmath.random.get_prng(1))
  w2, _ = Affine().init(sig, rng=fastmath.random.get_prng(1))
  w3, _ = Affine().init(sig, rng=fastmath.random.get_prng(2))
  np.testing.assert_array_equal(w1[0], w2[0])
  assert not np.array_equal(w1[0], w3[0])


def test_weights_and_state_setters_and_call():
  layer = Affine()
  layer.init(shapes.ShapeDtype((3,)))
  layer.weights = (np.full(3, 2., np.float32), np.ones(3, np.float32))
  layer.state = jnp.asarray(10, dtype=jnp.int32)
  x = _x(3)
  np.testing.assert_allclose(layer(x), 2 * x + 1, rtol=1e-6)
  assert int(layer.state) == 11  # __call__ keeps the new state.
  layer(x)
  assert int(layer.state) == 12
  y = layer(x, weights=(np.zeros(3, np.float32), np.zeros(3, np.float32)),
            state=jnp.asarray(0, dtype=jnp.int32))
  np.testing.assert_array_equal(y, np.zeros(3))
  assert int(layer.state) == 1
  np.testing.assert_array_equal(layer.weights[0], np.full(3, 2.))


def test_rng_setter_splits_over_sublayers():
  a, b = Noise(), Noise()
  model = tl.Serial(a, b)
  key = fastmath.random.get_prng(7)
  model.rng = key
  np.testing.assert_array_equal(model.rng, key)
  keys = fastmath.random.split(key, 2)
  np.testing.assert_array_equal(a.rng, keys[0])
  np.testing.assert_array_equal(b.rng, keys[1])


def test_default_rng_is_an_int32_key_fixed_per_layer():
  layer = Noise()
  assert layer.rng.dtype == jnp.int32 and tuple(layer.rng.shape) == (2,)
  np.testing.assert_array_equal(layer.rng, layer.rng)
  np.testing.assert_array_equal(layer(np.zeros(2, np.float32)),
                                layer(np.zeros(2, np.float32)))


def test_pure_fn_restores_weights_state_and_rng():
  layer = Affine()
  layer.init(shapes.ShapeDtype((3,)))
  weights, state, rng = layer.weights, layer.state, layer.rng
  other = (np.full(3, 3., np.float32), np.zeros(3, np.float32))
  y, new_state = layer.pure_fn(_x(3), other, jnp.asarray(5, dtype=jnp.int32),
                               fastmath.random.get_prng(9))
  np.testing.assert_allclose(y, 3 * _x(3), rtol=1e-6)
  assert int(new_state) == 6
  assert layer.weights is weights and layer.state is state
  np.testing.assert_array_equal(layer.rng, rng)


def test_failed_call_restores_weights():
  layer = Affine()
  layer.init(shapes.ShapeDtype((3,)))
  weights = layer.weights
  with pytest.raises(tl.LayerError):
    layer.pure_fn(_x(4), (np.ones(5, np.float32), np.ones(5, np.float32)),
                  layer.state, layer.rng)
  assert layer.weights is weights


@pytest.mark.parametrize('mode', lt.MODES)
def test_pure_fn_compiled(mode):
  layer = Affine()
  layer.init(shapes.ShapeDtype((2, 3)))
  x = _x(2, 3)
  y, state = lt.run_layer(layer, x, mode)
  scale = np.asarray(layer.weights[0], np.float64)
  np.testing.assert_allclose(y, x * scale, rtol=1e-6)
  assert int(state) == 1
  # Tracing leaves the layer's own weights concrete.
  assert isinstance(np.asarray(layer.weights[0]), np.ndarray)


def test_output_signature_keeps_weights_concrete():
  layer = Affine()
  layer.init(shapes.ShapeDtype((2, 3)))
  weights = layer.weights
  assert layer.output_signature(shapes.ShapeDtype((5, 3))) == (
      shapes.ShapeDtype((5, 3)))
  assert layer.weights is weights
  np.testing.assert_allclose(layer(_x(2, 3)), _x(2, 3) * weights[0],
                             rtol=1e-6)


# -- Fn and PureLayer --------------------------------------------------------

def test_fn_counts_inputs_from_signature():
  assert tl.Fn('One', lambda x: x).n_in == 1
  two = tl.Fn('Two', lambda x, y: x - y)
  assert (two.n_in, two.n_out) == (2, 1)
  defaults = tl.Fn('Defaults', lambda x, y, *, scale=2.: (x + y) * scale)
  assert defaults.n_in == 2
  three_out = tl.Fn('ThreeOut', lambda x: (x, 2 * x, 3 * x), n_out=3)
  assert (three_out.n_in, three_out.n_out) == (1, 3)
  x, y = _x(2), _x(2, seed=1)
  np.testing.assert_allclose(two((x, y)), x - y)
  np.testing.assert_allclose(defaults((x, y)), 2 * (x + y), rtol=1e-6)
  out = three_out(x)
  np.testing.assert_allclose(out[2], 3 * x, rtol=1e-6)
  assert tl.Fn('Zero', lambda: jnp.zeros((1,))).n_in == 0


def test_fn_rejects_varargs():
  # Trax's Fn (trax/layers/base.py) rejects *args and **kwargs; keyword-only
  # parameters are not inputs and are not checked.
  with pytest.raises(ValueError, match=r'Fn Bad: function has variable args '
                     r'\(not allowed\): \*xs'):
    tl.Fn('Bad', lambda *xs: xs[0])
  with pytest.raises(ValueError, match=r'Fn Kw: function has keyword '
                     r'arguments \(not allowed\): \*\*kw'):
    tl.Fn('Kw', lambda x, **kw: x)
  assert tl.Fn('KwOnly', lambda x, *, scale: x * scale).n_in == 1
  assert tl.Fn('KwDefault', lambda x, *, scale=2.: x * scale).n_in == 1


def test_fn_wrong_number_of_inputs():
  two = tl.Fn('Two', lambda x, y: x - y)
  with pytest.raises(tl.LayerError, match=r'Two: expects 2 inputs \(a tuple '
                     r'of 2 arrays\) but got 1'):
    two(_x(2))
  with pytest.raises(tl.LayerError, match=r'Fn Two: expected 2 inputs, got 3'):
    two((_x(2), _x(2), _x(2)))


def test_pure_layer():
  layer = tl.PureLayer(lambda xs: (xs[0] * xs[1], xs[0]), n_in=2, n_out=2,
                       name='MulKeep')
  assert (layer.n_in, layer.n_out, layer.name) == (2, 2, 'MulKeep')
  assert layer.init((shapes.ShapeDtype((2,)),) * 2) == ((), ())
  out = layer((_x(2), _x(2, seed=1)))
  np.testing.assert_allclose(out[0], _x(2) * _x(2, seed=1), rtol=1e-6)


def test_repr():
  assert repr(tl.Fn('Two', lambda x, y: x)) == 'Two_in2'
  assert repr(tl.Dup()) == 'Dup_out2'
  # As in Trax, Relu() comes wrapped in (unprinted) shape checks.
  assert repr(tl.Relu()) == 'Serial[\n  Relu\n]'
  model = tl.Serial(tl.Dup(), tl.Serial(tl.Add(), tl.Dup()))
  assert repr(model) == ('Serial_out2[\n  Dup_out2\n  Serial_in2_out2[\n'
                         '    Add_in2\n    Dup_out2\n  ]\n]')


# -- LayerError ----------------------------------------------------------------

def test_layer_error_names_layer_place_and_shapes():
  line = inspect.currentframe().f_lineno + 1
  layer = tl.Fn('Broken', lambda x: x @ jnp.ones((5, 2), dtype=jnp.float32))
  with pytest.raises(tl.LayerError) as info:
    layer(np.zeros((4, 3), np.float32))
  msg = str(info.value)
  assert 'Exception passing through layer Broken (in pure_fn)' in msg
  assert f'{__file__}:{line}' in msg
  assert 'layer input shapes: ShapeDtype{shape:(4, 3), dtype:float32}' in msg
  assert info.value.layer_name == 'Broken'


def test_layer_error_from_init_and_nested_layer():
  line = inspect.currentframe().f_lineno + 1
  inner = tl.Fn('Inner', lambda x: x[:, :, 0])
  model = tl.Serial(tl.Dup(), tl.Add(), inner)
  with pytest.raises(tl.LayerError, match=re.escape(
      f'layer Inner (in pure_fn):\n  layer created in file '
      f'{__file__}:{line}')):
    model.init(shapes.ShapeDtype((2, 3)))


def test_uninitialized_layer_hint():
  with pytest.raises(tl.LayerError, match=r'hint: this layer was never '
                     r'initialized: call layer.init\(shapes.signature\(x\)\)'):
    Affine()(np.zeros(3, np.float32))


def test_dense_wrong_input_width_error():
  dense = tl.Dense(4)
  dense.init(shapes.ShapeDtype((2, 5)))
  with pytest.raises(tl.LayerError, match=r'Dense_4: input last dim 3 does '
                     r'not match weights in_dim 5 \(input shape \(2, 3\)'):
    tl.Serial(dense)(np.zeros((2, 3), np.float32))


# -- Custom backward -----------------------------------------------------------

class IdWithZeroGrad(tl.Layer):

  def forward(self, x):
    return x

  @property
  def has_backward(self):
    return True

  def backward(self, inputs, output, grad, weights, state, new_state, rng):
    return jnp.zeros_like(grad), ()


class IdWithIdentityGrad(IdWithZeroGrad):

  def backward(self, inputs, output, grad, weights, state, new_state, rng):
    return grad, ()


class ScaleWithDoubledWeightGrad(tl.Layer):
  """y = x * w; backward reports twice the true weight gradient."""

  def forward(self, x):
    return x * self.weights

  def init_weights_and_state(self, input_signature):
    self.weights = jnp.full(input_signature.shape[-1:], 1.5, dtype=jnp.float32)

  @property
  def has_backward(self):
    return True

  def backward(self, inputs, output, grad, weights, state, new_state, rng):
    return grad * weights, 2. * jnp.sum(grad * inputs, axis=0)


def test_custom_zero_grad():
  layer = IdWithZeroGrad()
  rng = fastmath.random.get_prng(0)
  input_signature = shapes.ShapeDtype((9, 17))
  random_input = fastmath.random.uniform(rng, input_signature.shape,
                                         minval=-1.0, maxval=1.0)
  layer.init(input_signature)
  f = lambda x: jnp.mean(layer(x))
  grad = fastmath.grad(f)(random_input)
  assert grad.shape == (9, 17)
  assert sum(sum(grad * grad)) == 0.0


@pytest.mark.parametrize('mode', lt.MODES)
def test_identity_backward_matches_plain_layer(mode):
  x = _x(3, 4)

  def grad_of(layer):
    layer.init(shapes.signature(x))
    loss = lambda a: jnp.sum(jnp.sin(layer.pure_fn(
        a, layer.weights, layer.state, layer.rng)[0]))
    return lt.compile_fn(fastmath.grad(loss), mode)(x)

  custom = grad_of(IdWithIdentityGrad())
  plain = grad_of(tl.Fn('Id', lambda a: a))
  np.testing.assert_allclose(custom, plain, rtol=1e-6)
  np.testing.assert_allclose(custom, np.cos(x.astype(np.float64)), rtol=1e-6)


@pytest.mark.parametrize('mode', lt.MODES)
def test_custom_backward_with_weights(mode):
  layer = ScaleWithDoubledWeightGrad()
  x, ct = _x(4, 3), _x(4, 3, seed=1)
  layer.init(shapes.signature(x))

  def loss(a, w):
    y, _ = layer.pure_fn(a, w, layer.state, layer.rng)
    return jnp.sum(y * ct)

  gx, gw = lt.compile_fn(fastmath.grad(loss, argnums=(0, 1)), mode)(
      x, layer.weights)
  np.testing.assert_allclose(gx, 1.5 * ct, rtol=1e-6)
  np.testing.assert_allclose(gw, 2. * np.sum(ct.astype(np.float64) * x, 0),
                             rtol=1e-5)
  np.testing.assert_allclose(layer(x), 1.5 * x, rtol=1e-6)


# -- Tracing -------------------------------------------------------------------

def test_jitted_model_traces_once_for_same_shapes():
  model = tl.Serial(tl.Dense(3), tl.Relu(), tl.Dense(2))
  model.init(shapes.ShapeDtype((2, 4)))
  traces = [0]

  def two_calls(x, weights, state, rng):
    traces[0] += 1  # Runs only while tracing.
    y, state = model.pure_fn(x, weights, state, rng)
    z, state = model.pure_fn(2. * x, weights, state, rng)
    return y + z

  f = fastmath.jit(two_calls)
  for seed in range(3):
    weights = fastmath.nested_map(lambda w: w + seed, model.weights)
    out = f(_x(2, 4, seed=seed), weights, model.state,
            fastmath.random.get_prng(seed))
    assert out.shape == (2, 2)
  assert traces[0] == 1


@pytest.mark.parametrize('mode', ['jit', 'xla'])
def test_calling_model_inside_jit_traces_once_and_leaves_it_usable(mode):
  model = tl.Serial(tl.Dense(3), tl.Relu())
  model.init(shapes.ShapeDtype((2, 4)))
  traces = [0]

  def two_calls(x):
    traces[0] += 1  # Runs only while tracing.
    return model(x) + model(2. * x)

  f = lt.compile_fn(two_calls, mode)
  for seed in range(3):
    x = _x(2, 4, seed=seed)
    np.testing.assert_allclose(f(x), model(x) + model(2. * x), rtol=1e-5,
                               atol=1e-6)
  assert traces[0] == 1
  # The model holds no tensors of the finished trace: eager calls still work.
  np.testing.assert_array_equal(np.asarray(model.rng).shape, (2,))


_SETATTR_MESSAGE = (
    "Affine: cannot set public attribute 'weighs'; layers accept only "
    'weights, state, rng (and private _names). Misspelled? A subclass that '
    'needs another public attribute lists it in _settable_attrs().')


def test_setting_unknown_public_attribute_raises():
  layer = Affine()
  layer.init(shapes.signature(_x(2, 3)))
  with pytest.raises(ValueError, match=re.escape(_SETATTR_MESSAGE)):
    layer.weighs = layer.weights  # The typo the guard exists for.
  assert not hasattr(layer, 'weighs')
  # Read-only properties refuse assignment the same way, as in Trax.
  with pytest.raises(ValueError, match="cannot set public attribute 'name'"):
    layer.name = 'Renamed'
  assert layer.name == 'Affine'


def test_settable_and_private_attributes_are_assignable():
  layer = Affine()
  weights, state = layer.init(shapes.signature(_x(2, 3)))
  layer.weights = weights
  layer.state = state
  layer.rng = fastmath.random.get_prng(1)
  # pylint: disable=protected-access
  layer._note = 'private names are free'
  assert layer._note == 'private names are free'


def test_subclass_can_allow_more_public_attributes():

  class WithCheckpoint(tl.Layer):

    def _settable_attrs(self):
      return (*super()._settable_attrs(), 'init_checkpoint')

  layer = WithCheckpoint()
  layer.init_checkpoint = '/tmp/ckpt'
  assert layer.init_checkpoint == '/tmp/ckpt'
  with pytest.raises(ValueError, match="'checkpoint'"):
    layer.checkpoint = '/tmp/ckpt'
