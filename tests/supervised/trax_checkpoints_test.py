"""Trax Loop and Trainer checkpoints: reading Trax 1.4.1's, writing Trax's files."""

import gzip
import pathlib
import pickle
import shutil

import numpy as np
import pytest

from tests import _fixtures
from tfnp_trax import fastmath
from tfnp_trax import layers as tl
from tfnp_trax import optimizers
from tfnp_trax import shapes
from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.layers import _safe_pickle
from tfnp_trax.layers import weight_files
from tfnp_trax.supervised import history as history_lib
from tfnp_trax.supervised import trax_checkpoints as tc

_DATA = _fixtures.path('trax_weights')
_LOOP = _DATA / 'loop'
_BF16 = np.dtype(jnp.bfloat16)


@pytest.fixture(scope='module')
def recorded():
  return _fixtures.arrays('trax_weights', 'outputs.npz')


def _loop_model(mode):
  # The model the fixture's Trax Loop trained (see make_fixtures.py).
  return tl.Serial(tl.Dense(4), tl.BatchNorm(axis=(0,), mode=mode), tl.Relu(),
                   tl.Dense(2, use_bfloat16=True))


def test_reads_the_recorded_loop_checkpoint(recorded):
  ckpt = tc.load_trax_checkpoint(str(_LOOP))
  assert isinstance(ckpt, tc.TraxCheckpoint)
  assert ckpt.step == int(recorded['loop_step']) == 4
  assert ckpt.input_signature == (shapes.ShapeDtype((8, 3), np.float32),)
  assert [(w.dtype, w.shape) for w in ckpt.flat_weights] == [
      (np.float32, (3, 4)), (np.float32, (4,)), (np.float32, (4,)),
      (np.float32, (4,)), (_BF16, (4, 2)), (_BF16, (2,))]
  # BatchNorm state: running mean, running var, batch count (4 train steps;
  # the eval model's copy was taken at the step-2 eval).
  assert int(ckpt.flat_state[2]) == 4 and int(ckpt.flat_eval_state[2]) == 2
  assert len(ckpt.slots_per_task) == 1
  assert [s.dtype for s in ckpt.slots_per_task[0]] == [np.float32] * 8 + [
      _BF16] * 4


def test_history_maps_to_ours(recorded):
  history = tc.load_trax_checkpoint(str(_LOOP / 'model.pkl.gz')).history
  assert isinstance(history, history_lib.History)
  want = {k[len('history/'):]: v for k, v in recorded.items()
          if k.startswith('history/')}
  got = {f'{mode}/{metric}': history.get(mode, metric)
         for mode in history.modes
         for metric in history.metrics_for_mode(mode)}
  assert sorted(got) == sorted(want) and 'eval/metrics/L2Loss' in got
  for key, pairs in got.items():
    np.testing.assert_allclose(np.array(pairs, np.float64), want[key],
                               rtol=1e-7)


def test_eval_model_gives_trax_outputs(recorded):
  ckpt = tc.load_trax_checkpoint(str(_LOOP))
  model = _loop_model('eval')
  weights, state = tc.weights_and_state_for(model, ckpt, eval_state=True)
  model.weights, model.state = weights, state
  np.testing.assert_allclose(np.asarray(model(recorded['loop_x'])),
                             recorded['loop_eval_y'], rtol=1e-6, atol=1e-6)


def test_slots_fit_our_adam():
  ckpt = tc.load_trax_checkpoint(str(_LOOP))
  model = _loop_model('train')
  model.init(shapes.ShapeDtype((8, 3)))
  slots, _ = optimizers.Adam(0.01).tree_init(model.weights)
  ours = [x for x in fastmath.tree_flatten(slots) if x is not None]
  assert [tuple(s.shape) for s in ours] == [
      s.shape for s in ckpt.slots_per_task[0]]


def test_misfit_model_is_named():
  ckpt = tc.load_trax_checkpoint(str(_LOOP))
  model = tl.Serial(tl.Dense(5), tl.BatchNorm(axis=(0,)), tl.Relu(),
                    tl.Dense(2))
  with pytest.raises(weight_files.WeightFileError,
                     match=r'weights\[0\]\[0\] has shape \(3, 4\) in the file '
                     r'but the model expects \(3, 5\)'):
    tc.weights_and_state_for(model, ckpt)


