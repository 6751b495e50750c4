"""Trax weight files: flat lists, .npy.gz streams, save_to_file/init_from_file."""

import gzip
import os

import numpy as np
import pytest
import tensorflow as tf

from tests import _fixtures
from tfnp_trax import fastmath
from tfnp_trax import layers as tl
from tfnp_trax import shapes
from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.layers import _safe_pickle
from tfnp_trax.layers import base
from tfnp_trax.layers import weight_files as wf

_DATA = _fixtures.path('trax_weights')
_BF16 = np.dtype(jnp.bfloat16)


@pytest.fixture(scope='module')
def recorded():
  return _fixtures.arrays('trax_weights', 'outputs.npz')


def _serial(d_feature=4):
  return tl.Serial(tl.Embedding(10, d_feature), tl.Dense(3), tl.LayerNorm())


def _leaves(tree):
  return [np.asarray(x) for x in fastmath.tree_flatten(tree)]


def _assert_same_leaves(a, b):
  a, b = _leaves(a), _leaves(b)
  assert len(a) == len(b)
  for x, y in zip(a, b):
    assert x.dtype == y.dtype and x.shape == y.shape
    # Bitwise: bit patterns, not values (NaN or -0.0 would hide otherwise).
    np.testing.assert_array_equal(x.reshape(-1).view(np.uint8),
                                  y.reshape(-1).view(np.uint8))


# -- flatten / unflatten ---------------------------------------------------


def test_flatten_leaves_out_empty_weights_and_cache_markers():
  weights = ((1, 2), base.EMPTY_WEIGHTS, base.GET_WEIGHTS_FROM_CACHE,
             {'b': 4, 'a': 3})
  state = (base.EMPTY_STATE, (5,), base.GET_STATE_FROM_CACHE)
  assert tl.flatten_weights_and_state(weights, state) == ([1, 2, 3, 4], [5])


def test_unflatten_refills_the_signature_trees():
  sig_w = ((shapes.ShapeDtype((2,)), shapes.ShapeDtype((3,))), (),
           base.GET_WEIGHTS_FROM_CACHE)
  sig_s = ((), (shapes.ShapeDtype(()),))
  a, b, c = np.zeros(2), np.ones(3), np.array(7)
  weights, state = tl.unflatten_weights_and_state([a, b], [c], (sig_w, sig_s))
  assert weights[0][0] is a and weights[0][1] is b and weights[1] == ()
  assert weights[2] == base.GET_WEIGHTS_FROM_CACHE
  assert state[0] == () and state[1][0] is c
  weights, state = tl.unflatten_weights_and_state([a, b], None, (sig_w, sig_s),
                                                  weights_only=True)
  assert state is None and weights[0][1] is b


def test_unflatten_names_the_first_misfit_with_both_shapes():
  sig = ((shapes.ShapeDtype((2,)), (shapes.ShapeDtype((3, 4)),)), ())
  with pytest.raises(wf.WeightFileError,
                     match=r'weights\[1\]\[0\] has shape \(4, 3\) in the '
                     r'file but the model expects \(3, 4\)'):
    tl.unflatten_weights_and_state([np.zeros(2), np.zeros((4, 3))], [], sig)
  with pytest.raises(wf.WeightFileError,
                     match=r'has 1 weights leaves but the model needs more; '
                     r'the first missing one is weights\[1\]\[0\] of '
                     r'shape \(3, 4\)'):
    tl.unflatten_weights_and_state([np.zeros(2)], [], sig)
  with pytest.raises(wf.WeightFileError,
                     match=r'has 3 weights leaves but the model only 2; the '
                     r'first extra one has shape \(5,\)'):
    tl.unflatten_weights_and_state(
        [np.zeros(2), np.zeros((3, 4)), np.zeros(5)], [], sig)


# -- .npy.gz streams -------------------------------------------------------


