"""Normalization layers."""

from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.layers import base

__all__ = ['LayerNorm']


class LayerNorm(base.Layer):
  """Normalizes each vector on the last axis to zero mean and unit variance.

  y = (x - mean) / sqrt(var + epsilon) * scale + bias, with the mean and the
  biased variance over the last axis. With `center=False` neither the mean
  is subtracted nor a bias added. Statistics are computed in float32 and the
  output keeps the input dtype.
  """

  def __init__(self, center=True, epsilon=1e-6):
    super().__init__(name='LayerNorm')
    self._center = center
    self._epsilon = epsilon

  def forward(self, x):
    scale, bias = self.weights
    if scale.shape[-1] != x.shape[-1]:
      raise ValueError(f'{self.name}: input last dim {x.shape[-1]} does not '
                       f'match scale size {scale.shape[-1]} (input shape '
                       f'{tuple(x.shape)}).')
    x32 = x.astype(jnp.float32)
    if self._center:
      x32 = x32 - jnp.mean(x32, axis=-1, keepdims=True)
    variance = jnp.mean(x32 * x32, axis=-1, keepdims=True)
    y = x32 / jnp.sqrt(variance + self._epsilon) * scale
    if self._center:
      y = y + bias
    return y.astype(x.dtype)

  def init_weights_and_state(self, input_signature):
    features = input_signature.shape[-1]
    scale = jnp.ones((features,), dtype=jnp.float32)
    bias = (jnp.zeros((features,), dtype=jnp.float32) if self._center else
            base.EMPTY_WEIGHTS)
    self.weights = (scale, bias)
