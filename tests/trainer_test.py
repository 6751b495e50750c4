"""`python -m tfnp_trax.trainer` on Trax's own configs, in subprocesses."""

import math
import os
import re
import subprocess
import sys

import gin
import pytest

from tests import _fixtures
from tests import _subprocess
from tfnp_trax import trainer

CONFIGS = str(_fixtures.path('trax_configs'))

# Each config file stays as Trax wrote it; these bindings only shrink the run
# (20 steps, small batches and widths) so the test stays fast.
SHRINK = {
    'gru_copy': ['sequence_copy_inputs.batch_size = 8',
                 'RNNLM.d_model = 32'],
    'rse_addition': ['batch_size = 4',
                     'ResidualShuffleExchange.d_model = 16',
                     'addition_inputs.train_length = 16',
                     'addition_inputs.eval_min_length = 16',
                     'addition_inputs.eval_max_length = 16',
                     'addition_inputs.pad_to_multiple = 16',
                     'eval_len256/addition_input_stream.min_length = 32',
                     'eval_len256/addition_input_stream.max_length = 32',
                     'eval_len256/addition_input_stream.pad_to_multiple = 32'],
    # ReformerLM with fixed-base positions and LSH attention. The config's
    # own LSH settings stay: n_buckets=[32, 32] (1024 buckets) over 16-token
    # sequences with max_length_for_buckets=1024, which Trax trains (it
    # never checks buckets against the length).
    'reformer_copy': ['sequence_copy_inputs.batch_size = 4',
                      'sequence_copy_inputs.train_length = 16',
                      'sequence_copy_inputs.eval_min_length = 4',
                      'sequence_copy_inputs.eval_max_length = 16',
                      'sequence_copy_inputs.pad_to_multiple = 16',
                      'ReformerLM.d_model = 16', 'ReformerLM.d_ff = 32',
                      'ReformerLM.n_layers = 1',
                      'ReformerLM.d_attention_key = 4',
                      'ReformerLM.d_attention_value = 4'],
    # ConfigurableTransformerLM with random position offsets in training.
    'reformer_addition': ['addition_inputs.batch_size = 4',
                          'addition_inputs.train_length = 16',
                          'addition_inputs.eval_min_length = 16',
                          'addition_inputs.eval_max_length = 16',
                          'addition_inputs.pad_to_multiple = 16',
                          'ConfigurableTransformerLM.d_model = 16',
                          'ConfigurableTransformerLM.d_ff = 32',
                          'ConfigurableTransformerLM.n_layers = 1'],
    # Reads a small stand-in for TFDS mnist (see _local_mnist) from
    # --data_dir; nothing is downloaded.
    'mlp_mnist': ['batcher.batch_size_per_device = 8',
                  'batcher.eval_batch_size = 8'],
}


def _local_mnist(data_dir):
  """Writes 64 + 32 random 28x28 digits as a prepared TFDS `mnist`."""
  # pylint: disable=g-import-not-at-top
  import numpy as np
  import tensorflow as tf
  import tensorflow_datasets as tfds
  # pylint: enable=g-import-not-at-top
  rng = np.random.RandomState(0)

  def split(n):
    return tf.data.Dataset.from_tensor_slices({
        'image': rng.randint(0, 256, (n, 28, 28, 1)).astype(np.uint8),
        'label': rng.randint(0, 10, (n,)).astype(np.int64)})
  features = tfds.features.FeaturesDict({
      'image': tfds.features.Image(shape=(28, 28, 1)),
      'label': tfds.features.ClassLabel(num_classes=10)})
  tfds.dataset_builders.store_as_tfds_dataset(
      name='mnist', version='3.0.1', features=features,
      split_datasets={'train': split(64), 'test': split(32)},
      data_dir=str(data_dir))
  # TFDS's own mnist declares ('image', 'label') as its supervised keys, and
  # Trax's config relies on them; an ad-hoc builder cannot declare them, so
  # they are written into the prepared dataset's info file.
  import glob  # pylint: disable=g-import-not-at-top
  import json  # pylint: disable=g-import-not-at-top
  for path in glob.glob(os.path.join(str(data_dir), 'mnist', '*',
                                     'dataset_info.json')):
    with open(path) as f:
      info = json.load(f)
    info['supervisedKeys'] = {'tuple': {'items': [
        {'featureKey': 'image'}, {'featureKey': 'label'}]}}
    with open(path, 'w') as f:
      json.dump(info, f)


