"""`tfnp-trax train` flag checks: the limits match the data and models."""

import numpy as np
import pytest

from tfnp_trax import data
from tfnp_trax import models
from tfnp_trax import shapes
from tfnp_trax.cli import _train_flags
from tfnp_trax.cli import _usage


def _check(module, *argv):
  return _usage.parse(module.FLAGS, ['prog', *argv], module.validate)


def test_digits_batch_limit_is_the_training_set():
  (x, y), _ = data.load_digits_split(seed=0)
  assert len(y) == _train_flags.DIGITS_TRAIN_SIZE == 1438
  # The largest batch fills; one more never would (the generator spins).
  batch = next(data.classification_batches(x, y, len(y), seed=0))
  assert batch[0].shape[0] == 1438
  assert _check(_train_flags, '--task', 'digits', '--model', 'mlp',
                '--batch_size', '1438') is None
  assert 'at most 1438' in _check(_train_flags, '--task', 'digits',
                                  '--model', 'mlp', '--batch_size', '1439')


def test_copy_length_is_the_copy_task_sequence():
  x, _, _ = next(data.copy_batches(2, _train_flags.COPY_LENGTH, 16, 0))
  assert x.shape == (2, _train_flags.COPY_SEQUENCE_LENGTH) == (2, 34)
  assert _check(_train_flags, '--task', 'copy', '--seq_len', '34',
                '--sample_length', '0') is None
  assert '--task copy needs a model of at least 34 positions' in _check(
      _train_flags, '--task', 'copy', '--seq_len', '33', '--sample_length',
      '0')


def test_d_model_must_split_into_the_heads_as_the_model_needs():
  # The flag check stands for the model's own error, which names no flag.
  with pytest.raises(ValueError, match='CausalAttention: d_feature 6 is not '
                     'a multiple of n_heads 4'):
    model = models.TransformerLM(8, d_model=6, d_ff=12, n_layers=1, n_heads=4,
                                 max_len=8)
    model.init(shapes.ShapeDtype((1, 4), np.int32))
  assert _check(_train_flags, '--d_model', '12', '--n_heads', '3') is None
  assert _check(_train_flags, '--d_model', '6') == (
      '--d_model must be a multiple of --n_heads (4): each attention head '
      'takes d_model / n_heads features; got --d_model 6. Try --d_model 8.')
  # Ignored by the other models, so not checked for them.
  assert _check(_train_flags, '--task', 'digits', '--model', 'mlp',
                '--d_model', '6') is None


def test_defaults_and_documented_runs_pass(tmp_path):
  out = ['--output_dir', str(tmp_path)]
  for argv in ([], ['--task', 'copy'], ['--task', 'digits', '--model', 'mlp'],
               ['--task', 'digits', '--model', 'resnet_frn', '--export',
                str(tmp_path / 'model')],
               ['--steps', '40', '--d_model', '32', '--n_layers', '1',
                '--seq_len', '32', '--learning_rate', '1e-3'],
               ['--time_budget', '10m', '--sample_length', '0'],
               ['--config_file', __file__, '--config', 'train.steps = 1']):
    assert _check(_train_flags, *argv, *out) is None, argv
