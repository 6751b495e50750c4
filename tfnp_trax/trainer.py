r"""Trax's trainer binary: `python -m tfnp_trax.trainer --config_file=X.gin`.

Parses gin files and bindings with Trax's names (Trax's own `.gin` files
work unchanged, see `tfnp_trax.gin_config`) and runs
`tfnp_trax.supervised.trainer_lib.train`. The flags are Trax's:

  python -m tfnp_trax.trainer \
      --config_file=gru_copy.gin --config='train.steps = 100' \
      --output_dir=/tmp/gru_copy

`--model`, `--dataset` and `--data_dir` add the bindings Trax adds for them.
A config that uses a Trax name tfnp_trax lacks, or has a typo, stops with
exit code 2 and a message naming the name and the config line.
`tfnp-trax train --config_file ...` runs the same code.
"""

import datetime
import os
import sys

from absl import flags
from absl import logging

__all__ = ['FLAGS', 'main', 'gin_bindings', 'train_from_configs',
           'run_configs']

FLAGS = flags.FlagValues()
flags.DEFINE_string('output_dir', None, 'Path to the directory to save logs '
                    'and checkpoints.', flag_values=FLAGS)
flags.DEFINE_multi_string('config_file', None, 'Configuration file with '
                          'parameters (.gin).', flag_values=FLAGS)
flags.DEFINE_multi_string('config', None, 'Configuration parameters (gin '
                          'string).', flag_values=FLAGS)
flags.DEFINE_string('dataset', None, 'Which dataset to use.',
                    flag_values=FLAGS)
flags.DEFINE_string('model', None, 'Which model to train.',
                    flag_values=FLAGS)
flags.DEFINE_string('data_dir', None, 'Path to the directory with data.',
                    flag_values=FLAGS)
flags.DEFINE_integer('log_level', logging.INFO, 'Log level.',
                     flag_values=FLAGS)


def gin_bindings(config=None, dataset=None, model=None, data_dir=None):
  """The binding strings Trax's trainer parses after the config files."""
  bindings = list(config or [])
  if dataset:
    bindings.append(f"data_streams.dataset_name='{dataset}'")
  if data_dir:
    bindings.append(f"data_streams.data_dir='{data_dir}'")
  if model:
    bindings.append(f'train.model=@trax.models.{model}')
  return bindings


def _default_output_dir():
  """`~/tfnp_trax/<model>_<dataset>_<time>`, as Trax names its `~/trax/...`."""
  import gin  # pylint: disable=g-import-not-at-top
  try:
    dataset_name = gin.query_parameter('data_streams.dataset_name')
  except ValueError:
    dataset_name = 'random'
  try:
    model_name = gin.query_parameter('train.model').configurable.name
  except (ValueError, AttributeError):
    model_name = 'model'
  name = (f'{model_name}_{dataset_name}_'
          f'{datetime.datetime.now().strftime("%Y%m%d_%H%M")}')
  return os.path.expanduser(os.path.join('~', 'tfnp_trax', name))


def train_from_configs(config_files, bindings, output_dir=None):
  """Parses gin configs with Trax's names, then runs `trainer_lib.train`.

  Args:
    config_files: `.gin` files, parsed in order.
    bindings: gin binding strings, applied after the files.
    output_dir: where the run writes; default `~/tfnp_trax/<model>_...`.

  Returns:
    The trained `training.Loop`.

  Raises:
    tfnp_trax.gin_config.GinConfigError: a config names a Trax name that
      tfnp_trax lacks, or has a typo.
    OSError: a config file cannot be opened.
  """
  from tfnp_trax import gin_config  # pylint: disable=g-import-not-at-top
  gin_config.parse_config_files_and_bindings(config_files, bindings)
  return _train_parsed(output_dir)


def _train_parsed(output_dir):
  """Runs `trainer_lib.train` with the gin configuration already parsed."""
  from tfnp_trax.supervised import trainer_lib  # pylint: disable=g-import-not-at-top
  if output_dir:
    output_dir = os.path.expanduser(output_dir)
  else:
    output_dir = _default_output_dir()
    print(f'No --output_dir given; using {output_dir}', flush=True)
  loop = trainer_lib.train(output_dir=output_dir)
  print('Finished training.', flush=True)
  return loop


def main(argv):
  """Runs the trainer with Trax's flags; returns the process exit code."""
  if any(arg in ('-h', '--help', '--helpfull') for arg in argv[1:]):
    print(f'usage: python -m tfnp_trax.trainer [--flags]\n\n'
          f'{FLAGS.get_help()}')
    return 0
  FLAGS.unparse_flags()  # A second call in one process starts afresh.
  try:
    FLAGS(argv)
  except flags.Error as e:
    print(f'{argv[0]}: {e}', file=sys.stderr)
    return 2
  logging.set_verbosity(FLAGS.log_level)
  from tfnp_trax import gin_config  # pylint: disable=g-import-not-at-top
  bindings = gin_bindings(FLAGS.config, FLAGS.dataset, FLAGS.model,
                          FLAGS.data_dir)
  if not FLAGS.config_file and not bindings:
    print(f'{argv[0]}: give --config_file=X.gin (and/or --config '
          f'bindings), e.g. --config_file=gru_copy.gin '
          f"--config='train.steps = 100'.", file=sys.stderr)
    return 2
  return run_configs(argv[0], FLAGS.config_file or [], bindings,
                     FLAGS.output_dir)


def run_configs(prog, config_files, bindings, output_dir=None):
  """`train_from_configs` for a command line; returns the exit code.

  A config that cannot be parsed (a missing file, an unknown name, a typo)
  is a usage error: its message goes to stderr as `prog: ...` and the code
  is 2. Only parsing is guarded: an OSError while training (e.g. a full
  disk) is no usage error and keeps its traceback.
  """
  from tfnp_trax import gin_config  # pylint: disable=g-import-not-at-top
  try:
    gin_config.parse_config_files_and_bindings(config_files, bindings)
  except (gin_config.GinConfigError, OSError) as e:
    # gin's OSError names the file: "Unable to open file: X.gin ...".
    print(f'{prog}: {e}', file=sys.stderr)
    return 2
  _train_parsed(output_dir)
  return 0


if __name__ == '__main__':
  sys.exit(main(sys.argv))
