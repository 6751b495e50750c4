"""`python -m tfnp_trax.trainer` flag checks: Trax's flag values pass."""

import pytest

from tfnp_trax.cli import _trainer_flags
from tfnp_trax.cli import _usage


def _check(*argv):
  return _usage.parse(_trainer_flags.FLAGS, ['trainer', *argv],
                      _trainer_flags.validate)


@pytest.mark.parametrize('argv', [
    ['--model=TransformerLM'],
    ['--model=transformer.TransformerLM', '--dataset=t2t_translate_ende_wmt32k',
     '--data_dir=~/tensorflow_datasets'],
    ['--config=train.steps = 3', '--output_dir=gs://bucket/run',
     '--log_level=-1'],
    ['--dataset=mnist'],
])
def test_trax_flag_values_pass(argv):
  assert _check(*argv) is None


def test_bad_values_name_the_flag(tmp_path):
  assert _check() == (
      "give --config_file=X.gin (and/or --config bindings), e.g. "
      "--config_file=gru_copy.gin --config='train.steps = 100'.")
  assert _check('--model=@MLP') == (
      "--model must be the name of a model in trax.models (e.g. "
      "TransformerLM), got '@MLP'.")
  assert _check('--model=MLP', '--data_dir=a"b') == (
      '--data_dir must be a folder path (no quotes or line breaks), got '
      "'a\"b'.")
  assert _check(f'--config_file={tmp_path / "missing.gin"}').startswith(
      f'Unable to open file: {tmp_path / "missing.gin"} (--config_file')
