"""Bad command lines and gin bindings of the wrong type.

Each flag of `tfnp-trax train`, `tfnp-trax rl` and `python -m
tfnp_trax.trainer` that a run cannot use is a usage error: exit 2 and a
message naming the flag, what it expects and what it got. The commands run
in-process through `_case.call_cli` (in a command-line process the same
checks run before TensorFlow is imported: tests/cli/preflight_test.py).
Gin bindings of the wrong type raise TypeError naming the configurable and
the parameter when the optimizer is built or `train` is entered.
"""

import os
from unittest import mock

import gin
import pytest

from tests.bad_inputs import _case
from tfnp_trax import cli
from tfnp_trax import optimizers
from tfnp_trax import trainer as trainer_main
from tfnp_trax.supervised import trainer_lib

Case = _case.Case
CliExit = _case.CliExit


def _train(*argv, output_dir=True):
  """`tfnp-trax train ARGV`, with --output_dir in tmp_path unless False."""
  def call(tmp_path):
    extra = ['--output_dir', str(tmp_path / 'run')] if output_dir else []
    return _case.call_cli(cli.run, ['tfnp-trax', 'train', *argv, *extra])
  return call


def _rl(*argv):
  def call(tmp_path):
    return _case.call_cli(cli.run, ['tfnp-trax', 'rl', *argv, '--output_dir',
                                    str(tmp_path / 'run')])
  return call


def _trainer(*argv):
  def call(tmp_path):
    try:
      return _case.call_cli(trainer_main.main, [
          'trainer', *argv, f'--output_dir={tmp_path / "run"}'])
    finally:
      gin.clear_config()
  return call


def _with_file(command, flag, *argv):
  """`command` with `flag` naming a file that exists (not a folder)."""
  def call(tmp_path):
    path = tmp_path / 'a_file'
    path.write_text('not a folder')
    return _case.call_cli(cli.run, ['tfnp-trax', command, *argv, flag,
                                    str(path)])
  return call


def _unwritable(command):
  """--output_dir in a folder os.access calls read-only.

  The check asks os.access; faked here, since root may write anywhere.
  """
  def call(tmp_path):
    locked = str(tmp_path / 'locked')
    os.mkdir(locked)
    real = os.access
    fake = lambda p, mode: False if p == locked else real(p, mode)
    with mock.patch.object(os, 'access', fake):
      return _case.call_cli(cli.run, ['tfnp-trax', command, '--output_dir',
                                      os.path.join(locked, 'run')])
  return call


def _noresume(command, *argv):
  def call(tmp_path):
    (tmp_path / 'checkpoints' / 'ckpt-1').mkdir(parents=True)
    return _case.call_cli(cli.run, ['tfnp-trax', command, *argv,
                                    '--noresume', '--output_dir',
                                    str(tmp_path)])
  return call


_COPY_INPUTS = [
    'train.model = @trax.models.RNNLM', 'RNNLM.vocab_size = 8',
    'RNNLM.d_model = 8', 'RNNLM.n_layers = 1',
    'train.inputs = @trax.data.sequence_copy_inputs',
    'sequence_copy_inputs.vocab_size = 8',
    'sequence_copy_inputs.batch_size = 4',
    'sequence_copy_inputs.train_length = 4',
    'sequence_copy_inputs.eval_min_length = 2',
    'sequence_copy_inputs.eval_max_length = 4',
    'sequence_copy_inputs.pad_to_multiple = 4',
]


def _gin_train(*bindings):
  """trainer_lib.train under gin `bindings` (no step runs: they fail first)."""
  def call(tmp_path):
    try:
      return trainer_main.train_from_configs(
          [], _COPY_INPUTS + list(bindings), str(tmp_path / 'run'))
    finally:
      gin.clear_config()
  return call


_POSITIVE = r'is not a positive integer'
_NON_NEGATIVE = r'is not a non-negative integer'

