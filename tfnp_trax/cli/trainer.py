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

The program's module is `tfnp_trax.trainer` (Trax's `trax.trainer`), which
re-exports this one; the code lives here, beside the flags and usage checks
it shares with the other commands.
"""

import datetime
import os
import sys

from absl import logging

from tfnp_trax.cli import _cache_dir
from tfnp_trax.cli import _trainer_flags
from tfnp_trax.cli import _usage

__all__ = ['FLAGS', 'main', 'gin_bindings', 'train_from_configs',
           'run_configs']

FLAGS = _trainer_flags.FLAGS


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
  """`<cache>/trainer/<model>_<dataset>_<time>`, named as Trax's `~/trax/...`.

  In the user's cache folder, not in ~ as Trax's: a `tfnp_trax` folder in
  ~ would hide the library from any Python started there (`_cache_dir`).
  """
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
  return _cache_dir.default_output_dir('trainer', name)


def train_from_configs(config_files, bindings, output_dir=None):
  """Parses gin configs with Trax's names, then runs `trainer_lib.train`.

  Args:
    config_files: `.gin` files, parsed in order.
    bindings: gin binding strings, applied after the files.
    output_dir: where the run writes; default `<model>_<dataset>_<time>`
      under `trainer/` in the cache folder (`$XDG_CACHE_HOME/tfnp_trax`,
      else `~/.cache/tfnp_trax`).

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
  # In a command-line process `_preflight` did this before TensorFlow
  # started; an in-process caller gets the same usage errors here.
  error = _usage.parse(FLAGS, argv, _trainer_flags.validate)
  if error is not None:
    _usage.report(argv[0], error)
    return 2
  logging.set_verbosity(FLAGS.log_level)
  bindings = gin_bindings(FLAGS.config, FLAGS.dataset, FLAGS.model,
                          FLAGS.data_dir)
  return run_configs(argv[0], FLAGS.config_file or [], bindings,
                     FLAGS.output_dir)


def run_configs(prog, config_files, bindings, output_dir=None):
  """`train_from_configs` for a command line; returns the exit code.

  A config that cannot be parsed (a missing file, an unknown name, a typo)
  is a usage error: its message goes to stderr as `prog: ...` and the code
  is 2. Only parsing is guarded: an OSError while training (e.g. a full
  disk) is no usage error and keeps its traceback. A binding of the wrong
  type (`train.steps = 'ten'`, `Adam.b1 = "high"`), found when the run
  builds the optimizer or enters `train`, is a usage error too.
  """
  # pylint: disable=g-import-not-at-top
  from tfnp_trax import gin_config
  from tfnp_trax.optimizers import validation
  # pylint: enable=g-import-not-at-top
  try:
    gin_config.parse_config_files_and_bindings(config_files, bindings)
  except (gin_config.GinConfigError, OSError) as e:
    # gin's OSError names the file: "Unable to open file: X.gin ...".
    print(f'{prog}: {e}', file=sys.stderr)
    return 2
  try:
    _train_parsed(output_dir)
  except validation.HyperparameterTypeError as e:
    print(f'{prog}: {e}', file=sys.stderr)
    return 2
  return 0
