# %% [markdown]
# # Reinforcement learning: PPO on CartPole
#
# This notebook trains a policy for gymnasium's `CartPole-v1` with Proximal
# Policy Optimization, using the same pieces as Trax's `rl` package:
#
# * `VectorTask`: the environment (8 copies stepped in lock-step), its
#   discount and the episode returns seen so far (Trax's `RLTask`, which
#   plays one episode at a time, is accepted too);
# * `PPO`: an actor-critic agent with a policy network and a value network,
#   each trained by a `Trainer` (so under any `tf.distribute` strategy);
# * `agent.run(n_epochs)`: each epoch collects 256 environment steps with
#   the current policy, then takes gradient steps on them.
#
# A pole balanced for the whole episode scores 500, the most there is.

# %%
# Setup: installs tfnp_trax on Colab; does nothing where it is installed.
import importlib.util
import os

if importlib.util.find_spec('tfnp_trax') is None:
  get_ipython().run_line_magic('pip', 'install -q "tfnp-trax[notebooks,rl]"')

# The automated tests set TFNP_TRAX_NOTEBOOK_SMALL=1 so that the notebook
# runs in seconds; unset, it does full-size work.
SMALL = os.environ.get('TFNP_TRAX_NOTEBOOK_SMALL') == '1'
get_ipython().run_line_magic('matplotlib', 'inline')

# %%
import functools

import matplotlib.pyplot as plt
import numpy as np

from tfnp_trax import optimizers
from tfnp_trax import rl

# %% [markdown]
# ## The task and the agent
#
# The settings below are the tuned CartPole settings that
# `tfnp_trax.rl.presets.make_agent('ppo', 'CartPole-v1')` also uses,
# written out so you can change them. Advantages come from Generalized
# Advantage Estimation; the networks are 64-64 tanh MLPs (the default
# `policy_model` and `value_model`).

# %%
task = rl.VectorTask('CartPole-v1', gamma=0.98, n_envs=8, seed=0)


def adam():
  return optimizers.Adam(3e-4, weight_decay_rate=0.0, clip_grad_norm=0.5)


agent = rl.PPO(
    task,
    n_interactions_per_epoch=256,
    policy_batch_size=256,
    policy_train_steps_per_epoch=20,
    policy_optimizer=adam(),
    value_batch_size=256,
    value_train_steps_per_epoch=20,
    value_optimizer=adam(),
    advantage_estimator=functools.partial(rl.advantages.gae, lambda_=0.8),
    epsilon=0.2,
    entropy_coeff=0.0,
    random_seed=0,
)
print('observations:', task.observation_space)
print('actions:', task.action_space)

# %% [markdown]
# ## Train
#
# The first epoch compiles the policy and the training steps (XLA); the
# later ones are fast. `agent.avg_returns` holds, after every epoch, the
# mean return of the last 20 finished episodes; `agent.history` holds the
# same values (and the losses) against environment steps.

# %%
# CartPole is usually solved (return 500) within 100k env steps.
n_epochs = 12 if SMALL else 400
report_every = 4 if SMALL else 25
for _ in range(n_epochs // report_every):
  agent.run(report_every)
  print(f'epoch {agent.epoch:4d}  env steps {agent.env_steps:7d}  '
        f'average return {agent.avg_returns[-1]:6.1f}')

# %% tags=["plot"]
env_steps, avg_return = zip(*agent.history.get('rl', 'avg_return'))
plt.figure(figsize=(6, 3.5))
plt.plot(env_steps, avg_return)
plt.axhline(500, color='gray', linestyle=':', label='maximum')
plt.xlabel('environment steps')
plt.ylabel('average return (last 20 episodes)')
plt.title('PPO on CartPole-v1')
plt.legend()
plt.show()

# %% [markdown]
# ## Evaluate
#
# `evaluate` plays fresh episodes with the current policy. At temperature
# 0 the agent always takes its most likely action.

# %%
returns = agent.evaluate(n_episodes=5 if SMALL else 20, temperature=0.0)
print(f'greedy policy: mean return {np.mean(returns):.1f} '
      f'over {len(returns)} episodes')