def _run_trainer(*flags):
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2')
  return subprocess.run([sys.executable, '-m', 'tfnp_trax.trainer', *flags],
                        capture_output=True, text=True, timeout=300, env=env,
                        cwd=_subprocess.REPO, check=False)


@pytest.mark.parametrize('name', sorted(SHRINK))
def test_trax_config_trains_20_steps(name, tmp_path):
  bindings = SHRINK[name] + ['train.steps = 20', 'train.eval_steps = 1',
                             'train.eval_frequency = 20']
  flags = [f'--config={b}' for b in bindings]
  if name == 'mlp_mnist':
    _local_mnist(tmp_path / 'tfds')
    flags.append(f'--data_dir={tmp_path / "tfds"}')  # Trax's flag.
  out = _run_trainer(f'--config_file={os.path.join(CONFIGS, name)}.gin',
                     *flags, f'--output_dir={tmp_path / "run"}')
  assert out.returncode == 0, out.stderr[-3000:]
  assert 'Finished training.' in out.stdout
  losses = {int(step): float(value) for step, value in re.findall(
      r'Step\s+(\d+): train WeightedCategoryCrossEntropy \|\s+(\S+)',
      out.stdout)}
  assert sorted(losses) == [1, 20], out.stdout[-2000:]
  assert all(math.isfinite(v) and v > 0 for v in losses.values())
  assert os.path.isdir(tmp_path / 'run' / 'checkpoints' / 'ckpt-20')
  with open(tmp_path / 'run' / 'config.gin') as f:
    assert 'train.steps = 20' in f.read()
  if name == 'mlp_mnist':  # The config's train.checkpoint_highest='accuracy'.
    assert any('highest_accuracy' in entry for entry in
               os.listdir(tmp_path / 'run' / 'checkpoints'))


def test_flags_add_trax_bindings():
  assert trainer.gin_bindings(['a.b = 1'], dataset='mnist', model='MLP',
                              data_dir='/d') == [
                                  'a.b = 1',
                                  "data_streams.dataset_name='mnist'",
                                  "data_streams.data_dir='/d'",
                                  'train.model=@trax.models.MLP']


def test_config_errors_exit_2_with_the_message(tmp_path, capsys):
  path = tmp_path / 'typo.gin'
  path.write_text('import trax.models\ntrain.modle = @trax.models.MLP\n')
  try:
    code = trainer.main(['trainer', f'--config_file={path}',
                         f'--output_dir={tmp_path}'])
  finally:
    gin.clear_config()
  assert code == 2
  err = capsys.readouterr().err
  assert "Gin configurable 'train' has no parameter 'modle'" in err
  assert "Did you mean 'model'?" in err and 'line 2' in err


def test_without_configs_exits_2_with_usage(capsys):
  assert trainer.main(['trainer']) == 2
  assert '--config_file=X.gin' in capsys.readouterr().err


def test_help_lists_trax_flags(capsys):
  assert trainer.main(['trainer', '--help']) == 0
  out = capsys.readouterr().out
  for flag in ('--output_dir', '--config_file', '--config', '--dataset',
               '--model', '--data_dir', '--log_level'):
    assert flag in out


def test_unknown_flag_exits_2(capsys):
  assert trainer.main(['trainer', '--use_tpuu']) == 2
  assert 'use_tpuu' in capsys.readouterr().err
