"""`tfnp-trax train` end to end, in subprocesses."""

import os
import re
import shutil
import subprocess
import sys

import tensorflow as tf

from tests import _fixtures
from tests import _subprocess
from tfnp_trax import data


# TensorFlow's C++ start-up lines that the command hides by default.
_NOISE = re.compile(r'^([IWE]\d{4} \d\d:\d\d:|WARNING: All log messages '
                    r'before absl)|cpu_feature_guard|cudart_stub', re.M)


def _train(*flags, timeout=300):
  # No TF_CPP_MIN_LOG_LEVEL: the command must be quiet on its own.
  env = {k: v for k, v in os.environ.items() if k != 'TF_CPP_MIN_LOG_LEVEL'}
  return subprocess.run([sys.executable, '-m', 'tfnp_trax.cli', 'train',
                         *flags], capture_output=True, text=True,
                        timeout=timeout, env=env, cwd=_subprocess.REPO,
                        check=False)


# Test accuracy of `--task digits --model mlp` (359 test digits) over
# --seed 0-4: 0.983, 0.972, 0.964, 0.978, 0.981. The threshold is the worst
# seed less about the spread over seeds (0.02), which leaves room for other
# CPUs' rounding; an MLP that does not learn scores about 0.1.
_DIGITS_MIN_ACCURACY = 0.94


def test_digits_mlp_learns_and_exports(tmp_path):
  out = _train('--task', 'digits', '--model', 'mlp', '--output_dir',
               str(tmp_path / 'run'), '--export', str(tmp_path / 'model'))
  assert out.returncode == 0, out.stderr[-3000:]
  assert not _NOISE.search(out.stderr), out.stderr[-3000:]
  lines = out.stdout.splitlines()
  assert lines[0] == 'tfnp-trax: starting TensorFlow...'
  assert 'Compiling the training step (step 1)...' in lines
  # No --steps: the default 4-minute budget sized the run (all 600 fit).
  assert 'time budget 4m00s, at most 600 steps' in lines[1]
  accuracy = float(re.search(r'Eval: accuracy ([0-9.]+)', out.stdout)[1])
  assert accuracy >= _DIGITS_MIN_ACCURACY, out.stdout[-2000:]
  assert os.path.isdir(tmp_path / 'run' / 'checkpoints' / 'ckpt-600')
  # The exported model predicts like the trained one on the test digits.
  # Loaded here, not in a third interpreter: the SavedModel needs no
  # tfnp_trax code, and this process has TensorFlow imported already.
  _, (x, y) = data.load_digits_split(seed=0)
  serve = tf.saved_model.load(str(tmp_path / 'model')).signatures[
      'serving_default']
  logits = list(serve(tf.constant(x)).values())[0].numpy()
  exported = (logits.argmax(-1) == y).mean()
  assert abs(exported - accuracy) < 5e-5  # The CLI prints 4 decimals.


def test_pylm_short_run_reports_bits_per_char_and_samples(tmp_path, capsys):
  # In this process: two more interpreters would double the test's time
  # just importing TensorFlow; the digits test covers `python -m`.
  from tfnp_trax.cli import train  # pylint: disable=g-import-not-at-top
  flags = ['--steps', '40', '--d_model', '32', '--n_layers', '1',
           '--seq_len', '32', '--output_dir', str(tmp_path)]
  assert train.main(['tfnp-trax train', *flags, '--eval_every', '20',
                     '--sample_length', '20']) == 0
  out = capsys.readouterr().out
  match = re.search(r'Eval: ([0-9.]+) bits/char \(unigram baseline '
                    r'([0-9.]+) bits/char\)', out)
  assert match, out[-2000:]
  assert 0 < float(match[1]) < 8.0
  # The figure reads 1024 windows spread over the held-out files, each
  # scored on its second half.
  from tfnp_trax.data import pylm  # pylint: disable=g-import-not-at-top
  share = 1024 * 16 / len(pylm.load_corpus()[1])
  assert (f'Held-out eval: 1,024 windows of 32 bytes spread evenly over the '
          f'held-out files, each scoring its last 16 bytes ({share:.0%} of '
          f'the held-out bytes), so every byte is predicted from at least 16 '
          f'bytes before it.') in out
  # The sample continues the prompt of a method's first line.
  assert out[out.index('Sample:\n') + 8:].startswith('    def ')
  # A second run resumes, and with nothing left to do, finishes at once.
  assert train.main(['tfnp-trax train', *flags, '--sample_length', '0']) == 0
  again = capsys.readouterr().out
  assert 'Resumed from' in again and 'at step 40' in again, again[-2000:]


