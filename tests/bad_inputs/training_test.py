"""Bad inputs to optimizers, Trainer, Loop, checkpoints and weight files.

Multi-replica rows run in one subprocess with two logical CPUs under
MirroredStrategy (logical devices must be set before TensorFlow starts),
with a hard timeout.
"""

import functools
import glob
import os

import numpy as np
import pytest

from tests.bad_inputs import _case
from tfnp_trax import debug
from tfnp_trax import fastmath
from tfnp_trax import optimizers
from tfnp_trax import shapes
import tfnp_trax.layers as tl
from tfnp_trax.layers import weight_files
from tfnp_trax.supervised import checkpoints
from tfnp_trax.supervised import trainer as trainer_lib
from tfnp_trax.supervised import training

import tensorflow as tf  # pylint: disable=g-bad-import-order

Case = _case.Case
LayerError = tl.LayerError
SD = shapes.ShapeDtype
F32 = np.float32
_KEY = fastmath.random.get_prng(0)


def _debug(fn):
  def call():
    with debug.enabled():
      return fn()
  return call


# -- Optimizers ----------------------------------------------------------------
def _opt_update(grads, slots=None):
  def call():
    opt = optimizers.Adam(0.1)
    weights = (np.ones(3, F32), np.ones(2, F32))
    opt.tree_init(weights)
    return opt.tree_update(0, grads, weights,
                           opt.slots if slots is None else slots,
                           opt.opt_params)
  return call


# -- Trainer -------------------------------------------------------------------
def _batch(n, x=1.0, y=0, y_dtype=np.int32, width=5):
  return (np.full((n, width), x, F32), np.full((n,), y, y_dtype),
          np.ones((n,), F32))


def _one_step(batch, rng=_KEY):
  def call():
    model = tl.Serial(tl.Dense(3), tl.WeightedCategoryCrossEntropy())
    model.init(shapes.signature(_batch(4)))
    trainer = trainer_lib.Trainer(model, optimizers.SGD(0.1))
    return trainer.one_step(batch, rng, 0)
  return call


_REPLICAS_CODE = r'''
import numpy as np
from tfnp_trax import fastmath, optimizers, shapes
import tfnp_trax.layers as tl
from tfnp_trax.supervised import trainer as trainer_lib, training
strategy = tf.distribute.MirroredStrategy(
    [d.name for d in tf.config.list_logical_devices('CPU')])
results = {}
def record(name, fn):
  try:
    fn()
    results[name] = None
  except Exception as e:  # pylint: disable=broad-except
    results[name] = [type(e).__name__, str(e)]
def batch(n):
  return (np.ones((n, 5), np.float32), np.zeros((n,), np.int32),
          np.ones((n,), np.float32))
def trainer_step():
  with strategy.scope():
    model = tl.Serial(tl.Dense(3), tl.WeightedCategoryCrossEntropy())
    model.init(shapes.signature(batch(4)))
    trainer = trainer_lib.Trainer(model, optimizers.SGD(0.1),
                                  strategy=strategy)
  trainer.one_step(batch(3), fastmath.random.get_prng(0), 0)
def stream():
  while True:
    yield batch(3)
def loop_run():
  task = training.TrainTask(stream(), tl.WeightedCategoryCrossEntropy(),
                            optimizers.SGD(0.1))
  training.Loop(tl.Serial(tl.Dense(3)), task, strategy=strategy).run(1)
record('trainer', trainer_step)
record('loop', loop_run)
'''


@functools.lru_cache(maxsize=None)
def _replica_outcomes():
  return _case.subprocess_results(_REPLICAS_CODE, n_devices=2, timeout=240)


def _on_two_replicas(name):
  return lambda: _case.reraise(_replica_outcomes()[name])


# -- Loop ----------------------------------------------------------------------
def _repeat(batch):
  while True:
    yield batch


def _loop_run(batch, **kwargs):
  def call():
    task = training.TrainTask(_repeat(batch),
                              tl.WeightedCategoryCrossEntropy(),
                              optimizers.SGD(0.1))
    loop = training.Loop(tl.Serial(tl.Dense(3)), task, **kwargs)
    loop.run(1)
    return loop
  return call


def _loop_of_arrays():
  task = training.TrainTask(_repeat(np.ones((2, 5), F32)),
                            tl.WeightedCategoryCrossEntropy(),
                            optimizers.SGD(0.1))
  training.Loop(tl.Serial(tl.Dense(3)), task).run(1)


# -- Checkpoints ---------------------------------------------------------------
def _manager(directory, shape=(3, 2)):
  variables = [tf.Variable(np.ones(shape, F32))]
  return checkpoints.CheckpointManager(
      str(directory), {'weights': variables},
      {'weights': [('Dense/0', list(shape))]})


