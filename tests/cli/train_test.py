"""`tfnp-trax train` end to end, in subprocesses."""

import os
import re
import subprocess
import sys

import pytest
import tensorflow as tf

from tests import _subprocess
from tfnp_trax import data


def _train(*flags, timeout=300):
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2')
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
  assert 'Sample:' in out
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


def test_model_and_task_mismatch_is_a_clear_error(tmp_path):
  from absl import flags  # pylint: disable=g-import-not-at-top
  from tfnp_trax.cli import train  # pylint: disable=g-import-not-at-top
  with pytest.raises(flags.ValidationError,
                     match='--model mlp needs --task digits, got --task pylm'):
    train.main(['tfnp-trax train', '--task', 'pylm', '--model', 'mlp',
                '--output_dir', str(tmp_path)])


def test_help_lists_the_flags():
  out = _train('--help', timeout=120)
  assert out.returncode == 0, out.stderr[-2000:]
  for flag in ('--model', '--task', '--steps', '--batch_size', '--output_dir',
               '--strategy', '--eval_every', '--checkpoint_every',
               '--[no]resume', '--export'):
    assert flag in out.stdout


_GRU_COPY = os.path.join(_subprocess.REPO, 'tests', 'testdata',
                         'trax_configs', 'gru_copy.gin')


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
  assert ('tfnp-trax train: Unable to open file: /nonexistent/x.gin'
          in capsys.readouterr().err)


def test_task_defaults_are_named():
  from tfnp_trax.cli import train  # pylint: disable=g-import-not-at-top
  defaults = train._DEFAULTS['digits']  # pylint: disable=protected-access
  assert isinstance(defaults, train.TaskDefaults)
  assert defaults._asdict() == {'steps': 600, 'batch_size': 64,
                                'learning_rate': 1e-3, 'eval_every': 100}
  assert set(train._DEFAULTS) == {'pylm', 'digits', 'copy'}  # pylint: disable=protected-access