CASES = [
    # -- tfnp-trax train: ranges -------------------------------------------
    Case('train_negative_batch_size_digits',
         _train('--task', 'digits', '--model', 'mlp', '--batch_size', '-8'),
         CliExit, r'exit 2: tfnp-trax train: flag --batch_size=-8: -8 '
         + _POSITIVE),
    Case('train_zero_batch_size', _train('--batch_size', '0'), CliExit,
         r'flag --batch_size=0: 0 ' + _POSITIVE),
    Case('train_digits_batch_larger_than_its_training_set',
         _train('--task', 'digits', '--model', 'mlp', '--batch_size',
                '5000'), CliExit,
         r'--batch_size must be at most 1438 for --task digits \(its '
         r'training images\), got 5000'),
    Case('train_negative_learning_rate', _train('--learning_rate', '-1'),
         CliExit, r'--learning_rate must be a positive finite number, got '
         r'-1\.0'),
    Case('train_infinite_learning_rate', _train('--learning_rate', 'inf'),
         CliExit, r'--learning_rate must be a positive finite number, got '
         r'inf'),
    Case('train_zero_seq_len', _train('--seq_len', '0'), CliExit,
         r'flag --seq_len=0: 0 ' + _POSITIVE),
    Case('train_zero_steps', _train('--steps', '0'), CliExit,
         r'flag --steps=0: 0 ' + _POSITIVE),
    Case('train_zero_eval_every', _train('--eval_every', '0'), CliExit,
         r'flag --eval_every=0: 0 ' + _POSITIVE),
    Case('train_zero_checkpoint_every', _train('--checkpoint_every', '0'),
         CliExit, r'flag --checkpoint_every=0: 0 ' + _POSITIVE),
    Case('train_zero_n_layers', _train('--n_layers', '0'), CliExit,
         r'flag --n_layers=0: 0 ' + _POSITIVE),
    Case('train_zero_n_heads', _train('--n_heads', '0'), CliExit,
         r'flag --n_heads=0: 0 ' + _POSITIVE),
    Case('train_zero_d_model', _train('--d_model', '0'), CliExit,
         r'flag --d_model=0: 0 ' + _POSITIVE),
    Case('train_negative_seed', _train('--seed', '-1'), CliExit,
         r'flag --seed=-1: -1 ' + _NON_NEGATIVE),
    Case('train_negative_sample_length', _train('--sample_length', '-1'),
         CliExit, r'flag --sample_length=-1: -1 ' + _NON_NEGATIVE),
    Case('train_negative_time_budget', _train('--time_budget', '-5'),
         CliExit, r"--time_budget: '-5' must be a finite duration of 0 "
         r"seconds or more"),
    # -- tfnp-trax train: combinations -------------------------------------
    Case('train_d_model_not_a_multiple_of_n_heads', _train('--d_model', '6'),
         CliExit, r'--d_model must be a multiple of --n_heads \(4\).*got '
         r'--d_model 6\. Try --d_model 8'),
    Case('train_d_model_with_other_n_heads',
         _train('--d_model', '32', '--n_heads', '3'), CliExit,
         r'--d_model must be a multiple of --n_heads \(3\).*got --d_model '
         r'32'),
    Case('train_transformer_on_digits', _train('--task', 'digits'), CliExit,
         r'--model transformer_lm needs a sequence task \(pylm, copy\), got '
         r'--task digits'),
    Case('train_mlp_on_pylm', _train('--model', 'mlp'), CliExit,
         r'--model mlp needs --task digits, got --task pylm'),
    Case('train_copy_longer_than_the_model',
         _train('--task', 'copy', '--seq_len', '16', '--sample_length', '0'),
         CliExit, r'--task copy needs a model of at least 34 positions .*'
         r'= 16\. Raise --seq_len to 34'),
    Case('train_gin_config_with_training_flags',
         _train('--config', 'train.steps = 3', '--batch_size', '4'), CliExit,
         r'--config_file/--config configure the run through gin; '
         r'--batch_size would be ignored'),
    Case('train_missing_config_file',
         _train('--config_file', '/nonexistent/x.gin'), CliExit,
         r'Unable to open file: /nonexistent/x.gin \(--config_file must '
         r'name an existing, readable file; not found\)'),
    Case('train_noresume_over_checkpoints',
         _noresume('train', '--task', 'digits', '--model', 'mlp'), CliExit,
         r'already holds checkpoints and --noresume was given; choose '
         r'another --output_dir'),
    # -- tfnp-trax train: folders ------------------------------------------
    Case('train_output_dir_is_a_file', _with_file('train', '--output_dir'),
         CliExit, r"--output_dir must be a folder, got '.*a_file', which is "
         r"a file"),
    Case('train_output_dir_under_a_file',
         lambda tmp_path: _case.call_cli(cli.run, [
             'tfnp-trax', 'train', '--output_dir',
             str(_touch(tmp_path / 'f') / 'run')]), CliExit,
         r"--output_dir must be a folder path, got '.*f/run', but '.*f' on "
         r"it is a file"),
    Case('train_output_dir_not_writable', _unwritable('train'), CliExit,
         r"--output_dir must be a folder this user can create, got "
         r"'.*locked/run', but its parent '.*locked' is not writable"),
    Case('train_export_is_a_file',
         _with_file('train', '--export', '--task', 'digits', '--model',
                    'mlp'), CliExit,
         r"--export must be a folder, got '.*a_file', which is a file"),
    # -- tfnp-trax rl ------------------------------------------------------
    Case('rl_n_envs_not_dividing_an_epoch', _rl('--n_envs', '7'), CliExit,
         r'exit 2: tfnp-trax rl: --n_envs must divide the 256 env steps an '
         r'epoch of CartPole-v1 collects, got 7\. Try --n_envs 4'),
    Case('rl_zero_n_envs', _rl('--n_envs', '0'), CliExit,
         r'flag --n_envs=0: 0 ' + _POSITIVE),
    Case('rl_zero_steps', _rl('--steps', '0'), CliExit,
         r'flag --steps=0: 0 ' + _POSITIVE),
    Case('rl_negative_seed', _rl('--seed', '-3'), CliExit,
         r'flag --seed=-3: -3 ' + _NON_NEGATIVE),
    Case('rl_negative_eval_episodes', _rl('--eval_episodes', '-1'), CliExit,
         r'flag --eval_episodes=-1: -1 ' + _NON_NEGATIVE),
    Case('rl_zero_log_every', _rl('--log_every', '0'), CliExit,
         r'flag --log_every=0: 0 ' + _POSITIVE),
    Case('rl_output_dir_is_a_file', _with_file('rl', '--output_dir'),
         CliExit, r"tfnp-trax rl: --output_dir must be a folder, got "
         r"'.*a_file', which is a file"),
    Case('rl_output_dir_not_writable', _unwritable('rl'), CliExit,
         r"tfnp-trax rl: --output_dir must be a folder this user can "
         r"create"),
    Case('rl_noresume_over_checkpoints', _noresume('rl'), CliExit,
         r'tfnp-trax rl: .* already holds checkpoints and --noresume was '
         r'given'),
    # -- python -m tfnp_trax.trainer ---------------------------------------
    Case('trainer_model_not_a_name', _trainer('--model=Transformer LM'),
         CliExit, r"exit 2: trainer: --model must be the name of a model in "
         r"trax.models \(e.g. TransformerLM\), got 'Transformer LM'"),
    Case('trainer_dataset_with_a_quote', _trainer("--dataset=it's"),
         CliExit, r"--dataset must be a dataset name \(no quotes or line "
         r"breaks\), got \"it's\""),
    Case('trainer_output_dir_is_a_file',
         lambda tmp_path: _case.call_cli(trainer_main.main, [
             'trainer', '--config=train.steps = 3',
             f'--output_dir={_touch(tmp_path / "f")}']), CliExit,
         r"exit 2: trainer: --output_dir must be a folder, got '.*f', which "
         r"is a file"),
    Case('trainer_config_file_is_a_folder',
         lambda tmp_path: _case.call_cli(trainer_main.main, [
             'trainer', f'--config_file={tmp_path}']), CliExit,
         r'Unable to open file: .* \(--config_file must name an existing, '
         r'readable file; it is a folder\)'),
    # -- gin bindings of the wrong type ------------------------------------
    Case('gin_adam_b1_string',
         _gin_train('train.optimizer = @trax.optimizers.Adam',
                    'Adam.b1 = "high"'), TypeError,
         r"Adam: b1 must be a number, got 'high' \(str\); in a gin file "
         r"write Adam.b1 = 0.9"),
    Case('gin_train_steps_string', _gin_train("train.steps = 'ten'"),
         TypeError, r"train: steps must be a whole number, got 'ten' \(str\); "
         r"in a gin file write train.steps = 1000"),
    Case('gin_train_eval_steps_fraction', _gin_train('train.eval_steps = 2.5'),
         TypeError, r'train: eval_steps must be a whole number or None, got '
         r'2.5 \(float\); in a gin file write train.eval_steps = 10'),
    Case('gin_train_checkpoints_at_string',
         _gin_train("train.checkpoints_at = '10'"), TypeError,
         r"train: checkpoints_at must be a list of whole numbers or None, got "
         r"'10' \(str\)"),
    Case('gin_adafactor_decay_rate_string',
         _gin_train('train.optimizer = @trax.optimizers.Adafactor',
                    "Adafactor.decay_rate = '0.8'"), TypeError,
         r"Adafactor: decay_rate must be a number, got '0.8' \(str\); in a "
         r"gin file write Adafactor.decay_rate = 0.8"),
    Case('sm3_momentum_string', lambda: optimizers.SM3(momentum='0.9'),
         TypeError, r"SM3: momentum must be a number, got '0.9' \(str\)"),
    Case('momentum_mass_none', lambda: optimizers.Momentum(mass=None),
         TypeError, r'Momentum: mass must be a number, got None \(NoneType\); '
         r'in a gin file write Momentum.mass = 0.9'),
    Case('rms_prop_clip_grad_norm_string',
         lambda: optimizers.RMSProp(clip_grad_norm='1'), TypeError,
         r"RMSProp: clip_grad_norm must be a number or None, got '1' \(str\)"),
    Case('train_random_seed_string_direct',
         lambda tmp_path: trainer_lib.train(str(tmp_path), model=None,
                                            random_seed='0'), TypeError,
         r"train: random_seed must be a whole number or None, got '0'"),
    Case('gin_train_steps_string_on_the_command_line',
         _trainer(*[f'--config={b}' for b in _COPY_INPUTS],
                  "--config=train.steps = 'ten'"), CliExit,
         r"exit 2: trainer: train: steps must be a whole number, got 'ten' "
         r"\(str\); in a gin file write train.steps = 1000"),
    Case('gin_adam_learning_rate_string_on_the_command_line',
         _trainer(*[f'--config={b}' for b in _COPY_INPUTS],
                  '--config=train.optimizer = @trax.optimizers.Adam',
                  "--config=Adam.learning_rate = 'fast'"), CliExit,
         r"exit 2: trainer: Adam: learning_rate must be a number, got 'fast' "
         r"\(str\)"),
    Case('gin_unknown_configurable', _trainer('--config=Adamm.b1 = 0.9'),
         CliExit, r"exit 2: trainer: Unknown gin configurable 'Adamm'\. Did "
         r"you mean 'Adam'\?"),
]


def _touch(path):
  path.write_text('')
  return path


@pytest.mark.parametrize('case', _case.params(CASES))
def test_bad_input_raises_clear_error(case, tmp_path):
  _case.check(case, tmp_path)


# A flag's usage error is two lines at most; a gin error also quotes the
# config line it is on.
@pytest.mark.parametrize('case', [c for c in CASES if c.error is CliExit and
                                  not c.name.startswith('gin_')],
                         ids=lambda c: c.name)
def test_flag_usage_errors_are_at_most_two_lines_and_exit_2(case, tmp_path):
  with pytest.raises(CliExit) as raised:
    case.call(tmp_path)
  assert raised.value.code == 2
  message = str(raised.value).split(': ', 1)[1]
  assert len(message.strip().splitlines()) <= 2, message
  assert 'Traceback' not in message
