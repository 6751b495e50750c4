"""The flags of `tfnp-trax train`, and their checks before TensorFlow starts.

Kept apart from `train` (which imports the library, so TensorFlow) so that
`_preflight` can parse and check a command line first: a bad value is a
usage error (exit 2, two lines naming the flag) within a fraction of a
second. `train.main` runs the same `validate` for in-process callers.
"""

import os

from absl import flags

from tfnp_trax.cli import _cache_dir
from tfnp_trax.cli import _time_budget
from tfnp_trax.cli import _usage

__all__ = ['FLAGS', 'DEFAULT_BUDGET', 'validate', 'output_dir',
           'budget_seconds', 'DIGITS_TRAIN_SIZE', 'COPY_LENGTH',
           'COPY_SEQUENCE_LENGTH']

# The default job must end within 5 minutes on any 2-core x86 machine; the
# minute left over absorbs errors in the timing estimates.
DEFAULT_BUDGET = '4m'

# scikit-learn's digits hold 1797 images; `data.load_digits_split` keeps
# 20% for the test, so a training batch holds at most 1438 (a larger one
# would never fill). Pinned against the data in the tests.
DIGITS_TRAIN_SIZE = 1797 - int(1797 * 0.2)
# The copy task's halves are 16 tokens; a sequence is 0 w 0 w.
COPY_LENGTH = 16
COPY_SEQUENCE_LENGTH = 2 * COPY_LENGTH + 2

# Flags that mean nothing to the gin-configured trainer.
_GIN_FLAGS = ('config_file', 'config', 'output_dir')

FLAGS = flags.FlagValues()
flags.DEFINE_enum('model', 'transformer_lm',
                  ['mlp', 'transformer_lm', 'resnet_frn'], 'Model to train '
                  '(transformer_lm: --task pylm or copy; mlp, resnet_frn: '
                  '--task digits).', flag_values=FLAGS)
flags.DEFINE_enum('task', 'pylm', ['pylm', 'digits', 'copy'], 'Task.',
                  flag_values=FLAGS)
flags.DEFINE_integer('steps', None, 'Total training steps (default: per '
                     'task, or as many as fit --time_budget).',
                     lower_bound=1, flag_values=FLAGS)
flags.DEFINE_string('time_budget', None, 'Wall-clock budget of the whole run '
                    '(start-up, training, evals, sample, export): seconds or '
                    'a duration like 4m or 1m30s; 0 or off: none. Default: '
                    f'{DEFAULT_BUDGET}, unless --steps is given (then none). '
                    'With --steps too, --steps is the most steps it runs.',
                    flag_values=FLAGS)
flags.DEFINE_boolean('verbose', False, 'Show TensorFlow\'s C++ start-up '
                     'logging (hidden by default).', flag_values=FLAGS)
flags.DEFINE_integer('batch_size', None, 'Global batch size (default: per '
                     f'task; digits: at most {DIGITS_TRAIN_SIZE}).',
                     lower_bound=1, flag_values=FLAGS)
flags.DEFINE_string('output_dir', None, 'Checkpoints and TensorBoard logs '
                    '(default: <task>_<model> under $XDG_CACHE_HOME/'
                    'tfnp_trax, else ~/.cache/tfnp_trax).',
                    flag_values=FLAGS)
flags.DEFINE_enum('strategy', 'auto', ['auto', 'default', 'one_device',
                                       'mirrored', 'multiworker', 'tpu'],
                  'tf.distribute strategy.', flag_values=FLAGS)
flags.DEFINE_integer('eval_every', None, 'Evaluate every N steps.',
                     lower_bound=1, flag_values=FLAGS)
flags.DEFINE_integer('checkpoint_every', None, 'Checkpoint every N steps.',
                     lower_bound=1, flag_values=FLAGS)
flags.DEFINE_boolean('resume', True, 'Resume from checkpoints in '
                     'output_dir; with --noresume an output_dir that already '
                     'holds checkpoints is an error.', flag_values=FLAGS)
flags.DEFINE_string('export', None, 'Write a SavedModel here at the end.',
                    flag_values=FLAGS)
flags.DEFINE_float('learning_rate', None, 'Peak learning rate (a positive '
                   'number; default: per task).', flag_values=FLAGS)
flags.DEFINE_integer('seed', 0, 'Random seed.', lower_bound=0,
                     flag_values=FLAGS)
flags.DEFINE_integer('seq_len', 128, 'Sequence length for pylm (128 '
                     'holds the default sample of 127 bytes).',
                     lower_bound=1, flag_values=FLAGS)
flags.DEFINE_integer('d_model', 128, 'Transformer width (a multiple of '
                     '--n_heads).', lower_bound=1, flag_values=FLAGS)
flags.DEFINE_integer('n_heads', 4, 'Transformer attention heads.',
                     lower_bound=1, flag_values=FLAGS)
