"""`tfnp-trax train`: train a model on an offline task, end to end.

With no flags it trains a small TransformerLM on the Python standard
library's own sources (bytes), evaluates in bits per character against the
unigram baseline (each eval on the same evenly spread windows of the
held-out files, the final one on 1024 windows spread over them),
checkpoints and logs to TensorBoard, and prints a sample, all within a
time budget of 4 minutes: it times the first steps after
compilation and takes as many steps as fit (at most the task's default
`steps`), with the learning-rate decay fitted to them. `--steps N` alone
runs exactly N steps; `--time_budget 10m` (or `0`: none) sets the budget
(with `--steps`, N is then the most it runs). The step count chosen is
kept in `<output_dir>/time_budget.json`, so a resumed run continues the
same schedule. TensorFlow's C++ start-up logging is hidden unless
`--verbose` is given (see `_quiet`).

With `--config_file X.gin` and/or `--config 'train.steps = 100'` it runs a
gin-configured `trainer_lib.train` instead, exactly as
`python -m tfnp_trax.trainer` does (Trax's own `.gin` files work unchanged).
"""

import os
import time
from typing import NamedTuple

from absl import flags
import numpy as onp

from tfnp_trax.cli import _budget_run
from tfnp_trax.cli import _model_size
from tfnp_trax.cli import _progress
from tfnp_trax.cli import _time_budget
from tfnp_trax.cli import _train_flags
from tfnp_trax.cli import _usage

__all__ = ['FLAGS', 'main', 'build', 'TaskDefaults']

FLAGS = _train_flags.FLAGS


class TaskDefaults(NamedTuple):
  """What `tfnp-trax train` uses for a task unless a flag overrides it.

  `steps` is the step count without a time budget; with one, the run
  takes as many steps as fit, at most `budget_steps` (None: no limit).
  """
  steps: int
  batch_size: int
  learning_rate: float
  eval_every: int
  budget_steps: int

# Of the budget left after the start-up, the share the model-size choice
# counts on for training steps, and seconds kept for the exit and sample.
_TRAIN_FRACTION = 0.85
# A budgeted run with no step limit stops by the budget long before this.
_UNCAPPED = 10_000_000
_RESERVE_S = 10.0


_DEFAULTS = {
    # pylm's model and batches: the flags' (1 layer x 128, 16 x 128
    # bytes), or with a time budget and none of the model flags, the size
    # fitted to the machine (`_lm_size`).
    'pylm': TaskDefaults(steps=2000, batch_size=16, learning_rate=5e-3,
                         eval_every=250, budget_steps=None),
    'digits': TaskDefaults(steps=600, batch_size=64, learning_rate=1e-3,
                           eval_every=100, budget_steps=600),
    'copy': TaskDefaults(steps=1500, batch_size=32, learning_rate=1e-3,
                         eval_every=250, budget_steps=1500),
}


