"""tfnp_trax.rl: RL objectives, advantage estimators, tasks and agents."""

from tfnp_trax.rl import advantages
from tfnp_trax.rl import awr
from tfnp_trax.rl import distributions
from tfnp_trax.rl import envs
from tfnp_trax.rl import losses
from tfnp_trax.rl import normalization
from tfnp_trax.rl import policy_metrics
from tfnp_trax.rl import rl_layers
from tfnp_trax.rl import serialization_utils
from tfnp_trax.rl import space_serializer
from tfnp_trax.rl import task
from tfnp_trax.rl import value_aggregation
from tfnp_trax.rl import vector_task
from tfnp_trax.rl.actor_critic import A2C
from tfnp_trax.rl.actor_critic import ActorCriticAgent
from tfnp_trax.rl.actor_critic import AWR
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
from tfnp_trax.rl.training import Agent
from tfnp_trax.rl.vector_task import TrajectoryBatch
from tfnp_trax.rl.vector_task import VectorTask

__all__ = [
    'advantages', 'awr', 'distributions', 'envs', 'losses', 'normalization',
    'policy_metrics', 'rl_layers', 'serialization_utils', 'space_serializer',
    'value_aggregation', 'A2C', 'ActorCriticAgent', 'AWR', 'PPO',
    'A2CJoint', 'ActorCriticJointAgent', 'AWRJoint', 'PPOJoint',
    'Categorical', 'Gaussian', 'create_distribution', 'TimeSeriesModel',
    'task', 'vector_task', 'RLTask', 'TrajectoryBatch', 'VectorTask',
    'Agent',
]