flags.DEFINE_integer('n_layers', None, 'Transformer depth (default: 1 for '
                     'pylm, 2 for copy).', lower_bound=1, flag_values=FLAGS)
flags.DEFINE_boolean('jit_compile', False, 'Compile the step with XLA.',
                     flag_values=FLAGS)
flags.DEFINE_enum('precision', 'float32', ['float32', 'bf16'],
                  'float32, or bf16 for mixed bfloat16 training (float32 '
                  'weights and optimizer slots, bfloat16 compute).',
                  flag_values=FLAGS)
flags.DEFINE_multi_string('config_file', None, 'Gin configuration file(s) '
                          '(Trax\'s .gin files work); runs trainer_lib.train '
                          'as `python -m tfnp_trax.trainer` does.',
                          flag_values=FLAGS)
flags.DEFINE_multi_string('config', None, 'Gin bindings, applied after '
                          '--config_file (e.g. "train.steps = 100").',
                          flag_values=FLAGS)
flags.DEFINE_integer('sample_length', 127, 'Bytes to sample at the end '
                     '(pylm; 0: none); the model holds max(seq_len, '
                     'sample_length + 1) positions.', lower_bound=0,
                     flag_values=FLAGS)


def output_dir(flag_values=FLAGS):
  """--output_dir, or the default `<cache>/<task>_<model>`."""
  return flag_values.output_dir or _cache_dir.default_output_dir(
      f'{flag_values.task}_{flag_values.model}')


def budget_seconds(flag_values=FLAGS):
  """The time budget in seconds, or None; raises ValueError if malformed."""
  spec = flag_values.time_budget
  if spec is None:
    spec = None if flag_values.steps else DEFAULT_BUDGET
  return _time_budget.parse_duration(spec)


def validate(f=FLAGS):
  """Checks parsed flags together; raises `_usage.UsageError`.

  absl already checked each integer's range (`lower_bound`) and the enums.
  """
  if f.config_file or f.config:
    _validate_gin_run(f)
    return
  try:
    budget_seconds(f)
  except ValueError as e:
    raise _usage.UsageError(str(e)) from None
  _usage.positive_number('learning_rate', f.learning_rate)
  _validate_model(f)
  _usage.writable_folder('output_dir', output_dir(f),
                         default=not f.output_dir)
  if f.export:
    _usage.writable_folder('export', f.export)
  ckpt_dir = os.path.join(os.path.expanduser(output_dir(f)), 'checkpoints')
  _usage.require(
      f.resume or not (os.path.isdir(ckpt_dir) and os.listdir(ckpt_dir)),
      f'{output_dir(f)} already holds checkpoints and --noresume was '
      f'given; choose another --output_dir or drop --noresume to continue '
      f'that run.')


def _validate_model(f):
  """The combinations the models and tasks need."""
  sequence_task = f.task in ('pylm', 'copy')
  if f.model == 'transformer_lm':
    _usage.require(sequence_task, f'--model transformer_lm needs a sequence '
                   f'task (pylm, copy), got --task {f.task}.')
    _usage.require(
        f.d_model % f.n_heads == 0,
        f'--d_model must be a multiple of --n_heads ({f.n_heads}): each '
        f'attention head takes d_model / n_heads features; got --d_model '
        f'{f.d_model}. Try --d_model {f.n_heads * max(1, round(f.d_model / f.n_heads))}.')
    positions = max(f.seq_len, f.sample_length + 1)
    _usage.require(
        f.task != 'copy' or positions >= COPY_SEQUENCE_LENGTH,
        f'--task copy needs a model of at least {COPY_SEQUENCE_LENGTH} '
        f'positions (its sequences), got max(--seq_len, --sample_length + '
        f'1) = {positions}. Raise --seq_len to {COPY_SEQUENCE_LENGTH}.')
  else:
    _usage.require(not sequence_task, f'--model {f.model} needs --task '
                   f'digits, got --task {f.task}.')
  _usage.require(
      f.task != 'digits' or f.batch_size is None or
      f.batch_size <= DIGITS_TRAIN_SIZE,
      f'--batch_size must be at most {DIGITS_TRAIN_SIZE} for --task digits '
      f'(its training images), got {f.batch_size}.')


def _validate_gin_run(f):
  """--config_file/--config: the other training flags would be ignored."""
  ignored = sorted(name for name in f if f[name].present and name not in
                   _GIN_FLAGS)
  _usage.require(
      not ignored,
      f'--config_file/--config configure the run through gin; '
      f'--{", --".join(ignored)} would be ignored. Drop them or write them '
      f'as bindings (e.g. --config "train.steps = 100").')
  for path in f.config_file or []:
    _usage.readable_file('config_file', path)
  _usage.writable_folder('output_dir', f.output_dir)

