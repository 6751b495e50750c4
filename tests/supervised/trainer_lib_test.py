"""trainer_lib.train: Trax's gin-configured run, on a tiny model and data."""

import itertools
import os
import re

import gin
import numpy as np
import pytest

from tfnp_trax import data
from tfnp_trax import gin_config
import tfnp_trax.layers as tl
from tfnp_trax import optimizers
from tfnp_trax.supervised import trainer_lib

VOCAB = 5
# Loss weights of every batch; eval's `weights_per_batch_per_core` sums them.
WEIGHTS = np.array([[1, 1, 0], [1, 0, 0], [1, 1, 1], [0, 0, 0]], np.float32)


@pytest.fixture(autouse=True)
def _clean_gin():
  gin.clear_config()
  yield
  gin.clear_config()


def _batch(seed):
  rng = np.random.RandomState(seed)
  tokens = rng.randint(0, VOCAB, size=(4, 3)).astype(np.int32)
  return tokens, tokens, WEIGHTS


def _inputs():
  return data.Inputs(lambda n_devices: itertools.repeat(_batch(0)),
                     lambda n_devices: itertools.repeat(_batch(1)))


def _model(mode='train'):
  del mode
  return tl.Serial(tl.Embedding(VOCAB, 4), tl.Dense(VOCAB))


def test_train_builds_trax_loop_with_gin_bound_defaults(tmp_path, capsys):
  gin_config.parse_config([
      'import trax.supervised.lr_schedules',
      'import trax.supervised.trainer_lib',
      "multifactor.factors = 'constant'",   # The default schedule's bindings.
      'multifactor.constant = 0.25',
      "trax.supervised.training.EvalTask.export_prefix = 'main'",
      "extra/named_stream.name = 'extra'",
  ])
  extra = gin.get_configurable('extra/named_stream')(
      stream=itertools.repeat(_batch(2)))
  output_dir = str(tmp_path / 'run')
  loop = trainer_lib.train(output_dir, model=_model, inputs=_inputs,
                           optimizer=optimizers.Adam, steps=3,
                           eval_frequency=2, eval_steps=1,
                           checkpoints_at=[3],
                           additional_eval_streams=[extra])
  assert loop.step == 3
  assert loop.history.get('train', 'training/learning_rate')[-1][1] == (
      pytest.approx(0.25))
  # Trax's default metrics, on each eval task; the weights of one batch sum
  # to 6, and the negated perplexity is the negated loss.
  assert set(loop.history.metrics_for_mode('eval')) >= {
      f'metrics/{name}' for name in ('loss', 'accuracy', 'sequence_accuracy',
                                     'neg_log_perplexity',
                                     'weights_per_batch_per_core')}
  assert loop.history.last('eval', 'metrics/weights_per_batch_per_core') == 6
  assert loop.history.last('eval', 'metrics/neg_log_perplexity') == (
      pytest.approx(-loop.history.last('eval', 'metrics/loss')))
  # The EvalTask binding and the named stream each name their eval folder.
  assert os.path.isdir(os.path.join(output_dir, 'main'))
  assert os.path.isdir(os.path.join(output_dir, 'extra'))
  with open(os.path.join(output_dir, 'config.gin')) as f:
    assert 'multifactor.constant = 0.25' in f.read()

  # checkpoints_at=[3] replaced the every-eval_frequency default.
  assert sorted(os.listdir(os.path.join(output_dir, 'checkpoints'))) == [
      'ckpt-3']
  capsys.readouterr()
  again = trainer_lib.train(output_dir, model=_model, inputs=_inputs,
                            optimizer=optimizers.Adam, steps=3)
  assert again.step == 3
  assert ('Stop training, already reached the total training steps 3'
          in capsys.readouterr().out)


def test_model_is_required():
  with pytest.raises(RuntimeError, match=r"Required bindings for `train` not "
                                         r"provided in config: \[.model.\]"):
    trainer_lib.train('/tmp/unused')


@pytest.mark.parametrize('kwargs, error, message', [
    (dict(permanent_checkpoint_frequency=2, permanent_checkpoints_at=[4]),
     ValueError, r'give only one of permanent_checkpoint_frequency \(2\) and '
                 r'permanent_checkpoints_at \(\[4\]\)'),
    (dict(use_loop=False), NotImplementedError,
     r"Trax's older Trainer \(use_loop=False"),
    (dict(n_weights_shards=2), NotImplementedError,
     r'n_weights_shards=2 is not supported'),
])
def test_unsupported_or_conflicting_arguments(kwargs, error, message):
  with pytest.raises(error, match=message):
    trainer_lib.train('/tmp/unused', model=_model, inputs=_inputs, **kwargs)


def test_checkpoints_at_is_membership():
  at = trainer_lib._at([2, 5])  # pylint: disable=protected-access
  assert [s for s in range(1, 7) if at(s)] == [2, 5]
  assert trainer_lib._at(None) is None  # pylint: disable=protected-access


def test_named_stream_and_num_devices_are_trax_configurables():
  gin_config.parse_config(['import trax.supervised.trainer_lib',
                           'num_devices.value = 3'])
  assert trainer_lib.num_devices() == 3
  assert trainer_lib.named_stream('a', [1]) == trainer_lib.NamedStream(
      'a', [1])


@pytest.mark.parametrize('name, value, expected', [
    ('steps', 'ten', 'a whole number'),
    ('steps', 2.5, 'a whole number'),
    ('eval_steps', '10', 'a whole number or None'),
    ('eval_frequency', [100], 'a whole number or None'),
    ('permanent_checkpoint_frequency', '5', 'a whole number or None'),
    ('random_seed', 'seed', 'a whole number or None'),
    ('loss_chunk_size', None, 'a whole number'),
    ('n_weights_shards', '1', 'a whole number'),
    ('checkpoints_at', 'all', 'a list of whole numbers or None'),
    ('permanent_checkpoints_at', 7, 'a list of whole numbers or None'),
])
def test_whole_number_arguments_of_the_wrong_type(name, value, expected):
  # As a gin binding such as `train.steps = 'ten'` passes them: stopped at
  # entry, before any input or model is built.
  with pytest.raises(TypeError, match=(
      rf'^train: {name} must be {expected}, got {re.escape(repr(value))} '
      rf'\({type(value).__name__}\)')):
    trainer_lib.train('/tmp/unused', model=_model, inputs=_inputs,
                      **{name: value})


def test_whole_numbers_as_gin_writes_them_are_accepted(tmp_path):
  # 0e0 is a float in gin and Trax's loops take it, so train does too (no
  # step runs: the run is already at step 0).
  loop = trainer_lib.train(str(tmp_path), model=_model, inputs=_inputs,
                           steps=0e0, eval_steps=np.int64(1),
                           eval_frequency=np.int32(2),
                           checkpoints_at=(2, 4.0), random_seed=3)
  assert loop.step == 0