def _tasks(task, batch_size, seed, seq_len, corpus=None):
  """Returns (train_stream, eval_stream, n_eval_batches, vocab, info)."""
  from tfnp_trax import data  # pylint: disable=g-import-not-at-top
  if task == 'pylm':
    train, evals = corpus or data.load_corpus()
    info = {'unigram_bits': data.unigram_bits_per_char(train, evals)}
    # Every eval reads the same ~32k bytes, windows spread evenly over the
    # held-out files: random windows left eval-to-eval noise of ~0.05
    # bits/char, which hid the trend. At most 64 batches: small windows
    # and batches would need hundreds. The final figure reads more of the
    # held-out files (`_heldout_eval`).
    n_eval = max(8, min(64, 32768 // (batch_size * seq_len)))
    return (data.lm_batches(train, batch_size, seq_len, seed),
            data.window_batches(evals, batch_size, seq_len,
                                n_windows=n_eval * batch_size, repeat=True),
            n_eval, data.pylm.VOCAB_SIZE, info)
  if task == 'digits':
    (xtr, ytr), (xte, yte) = data.load_digits_split(seed=seed)
    return (data.classification_batches(xtr, ytr, batch_size, seed),
            data.classification_batches(xte, yte, len(yte), seed,
                                        shuffle=False), 1, 10,
            {'n_test': len(yte)})
  vocab = 16
  return (data.copy_batches(batch_size, 16, vocab, seed),
          data.copy_batches(batch_size, 16, vocab, seed + 1), 4, vocab, {})


class LMShape(NamedTuple):
  """The TransformerLM's dimensions and its training windows."""
  n_layers: int
  d_model: int
  n_heads: int
  seq_len: int


def flag_shape(task):
  """The LMShape the flags give (each unset one at its default)."""
  return LMShape(n_layers=FLAGS.n_layers or (1 if task == 'pylm' else 2),
                 d_model=FLAGS.d_model, n_heads=FLAGS.n_heads,
                 seq_len=FLAGS.seq_len)


def build(model_name, task, vocab, mode='train', shape=None, max_len=None):
  """The model for a (model, task) pair, in the given mode.

  Args:
    model_name, task: the --model and --task values.
    vocab: the vocabulary (or class count).
    mode: 'train', 'eval' or 'predict'.
    shape: the TransformerLM's LMShape (default: from the flags).
    max_len: the TransformerLM's positions (default: from the flags).
  """
  import tfnp_trax.layers as tl  # pylint: disable=g-import-not-at-top
  from tfnp_trax import models  # pylint: disable=g-import-not-at-top
  sequence_task = task in ('pylm', 'copy')
  if model_name == 'transformer_lm':
    if not sequence_task:
      raise flags.ValidationError(
          f'--model transformer_lm needs a sequence task (pylm, copy), got '
          f'--task {task}.')
    shape = shape or flag_shape(task)
    return models.TransformerLM(
        vocab, d_model=shape.d_model, d_ff=4 * shape.d_model,
        n_layers=shape.n_layers, n_heads=shape.n_heads,
        max_len=max_len or max(shape.seq_len, FLAGS.sample_length + 1),
        dropout=0.0, mode=mode)
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
  from tfnp_trax.cli import trainer  # pylint: disable=g-import-not-at-top
  return trainer.run_configs(argv[0], FLAGS.config_file or [],
                             FLAGS.config or [], FLAGS.output_dir)


def main(argv, started_at=None):
  """Runs the train command; returns the process exit code.

  Args:
    argv: the command line, program name first.
    started_at: when the run started on the `time.monotonic` clock (the
      time budget counts from it); default: now. `tfnp-trax` passes the
      process start, so TensorFlow's import counts too.
  """
  started_at = time.monotonic() if started_at is None else started_at
  # An unknown flag or a bad value is a usage error, not a crash (in a
  # command-line process `_preflight` said so before TensorFlow started).
  error = _usage.parse(FLAGS, argv, _train_flags.validate)
  if error is not None:
    _usage.report(argv[0], error, f'Run `{argv[0]} --help` for the flags.')
    return 2
  if FLAGS.config_file or FLAGS.config:
    return _gin_run(argv)
  import tfnp_trax.layers as tl  # pylint: disable=g-import-not-at-top
  from distribute import strategy as strategy_lib  # pylint: disable=g-import-not-at-top
  from tfnp_trax import optimizers  # pylint: disable=g-import-not-at-top
  from tfnp_trax.supervised import training  # pylint: disable=g-import-not-at-top

  defaults = _DEFAULTS[FLAGS.task]
  budget_s = _train_flags.budget_seconds()
  cap = FLAGS.steps or (defaults.budget_steps if budget_s else
                        defaults.steps)
  max_steps = cap or _UNCAPPED
  output_dir = os.path.expanduser(_train_flags.output_dir())
  ckpt_dir = os.path.join(output_dir, 'checkpoints')
  resumed = os.path.isdir(ckpt_dir) and bool(os.listdir(ckpt_dir))
  # Said at once: on a slow machine the data and model take a few seconds.
  limit = f'{max_steps} steps'
  if budget_s:
    limit = f'time budget {_time_budget.format_duration(budget_s)}' + (
        f', at most {limit}' if cap else '')
  print(f'Training {FLAGS.model} on {FLAGS.task}: {limit}, output '
        f'{output_dir}', flush=True)

  strategy = strategy_lib.get_strategy(FLAGS.strategy)
  corpus = None
  if FLAGS.task == 'pylm':
    from tfnp_trax import data  # pylint: disable=g-import-not-at-top
    corpus = data.load_corpus()
  shape, size = _lm_size(output_dir, resumed, budget_s, started_at, corpus,
                         strategy)
  batch_size = FLAGS.batch_size or (size.batch_size if size else
                                    defaults.batch_size)
  lr = FLAGS.learning_rate or (size.learning_rate if size else
                               defaults.learning_rate)
  print(f'Batch {batch_size}, peak learning rate {lr:g}.', flush=True)
  # Without --eval_every a budgeted run spaces its evals (and checkpoints)
  # to its step count once that is known; `every` holds the spacing.
  every = {'eval': FLAGS.eval_every or defaults.eval_every}
  every['checkpoint'] = FLAGS.checkpoint_every or every['eval']
  train_stream, eval_stream, n_eval, vocab, info = _tasks(
      FLAGS.task, batch_size, FLAGS.seed, shape.seq_len, corpus)
  _record_run(output_dir, vocab, shape)
  with strategy.scope():
    model = build(FLAGS.model, FLAGS.task, vocab, shape=shape)
    eval_model = build(FLAGS.model, FLAGS.task, vocab, mode='eval',
                       shape=shape)
  # The warm-up never depends on the step count, which a budget fixes only
  # after timing steps of the warm-up (see _time_budget.WarmupCosine).
  # A resumed budgeted run keeps its first run's warm-up too.
  prior = _time_budget.read_plan(output_dir) if resumed else None
  if prior:
    warmup = prior.warmup_steps
  elif size:
    warmup = size.warmup_steps
  else:
    warmup = max(1, min(100, max_steps // 10))
  schedule = _time_budget.WarmupCosine(lr, warmup)
  task = training.TrainTask(
      train_stream, tl.WeightedCategoryCrossEntropy(),
      optimizers.Adam(lr, weight_decay_rate=0.0, clip_grad_norm=1.0),
      lr_schedule=schedule, n_steps_per_checkpoint=every['checkpoint'])
  eval_task = _eval_task(eval_stream, n_eval)
  progress = []  # Loop builds its callbacks; keep the one it builds.

  def make_progress(loop):
    progress.append(_progress.Progress(loop))
    return progress[0]
  loop = training.Loop(model, task, eval_model=eval_model,
                       eval_tasks=[eval_task], output_dir=output_dir,
                       strategy=strategy, random_seed=FLAGS.seed,
                       eval_at=lambda s: s % every['eval'] == 0,
                       checkpoint_at=lambda s: s == 1 or s % every[
                           'checkpoint'] == 0,
                       callbacks=[make_progress],
                       jit_compile=FLAGS.jit_compile or None,
                       precision=FLAGS.precision)
  print(f'Strategy {type(strategy).__name__}; '
        f'{"resuming at step %d" % loop.step if loop.step else "starting"}.',
        flush=True)
  run_shape = _budget_run.RunShape(
      eval_every=every['eval'], n_eval_batches=n_eval,
      checkpoint_every=every['checkpoint'],
      sample_length=FLAGS.sample_length if FLAGS.task == 'pylm' else 0,
      export=bool(FLAGS.export),
      # The held-out eval, in batches of the training batch's size.
      final_eval_batches=(_heldout_windows(corpus[1], shape.seq_len) //
                          batch_size if FLAGS.task == 'pylm' else 0))

  def say(line):
    progress[0].close()  # A bar being drawn ends its line first.
    print(line, flush=True)
  respaced = bool(budget_s) and not FLAGS.eval_every

  def respace(shape, total):
    """The evals and checkpoints of a budgeted run of `total` steps."""
    spacing = _eval_spacing(total, defaults.eval_every)
    return shape._replace(
        eval_every=spacing,
        checkpoint_every=FLAGS.checkpoint_every or spacing)
  total = _budget_run.total_steps(
      loop, schedule, progress[0], run_shape, budget_s=budget_s,
      max_steps=max_steps, explicit_steps=FLAGS.steps,
      started_at=started_at, out=say, respace=respace if respaced else None)
  schedule.set_total_steps(total)
  progress[0].total_steps = total
  if respaced:
    spaced = respace(run_shape, total)
    every['eval'] = spaced.eval_every
    every['checkpoint'] = spaced.checkpoint_every
  start = time.time()
  if loop.step < total:
    loop.run(total - loop.step)
  progress[0].close()
  print(f'Done in {time.time() - start:.1f}s at step {loop.step}.')
  if FLAGS.task == 'pylm':
    _report(_heldout_eval(loop, eval_model, corpus[1], shape.seq_len), info)
  else:
    _report(_last_eval(loop), info)
  if FLAGS.task == 'pylm' and FLAGS.sample_length:
    _sample(loop, vocab, shape)
  if FLAGS.export:
    from tfnp_trax import export  # pylint: disable=g-import-not-at-top
    signature = export.export_loop(loop, FLAGS.export)
    print(f'Exported a SavedModel to {FLAGS.export} (inputs {signature})')
  print(f'Total time {_time_budget.format_duration(time.monotonic() - started_at)}.')
  return 0


def _record_run(output_dir, vocab, shape):
  """Writes what rebuilds this run's model for `tfnp-trax export`."""
  from tfnp_trax.cli import _run_record  # pylint: disable=g-import-not-at-top
  if FLAGS.task == 'digits':
    example, dtype = (8, 8, 1), 'float32'
  else:
    example = (shape.seq_len if FLAGS.task == 'pylm' else
               _train_flags.COPY_SEQUENCE_LENGTH,)
    dtype = 'int32'
  _run_record.write_record(output_dir, _run_record.RunRecord(
      task=FLAGS.task, model=FLAGS.model, vocab=int(vocab),
      n_layers=shape.n_layers, d_model=shape.d_model, n_heads=shape.n_heads,
      seq_len=shape.seq_len,
      max_len=max(shape.seq_len, FLAGS.sample_length + 1),
      example_shape=example, example_dtype=dtype))


def _eval_spacing(total, least):
  """Steps between evals of a budgeted run of `total` steps: about ten
  evals, at multiples of 50 steps, never closer than `least`."""
  return max(least, 50 * round(total / 10 / 50))


_SHAPE_FLAGS = ('n_layers', 'd_model', 'n_heads', 'seq_len', 'batch_size',
                'learning_rate', 'steps')


def _lm_size(output_dir, resumed, budget_s, started_at, corpus, strategy):
  """The pylm TransformerLM's shape: from the flags, or fitted to the budget.

  A budgeted pylm run given none of the model's flags times the sizes of
  `_model_size.LADDER` and takes the biggest that gets the steps it needs
  (see `_model_size`); a resumed run takes the size its folder records.

  Returns:
    (LMShape, Size or None): None where the flags (or their defaults)
    decide.
  """
  if FLAGS.task != 'pylm' or FLAGS.model != 'transformer_lm':
    return flag_shape(FLAGS.task), None
  if any(FLAGS[name].present for name in _SHAPE_FLAGS):
    return flag_shape(FLAGS.task), None
  prior = _model_size.read_size(output_dir) if resumed else None
  if prior is not None:
    print(f'Resuming the model size chosen in '
          f'{os.path.join(output_dir, _model_size.SIZE_FILE)}: '
          f'{prior.size.name}, {prior.size.describe()}.', flush=True)
    return _shape_of(prior.size), prior.size
  if not budget_s or resumed:
    return flag_shape(FLAGS.task), None
  from tfnp_trax import data  # pylint: disable=g-import-not-at-top
  left = budget_s - (time.monotonic() - started_at)
  # What the steps may use: the rest goes to evals, checkpoints, the
  # sample and the exit (`_budget_run` then fits the steps exactly).
  train_s = max(1.0, _TRAIN_FRACTION * left - _RESERVE_S)
  print(f'Choosing the model size: timing a training step of each size, '
        f'smallest first, for about {_time_budget.format_duration(train_s)} '
        f'of training...', flush=True)

  def step_seconds(size):
    batch = next(data.lm_batches(corpus[0], size.batch_size, size.seq_len,
                                 FLAGS.seed))
    return _model_size.probe_step_seconds(
        size, data.pylm.VOCAB_SIZE, batch, strategy=strategy,
        jit_compile=FLAGS.jit_compile or None, precision=FLAGS.precision)
  choice = _model_size.choose(_model_size.LADDER, step_seconds, train_s)
  for reason in choice.reasons:
    print(f'  {reason}', flush=True)
  print(f'Chose {choice.size.name}: {choice.size.describe()}, the biggest '
        f'size that gets the steps it needs here (~{choice.steps} steps).',
        flush=True)
  _model_size.write_size(output_dir, choice)
  return _shape_of(choice.size), choice.size


def _shape_of(size):
  return LMShape(n_layers=size.n_layers, d_model=size.d_model,
                 n_heads=size.n_heads, seq_len=size.seq_len)


def _last_eval(loop):
  """The eval metrics at the Loop's step: logged there, or run now."""
  # History keeps eval metrics under Trax's names, 'metrics/<name>'.
  evaluated = loop.history.get('eval', 'metrics/accuracy')
  if evaluated and evaluated[-1][0] == loop.step:
    return {name: loop.history.last('eval', f'metrics/{name}')
            for name in ('cross_entropy', 'accuracy')}
  return loop.run_evals()


# The held-out eval's batch (bigger than training's: fewer calls) and its
# windows: 1024 of 256 bytes, spread evenly over all the held-out files
# (every whole window, 2584 of them, took 14 s on one core of a 2-core
# CPU: a tenth of a slow machine's 4-minute budget). Each window scores
# only its second half, so every byte scored is predicted from at least
# half a window of the text before it, as a language model reads running
# text; a window's first bytes, predicted from few or none, scored about
# 0.1 bits/char worse on average over the window (measured with the
# default run's model: 2.8 bits/char at the first 8 bytes, 1.75 after 128).
_HELDOUT_BATCH = 32
_HELDOUT_WINDOWS = 1024


def _eval_task(stream, n_batches):
  """The EvalTask of the run's metrics, cross-entropy and accuracy."""
  import tfnp_trax.layers as tl  # pylint: disable=g-import-not-at-top
  from tfnp_trax.supervised import training  # pylint: disable=g-import-not-at-top
  return training.EvalTask(
      stream, [tl.WeightedCategoryCrossEntropy(),
               tl.WeightedCategoryAccuracy()],
      metric_names=['cross_entropy', 'accuracy'], n_eval_batches=n_batches)


def _heldout_windows(evals, seq_len):
  """How many windows `_heldout_eval` spreads over the held-out bytes."""
  return min(_HELDOUT_WINDOWS, len(evals) // seq_len)


def _heldout_eval(loop, eval_model, evals, seq_len):
  """Cross-entropy and accuracy over `_HELDOUT_WINDOWS` windows spread
  evenly over the held-out bytes (all whole windows, where fewer), each
  scored on its second half (the first is context), with the weights the
  Loop's evals use; also kept in the history as ('eval',
  'heldout/<metric>') at the final step."""
  from tfnp_trax import data  # pylint: disable=g-import-not-at-top
  from tfnp_trax.supervised.loop import evals as evals_lib  # pylint: disable=g-import-not-at-top
  windows = _heldout_windows(evals, seq_len)
  batch = min(_HELDOUT_BATCH, windows)
  n_batches = windows // batch
  context = seq_len // 2
  task = _eval_task(
      data.window_batches(evals, batch, seq_len, n_windows=windows,
                          context=context),
      n_batches)
  # In the Trainer's precision, as the Loop's own evals run.
  values = evals_lib.Evaluator(
      eval_model, task, precision=loop.trainer.precision).evaluate(
          *loop.eval_weights_and_state())
  scored = seq_len - context
  share = n_batches * batch * scored / len(evals)
  print(f'Held-out eval: {n_batches * batch:,} windows of {seq_len} bytes '
        f'spread evenly over the held-out files, each scoring its last '
        f'{scored} bytes ({share:.0%} of the held-out bytes), so every byte '
        f'is predicted from at least {context} bytes before it.')
  loop.log_summary(values, None, 'heldout/', 'eval', stdout=False)
  return values


def _report(results, info):
  from tfnp_trax.data import pylm  # pylint: disable=g-import-not-at-top
  if FLAGS.task == 'pylm':
    bpc = pylm.bits(results['cross_entropy'])
    print(f'Eval: {bpc:.3f} bits/char (unigram baseline '
          f'{info["unigram_bits"]:.3f} bits/char)')
  else:
    print(f'Eval: accuracy {results["accuracy"]:.4f}, cross-entropy '
          f'{results["cross_entropy"]:.4f}')


# The sample continues a method's first line, so it shows what the model
# learned of Python's layout (indentation, `self`, `return`).
_PROMPT = b'    def '
# Sampling temperature: at 0.7 the default run's model (2 x 128) fell into
# a run of spaces after the first newline in two of three samples (a long
# indentation is likely after spaces, and a low temperature makes likely
# bytes likelier still); at 0.85 its samples went on with indented lines,
# comments and docstrings; at 1.0 they lost the layout more often.
_TEMPERATURE = 0.85


def _sample(loop, vocab, shape):
  """Prints bytes sampled from the trained LM with its predict-mode cache.

  The sample starts after a newline and `_PROMPT` (fed as a prefix), and
  holds `--sample_length` bytes with the prompt.
  """
  from tfnp_trax import fastmath  # pylint: disable=g-import-not-at-top
  from tfnp_trax import shapes  # pylint: disable=g-import-not-at-top
  from tfnp_trax.supervised import decoding  # pylint: disable=g-import-not-at-top
  predict_model = build(FLAGS.model, FLAGS.task, vocab, mode='predict',
                        shape=shape)
  predict_model.init(shapes.ShapeDtype((1, 1), 'int32'))
  predict_model.weights = loop.model.weights
  prompt = _PROMPT if FLAGS.sample_length > 2 * len(_PROMPT) else b''
  tokens = decoding.autoregressive_sample(
      predict_model, batch_size=1, temperature=_TEMPERATURE,
      start_id=ord('\n'),
      inputs=onp.frombuffer(prompt, onp.uint8).astype(onp.int32)[None]
      if prompt else None, eos_id=-1,
      max_length=FLAGS.sample_length - len(prompt),
      rng=fastmath.random.get_prng(FLAGS.seed))
  text = prompt + bytes(onp.asarray(tokens[0]).astype(onp.uint8).tolist())
  print('Sample:\n' + text.decode('utf-8', errors='replace'))
