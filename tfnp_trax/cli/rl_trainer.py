r"""The RL trainer binary: `python -m tfnp_trax.rl_trainer --config_file=X.gin`.

Parses gin files and bindings with Trax's names (`import trax.rl_trainer`
and `train_rl.*` bindings included, so Trax's RL configs run unchanged) and
runs `train_rl`, which builds the configured `RLTask` and agent and runs the
agent for `n_epochs` epochs in all (a restarted run resumes from its
`output_dir`):

  python -m tfnp_trax.rl_trainer \
      --config_file=light_cartpole.gin --config='train_rl.n_epochs = 5' \
      --output_dir=/tmp/pg_cartpole

A config that cannot be parsed (a missing file, a name tfnp_trax lacks, a
typo) stops with exit code 2 and a message naming it.

The program's module is `tfnp_trax.rl_trainer` (Trax's `trax.rl_trainer`,
which the configs import), re-exporting this one: run as `__main__`, a
module defining `train_rl` would register it with gin a second time when
the config imports it.
"""

import os
import sys

from absl import flags
from absl import logging
import gin

from tfnp_trax.cli import _trainer_flags
from tfnp_trax.rl import task as rl_task
from tfnp_trax.rl import training as light_trainers

__all__ = ['FLAGS', 'train_rl', 'main']

# Trax's RL trainer reads the trainer's flags (`--output_dir`,
# `--config_file`, `--config`, ...), so it uses the same ones.
FLAGS = _trainer_flags.FLAGS


@gin.configurable(denylist=['output_dir'], module='trax')
def train_rl(output_dir, n_epochs=10000, light_rl=True,
             light_rl_trainer=light_trainers.PolicyGradient):
  """Trains the configured agent on the configured `RLTask`.

  Args:
    output_dir: the agent's output folder (None writes nothing).
    n_epochs: the total number of epochs to reach (a resumed run continues
      up to it).
    light_rl: kept for old configs; always true.
    light_rl_trainer: the agent class (configured with gin).

  Returns:
    The agent, closed.
  """
  del light_rl
  task = rl_task.RLTask()
  agent = light_rl_trainer(task=task, output_dir=output_dir)
  logging.info('Starting RL training on %s for %d epochs.', task.env_name,
               n_epochs)
  try:
    agent.run(n_epochs, n_epochs_is_total_epochs=True)
  finally:
    agent.close()
  logging.info('Completed RL training for %d epochs.', n_epochs)
  return agent


def main(argv):
  """Runs the RL trainer with Trax's flags; returns the exit code."""
  from tfnp_trax import gin_config  # pylint: disable=g-import-not-at-top
  # A second call in one process starts from the defaults: parsing again
  # would add to the multi-valued flags of the first.
  FLAGS.unparse_flags()
  try:
    FLAGS(argv)
  except flags.Error as e:
    print(f'{argv[0]}: {e}', file=sys.stderr)
    return 2
  output_dir = FLAGS.output_dir
  if output_dir:
    output_dir = os.path.expanduser(output_dir)
  try:
    gin_config.parse_config_files_and_bindings(FLAGS.config_file or [],
                                               FLAGS.config or [])
  except (gin_config.GinConfigError, OSError) as e:
    print(f'{argv[0]}: {e}', file=sys.stderr)
    return 2
  train_rl(output_dir=output_dir)
  print('Finished RL training.', flush=True)
  return 0


if __name__ == '__main__':
  sys.exit(main(sys.argv))
