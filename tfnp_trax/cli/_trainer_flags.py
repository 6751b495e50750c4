"""The flags of `python -m tfnp_trax.trainer` (Trax's), and their checks.

Kept apart from `tfnp_trax.trainer` for the reason `_train_flags` is:
`_preflight` checks them before TensorFlow is imported (and importing the
trainer module itself there would make `python -m` run a second copy).
The checks reject only what Trax's trainer would fail on later.
"""

import re

from absl import flags
from absl import logging

from tfnp_trax.cli import _usage

__all__ = ['FLAGS', 'validate']

# `train.model=@trax.models.<model>`: a (dotted) Python name.
_MODEL_NAME = re.compile(r'[A-Za-z_]\w*(\.[A-Za-z_]\w*)*')

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


def validate(f=FLAGS):
  """Checks parsed flags; raises `_usage.UsageError`."""
  _usage.require(
      f.config_file or f.config or f.dataset or f.model or f.data_dir,
      "give --config_file=X.gin (and/or --config bindings), e.g. "
      "--config_file=gru_copy.gin --config='train.steps = 100'.")
  _usage.require(
      f.model is None or _MODEL_NAME.fullmatch(f.model),
      f'--model must be the name of a model in trax.models (e.g. '
      f'TransformerLM), got {f.model!r}.')
  _usage.quote_free('dataset', f.dataset, 'a dataset name')
  _usage.quote_free('data_dir', f.data_dir, 'a folder path')
  for path in f.config_file or []:
    _usage.readable_file('config_file', path)
  _usage.writable_folder('output_dir', f.output_dir)