def test_np_to_file_round_trip_stores_bfloat16_as_bits(tmp_path):
  path = str(tmp_path / 'w.npy.gz')
  arrays = [np.arange(6, dtype=np.float32).reshape(2, 3),
            np.array([1.5, -2.0, 3.0], _BF16), np.array(7, np.int32)]
  tl.np_to_file(arrays, path, compresslevel=2)
  got = tl.np_from_file(path, compresslevel=2)
  assert [x.dtype for x in got] == [np.float32, np.uint16, np.int32]
  np.testing.assert_array_equal(got[0], arrays[0])
  # bfloat16 1.5, -2.0, 3.0 are 0x3fc0, 0xc000, 0x4040.
  np.testing.assert_array_equal(got[1], [0x3fc0, 0xc000, 0x4040])
  assert wf.from_bits(got)[1].dtype == _BF16
  np.testing.assert_array_equal(wf.from_bits(got)[1].astype(np.float32),
                                [1.5, -2.0, 3.0])
  assert not os.path.exists(path + '._tmp_')
  tl.np_to_file([], path, compresslevel=0)
  assert tl.np_from_file(path, compresslevel=0) == []


def test_np_from_file_rejects_truncated_and_missing_files(tmp_path):
  path = str(tmp_path / 'w.npy.gz')
  tl.np_to_file([np.ones((50, 50), np.float32)] * 2, path, compresslevel=0)
  data = open(path, 'rb').read()
  open(path, 'wb').write(data[:len(data) * 3 // 4])
  with pytest.raises(wf.WeightFileError,
                     match=r'w\.npy\.gz: cannot read this .npy.gz weight file '
                     r'\(file ends inside the compressed data of the gzip '
                     r'stream, after \d+ compressed bytes\).*truncated copy'):
    tl.np_from_file(path, compresslevel=0)
  # A whole gzip stream whose second record is cut short: the records fail.
  with gzip.open(path, 'wb') as f:
    np.save(f, np.ones(3, np.float32))
    f.write(np.lib.format.magic(1, 0) + b'\x10')
  with pytest.raises(wf.WeightFileError,
                     match=r'w\.npy\.gz: cannot read array 1 of this .npy.gz '
                     r'weight file \(ValueError: .*not one np_to_file'):
    tl.np_from_file(path, compresslevel=0)
  with pytest.raises(FileNotFoundError, match='nope'):
    tl.np_from_file(str(tmp_path / 'nope'), compresslevel=0)


# -- save_to_file / init_from_file ----------------------------------------


def _stateful_model(mode='train'):
  return tl.Serial(tl.Dense(4), tl.BatchNorm(axis=(0,), mode=mode),
                   tl.Branch(tl.Dense(2), tl.Serial(tl.Relu(), tl.Dense(3))))


def test_save_then_init_from_file_reproduces_outputs_exactly(tmp_path):
  x = np.random.default_rng(0).normal(size=(5, 3)).astype(np.float32)
  model = _stateful_model()
  model.init(shapes.signature(x))
  model(x)  # One train step moves BatchNorm's running statistics.
  path = str(tmp_path / 'model.pkl.gz')
  model.save_to_file(path, input_signature=shapes.signature(x))
  restored = _stateful_model()
  weights, state = restored.init_from_file(path)
  _assert_same_leaves(weights, model.weights)
  _assert_same_leaves(state, model.state)
  want = model(x)
  got = restored(x)
  for a, b in zip(want, got):
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_weights_only_files(tmp_path):
  x = np.ones((2, 3), np.float32)
  model = _stateful_model()
  model.init(shapes.signature(x))
  path = str(tmp_path / 'w.pkl.gz')
  model.save_to_file(path, weights_only=True,
                     input_signature=shapes.signature(x))
  restored = _stateful_model()
  with pytest.raises(wf.WeightFileError,
                     match=r"w\.pkl\.gz: the file has no 'flat_state'.*"
                     r'weights_only=True'):
    restored.init_from_file(path)
  weights, state = restored.init_from_file(path, weights_only=True)
  _assert_same_leaves(weights, model.weights)
  # State comes from a fresh init: BatchNorm's zero means and unit variances.
  np.testing.assert_array_equal(np.asarray(state[1][0]), np.zeros((1, 4)))
  np.testing.assert_array_equal(np.asarray(state[1][1]), np.ones((1, 4)))


def test_weights_only_load_with_a_signature_runs_init_once(tmp_path,
                                                          monkeypatch):
  # Trax gives a weights-only load the state of a fresh init; that same
  # init gives the shapes the file is checked against.
  x = np.ones((2, 3), np.float32)
  path = str(tmp_path / 'w.pkl.gz')
  model = _stateful_model()
  model.init(shapes.signature(x))
  model.save_to_file(path, weights_only=True,
                     input_signature=shapes.signature(x))
  restored = _stateful_model()
  calls = []
  real_init = base.Layer.init

  def counting_init(self, *args, **kwargs):
    if self is restored:
      calls.append(args)
    return real_init(self, *args, **kwargs)
  monkeypatch.setattr(base.Layer, 'init', counting_init)
  restored.init_from_file(path, weights_only=True)
  assert len(calls) == 1
  assert restored.initialized


def test_snapshot_and_restore_put_back_an_uninitialized_layer():
  layer = tl.Dense(3)
  saved = layer.snapshot()
  assert saved.initialized is False and saved.weights == ()
  layer.init(shapes.ShapeDtype((1, 2)))
  assert layer.initialized and len(layer.weights) == 2
  layer.restore(saved)
  assert not layer.initialized and layer.weights == ()
  assert layer.rng is saved.rng


def _numpy_reference(x, weights, state):
  """Dense(4) -> Serial(Dense(2) bf16, BatchNorm eval) in float64."""
  (w1, b1), ((w2, b2), (beta, gamma)) = weights
  mean, var, _ = state
  h = x.astype(np.float64) @ w1.astype(np.float64) + b1
  h = h @ w2.astype(np.float64) + b2.astype(np.float64)
  return (h - mean) / np.sqrt(var + 1e-5) * gamma + beta


@pytest.mark.parametrize('layout', ['pickled', 'weights_file'])
def test_loads_a_hand_built_trax_file(tmp_path, layout):
  # Trax's documented layout, written by hand: a nested weight tree, state,
  # a ShapeDtype signature (pickled under Trax's class name) and a bfloat16
  # leaf (pickled as bfloat16, or as uint16 bits in the .weights.npy.gz).
  rng = np.random.default_rng(1)
  w1, b1 = rng.normal(size=(3, 4)).astype(np.float32), np.float32([1, 2, 3, 4])
  w2 = rng.normal(size=(4, 2)).astype(_BF16)
  b2 = np.array([0.5, -0.5], _BF16)
  beta, gamma = np.float32([0.25, -1]), np.float32([2, 3])
  mean, var = np.float32([[0.5, -1]]), np.float32([[4, 0.25]])
  flat_weights = [w1, b1, w2, b2, beta, gamma]  # BatchNorm: (beta, gamma).
  flat_state = [mean, var, np.array(7, np.int32)]
  contents = {'flat_state': flat_state,
              'input_signature': shapes.ShapeDtype((5, 3), np.float32)}
  path = str(tmp_path / 'model.pkl.gz')
  if layout == 'pickled':
    contents['flat_weights'] = flat_weights
  else:
    contents['flat_weights'] = 2  # The compress level, as Trax's Loop writes.
    tl.np_to_file(flat_weights, str(tmp_path / 'model.weights.npy.gz'), 2)
  with gzip.open(path, 'wb') as f:
    _safe_pickle.dump(contents, f)

  model = tl.Serial(tl.Dense(4), tl.Serial(
      tl.Dense(2, use_bfloat16=True), tl.BatchNorm(axis=(0,), mode='eval')))
  weights, state = model.init_from_file(path)
  assert weights[1][0][0].dtype == _BF16 and weights[1][0][1].dtype == _BF16
  np.testing.assert_array_equal(np.asarray(weights[1][0][0]).view(np.uint16),
                                w2.view(np.uint16))
  assert int(np.asarray(state[1][1][2])) == 7
  x = rng.normal(size=(5, 3)).astype(np.float32)
  want = _numpy_reference(
      x, ((w1, b1), ((w2, b2), (beta, gamma))), (mean, var, None))
  np.testing.assert_allclose(np.asarray(model(x)), want, rtol=1e-5, atol=1e-5)


def test_real_trax_save_to_file_outputs(recorded):
  for name, key in (('serial.pkl.gz', 'serial_y'),
                    ('serial_bf16.pkl.gz', 'serial_bf16_y')):
    model = _serial()
    model.init_from_file(str(_DATA / name))
    np.testing.assert_allclose(np.asarray(model(recorded['serial_x'])),
                               recorded[key], rtol=1e-6, atol=1e-6)
  kernel = np.asarray(model.weights[1][0])
  assert kernel.dtype == _BF16
  np.testing.assert_array_equal(kernel.view(np.uint16),
                                recorded['serial_bf16_kernel_bits'])


@pytest.mark.parametrize('compile_mode', ['tf_function', 'xla'])
def test_real_trax_weights_run_compiled(recorded, compile_mode):
  model = _serial()
  weights, state = model.init_from_file(str(_DATA / 'serial.pkl.gz'))
  run = lambda x: model.pure_fn(x, weights, state, fastmath.random.get_prng(0))
  fn = (fastmath.jit(run, jit_compile=True) if compile_mode == 'xla' else
        tf.function(run))
  out, _ = fn(recorded['serial_x'])
  np.testing.assert_allclose(np.asarray(out), recorded['serial_y'],
                             rtol=1e-6, atol=1e-6)


def test_real_trax_loop_weights_load_with_bfloat16_restored():
  model = tl.Serial(tl.Dense(4), tl.BatchNorm(axis=(0,)), tl.Relu(),
                    tl.Dense(2, use_bfloat16=True))
  weights, _ = model.init_from_file(str(_DATA / 'loop/model.pkl.gz'),
                                    weights_only=True)
  # Read the raw stream independently: bits in, bfloat16 of those bits out.
  raw = []
  with gzip.open(_DATA / 'loop/model.weights.npy.gz') as f:
    for _ in range(6):
      raw.append(np.load(f))
  got = _leaves(weights)
  assert [x.dtype for x in got] == [np.float32] * 4 + [_BF16] * 2
  for g, r in zip(got, raw):
    np.testing.assert_array_equal(g.view(r.dtype), r)


def _weights_snapshot(model):
  return [np.array(x, copy=True) for x in _leaves(model.weights)]


def _initialized_serial(d_feature=4):
  model = _serial(d_feature)
  model.init(shapes.ShapeDtype((2, 5), np.int32))
  return model, _weights_snapshot(model)


def test_misfit_file_names_the_weight_and_changes_nothing():
  model, before = _initialized_serial(d_feature=5)
  with pytest.raises(wf.WeightFileError,
                     match=r'serial\.pkl\.gz: weights\[0\] \(in '
                     r'Serial/0:Embedding_10_5\) has shape \(10, 4\) in the '
                     r'file but the model expects \(10, 5\)'):
    model.init_from_file(str(_DATA / 'serial.pkl.gz'))
  _assert_same_leaves(_weights_snapshot(model), before)
  bigger = tl.Serial(tl.Embedding(10, 4), tl.Dense(3), tl.LayerNorm(),
                     tl.Dense(2))
  bigger.init(shapes.ShapeDtype((2, 5), np.int32))
  with pytest.raises(wf.WeightFileError,
                     match=r'first missing one is weights\[3\]\[0\] \(in '
                     r'Serial/3:Dense_2\) of shape \(3, 2\)'):
    bigger.init_from_file(str(_DATA / 'serial.pkl.gz'))


@pytest.mark.parametrize('damage', ['truncated', 'not_gzip', 'empty'])
def test_broken_file_names_it_and_changes_no_weight(tmp_path, damage):
  data = (_DATA / 'serial.pkl.gz').read_bytes()
  data = {'truncated': data[:len(data) // 2], 'not_gzip': b'PK\x03\x04 zip',
          'empty': b''}[damage]
  path = tmp_path / 'broken.pkl.gz'
  path.write_bytes(data)
  model, before = _initialized_serial()
  with pytest.raises(wf.WeightFileError,
                     match=r'broken\.pkl\.gz: cannot read this gzipped '
                     r'pickle.*truncated, corrupt or not a Trax weight file'):
    model.init_from_file(str(path))
  _assert_same_leaves(_weights_snapshot(model), before)


def test_truncated_weights_stream_changes_no_weight(tmp_path):
  for name in ('model.pkl.gz', 'model.weights.npy.gz'):
    (tmp_path / name).write_bytes((_DATA / 'loop' / name).read_bytes())
  stream = tmp_path / 'model.weights.npy.gz'
  stream.write_bytes(stream.read_bytes()[:-30])
  model = tl.Serial(tl.Dense(4), tl.BatchNorm(axis=(0,)), tl.Relu(),
                    tl.Dense(2, use_bfloat16=True))
  model.init(shapes.ShapeDtype((8, 3)))
  before = _weights_snapshot(model)
  with pytest.raises(wf.WeightFileError,
                     match=r'model\.weights\.npy\.gz: cannot read this '
                     r'\.npy\.gz weight file \(file ends inside'):
    model.init_from_file(str(tmp_path / 'model.pkl.gz'), weights_only=True)
  _assert_same_leaves(_weights_snapshot(model), before)


def test_malicious_weight_file_is_refused(tmp_path):
  marker = tmp_path / 'pwned'
  path = tmp_path / 'evil.pkl.gz'
  with gzip.open(path, 'wb') as f:
    f.write(f'cos\nsystem\n(Vtouch {marker}\ntR.'.encode())
  model, before = _initialized_serial()
  with pytest.raises(_safe_pickle.UnsafePickleError,
                     match=r'evil\.pkl\.gz: refusing to load os\.system'):
    model.init_from_file(str(path))
  assert not marker.exists()
  _assert_same_leaves(_weights_snapshot(model), before)


def test_weights_and_state_signature_keeps_the_layer():
  model, before = _initialized_serial()
  weights_sig, state_sig = model.weights_and_state_signature(
      shapes.ShapeDtype((2, 5), np.int32))
  assert weights_sig == (
      shapes.ShapeDtype((10, 4)),
      (shapes.ShapeDtype((4, 3)), shapes.ShapeDtype((3,))),
      (shapes.ShapeDtype((3,)), shapes.ShapeDtype((3,))))
  assert state_sig == ((), (), ())
  _assert_same_leaves(_weights_snapshot(model), before)


# -- shard / unshard ---------------------------------------------------------


def test_shard_gives_each_device_its_piece():
  n_devices = fastmath.local_device_count()
  matrix = np.arange(12.).reshape(4, 3)  # Rank < 3: split on axis 0.
  cube = np.arange(24.).reshape(2, 3, 4)  # Rank 3: split on the last axis.
  sharded = tl.shard({'m': matrix, 'c': cube}, n_shards=2)
  assert sharded['m'].shape == (n_devices, 2, 3)
  assert sharded['c'].shape == (n_devices, 2, 3, 2)
  for i in range(n_devices):
    np.testing.assert_array_equal(sharded['m'][i],
                                  matrix[2 * (i % 2):2 * (i % 2) + 2])
    np.testing.assert_array_equal(sharded['c'][i],
                                  cube[..., 2 * (i % 2):2 * (i % 2) + 2])
  assert wf.N_WEIGHTS_SHARDS == 1
  np.testing.assert_array_equal(tl.shard(matrix), np.stack([matrix] *
                                                           n_devices))
  with pytest.raises(ValueError, match=r'shard: cannot split an array of '
                     r'shape \(4, 3\) into 3 equal pieces along axis 0'):
    tl.shard(matrix, n_shards=3)


def test_unshard_joins_the_pieces():
  matrix = np.arange(12.).reshape(4, 3)
  cube = np.arange(24.).reshape(2, 3, 4)
  pieces = (np.stack([matrix[:2], matrix[2:]]),
            np.stack([cube[..., :2], cube[..., 2:]]))
  got = tl.unshard(pieces, n_shards=2)
  np.testing.assert_array_equal(got[0], matrix)
  np.testing.assert_array_equal(got[1], cube)
  np.testing.assert_array_equal(tl.unshard(matrix[None]), matrix)
  with pytest.raises(ValueError, match=r'unshard: expected a leading axis of '
                     r'2 shards, got an array of shape \(4, 3\)'):
    tl.unshard(matrix, n_shards=2)


def test_shared_layers_are_stored_once_in_trax_layout(tmp_path):
  dense = tl.Dense(3)
  model = tl.Serial(dense, tl.Relu(), dense)
  x = np.arange(6, dtype=np.float32).reshape(2, 3)
  model.init(shapes.signature(x))
  path = str(tmp_path / 'shared.pkl.gz')
  model.save_to_file(path, input_signature=shapes.signature(x))
  contents = wf.unpickle_from_file(path, gzip=True)
  assert sorted(contents) == ['flat_state', 'flat_weights', 'input_signature']
  assert [w.shape for w in contents['flat_weights']] == [(3, 3), (3,)]
  assert contents['flat_state'] == []
  assert contents['input_signature'] == shapes.ShapeDtype((2, 3))
  dense2 = tl.Dense(3)
  restored = tl.Serial(dense2, tl.Relu(), dense2)
  restored.init_from_file(path)
  w, b = (np.asarray(a, np.float64) for a in contents['flat_weights'])
  want = np.maximum(x @ w + b, 0) @ w + b
  np.testing.assert_allclose(np.asarray(restored(x)), want, rtol=1e-5)
