"""tfnp_trax.rl: RL objectives, advantage estimators, tasks and agents."""

import gin

from tfnp_trax.rl import advantages
from tfnp_trax.rl import awr
from tfnp_trax.rl import distributions
from tfnp_trax.rl import envs
from tfnp_trax.rl import losses
from tfnp_trax.rl import normalization
from tfnp_trax.rl import policy_metrics
from tfnp_trax.rl import policy_tasks
from tfnp_trax.rl import rl_layers
from tfnp_trax.rl import serialization_utils
from tfnp_trax.rl import space_serializer
from tfnp_trax.rl import task
from tfnp_trax.rl import training
from tfnp_trax.rl import value_aggregation
from tfnp_trax.rl import value_tasks
from tfnp_trax.rl import vector_agent
from tfnp_trax.rl import vector_task
from tfnp_trax.rl.actor_critic import A2C
from tfnp_trax.rl.actor_critic import ActorCriticAgent
from tfnp_trax.rl.actor_critic import AWR
from tfnp_trax.rl.actor_critic import LoopAWR
from tfnp_trax.rl.actor_critic import PPO
from tfnp_trax.rl.actor_critic_joint import A2CJoint
from tfnp_trax.rl.actor_critic_joint import ActorCriticJointAgent
from tfnp_trax.rl.actor_critic_joint import AWRJoint
from tfnp_trax.rl.actor_critic_joint import PPOJoint
from tfnp_trax.rl.distributions import Categorical
from tfnp_trax.rl.distributions import Gaussian
from tfnp_trax.rl.distributions import create_distribution
from tfnp_trax.rl.serialization_utils import TimeSeriesModel
from tfnp_trax.rl.task import RLTask
from tfnp_trax.rl.training import DQN
from tfnp_trax.rl.training import Agent
from tfnp_trax.rl.training import ExpertIteration
from tfnp_trax.rl.training import PolicyGradient
from tfnp_trax.rl.vector_agent import VectorAgent
from tfnp_trax.rl.vector_task import TrajectoryBatch
from tfnp_trax.rl.vector_task import VectorTask



def configure_rl(*args, **kwargs):
  """Registers an agent class with gin under `trax.rl`, like PPO or DQN.

  As for the built-in agents, `task` and `output_dir` are left to the
  caller (the RL trainer passes them) and cannot be bound in a config.
  """
  kwargs['module'] = 'trax.rl'
  kwargs['denylist'] = ['task', 'output_dir']
  return gin.external_configurable(*args, **kwargs)


__all__ = [
    'advantages', 'awr', 'distributions', 'envs', 'losses', 'normalization',
    'policy_metrics', 'policy_tasks', 'value_tasks', 'rl_layers', 'serialization_utils', 'space_serializer',
    'value_aggregation', 'A2C', 'ActorCriticAgent', 'AWR', 'LoopAWR', 'PPO',
    'A2CJoint', 'ActorCriticJointAgent', 'AWRJoint', 'PPOJoint',
    'Categorical', 'Gaussian', 'create_distribution', 'TimeSeriesModel',
    'task', 'training', 'vector_agent', 'vector_task', 'RLTask',
    'TrajectoryBatch', 'VectorTask', 'Agent', 'DQN', 'ExpertIteration',
    'PolicyGradient', 'VectorAgent', 'configure_rl',
]
