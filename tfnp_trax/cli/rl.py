"""`tfnp-trax rl`: train an RL agent on a classic-control task.

With no flags it trains PPO on CartPole-v1, logs to TensorBoard and
checkpoints under --output_dir (resuming from a previous run there), and
ends with an evaluation of the greedy policy.
"""

import os
import time

import numpy as onp

from tfnp_trax.cli import _rl_flags
from tfnp_trax.cli import _usage

__all__ = ['FLAGS', 'main']

FLAGS = _rl_flags.FLAGS


def main(argv):
  """Runs the rl command; returns the process exit code."""
  # In a command-line process `_preflight` did this before TensorFlow
  # started; an in-process caller gets the same usage errors here.
  error = _usage.parse(FLAGS, argv, _rl_flags.validate)
  if error is not None:
    _usage.report('tfnp-trax rl', error,
                  'Run `tfnp-trax rl --helpfull` for the flags.')
    return 2
  from distribute import strategy as strategy_lib  # pylint: disable=g-import-not-at-top
  from tfnp_trax.rl import presets  # pylint: disable=g-import-not-at-top

  steps = FLAGS.steps or presets.default_env_steps(FLAGS.env)
  output_dir = os.path.expanduser(_rl_flags.output_dir())
  strategy = strategy_lib.get_strategy(FLAGS.strategy)
  agent = presets.make_agent(
      FLAGS.algo, FLAGS.env, joint=FLAGS.joint, n_envs=FLAGS.n_envs,
      random_seed=FLAGS.seed, output_dir=output_dir, strategy=strategy,
      jit_compile=FLAGS.jit_compile)
  print(f'Training {type(agent).__name__} on {FLAGS.env} for {steps} env '
        f'steps ({FLAGS.n_envs} envs, strategy {type(strategy).__name__}), '
        f'output {output_dir}', flush=True)
  if agent.env_steps:
    print(f'Resumed at epoch {agent.epoch}, {agent.env_steps} env steps.')
  start = time.time()
  while agent.env_steps < steps:
    remaining = -(-(steps - agent.env_steps) // agent.n_interactions_per_epoch)
    agent.run(min(FLAGS.log_every, remaining))
    avg = agent.avg_returns[-1] if agent.avg_returns else float('nan')
    print(f'Env steps {agent.env_steps:7d}: average return {avg:8.2f} '
          f'(last {min(20, len(agent.task.episode_returns))} episodes), '
          f'{time.time() - start:.0f}s', flush=True)
  if FLAGS.eval_episodes:
    returns = agent.evaluate(FLAGS.eval_episodes, temperature=0.0)
    print(f'Evaluation: average return {onp.mean(returns):.2f} over '
          f'{len(returns)} episodes of the greedy policy.')
  agent.task.close()
  return 0