def test_noresume_refuses_to_overwrite(tmp_path, capsys):
  from tfnp_trax.cli import train  # pylint: disable=g-import-not-at-top
  (tmp_path / 'checkpoints' / 'ckpt-1').mkdir(parents=True)
  assert train.main(['tfnp-trax train', '--task', 'digits', '--model', 'mlp',
                     '--noresume', '--output_dir', str(tmp_path)]) == 2
  assert ('already holds checkpoints and --noresume was given' in
          capsys.readouterr().err)


def test_model_and_task_mismatch_is_a_usage_error(tmp_path, capsys):
  from tfnp_trax.cli import train  # pylint: disable=g-import-not-at-top
  assert train.main(['tfnp-trax train', '--task', 'pylm', '--model', 'mlp',
                     '--output_dir', str(tmp_path)]) == 2
  assert ('tfnp-trax train: --model mlp needs --task digits, got --task '
          'pylm.' in capsys.readouterr().err)


def test_help_lists_the_flags():
  out = _train('--help', timeout=120)
  assert out.returncode == 0, out.stderr[-2000:]
  for flag in ('--model', '--task', '--steps', '--batch_size', '--output_dir',
               '--strategy', '--eval_every', '--checkpoint_every',
               '--[no]resume', '--export', '--time_budget', '--[no]verbose'):
    assert flag in out.stdout
  assert not _NOISE.search(out.stderr), out.stderr[-2000:]


def test_verbose_shows_tensorflow_start_up_logging():
  out = _train('--help', '--verbose', timeout=120)
  assert out.returncode == 0, out.stderr[-2000:]
  # TensorFlow 2.21 always logs its oneDNN notice before absl starts.
  assert _NOISE.search(out.stderr), out.stderr[-2000:]


def test_budgeted_run_resumes_with_its_recorded_step_count(tmp_path, capsys):
  from tfnp_trax.cli import _time_budget  # pylint: disable=g-import-not-at-top
  from tfnp_trax.cli import train  # pylint: disable=g-import-not-at-top
  flags = ['tfnp-trax train', '--d_model', '16', '--n_layers', '1',
           '--seq_len', '16', '--batch_size', '4', '--steps', '30',
           '--eval_every', '10', '--sample_length', '0', '--output_dir',
           str(tmp_path)]
  assert train.main(flags + ['--time_budget', '10m']) == 0
  first = capsys.readouterr().out
  plan = _time_budget.read_plan(str(tmp_path))
  assert plan.total_steps == 30 and plan.warmup_steps == 3, first
  # Steps 21-30's mean training loss: the same weights and learning rates
  # give the same value (eval numbers would differ: the eval data's
  # position is not checkpointed).
  loss_at_30 = re.compile(r'Step +30: train WeightedCategoryCrossEntropy'
                          r' \| +([0-9.]+)')
  final = loss_at_30.search(first)[1]
  # Lose the checkpoints after step 10, as if the run had stopped there,
  # and resume with the default flags: the recorded count and warm-up,
  # not the defaults, decide, and the run ends as the first did.
  ckpts = tmp_path / 'checkpoints'
  for name in os.listdir(ckpts):
    if name.startswith('ckpt-') and int(name[5:]) > 10:
      shutil.rmtree(ckpts / name)
  # Without --steps and --time_budget the defaults (4 minutes, at most
  # 2000 steps, a 100-step warm-up) would apply to a new run.
  assert train.main([f for f in flags if f not in ('--steps', '30')]) == 0
  again = capsys.readouterr().out
  assert 'Resuming with the 30 steps the time budget fixed' in again, again
  assert 'at step 30' in again
  assert loss_at_30.search(again)[1] == final


