"""`tfnp-trax train`: train a model on an offline task, end to end.

With no flags it trains a small TransformerLM on the Python standard
library's own sources (bytes), evaluates in bits per character against the
unigram baseline, checkpoints and logs to TensorBoard, and prints a sample.

With `--config_file X.gin` and/or `--config 'train.steps = 100'` it runs a
gin-configured `trainer_lib.train` instead, exactly as
`python -m tfnp_trax.trainer` does (Trax's own `.gin` files work unchanged).
"""

import os
import sys
import tempfile
import time
from typing import NamedTuple

from absl import flags
import numpy as onp

__all__ = ['main', 'build', 'TaskDefaults']

FLAGS = flags.FlagValues()
flags.DEFINE_enum('model', 'transformer_lm',
                  ['mlp', 'transformer_lm', 'resnet_frn'], 'Model to train.',
                  flag_values=FLAGS)
flags.DEFINE_enum('task', 'pylm', ['pylm', 'digits', 'copy'], 'Task.',
                  flag_values=FLAGS)
flags.DEFINE_integer('steps', None, 'Total training steps (default: per '
                     'task).', flag_values=FLAGS)
flags.DEFINE_integer('batch_size', None, 'Global batch size (default: per '
                     'task).', flag_values=FLAGS)
flags.DEFINE_string('output_dir', None, 'Checkpoints and TensorBoard logs '
                    '(default: a folder under the system temp dir).',
                    flag_values=FLAGS)
flags.DEFINE_enum('strategy', 'auto', ['auto', 'default', 'one_device',
                                       'mirrored', 'multiworker', 'tpu'],
                  'tf.distribute strategy.', flag_values=FLAGS)
flags.DEFINE_integer('eval_every', None, 'Evaluate every N steps.',
                     flag_values=FLAGS)
flags.DEFINE_integer('checkpoint_every', None, 'Checkpoint every N steps.',
                     flag_values=FLAGS)
flags.DEFINE_boolean('resume', True, 'Resume from checkpoints in '
                     'output_dir; with --noresume an output_dir that already '
                     'holds checkpoints is an error.', flag_values=FLAGS)
flags.DEFINE_string('export', None, 'Write a SavedModel here at the end.',
                    flag_values=FLAGS)
flags.DEFINE_float('learning_rate', None, 'Peak learning rate.',
                   flag_values=FLAGS)
flags.DEFINE_integer('seed', 0, 'Random seed.', flag_values=FLAGS)
flags.DEFINE_integer('seq_len', 128, 'Sequence length for pylm.',
                     flag_values=FLAGS)
flags.DEFINE_integer('d_model', 128, 'Transformer width.', flag_values=FLAGS)
flags.DEFINE_integer('n_layers', 2, 'Transformer depth.', flag_values=FLAGS)
flags.DEFINE_boolean('jit_compile', False, 'Compile the step with XLA.',
                     flag_values=FLAGS)
flags.DEFINE_multi_string('config_file', None, 'Gin configuration file(s) '
                          '(Trax\'s .gin files work); runs trainer_lib.train '
                          'as `python -m tfnp_trax.trainer` does.',
                          flag_values=FLAGS)
flags.DEFINE_multi_string('config', None, 'Gin bindings, applied after '
                          '--config_file (e.g. "train.steps = 100").',
                          flag_values=FLAGS)
flags.DEFINE_integer('sample_length', 127, 'Bytes to sample at the end '
                     '(pylm); the model holds max(seq_len, sample_length + 1) '
                     'positions.', flag_values=FLAGS)

class TaskDefaults(NamedTuple):
  """What `tfnp-trax train` uses for a task unless a flag overrides it."""
  steps: int
  batch_size: int
  learning_rate: float
  eval_every: int


_DEFAULTS = {
    'pylm': TaskDefaults(steps=2000, batch_size=32, learning_rate=2e-3,
                         eval_every=250),
    'digits': TaskDefaults(steps=600, batch_size=64, learning_rate=1e-3,
                           eval_every=100),
    'copy': TaskDefaults(steps=1500, batch_size=32, learning_rate=1e-3,
                         eval_every=250),
}


