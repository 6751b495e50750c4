"""Element-wise activation layers.

Each layer returns its input's dtype. Low-precision floats (bfloat16,
float16) are computed in float32 and rounded back, because TensorFlow's NumPy
API would otherwise promote them to float64 in functions like `tanh`.

As in Trax, the constructors wrap each layer in a shape check (`assert_shape`,
checked at trace time, adding no ops), so `Relu()` prints as `Serial[Relu]`
and its weights are `((), (), ())`, matching Trax's printouts and trees.
"""

import math

from tfnp_trax import fastmath
from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.layers import _dtypes
from tfnp_trax.layers import base
from tfnp_trax.layers.assert_shape import assert_shape

__all__ = ['Relu', 'ParametricRelu', 'LeakyRelu', 'Elu', 'Selu', 'Gelu',
           'FastGelu', 'Sigmoid', 'Tanh', 'HardSigmoid', 'HardTanh',
           'Softplus', 'Exp', 'Log', 'Swish', 'Glu', 'ThresholdedLinearUnit']


def _activation(name, f):
  return base.Fn(name, _dtypes.dtype_preserving(f))


@assert_shape('...->...')
def Relu():  # pylint: disable=invalid-name
  """f(x) = x for x > 0, else 0.

  Example:
    >>> Relu()(jnp.array([-1., 2.], dtype=jnp.float32)).numpy()
    array([0., 2.], dtype=float32)
  """
  # Trax's where(x <= 0, 0, x), as one fusable Relu op in every dtype that
  # has one (bfloat16 included, so no float32 round trip).
  return base.Fn('Relu', fastmath.relu)


@assert_shape('...->...')
def ParametricRelu(a=1.):  # pylint: disable=invalid-name
  """f(x) = max(a * x, 0): slope `a` for positive inputs."""
  return _activation('ParametricRelu',
                     lambda x: jnp.maximum(a * x, jnp.zeros_like(x)))


@assert_shape('...->...')
def LeakyRelu(a=0.01):  # pylint: disable=invalid-name
  """f(x) = x for x >= 0, else a * x."""
  return _activation('LeakyRelu', lambda x: jnp.where(x >= 0, x, a * x))


@assert_shape('...->...')
def Elu(a=1.):  # pylint: disable=invalid-name
  """f(x) = x for x > 0, else a * (exp(x) - 1)."""
  return _activation('Elu', lambda x: jnp.where(x > 0, x, a * jnp.expm1(x)))


@assert_shape('...->...')
def Selu(alpha=1.6732632423543772848170429916717,  # pylint: disable=invalid-name
         lmbda=1.0507009873554804934193349852946):
  """f(x) = lmbda * x for x > 0, else lmbda * alpha * (exp(x) - 1)."""
  return _activation('Selu', lambda x: lmbda * jnp.where(
      x > 0, x, alpha * jnp.expm1(x)))


@assert_shape('...->...')
def Gelu():  # pylint: disable=invalid-name
  """f(x) = x / 2 * (1 + erf(x / sqrt(2))), the exact Gaussian error unit."""
  return _activation('Gelu', lambda x: x * 0.5 * (
      1.0 + fastmath.erf(x / math.sqrt(2.0))))


@assert_shape('...->...')
def FastGelu():  # pylint: disable=invalid-name
  """f(x) = x / 2 * (1 + tanh(a * x * (1 + b * x^2))), a = sqrt(2 / pi).

  The tanh approximation of `Gelu`, with b = 0.044715.
  """
  a = math.sqrt(2.0 / math.pi)
  return _activation('FastGelu', lambda x: 0.5 * x * (
      1.0 + jnp.tanh(a * x * (1.0 + 0.044715 * x * x))))


@assert_shape('...->...')
def Sigmoid():  # pylint: disable=invalid-name
  """f(x) = 1 / (1 + exp(-x))."""
  return _activation('Sigmoid', fastmath.expit)


@assert_shape('...->...')
def Tanh():  # pylint: disable=invalid-name
  """f(x) = tanh(x)."""
  return _activation('Tanh', jnp.tanh)


@assert_shape('...->...')
def HardSigmoid():  # pylint: disable=invalid-name
  """f(x) = max(0, min(1, 1 + x)): a piecewise-linear sigmoid, as in Trax."""
  # A weak Python int: integer inputs stay integer, as in Trax.
  return _activation('HardSigmoid', lambda x: jnp.maximum(
      jnp.zeros_like(x), jnp.minimum(jnp.ones_like(x), 1 + x)))


@assert_shape('...->...')
def HardTanh():  # pylint: disable=invalid-name
  """f(x) = max(-1, min(1, x))."""
  return _activation('HardTanh', lambda x: jnp.maximum(
      -jnp.ones_like(x), jnp.minimum(jnp.ones_like(x), x)))


@assert_shape('...->...')
def Softplus():  # pylint: disable=invalid-name
  """f(x) = log(1 + exp(x)), computed without overflow."""
  return _activation('Softplus',
                     lambda x: jnp.logaddexp(x, jnp.zeros_like(x)))


@assert_shape('...->...')
def Exp():  # pylint: disable=invalid-name
  """f(x) = exp(x)."""
  return _activation('Exp', jnp.exp)


@assert_shape('...->...')
def Log():  # pylint: disable=invalid-name
  """f(x) = log(x)."""
  return _activation('Log', jnp.log)


@assert_shape('...->...')
def Swish():  # pylint: disable=invalid-name
  """f(x) = x * sigmoid(x)."""
  return _activation('Swish', lambda x: x * fastmath.expit(x))


@assert_shape('...a->...b')
def Glu():  # pylint: disable=invalid-name
  """Gated linear unit: splits the last axis into halves (a, b); a * sigmoid(b).

  Raises:
    ValueError: at call time, if the last axis has odd size.
  """
  def glu(x):
    if x.shape[-1] % 2:
      raise ValueError(f'Glu: last axis must be even to split into halves, '
                       f'got shape {tuple(x.shape)}.')
    a, b = jnp.split(x, 2, axis=-1)
    return a * fastmath.expit(b)
  return _activation('Glu', glu)


class ThresholdedLinearUnit(base.Layer):
  """f(x) = max(x, tau) with one learned scalar threshold tau (init 0).

  From "Filter Response Normalization Layer" (https://arxiv.org/abs/1911.09737),
  where it follows `FilterResponseNorm`. As in Trax the weight is a float32
  scalar; it is cast to the input's dtype, so bfloat16 stays bfloat16.

  Example:
    >>> layer = ThresholdedLinearUnit()
    >>> _ = layer.init(shapes.ShapeDtype((2,)))
    >>> layer(jnp.array([-1., 2.], dtype=jnp.float32)).numpy()
    array([0., 2.], dtype=float32)
  """

  def __init__(self):
    super().__init__(name='ThresholdedLinearUnit')

  def forward(self, x):
    tau = self.weights
    if getattr(tau, 'ndim', None) != 0:
      raise ValueError(f'{self.name}: the threshold weight must be a scalar, '
                       f'got {tau!r}. Call layer.init(...) first.')
    # Float inputs keep their dtype (bfloat16 stays bfloat16); integer ones
    # meet the float32 threshold in float32, as jnp.maximum promotes in Trax.
    dtype = x.dtype if fastmath.is_float(x) else tau.dtype
    return jnp.maximum(x.astype(dtype), tau.astype(dtype))

  def init_weights_and_state(self, input_signature):
    del input_signature
    self.weights = jnp.zeros((), dtype=jnp.float32)