def test_bad_time_budget_is_a_usage_error(capsys):
  from tfnp_trax.cli import train  # pylint: disable=g-import-not-at-top
  assert train.main(['tfnp-trax train', '--time_budget', '4 minutes']) == 2
  assert ("--time_budget: '4 minutes' is not a duration"
          in capsys.readouterr().err)


_GRU_COPY = str(_fixtures.path('trax_configs', 'gru_copy.gin'))


def test_config_file_runs_the_gin_trainer(tmp_path):
  from tfnp_trax.cli import train  # pylint: disable=g-import-not-at-top
  import gin  # pylint: disable=g-import-not-at-top
  flags = ['--config_file', _GRU_COPY, '--output_dir', str(tmp_path)]
  for binding in ('train.steps = 2', 'train.eval_frequency = 2',
                  'train.eval_steps = 1', 'RNNLM.d_model = 8',
                  'sequence_copy_inputs.batch_size = 4'):
    flags += ['--config', binding]
  try:
    assert train.main(['tfnp-trax train', *flags]) == 0
  finally:
    gin.clear_config()
  assert os.path.isdir(tmp_path / 'checkpoints' / 'ckpt-2')
  assert os.path.isfile(tmp_path / 'config.gin')


def test_config_file_with_other_training_flags_is_an_error(capsys):
  from tfnp_trax.cli import train  # pylint: disable=g-import-not-at-top
  code = train.main(['tfnp-trax train', '--config_file', _GRU_COPY,
                     '--steps', '5', '--model', 'mlp'])
  assert code == 2
  assert ('--config_file/--config configure the run through gin; --model, '
          '--steps would be ignored') in capsys.readouterr().err


def test_bad_flags_and_missing_config_file_exit_2_with_a_message(capsys):
  from tfnp_trax.cli import train  # pylint: disable=g-import-not-at-top
  assert train.main(['tfnp-trax train', '--stepz', '5']) == 2
  assert ("tfnp-trax train: Unknown command line flag 'stepz'"
          in capsys.readouterr().err)
  assert train.main(['tfnp-trax train', '--steps', 'ten']) == 2
  assert 'invalid literal for int()' in capsys.readouterr().err
  assert train.main(['tfnp-trax train', '--config_file',
                     '/nonexistent/x.gin']) == 2
  assert ('tfnp-trax train: Unable to open file: /nonexistent/x.gin '
          '(--config_file must name an existing, readable file; not found).'
          in capsys.readouterr().err)


def test_task_defaults_are_named():
  from tfnp_trax.cli import train  # pylint: disable=g-import-not-at-top
  defaults = train._DEFAULTS['digits']  # pylint: disable=protected-access
  assert isinstance(defaults, train.TaskDefaults)
  assert defaults._asdict() == {'steps': 600, 'batch_size': 64,
                                'learning_rate': 1e-3, 'eval_every': 100,
                                'budget_steps': 600}
  assert set(train._DEFAULTS) == {'pylm', 'digits', 'copy'}  # pylint: disable=protected-access