def _tasks(task, batch_size, seed):
  """Returns (train_stream, eval_stream, n_eval_batches, vocab, info)."""
  from tfnp_trax import data  # pylint: disable=g-import-not-at-top
  if task == 'pylm':
    train, evals = data.load_corpus()
    info = {'unigram_bits': data.unigram_bits_per_char(train, evals)}
    return (data.lm_batches(train, batch_size, FLAGS.seq_len, seed),
            data.lm_batches(evals, batch_size, FLAGS.seq_len, seed + 1), 8,
            data.pylm.VOCAB_SIZE, info)
  if task == 'digits':
    (xtr, ytr), (xte, yte) = data.load_digits_split(seed=seed)
    return (data.classification_batches(xtr, ytr, batch_size, seed),
            data.classification_batches(xte, yte, len(yte), seed,
                                        shuffle=False), 1, 10,
            {'n_test': len(yte)})
  vocab = 16
  return (data.copy_batches(batch_size, 16, vocab, seed),
          data.copy_batches(batch_size, 16, vocab, seed + 1), 4, vocab, {})


def build(model_name, task, vocab, mode='train'):
  """The model for a (model, task) pair, in the given mode."""
  import tfnp_trax.layers as tl  # pylint: disable=g-import-not-at-top
  from tfnp_trax import models  # pylint: disable=g-import-not-at-top
  sequence_task = task in ('pylm', 'copy')
  if model_name == 'transformer_lm':
    if not sequence_task:
      raise flags.ValidationError(
          f'--model transformer_lm needs a sequence task (pylm, copy), got '
          f'--task {task}.')
    return models.TransformerLM(
        vocab, d_model=FLAGS.d_model, d_ff=4 * FLAGS.d_model,
        n_layers=FLAGS.n_layers, n_heads=4,
        max_len=max(FLAGS.seq_len, FLAGS.sample_length + 1), dropout=0.0,
        mode=mode)
  if sequence_task:
    raise flags.ValidationError(
        f'--model {model_name} needs --task digits, got --task {task}.')
  if model_name == 'mlp':
    return models.MLP(layer_widths=(256, 128, vocab), mode=mode)
  from tfnp_trax.fastmath import numpy as jnp  # pylint: disable=g-import-not-at-top
  # WideResnet expects 32x32 images: repeat each 8x8 digit pixel 4x4 times.
  upsample = tl.Fn('Upsample4x', lambda x: jnp.repeat(jnp.repeat(x, 4, 1), 4,
                                                      2))
  return tl.Serial(upsample, models.WideResnet(
      n_blocks=1, widen_factor=1, n_output_classes=vocab, mode=mode,
      norm=tl.FilterResponseNorm, non_linearity=tl.ThresholdedLinearUnit))


def _gin_run(argv):
  """`--config_file`/`--config`: the gin-configured trainer, as Trax's."""
  from tfnp_trax import trainer  # pylint: disable=g-import-not-at-top
  # The other training flags would be silently ignored; say so instead.
  ignored = sorted(name for name in FLAGS if FLAGS[name].present and name
                   not in ('config_file', 'config', 'output_dir'))
  if ignored:
    print(f'{argv[0]}: --config_file/--config configure the run through '
          f'gin; --{", --".join(ignored)} would be ignored. Drop them or '
          f'write them as bindings (e.g. --config "train.steps = 100").',
          file=sys.stderr)
    return 2
  return trainer.run_configs(argv[0], FLAGS.config_file or [],
                             FLAGS.config or [], FLAGS.output_dir)