class History:
  """Pickled and renamed to trax.supervised.history.History below."""

  def __init__(self, values):
    self._values = values


def test_reads_an_old_trainer_checkpoint(tmp_path):
  # trainer_lib.Trainer's layout: weights inline, a slot tree, the History
  # object itself and opt_params.
  w, b = np.ones((2, 3), np.float32), np.zeros(3, np.float32)
  contents = {
      'step': 7, 'flat_weights': [w, b],
      'slots': (((w * 2, w * 3), (b, b)), (), None),
      'opt_params': {'learning_rate': 0.1},
      'history': History({'eval': {'metrics/loss': [(7, 0.5)]}}),
      'flat_state': [], 'input_signature': None,
      'version_timestamp': 'Jun-18-2020'}
  data = pickle.dumps(contents, protocol=2)
  data = data.replace(f'c{__name__}\nHistory\n'.encode(),
                      b'ctrax.supervised.history\nHistory\n')
  (tmp_path / 'model.pkl.gz').write_bytes(gzip.compress(data))
  ckpt = tc.load_trax_checkpoint(str(tmp_path))
  assert ckpt.step == 7 and ckpt.flat_state == ckpt.flat_eval_state == []
  np.testing.assert_array_equal(ckpt.flat_weights[0], w)
  assert len(ckpt.slots_per_task) == 1
  np.testing.assert_array_equal(ckpt.slots_per_task[0][1], w * 3)
  assert len(ckpt.slots_per_task[0]) == 4
  assert ckpt.history.get('eval', 'metrics/loss') == [(7, 0.5)]


def test_reads_every_task_slot_file(tmp_path):
  for name in ('model.pkl.gz', 'model.weights.npy.gz',
               'model.opt_slots0.npy.gz'):
    shutil.copy(_LOOP / name, tmp_path / name)
  tl.np_to_file([np.array([1.5], _BF16)],
                str(tmp_path / 'model.opt_slots1.npy.gz'), compresslevel=2)
  ckpt = tc.load_trax_checkpoint(str(tmp_path))
  assert len(ckpt.slots_per_task) == 2
  assert ckpt.slots_per_task[1][0].dtype == _BF16
  assert float(ckpt.slots_per_task[1][0][0]) == 1.5


def test_missing_and_unsafe_checkpoints(tmp_path):
  with pytest.raises(FileNotFoundError,
                     match=r'no Trax checkpoint at .*model\.pkl\.gz'):
    tc.load_trax_checkpoint(str(tmp_path))
  marker = tmp_path / 'pwned'
  (tmp_path / 'model.pkl.gz').write_bytes(gzip.compress(
      f'cos\nsystem\n(Vtouch {marker}\ntR.'.encode()))
  with pytest.raises(_safe_pickle.UnsafePickleError, match=r'os\.system'):
    tc.load_trax_checkpoint(str(tmp_path))
  assert not marker.exists()


def test_missing_weights_file_is_named(tmp_path):
  shutil.copy(_LOOP / 'model.pkl.gz', tmp_path / 'model.pkl.gz')
  with pytest.raises(FileNotFoundError,
                     match=r'model\.pkl\.gz keeps its weights in a separate '
                     r'file .* but .*model\.weights\.npy\.gz and '
                     r'.*model\.pkl\.gz\.npy do not exist'):
    tc.load_trax_checkpoint(str(tmp_path))


