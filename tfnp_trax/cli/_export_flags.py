"""The flags of `tfnp-trax export`, and their checks before TensorFlow starts.

Kept apart from `export` for the reason `_train_flags` is (see there).
"""

import os

from absl import flags

from tfnp_trax.cli import _run_record
from tfnp_trax.cli import _usage

__all__ = ['FLAGS', 'FORMATS', 'validate']

FORMATS = ('saved_model', 'onnx', 'tflite')

FLAGS = flags.FlagValues()
flags.DEFINE_string('output_dir', None, 'The folder of a `tfnp-trax train` '
                    'run (its --output_dir).', flag_values=FLAGS)
flags.DEFINE_string('export_dir', None, 'Where to write the model: a '
                    'SavedModel folder, or for --format onnx or tflite a '
                    'folder that gets model.onnx or model.tflite.',
                    flag_values=FLAGS)
flags.DEFINE_enum('format', 'saved_model', list(FORMATS), 'saved_model (with '
                  'a `generate` signature for sequence models), onnx (the '
                  'forward pass, any batch where the model allows; needs '
                  "the 'export' extra) or tflite (the forward pass, batch "
                  '1).', flag_values=FLAGS)
flags.DEFINE_integer('step', None, 'Export the checkpoint of this step '
                     '(default: the newest).', lower_bound=1,
                     flag_values=FLAGS)
flags.DEFINE_string('checkpoint', None, 'Export this checkpoint folder of '
                    '<output_dir>/checkpoints instead (e.g. '
                    'early_stopping_best).', flag_values=FLAGS)
flags.DEFINE_integer('max_length', None, 'Tokens the `generate` signature '
                     'makes (default: 127 for pylm, 17 for copy, within the '
                     'model\'s positions).', lower_bound=1,
                     flag_values=FLAGS)
flags.DEFINE_float('temperature', 0.0, '`generate`\'s sampling temperature '
                   '(0: greedy; above, the signature takes a `seed`).',
                   lower_bound=0.0, flag_values=FLAGS)
flags.DEFINE_integer('batch_size', 1, 'Sequences per `generate` call.',
                     lower_bound=1, flag_values=FLAGS)


def validate(f=FLAGS):
  """Checks parsed flags together; raises `_usage.UsageError`."""
  _usage.require(f.output_dir, '--output_dir is required: the folder of '
                 'the `tfnp-trax train` run to export.')
  _usage.require(f.export_dir, '--export_dir is required: where to write '
                 'the exported model.')
  run = os.path.expanduser(f.output_dir)
  _usage.require(
      os.path.isfile(os.path.join(run, _run_record.RUN_FILE)),
      f'--output_dir {f.output_dir!r} holds no {_run_record.RUN_FILE}: it is '
      f'not the folder of a `tfnp-trax train` run (runs record their model '
      f'there as they start).')
  _usage.require(not (f.step and f.checkpoint),
                 '--step and --checkpoint both choose the checkpoint; give '
                 'one of them.')
  _usage.writable_folder('export_dir', f.export_dir)
