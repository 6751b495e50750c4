"""Gumbel-max choice of one category per row, shared by the sparse FF layers."""

from tfnp_trax import fastmath
from tfnp_trax.fastmath import numpy as jnp

__all__ = ['gumbel_argmax', 'log_softmax']


def log_softmax(logits):
  """Log-probabilities over the last axis (computed as in Trax: lse shift)."""
  return logits - fastmath.logsumexp(logits, axis=-1, keepdims=True)


def gumbel_argmax(rng, log_probs, temperature):
  """Index of argmax(log_probs + temperature * g), g ~ Gumbel(0, 1), int32.

  With temperature 1 this samples each row from softmax(log_probs) (the
  Gumbel-max trick); with temperature 0 it is the plain argmax. The noise
  is drawn for every call, as in Trax, even when temperature is 0.

  Args:
    rng: int32 [2] key.
    log_probs: float array; the choice is over its last axis.
    temperature: Python float scaling the noise.

  Returns:
    int32 indices of shape `log_probs.shape[:-1]`.
  """
  # Bounded away from 0 and 1 so both logs stay finite.
  u = fastmath.random.uniform(rng, tuple(log_probs.shape), jnp.float32,
                              1e-6, 1.0 - 1e-6)
  g = -jnp.log(-jnp.log(u))
  noisy = log_probs + (g * temperature).astype(log_probs.dtype)
  return jnp.argmax(noisy, axis=-1).astype(jnp.int32)
