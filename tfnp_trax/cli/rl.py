"""`tfnp-trax rl`: train an RL agent on a classic-control task.

With no flags it trains PPO on CartPole-v1, logs to TensorBoard and
checkpoints under --output_dir (resuming from a previous run there), and
ends with an evaluation of the greedy policy.
"""

import os
import sys
import tempfile
import time

from absl import flags
import numpy as onp

__all__ = ['main']

FLAGS = flags.FlagValues()
flags.DEFINE_enum('algo', 'ppo', ['ppo', 'a2c', 'awr'], 'RL algorithm.',
                  flag_values=FLAGS)
flags.DEFINE_enum('env', 'CartPole-v1', ['CartPole-v1', 'Pendulum-v1'],
                  'Gymnasium environment.', flag_values=FLAGS)
flags.DEFINE_integer('steps', None, 'Environment steps to train for, in '
                     'total (default: 200k for CartPole, 100k for '
                     'Pendulum).', flag_values=FLAGS)
flags.DEFINE_string('output_dir', None, 'Checkpoints and TensorBoard logs '
                    '(default: a folder under the system temp dir).',
                    flag_values=FLAGS)
flags.DEFINE_integer('seed', 0, 'Random seed.', flag_values=FLAGS)
flags.DEFINE_enum('strategy', 'auto', ['auto', 'default', 'one_device',
                                       'mirrored', 'multiworker', 'tpu'],
                  'tf.distribute strategy for the training steps.',
                  flag_values=FLAGS)
flags.DEFINE_boolean('joint', False, 'Use one network with a policy and a '
                     'value head (PPOJoint, A2CJoint, AWRJoint).',
                     flag_values=FLAGS)
flags.DEFINE_integer('n_envs', 8, 'Environment copies collecting in '
                     'lock-step.', flag_values=FLAGS)
flags.DEFINE_boolean('resume', True, 'Resume from checkpoints in '
                     'output_dir; with --noresume an output_dir that already '
                     'holds checkpoints is an error.', flag_values=FLAGS)
flags.DEFINE_integer('eval_episodes', 20, 'Episodes of the final greedy '
                     'evaluation (0: none).', flag_values=FLAGS)
flags.DEFINE_integer('log_every', 10, 'Print progress every N epochs.',
                     flag_values=FLAGS)
flags.DEFINE_boolean('jit_compile', True, 'Compile steps with XLA.',
                     flag_values=FLAGS)


def _parse(argv):
  FLAGS.unparse_flags()  # Each call starts from the defaults.
  try:
    FLAGS(argv)
  except flags.Error as e:
    print(f'tfnp-trax rl: {e}\nRun `tfnp-trax rl --helpfull` for the flags.',
          file=sys.stderr)
    return False
  return True


def main(argv):
  """Runs the rl command; returns the process exit code."""
  if not _parse(argv):
    return 2
  from distribute import strategy as strategy_lib  # pylint: disable=g-import-not-at-top
  from tfnp_trax.rl import presets  # pylint: disable=g-import-not-at-top

  steps = FLAGS.steps or presets.default_env_steps(FLAGS.env)
  name = f'{FLAGS.algo}{"_joint" if FLAGS.joint else ""}_{FLAGS.env}'
  output_dir = FLAGS.output_dir or os.path.join(
      tempfile.gettempdir(), 'tfnp_trax', 'rl', name)
  ckpt_dir = os.path.join(output_dir, 'checkpoints')
  if not FLAGS.resume and os.path.isdir(ckpt_dir) and os.listdir(ckpt_dir):
    print(f'tfnp-trax rl: {output_dir} already holds checkpoints and '
          f'--noresume was given; choose another --output_dir or drop '
          f'--noresume to continue that run.', file=sys.stderr)
    return 2
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