def test_loop_starts_from_the_recorded_trax_loop_checkpoint(recorded,
                                                            tmp_path):
  # The same data and task as the Trax Loop that wrote the fixture.
  from tfnp_trax.supervised import training  # pylint: disable=g-import-not-at-top
  rng = np.random.RandomState(0)
  x = rng.randn(8, 3).astype(np.float32)
  y = rng.randn(8, 2).astype(np.float32)
  w = np.ones((8, 2), np.float32)

  def batches():
    while True:
      yield x, y, w

  task = training.TrainTask(batches(), tl.L2Loss(), optimizers.Adam(0.01),
                            n_steps_per_checkpoint=2)
  loop = training.Loop(_loop_model('train'), [task],
                       output_dir=str(tmp_path / 'ours'), random_seed=0)
  assert loop.load_checkpoint(directory=str(_LOOP)) == 4
  assert loop.step == 4
  ckpt = tc.load_trax_checkpoint(str(_LOOP))
  got = fastmath.tree_leaves(loop.model.weights)
  assert len(got) == len(ckpt.flat_weights)
  for ours, theirs in zip(got, ckpt.flat_weights):
    np.testing.assert_array_equal(np.asarray(ours, np.float32),
                                  np.asarray(theirs, np.float32))
  # The bfloat16 kernel stays bfloat16; Adam's slots came across.
  assert np.asarray(got[-2]).dtype == _BF16
  slots = [np.asarray(s) for s in
           fastmath.tree_leaves(loop._trainers.trainers[0].slots)  # pylint: disable=protected-access
           if np.size(s)]
  assert any(np.any(s != 0) for s in slots)
  assert loop.history.get('train', 'metrics/L2Loss')
  loop.run(2)
  assert loop.step == 6
  assert all(np.all(np.isfinite(np.asarray(v, np.float32)))
             for v in fastmath.tree_leaves(loop.model.weights))


# -- Writing: a Loop leaves Trax's files in its output_dir ---------------------

def _writing_loop(output_dir, **kwargs):
  from tfnp_trax.supervised import training  # pylint: disable=g-import-not-at-top
  rng = np.random.RandomState(0)
  batch = (rng.randn(8, 3).astype(np.float32),
           rng.randn(8, 2).astype(np.float32), np.ones((8, 2), np.float32))
  task = training.TrainTask(iter(lambda: batch, None), tl.L2Loss(),
                            optimizers.Adam(0.01), n_steps_per_checkpoint=2,
                            n_steps_per_permanent_checkpoint=4)
  return training.Loop(_loop_model('train'), [task],
                       eval_model=_loop_model('eval'),
                       output_dir=str(output_dir), random_seed=0, **kwargs)


def _files(directory):
  return sorted(p.name for p in pathlib.Path(directory).iterdir()
                if p.is_file())


def test_loop_writes_trax_files_with_trax_keys(tmp_path, capsys):
  loop = _writing_loop(tmp_path)
  loop.run(4)
  capsys.readouterr()
  # Trax's names: 'model' at every checkpoint, 'model_<step>' at step 1 and
  # every n_steps_per_permanent_checkpoint steps.
  for base in ('model', 'model_1', 'model_4'):
    assert {f'{base}.pkl.gz', f'{base}.weights.npy.gz',
            f'{base}.opt_slots0.npy.gz'} <= set(_files(tmp_path))
  assert not any(n.startswith('model_2') for n in _files(tmp_path))
  # Both name trax.shapes.ShapeDtype, which the restricted reader maps.
  ours = weight_files.unpickle_from_file(str(tmp_path / 'model.pkl.gz'),
                                         gzip=True)
  trax = weight_files.unpickle_from_file(str(_LOOP / 'model.pkl.gz'),
                                         gzip=True)
  # Every key Trax writes, with its kind of value; plus our digests.
  assert set(ours) == set(trax) | {weight_files.FILES_SHA256}
  assert ours['step'] == 4 and ours['flat_weights'] == 2
  assert ours['slots_per_task'] == 2
  assert ours['version_timestamp'] == trax['version_timestamp']
  assert type(ours['history']) is dict and '_values' in ours['history']
  assert ours['input_signature'] == (shapes.ShapeDtype((8, 3), np.float32),)
  # The bfloat16 kernel is stored as its uint16 bits, as Trax stores it.
  weights = weight_files.np_from_file(str(tmp_path / 'model.weights.npy.gz'),
                                      2)
  assert weights[-2].dtype == np.uint16
  # Read back: the trained weights, the eval model's own BatchNorm count.
  ckpt = tc.load_trax_checkpoint(str(tmp_path))
  assert ckpt.step == 4
  for got, want in zip(ckpt.flat_weights,
                       fastmath.tree_leaves(loop.model.weights)):
    np.testing.assert_array_equal(np.asarray(got, np.float32),
                                  np.asarray(want, np.float32))
  assert int(ckpt.flat_state[2]) == 4
  assert len(ckpt.slots_per_task[0]) == 12
  model = _loop_model('eval')
  model.init_from_file(str(tmp_path / 'model_4.pkl.gz'), weights_only=True)
  for got, want in zip(fastmath.tree_leaves(model.weights),
                       fastmath.tree_leaves(loop.model.weights)):
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_trax_files_alone_resume_a_loop(tmp_path, capsys):
  first = _writing_loop(tmp_path / 'a')
  first.run(4)
  (tmp_path / 'b').mkdir()
  for name in _files(tmp_path / 'a'):
    if name.startswith('model.'):
      shutil.copy(tmp_path / 'a' / name, tmp_path / 'b' / name)
  second = _writing_loop(tmp_path / 'b')
  capsys.readouterr()
  assert second.step == 4
  for got, want in zip(fastmath.tree_leaves(second.model.weights),
                       fastmath.tree_leaves(first.model.weights)):
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_a_loop_resumes_from_its_own_checkpoints_first(tmp_path, capsys):
  _writing_loop(tmp_path).run(6)
  # A Trax file of another step (4) in the same folder does not win.
  for name in ('model.pkl.gz', 'model.weights.npy.gz',
               'model.opt_slots0.npy.gz'):
    shutil.copy(_LOOP / name, tmp_path / name)
  resumed = _writing_loop(tmp_path)
  capsys.readouterr()
  assert resumed.step == 6
  # Resuming rewrote the Trax files from the restored run.
  assert tc.load_trax_checkpoint(str(tmp_path)).step == 6