def _truncate(path):
  with open(path, 'rb') as f:
    data = f.read()
  with open(path, 'wb') as f:
    f.write(data[:len(data) // 2])


def _saved_checkpoint(tmp_path, damage=None):
  path = _manager(tmp_path).save(1)
  if damage == 'data':
    for name in glob.glob(os.path.join(path, 'state.data*')):
      _truncate(name)
  elif damage == 'manifest':
    _truncate(os.path.join(path, 'manifest.json'))
  return path


def _restore(damage, latest=False, shape=(3, 2)):
  def call(tmp_path):
    path = _saved_checkpoint(tmp_path, damage)
    manager = _manager(tmp_path, shape)
    return manager.restore_latest() if latest else manager.restore(path)
  return call


# -- Weight files --------------------------------------------------------------
def _mlp(out=3):
  model = tl.Serial(tl.Dense(4), tl.Relu(), tl.Dense(out))
  model.init(SD((2, 5), F32))
  return model


def _weight_file(tmp_path, damage=None):
  model = _mlp()
  if damage == 'nan':
    w = model.weights
    model.weights = ((w[0][0] * np.nan, w[0][1]), w[1], w[2])
  path = str(tmp_path / 'model.pkl.gz')
  model.save_to_file(path)
  if damage == 'truncated':
    _truncate(path)
  elif damage == 'garbage':
    with open(path, 'wb') as f:
      f.write(b'not a weight file')
  return path


def _load(damage=None, model=_mlp):
  return lambda tmp_path: model().init_from_file(_weight_file(tmp_path,
                                                              damage))


_UNINITIALIZED = (lambda: trainer_lib.Trainer(
    tl.Serial(tl.Dense(3), tl.WeightedCategoryCrossEntropy()),
    optimizers.SGD(0.1)))

CASES = [
    # -- Optimizers ------------------------------------------------------------
    Case('optimizer_gradient_tree_missing_leaf',
         _opt_update((np.ones(3, F32),)), ValueError,
         r'Adam.tree_update: gradient tree has 1 leaves but weight tree has '
         r'2 leaves'),
    Case('optimizer_gradient_leaf_wrong_shape',
         _opt_update((np.ones(3, F32), np.ones(3, F32))), ValueError,
         r'Adam.tree_update: gradient leaf 1 has shape \(3,\) but weight '
         r'leaf 1 has shape \(2,\)'),
    Case('optimizer_slots_of_another_tree',
         _opt_update((np.ones(3, F32), np.ones(2, F32)), slots=((),)),
         ValueError, r'Adam.tree_update: got 1 slot entries for 2 weight '
         r'leaves'),
    Case('optimizer_learning_rate_not_a_number',
         lambda: optimizers.Adam(learning_rate='fast'), TypeError,
         r"Adam: learning_rate must be a number, got 'fast' \(str\)"),
    Case('optimizer_nan_gradients_debug',
         _debug(_opt_update((np.full(3, np.nan, F32), np.ones(2, F32)))),
         FloatingPointError, r'Adam.tree_update: gradients leaf 0: expected '
         r'finite values but found 3 NaN'),
    # -- Trainer ---------------------------------------------------------------
    Case('trainer_model_not_initialized', _UNINITIALIZED, ValueError,
         r'Trainer: model_with_loss is not initialized'),
    Case('trainer_wrong_input_width', _one_step(_batch(2, width=6)),
         LayerError, r'Dense_3: input last dim 6 does not match weights '
         r'in_dim 5'),
    Case('trainer_batch_without_weights', _one_step(_batch(2)[:2]),
         LayerError, r'Serial: expects 3 inputs \(a tuple of 3 arrays\) but '
         r'got 2'),
    Case('trainer_float_labels', _one_step(_batch(2, y_dtype=F32)),
         LayerError, r'WeightedCategoryCrossEntropy: targets must be '
         r'integer category ids, got dtype float32'),
    Case('trainer_labels_beyond_vocab_debug',
         _debug(_one_step(_batch(2, y=5))), tf.errors.InvalidArgumentError,
         r'WeightedCategoryCrossEntropy: targets: expected ids in \[0, 3\)'),
    Case('trainer_nan_inputs_debug',
         _debug(_one_step(_batch(2, x=np.nan))),
         tf.errors.InvalidArgumentError,
         r'Serial: inputs leaf 0: expected finite values but found NaN'),
    Case('trainer_rng_key_wrong_shape',
         _one_step(_batch(2), rng=np.array([0, 1, 2], np.int32)), ValueError,
         r'Trainer.one_step: keys must have shape \[2\], got shape \(3,\)'),
    Case('trainer_rng_key_int64_beyond_32_bits',
         _one_step(_batch(2), rng=np.array([0, 2**40])), ValueError,
         r'Trainer.one_step: keys must be int32 \[2\]; got dtype int64 with '
         r'values \[0, 1099511627776\]'),
    Case('trainer_empty_batch', _one_step(_batch(0)), ValueError,
         r'Trainer: got an empty batch \(leading size 0; leaf shapes '
         r'\[\(0, 5\), \(0,\), \(0,\)\]\)'),
    Case('trainer_batch_does_not_divide_by_replicas',
         _on_two_replicas('trainer'), ValueError,
         r'Trainer: batch size 3 does not divide by the 2 replicas; use a '
         r'multiple of 2'),
    # -- Loop ------------------------------------------------------------------
    Case('loop_batch_does_not_divide_by_replicas', _on_two_replicas('loop'),
         ValueError, r'the batch size 3 \(shape \(3, 5\)\) does not divide by '
         r'the 2 replicas'),
    Case('loop_no_tasks', lambda: training.Loop(tl.Dense(3), []), ValueError,
         r'Loop: tasks is empty; give at least one TrainTask'),
    Case('loop_unknown_checkpoint_metric',
         _loop_run(_batch(2), checkpoint_low_metric='lozz'), ValueError,
         r"Loop: checkpoint_low_metric='lozz' is not a metric of the "
         r'eval_tasks'),
    Case('loop_stream_yields_array_not_tuple', _loop_of_arrays, ValueError,
         r'TrainTask: its labeled_data gives 1 array\(s\) per batch, but the '
         r'model followed by WeightedCategoryCrossEntropy takes 3 inputs'),
    Case('loop_float_labels', _loop_run(_batch(2, y_dtype=F32)), LayerError,
         r'WeightedCategoryCrossEntropy: targets must be integer category '
         r'ids, got dtype float32'),
    Case('loop_labels_beyond_vocab_debug', _debug(_loop_run(_batch(2, y=3))),
         tf.errors.InvalidArgumentError,
         r'WeightedCategoryCrossEntropy: targets: expected ids in \[0, 3\)'),
    Case('loop_empty_batch', _loop_run(_batch(0)), ValueError,
         r'Loop: the training data gave an empty batch \(leading size 0; '
         r'shapes \[\(0, 5\), \(0,\), \(0,\)\]\)'),
    Case('eval_task_names_do_not_match_metrics',
         lambda: training.EvalTask(_repeat(_batch(2)), [tl.CategoryAccuracy()],
                                   ['acc', 'xent']), ValueError,
         r'EvalTask: 1 metrics but 2 metric_names'),
    # -- Checkpoints -----------------------------------------------------------
    Case('checkpoint_truncated_data_restore', _restore('data'), OSError,
         r'file state.data-00000-of-00001 does not match its checksum '
         r'\(corrupt or truncated\)'),
    Case('checkpoint_truncated_data_restore_latest',
         _restore('data', latest=True), checkpoints.NoValidCheckpointError,
         r'(?s)No usable checkpoint in .*ckpt-1: file '
         r'state.data-00000-of-00001 '
         r'does not match its checksum'),
    Case('checkpoint_truncated_manifest_restore', _restore('manifest'),
         OSError, r'manifest .*ckpt-1/manifest.json is corrupt or truncated '
         r'\(Unterminated string'),
    Case('checkpoint_of_another_model', _restore(None, shape=(3, 4)),
         checkpoints.CheckpointMismatchError,
         r'weights "Dense/0" has shape \(3, 2\) in the checkpoint .* but '
         r'\(3, 4\) in the model'),
    # -- Weight files ----------------------------------------------------------
    Case('weight_file_truncated', _load('truncated'),
         weight_files.WeightFileError, r'model.pkl.gz: cannot read this '
         r'gzipped pickle .*The file is truncated, corrupt'),
    Case('weight_file_not_a_weight_file', _load('garbage'),
         weight_files.WeightFileError, r'cannot read this gzipped pickle'),
    Case('weight_file_of_another_model',
         _load(model=lambda: _mlp(out=7)), weight_files.WeightFileError,
         r'weights\[2\]\[0\] \(in Serial/2:Dense_7\) has shape \(4, 3\) in '
         r'the file but the model expects \(4, 7\)'),
    Case('weight_file_with_nan', _load('nan'), weight_files.WeightFileError,
         r'weights\[0\]\[0\] \(in Serial/0:Dense_4\) holds 20 NaN or Inf of '
         r'20 values .*expected finite weights'),
    Case('weight_file_missing',
         lambda tmp_path: _mlp().init_from_file(str(tmp_path / 'no.pkl.gz')),
         FileNotFoundError, r'no.pkl.gz: no such file; expected a gzipped '
         r'pickle written by save_to_file'),
]


@pytest.mark.parametrize('case', _case.params(CASES))
@pytest.mark.filterwarnings('ignore::RuntimeWarning')
def test_bad_input_raises_clear_error(case, tmp_path):
  _case.check(case, tmp_path)
