"""Trax's `trainer_lib.Trainer` and `epochs` (trax/supervised/trainer_lib.py).

`epochs` is checked against hand-worked step counts; the Trainer's
evaluation against a NumPy cross-entropy of the model's own weights.
"""

import os

import numpy as np
import pytest

from tfnp_trax import data
from tfnp_trax import optimizers
import tfnp_trax.layers as tl
from tfnp_trax.supervised import trainer_lib

_X = np.array([[1., 0., 2.], [0., 1., -1.], [2., 2., 0.], [-1., 0., 1.]],
              np.float32)
_Y = np.array([0, 1, 1, 0])


def _stream(n_devices):
  del n_devices
  while True:
    yield _X, _Y, np.ones(4, np.float32)


@pytest.mark.parametrize('total, skip, epoch_steps, expected', [
    (5, 0, [1, 2, 3], [1, 2, 2]),   # The last epoch is cut at the total.
    (4, 2, [2, 2], [2]),            # A restart skips a whole epoch,
    (4, 1, [2, 2], [1, 2]),         # or the done part of one.
    (7, 3, [2, 2, 2, 2], [1, 2, 1]),
])
def test_epochs(total, skip, epoch_steps, expected):
  assert list(trainer_lib.epochs(total, skip, epoch_steps)) == expected


def _numpy_xent(weights):
  w, b = weights[0]  # Serial(Dense, LogSoftmax): ((w, b), ()).
  logits = _X @ np.asarray(w) + np.asarray(b)
  log_p = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
  return float(-log_p[np.arange(4), _Y].mean())


def _trainer(output_dir, **kwargs):
  return trainer_lib.Trainer(
      lambda mode: tl.Serial(tl.Dense(2), tl.LogSoftmax()),
      tl.WeightedCategoryCrossEntropy(), optimizers.SGD,
      lambda step: 0.1, data.Inputs(_stream), output_dir=output_dir,
      metrics={'xent': tl.WeightedCategoryCrossEntropy()}, random_seed=0,
      **kwargs)


def test_train_epoch_evaluates_and_checkpoints(tmp_path):
  trainer = _trainer(str(tmp_path), checkpoints_at=[2])
  assert trainer.step == 0
  before = trainer.evaluate(1)
  assert before['eval']['xent'] == pytest.approx(
      _numpy_xent(trainer.model_weights), rel=1e-5)
  trainer.train_epoch(n_steps=3, n_eval_steps=2)
  assert trainer.step == 3
  after = trainer.history.get('eval', 'metrics/xent')[-1]
  assert after[0] == 3
  assert after[1] == pytest.approx(_numpy_xent(trainer.model_weights),
                                   rel=1e-5)
  assert after[1] < before['eval']['xent']  # SGD lowered the loss.
  assert trainer.history.get('train', 'training/learning_rate')[-1] == (3,
                                                                       0.1)
  names = os.listdir(tmp_path / 'checkpoints')
  # The permanent checkpoint of checkpoints_at, and the epoch's end.
  assert {'ckpt-2-permanent', 'ckpt-3'} <= set(names)


def test_reset_twice_starts_in_each_folder(tmp_path):
  # As Trax's test_reset_twice: reset into two folders, evaluate in each.
  trainer = _trainer(None)
  for name in ('one', 'two'):
    trainer.reset(str(tmp_path / name))
    result = trainer.evaluate(1)
    assert set(result) == {'train', 'eval'}
    trainer.train_epoch(n_steps=1, n_eval_steps=1)
    assert os.path.isdir(tmp_path / name / 'checkpoints')
  # A third Trainer in folder 'two' resumes from its step.
  assert _trainer(str(tmp_path / 'two')).step == 1


def test_trainer_is_trax_name_in_supervised():
  from tfnp_trax import supervised  # pylint: disable=g-import-not-at-top
  assert supervised.Trainer is trainer_lib.Trainer
