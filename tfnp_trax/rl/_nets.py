"""Default networks and optimizers of the agents, and batch shapes."""

# Layer constructors are CamelCase, as in Trax.
# pylint: disable=invalid-name

import numpy as onp

from tfnp_trax import layers as tl
from tfnp_trax import models
from tfnp_trax import optimizers

__all__ = ['MLPBody', 'default_policy_model', 'default_value_model',
           'default_joint_model', 'default_optimizer', 'zeros_like_step']


def MLPBody(layer_widths=(64, 64), mode='train'):
  """Dense + Tanh layers: a small body that works well for control tasks."""
  del mode
  layers = []
  for width in layer_widths:
    layers += [tl.Dense(width), tl.Tanh()]
  return tl.Serial(*layers)


def default_policy_model(policy_distribution, mode='train'):
  return models.Policy(policy_distribution, body=MLPBody, mode=mode)


def default_value_model(mode='train'):
  return models.Value(body=MLPBody, mode=mode)


def default_joint_model(policy_distribution, mode='train'):
  """A shared 64-64 tanh trunk with Dense policy and value heads."""
  return models.PolicyAndValue(policy_distribution, body=MLPBody, mode=mode)


def default_optimizer(learning_rate=3e-4):
  return optimizers.Adam(learning_rate, weight_decay_rate=0.0,
                         clip_grad_norm=0.5)


def zeros_like_step(space, leading):
  """A zero array shaped like `leading` steps of elements of `space`."""
  shape = tuple(leading) + tuple(space.shape or ())
  dtype = onp.int32 if onp.issubdtype(space.dtype, onp.integer) else \
      onp.float32
  return onp.zeros(shape, dtype)
