"""The flags of `tfnp-trax rl`, and their checks before TensorFlow starts.

Kept apart from `rl` for the reason `_train_flags` is (see there).
"""

import os

from absl import flags

from tfnp_trax.cli import _cache_dir
from tfnp_trax.cli import _usage

__all__ = ['FLAGS', 'INTERACTIONS_PER_EPOCH', 'validate', 'output_dir']

# Env steps each epoch collects in `rl.presets` (pinned by the tests): the
# environment copies share them, so --n_envs must divide them.
INTERACTIONS_PER_EPOCH = {'CartPole-v1': 256, 'Pendulum-v1': 512}

FLAGS = flags.FlagValues()
flags.DEFINE_enum('algo', 'ppo', ['ppo', 'a2c', 'awr'], 'RL algorithm.',
                  flag_values=FLAGS)
flags.DEFINE_enum('env', 'CartPole-v1', ['CartPole-v1', 'Pendulum-v1'],
                  'Gymnasium environment.', flag_values=FLAGS)
flags.DEFINE_integer('steps', None, 'Environment steps to train for, in '
                     'total (default: 200k for CartPole, 100k for '
                     'Pendulum).', lower_bound=1, flag_values=FLAGS)
flags.DEFINE_string('output_dir', None, 'Checkpoints and TensorBoard logs '
                    '(default: rl/<algo>_<env> under $XDG_CACHE_HOME/'
                    'tfnp_trax, else ~/.cache/tfnp_trax).',
                    flag_values=FLAGS)
flags.DEFINE_integer('seed', 0, 'Random seed.', lower_bound=0,
                     flag_values=FLAGS)
flags.DEFINE_enum('strategy', 'auto', ['auto', 'default', 'one_device',
                                       'mirrored', 'multiworker', 'tpu'],
                  'tf.distribute strategy for the training steps.',
                  flag_values=FLAGS)
flags.DEFINE_boolean('joint', False, 'Use one network with a policy and a '
                     'value head (PPOJoint, A2CJoint, AWRJoint).',
                     flag_values=FLAGS)
flags.DEFINE_integer('n_envs', 8, 'Environment copies collecting in '
                     'lock-step (a divisor of the env steps per epoch: 256 '
                     'for CartPole, 512 for Pendulum).', lower_bound=1,
                     flag_values=FLAGS)
flags.DEFINE_boolean('resume', True, 'Resume from checkpoints in '
                     'output_dir; with --noresume an output_dir that already '
                     'holds checkpoints is an error.', flag_values=FLAGS)
flags.DEFINE_integer('eval_episodes', 20, 'Episodes of the final greedy '
                     'evaluation (0: none).', lower_bound=0,
                     flag_values=FLAGS)
flags.DEFINE_integer('log_every', 10, 'Print progress every N epochs.',
                     lower_bound=1, flag_values=FLAGS)
flags.DEFINE_boolean('jit_compile', True, 'Compile steps with XLA.',
                     flag_values=FLAGS)


def output_dir(flag_values=FLAGS):
  """--output_dir, or the default `<cache>/rl/<algo>[_joint]_<env>`."""
  f = flag_values
  name = f'{f.algo}{"_joint" if f.joint else ""}_{f.env}'
  return f.output_dir or _cache_dir.default_output_dir('rl', name)


def validate(f=FLAGS):
  """Checks parsed flags together; raises `_usage.UsageError`.

  absl already checked each integer's range (`lower_bound`) and the enums.
  """
  per_epoch = INTERACTIONS_PER_EPOCH[f.env]
  _usage.require(
      per_epoch % f.n_envs == 0,
      f'--n_envs must divide the {per_epoch} env steps an epoch of '
      f'{f.env} collects, got {f.n_envs}. Try --n_envs '
      f'{max(d for d in range(1, per_epoch + 1) if not per_epoch % d and d <= f.n_envs)}.')
  _usage.writable_folder('output_dir', output_dir(f),
                         default=not f.output_dir)
  ckpt_dir = os.path.join(os.path.expanduser(output_dir(f)), 'checkpoints')
  _usage.require(
      f.resume or not (os.path.isdir(ckpt_dir) and os.listdir(ckpt_dir)),
      f'{output_dir(f)} already holds checkpoints and --noresume was '
      f'given; choose another --output_dir or drop --noresume to continue '
      f'that run.')
