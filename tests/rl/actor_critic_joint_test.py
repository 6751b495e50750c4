"""Joint policy-and-value agents: training runs and metrics."""

import numpy as np
import pytest

from tfnp_trax.rl import presets


@pytest.mark.parametrize('algo', ['ppo', 'a2c', 'awr'])
def test_joint_agents_train_and_log(algo):
  agent = presets.make_agent(algo, 'CartPole-v1', joint=True,
                             jit_compile=False)
  agent.run(3)
  for name in ('loss', 'joint_loss', 'value_loss', 'explained_variance',
               'policy_entropy', 'approximate_kl_divergence'):
    assert np.isfinite(agent.history.last('joint', name)), name
  returns = agent.evaluate(n_episodes=2)
  assert len(returns) == 2
