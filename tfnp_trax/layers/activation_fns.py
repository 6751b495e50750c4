"""Element-wise activation layers."""

import math

from tfnp_trax import fastmath
from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.layers import base

__all__ = ['Relu', 'ParametricRelu', 'LeakyRelu', 'Elu', 'Selu', 'Gelu',
           'FastGelu', 'Sigmoid', 'Tanh', 'HardSigmoid', 'HardTanh',
           'Softplus', 'Exp', 'Log', 'Swish', 'Glu', 'ThresholdedLinearUnit']


def Relu():  # pylint: disable=invalid-name
  """max(x, 0)."""
  return base.Fn('Relu', lambda x: jnp.where(x <= 0, jnp.zeros_like(x), x))


def ParametricRelu(a=1.):  # pylint: disable=invalid-name
  """max(a * x, 0)."""
  return base.Fn('ParametricRelu',
                 lambda x: jnp.maximum(a * x, jnp.zeros_like(x)))


def LeakyRelu(a=0.01):  # pylint: disable=invalid-name
  """x for x >= 0, a * x otherwise."""
  return base.Fn('LeakyRelu', lambda x: jnp.where(x >= 0, x, a * x))


def Elu(a=1.):  # pylint: disable=invalid-name
  """x for x > 0, a * (exp(x) - 1) otherwise."""
  return base.Fn('Elu', lambda x: jnp.where(x > 0, x, a * jnp.expm1(x)))


def Selu(alpha=1.6732632423543772848170429916717,  # pylint: disable=invalid-name
         lmbda=1.0507009873554804934193349852946):
  """Scaled ELU: lmbda * (x if x > 0 else alpha * (exp(x) - 1))."""
  return base.Fn('Selu', lambda x: lmbda * jnp.where(
      x > 0, x, alpha * jnp.expm1(x)))


def Gelu():  # pylint: disable=invalid-name
  """x * Phi(x) with the exact normal CDF."""
  return base.Fn('Gelu', lambda x: x * 0.5 * (
      1.0 + fastmath.erf(x / math.sqrt(2.0))))


def FastGelu():  # pylint: disable=invalid-name
  """The tanh approximation of Gelu."""
  c = math.sqrt(2.0 / math.pi)
  return base.Fn('FastGelu', lambda x: 0.5 * x * (
      1.0 + jnp.tanh(c * (x + 0.044715 * x * x * x))))


def Sigmoid():  # pylint: disable=invalid-name
  return base.Fn('Sigmoid', fastmath.expit)


def Tanh():  # pylint: disable=invalid-name
  return base.Fn('Tanh', jnp.tanh)


def HardSigmoid():  # pylint: disable=invalid-name
  """max(0, min(1, 1 + x)), as in Trax."""
  return base.Fn('HardSigmoid', lambda x: jnp.maximum(
      jnp.zeros_like(x), jnp.minimum(jnp.ones_like(x), 1. + x)))


def HardTanh():  # pylint: disable=invalid-name
  """max(-1, min(1, x))."""
  return base.Fn('HardTanh', lambda x: jnp.maximum(
      -jnp.ones_like(x), jnp.minimum(jnp.ones_like(x), x)))


def Softplus():  # pylint: disable=invalid-name
  """log(1 + exp(x)), computed stably."""
  return base.Fn('Softplus', lambda x: jnp.logaddexp(x, jnp.zeros_like(x)))


def Exp():  # pylint: disable=invalid-name
  return base.Fn('Exp', jnp.exp)


def Log():  # pylint: disable=invalid-name
  return base.Fn('Log', jnp.log)


def Swish():  # pylint: disable=invalid-name
  """x * sigmoid(x)."""
  return base.Fn('Swish', lambda x: x * fastmath.expit(x))


def Glu():  # pylint: disable=invalid-name
  """Gated linear unit: splits the last axis into (a, b); a * sigmoid(b)."""
  def glu(x):
    if x.shape[-1] % 2:
      raise ValueError(f'Glu: last axis must be even to split into halves, '
                       f'got shape {tuple(x.shape)}.')
    a, b = jnp.split(x, 2, axis=-1)
    return a * fastmath.expit(b)
  return base.Fn('Glu', glu)


class ThresholdedLinearUnit(base.Layer):
  """TLU: max(x, tau) with a learned per-channel threshold tau (init 0)."""

  def __init__(self):
    super().__init__(name='ThresholdedLinearUnit')

  def forward(self, x):
    tau = self.weights
    if tau.shape[-1] != x.shape[-1]:
      raise ValueError(f'{self.name}: input channels {x.shape[-1]} do not '
                       f'match threshold size {tau.shape[-1]} (input shape '
                       f'{tuple(x.shape)}).')
    return jnp.maximum(x, tau.astype(x.dtype))

  def init_weights_and_state(self, input_signature):
    self.weights = jnp.zeros((input_signature.shape[-1],), dtype=jnp.float32)