def test_files_from_two_saves_are_refused_and_partial_writes_go(tmp_path,
                                                                 capsys):
  loop = _writing_loop(tmp_path)
  loop.run(1)
  old_weights = (tmp_path / 'model.weights.npy.gz').read_bytes()
  loop.run(1)
  capsys.readouterr()
  (tmp_path / 'model.weights.npy.gz').write_bytes(old_weights)
  with pytest.raises(weight_files.WeightFileError,
                     match=r'model\.weights\.npy\.gz is not the file '
                     r'model\.pkl\.gz was saved with'):
    tc.load_trax_checkpoint(str(tmp_path))
  with pytest.raises(weight_files.WeightFileError, match='different saves'):
    _loop_model('eval').init_from_file(str(tmp_path / 'model.pkl.gz'))
  # What a kill in the middle of a write leaves is removed on restart.
  (tmp_path / 'model.weights.npy.gz._tmp_').write_bytes(b'half')
  _writing_loop(tmp_path)
  capsys.readouterr()
  assert 'model.weights.npy.gz._tmp_' not in _files(tmp_path)
  tc.load_trax_checkpoint(str(tmp_path))  # Rewritten whole on resume.


def test_trax_files_can_be_turned_off(tmp_path, capsys):
  _writing_loop(tmp_path, trax_checkpoint_files=False).run(2)
  capsys.readouterr()
  assert not [n for n in _files(tmp_path) if n.endswith('.gz')]


@pytest.mark.parametrize('policy', ['raise', 'warn'])
def test_a_failed_trax_file_write_follows_checkpoint_errors(tmp_path, capsys,
                                                           monkeypatch,
                                                           policy):
  from tfnp_trax.supervised import checkpoints  # pylint: disable=g-import-not-at-top
  loop = _writing_loop(tmp_path, checkpoint_errors=policy)

  def disk_full(*args, **kwargs):
    raise OSError(28, 'No space left on device')
  monkeypatch.setattr(weight_files, 'np_to_file', disk_full)
  if policy == 'raise':
    with pytest.raises(checkpoints.CheckpointWriteError,
                       match=r'could not write the Trax checkpoint files '
                       r'model\.\* in .*No space left on device'):
      loop.run(1)
  else:
    with pytest.warns(RuntimeWarning, match='Training goes on'):
      loop.run(2)
    assert loop.step == 2
  capsys.readouterr()