def main(argv):
  """Runs the train command; returns the process exit code."""
  FLAGS.unparse_flags()  # A second call in one process starts afresh.
  try:
    FLAGS(argv)
  except flags.Error as e:
    # An unknown flag or a bad value is a usage error, not a crash.
    print(f'{argv[0]}: {e}\nRun `{argv[0]} --help` for the flags.',
          file=sys.stderr)
    return 2
  if FLAGS.config_file or FLAGS.config:
    return _gin_run(argv)
  import tfnp_trax.layers as tl  # pylint: disable=g-import-not-at-top
  from distribute import strategy as strategy_lib  # pylint: disable=g-import-not-at-top
  from tfnp_trax import optimizers  # pylint: disable=g-import-not-at-top
  from tfnp_trax.supervised import lr_schedules  # pylint: disable=g-import-not-at-top
  from tfnp_trax.supervised import training  # pylint: disable=g-import-not-at-top

  defaults = _DEFAULTS[FLAGS.task]
  steps = FLAGS.steps or defaults.steps
  batch_size = FLAGS.batch_size or defaults.batch_size
  lr = FLAGS.learning_rate or defaults.learning_rate
  eval_every = FLAGS.eval_every or defaults.eval_every
  checkpoint_every = FLAGS.checkpoint_every or eval_every
  output_dir = FLAGS.output_dir or os.path.join(
      tempfile.gettempdir(), 'tfnp_trax', f'{FLAGS.task}_{FLAGS.model}')
  ckpt_dir = os.path.join(output_dir, 'checkpoints')
  if not FLAGS.resume and os.path.isdir(ckpt_dir) and os.listdir(ckpt_dir):
    print(f'tfnp-trax train: {output_dir} already holds checkpoints and '
          f'--noresume was given; choose another --output_dir or drop '
          f'--noresume to continue that run.', file=sys.stderr)
    return 2

  strategy = strategy_lib.get_strategy(FLAGS.strategy)
  train_stream, eval_stream, n_eval, vocab, info = _tasks(
      FLAGS.task, batch_size, FLAGS.seed)
  with strategy.scope():
    model = build(FLAGS.model, FLAGS.task, vocab)
    eval_model = build(FLAGS.model, FLAGS.task, vocab, mode='eval')
  schedule = lr_schedules.multifactor(
      factors='constant * linear_warmup * cosine_decay', constant=lr,
      warmup_steps=min(100, steps // 10), steps_per_cycle=steps)
  task = training.TrainTask(
      train_stream, tl.WeightedCategoryCrossEntropy(),
      optimizers.Adam(lr, weight_decay_rate=0.0, clip_grad_norm=1.0),
      lr_schedule=schedule, n_steps_per_checkpoint=checkpoint_every)
  eval_task = training.EvalTask(
      eval_stream, [tl.WeightedCategoryCrossEntropy(),
                    tl.WeightedCategoryAccuracy()],
      metric_names=['cross_entropy', 'accuracy'], n_eval_batches=n_eval)
  loop = training.Loop(model, task, eval_model=eval_model,
                       eval_tasks=[eval_task], output_dir=output_dir,
                       strategy=strategy, random_seed=FLAGS.seed,
                       eval_at=lambda s: s % eval_every == 0,
                       jit_compile=FLAGS.jit_compile or None)
  print(f'Training {FLAGS.model} on {FLAGS.task}: {steps} steps, batch '
        f'{batch_size}, strategy {type(strategy).__name__}, output '
        f'{output_dir}', flush=True)
  start = time.time()
  if loop.step < steps:
    loop.run(steps - loop.step)
  # History keeps eval metrics under Trax's names, 'metrics/<name>'.
  evaluated = loop.history.get('eval', 'metrics/accuracy')
  if evaluated and evaluated[-1][0] == loop.step:
    results = {name: loop.history.last('eval', f'metrics/{name}')
               for name in ('cross_entropy', 'accuracy')}
  else:
    results = loop.run_evals()
  print(f'Done in {time.time() - start:.1f}s at step {loop.step}.')
  _report(results, info)
  if FLAGS.task == 'pylm' and FLAGS.sample_length:
    _sample(loop, vocab)
  if FLAGS.export:
    from tfnp_trax import export  # pylint: disable=g-import-not-at-top
    signature = export.export_loop(loop, FLAGS.export)
    print(f'Exported a SavedModel to {FLAGS.export} (inputs {signature})')
  return 0


def _report(results, info):
  from tfnp_trax.data import pylm  # pylint: disable=g-import-not-at-top
  if FLAGS.task == 'pylm':
    bpc = pylm.bits(results['cross_entropy'])
    print(f'Eval: {bpc:.3f} bits/char (unigram baseline '
          f'{info["unigram_bits"]:.3f} bits/char)')
  else:
    print(f'Eval: accuracy {results["accuracy"]:.4f}, cross-entropy '
          f'{results["cross_entropy"]:.4f}')


def _sample(loop, vocab):
  """Prints bytes sampled from the trained LM with its predict-mode cache."""
  from tfnp_trax import fastmath  # pylint: disable=g-import-not-at-top
  from tfnp_trax import shapes  # pylint: disable=g-import-not-at-top
  from tfnp_trax.supervised import decoding  # pylint: disable=g-import-not-at-top
  predict_model = build(FLAGS.model, FLAGS.task, vocab, mode='predict')
  predict_model.init(shapes.ShapeDtype((1, 1), 'int32'))
  predict_model.weights = loop.model.weights
  tokens = decoding.autoregressive_sample(
      predict_model, batch_size=1, temperature=0.6, start_id=ord('\n'),
      eos_id=-1, max_length=FLAGS.sample_length,
      rng=fastmath.random.get_prng(FLAGS.seed))
  text = bytes(onp.asarray(tokens[0]).astype(onp.uint8).tolist())
  print('Sample:\n' + text.decode('utf-8', errors='replace'))