def test_precision_flag_trains_in_mixed_bf16(tmp_path, capsys, monkeypatch):
  from tfnp_trax.cli import train  # pylint: disable=g-import-not-at-top
  from tfnp_trax.supervised import training  # pylint: disable=g-import-not-at-top
  loops = []
  real_loop = training.Loop

  def recording_loop(*args, **kwargs):
    loops.append(real_loop(*args, **kwargs))
    return loops[-1]
  monkeypatch.setattr(training, 'Loop', recording_loop)
  # Every evaluator, the final held-out one too, runs in bf16.
  from tfnp_trax.supervised.loop import evals  # pylint: disable=g-import-not-at-top
  precisions = []
  real_evaluator = evals.Evaluator

  def recording_evaluator(*args, precision=None, **kwargs):
    precisions.append(precision)
    return real_evaluator(*args, precision=precision, **kwargs)
  monkeypatch.setattr(evals, 'Evaluator', recording_evaluator)
  assert train.main(['tfnp-trax train', '--steps', '4', '--d_model', '32',
                     '--n_layers', '1', '--seq_len', '16', '--eval_every',
                     '4', '--sample_length', '0', '--precision', 'bf16',
                     '--output_dir', str(tmp_path)]) == 0
  assert loops[0].trainer.precision == 'bfloat16'
  # The Loop's evaluator gets the flag; the held-out one the Trainer's.
  assert precisions == ['bf16', 'bfloat16']
  assert all(v.dtype.name == 'float32'
             for v in loops[0].trainer.variables()['weights'])
  assert re.search(r'Eval: [0-9.]+ bits/char', capsys.readouterr().out)


def test_precision_flag_default_and_bad_value(capsys):
  from tfnp_trax.cli import train  # pylint: disable=g-import-not-at-top
  train.FLAGS.unparse_flags()
  train.FLAGS(['tfnp-trax train'])
  assert train.FLAGS.precision == 'float32'
  assert train.main(['tfnp-trax train', '--precision', 'fp16']) == 2
  assert ("flag --precision=fp16: value should be one of <float32|bf16>"
          in capsys.readouterr().err)


def test_default_pylm_run_fits_the_model_size_to_the_budget(
    tmp_path, capsys, monkeypatch):
  from tfnp_trax.cli import _model_size  # pylint: disable=g-import-not-at-top
  from tfnp_trax.cli import train  # pylint: disable=g-import-not-at-top
  # A ladder of toy sizes: 'b' gets its 10 steps in any budget, 'c' can
  # never get 10**9 (so it is not even timed), and 'd' is never reached.
  ladder = (_model_size.Size('a', 1, 8, 2, 16, 2, 5e-3, 0),
            _model_size.Size('b', 1, 16, 2, 16, 4, 5e-3, 10),
            _model_size.Size('c', 2, 16, 2, 16, 4, 5e-3, 10 ** 9),
            _model_size.Size('d', 2, 32, 2, 16, 4, 5e-3, 0))
  monkeypatch.setattr(_model_size, 'LADDER', ladder)
  timed = []
  probe = _model_size.probe_step_seconds

  def timing(size, *args, **kwargs):
    timed.append(size.name)
    return probe(size, *args, **kwargs, timed_s=0.2)
  monkeypatch.setattr(_model_size, 'probe_step_seconds', timing)
  flags = ['tfnp-trax train', '--time_budget', '25s', '--sample_length',
           '8', '--output_dir', str(tmp_path)]
  assert train.main(flags) == 0
  out = capsys.readouterr().out
  assert timed == ['a', 'b']
  lines = out.splitlines()
  start = lines.index(next(l for l in lines if l.startswith('Choosing')))
  assert lines[start + 1].startswith('  a (1 layer x 8 wide, batches of 2 x '
                                     '16 bytes): ')
  assert lines[start + 3].endswith('not timed; it needs 1000000000 steps, '
                                   'more than b gets')
  assert lines[start + 4].startswith('Chose b: 1 layer x 16 wide')
  assert 'Batch 4, peak learning rate 0.005.' in lines
  choice = _model_size.read_size(str(tmp_path))
  assert choice.size == ladder[1]
  assert re.search(r'Eval: [0-9.]+ bits/char', out)
  # Rerunning the command resumes the same model, without timing again.
  timed.clear()
  assert train.main(flags) == 0
  again = capsys.readouterr().out
  assert timed == [] and 'Resuming the model size chosen in' in again
  assert 'Resuming with the' in again  # ... and the same step count.
