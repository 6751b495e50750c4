"""Gradient accumulation: k micro-batches per update in one compiled step."""

import contextlib
import io

import numpy as np
import pytest
import tensorflow as tf

from tests import _multi_device
from tfnp_trax import fastmath
from tfnp_trax import optimizers
from tfnp_trax import shapes
import tfnp_trax.layers as tl
from tfnp_trax.supervised import reversible_trainer as rt
from tfnp_trax.supervised import trainer as trainer_lib
from tfnp_trax.supervised import training

_RS = np.random.RandomState(0)
X = _RS.randn(16, 5).astype(np.float32)
Y = _RS.randint(0, 3, 16)
W = np.ones(16, np.float32)

_PROGRAMS = [dict(), dict(fused_update=False), dict(jit_compile=True),
             dict(jit_compile='update')]


def _classifier():
  return tl.Serial(tl.Dense(8), tl.Relu(), tl.Dense(3), tl.LogSoftmax())


def _trainer(k=1, optimizer=None, batch=(X, Y, W), **kwargs):
  with_loss = tl.Serial(_classifier(), tl.WeightedCategoryCrossEntropy())
  with_loss.init(shapes.signature(batch), rng=fastmath.random.get_prng(0))
  return trainer_lib.Trainer(with_loss, optimizer or optimizers.Adam(0.01),
                             gradient_accumulation_steps=k, **kwargs)


def _max_diff(a, b):
  return max(float(np.max(np.abs(np.asarray(p) - np.asarray(q))))
             for p, q in zip(fastmath.tree_leaves(a), fastmath.tree_leaves(b)))


@pytest.mark.parametrize('program', _PROGRAMS,
                         ids=['in_place', 'tree_update', 'xla_step',
                              'xla_update'])
@pytest.mark.parametrize('k', [2, 4])
def test_equals_one_step_on_the_whole_batch(program, k):
  whole, micro = _trainer(1, **program), _trainer(k, **program)
  assert micro.step_program == whole.step_program
  for step in range(3):
    key = fastmath.random.get_prng(1)
    loss_whole, _ = whole.one_step((X, Y, W), key, step=step)
    loss_micro, _ = micro.one_step((X, Y, W), key, step=step)
    np.testing.assert_allclose(float(loss_micro), float(loss_whole),
                               rtol=1e-6)
  assert _max_diff(micro.model_weights, whole.model_weights) < 1e-6
  assert _max_diff(micro.slots, whole.slots) < 1e-6


def test_sgd_step_against_numpy():
  # L2 regression y = x @ a + b: one SGD step on the mean squared error of
  # four micro-batches of 4 is one step on the mean over all 16.
  rs = np.random.RandomState(3)
  x = rs.randn(16, 3).astype(np.float32)
  y = rs.randn(16, 2).astype(np.float32)
  w = np.ones((16, 2), np.float32)
  with_loss = tl.Serial(tl.Dense(2), tl.L2Loss())
  with_loss.init(shapes.signature((x, y, w)),
                 rng=fastmath.random.get_prng(0))
  a0, b0 = [np.asarray(v, np.float64) for v in with_loss.weights[0]]
  trainer = trainer_lib.Trainer(with_loss, optimizers.SGD(0.1),
                                gradient_accumulation_steps=4)
  loss, _ = trainer.one_step((x, y, w), fastmath.random.get_prng(1), step=0)
  x64, y64 = x.astype(np.float64), y.astype(np.float64)
  residual = x64 @ a0 + b0 - y64
  # L2Loss is sum(w * r**2) / sum(w); its gradient is 2 * r / sum(w).
  np.testing.assert_allclose(float(loss), np.sum(residual ** 2) / w.sum(),
                             rtol=1e-5)
  grad_a = x64.T @ (2 * residual) / w.sum()
  grad_b = np.sum(2 * residual, axis=0) / w.sum()
  a1, b1 = trainer.model_weights[0]
  np.testing.assert_allclose(a1, a0 - 0.1 * grad_a, rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(b1, b0 - 0.1 * grad_b, rtol=1e-5, atol=1e-6)


def test_state_passes_from_micro_batch_to_micro_batch():
  # BatchNorm counts the batches it has seen in its state: three
  # micro-batches are three batches.
  x = _RS.randn(12, 4).astype(np.float32)
  y, w = _RS.randint(0, 2, 12), np.ones(12, np.float32)
  with_loss = tl.Serial(tl.Dense(4), tl.BatchNorm(axis=(0,)), tl.Dense(2),
                        tl.LogSoftmax(), tl.WeightedCategoryCrossEntropy())
  with_loss.init(shapes.signature((x, y, w)),
                 rng=fastmath.random.get_prng(0))
  trainer = trainer_lib.Trainer(with_loss, optimizers.Adam(0.01),
                                gradient_accumulation_steps=3)
  trainer.one_step((x, y, w), fastmath.random.get_prng(1), step=0)
  counts = [np.asarray(s) for s in fastmath.tree_leaves(trainer.model_state)
            if np.asarray(s).dtype.kind == 'i']
  assert [int(c) for c in counts] == [3]
  # The running mean is BatchNorm's momentum average over the three
  # micro-batches in order, from zeros (momentum 0.999).
  dense = with_loss.sublayers[0]
  a, b = [np.asarray(v, np.float64) for v in dense.weights]
  h = x.astype(np.float64) @ a + b
  mean = np.zeros(4)
  for i in range(3):
    mean = 0.999 * mean + 0.001 * h[4 * i:4 * (i + 1)].mean(axis=0)
  running = [np.asarray(s) for s in fastmath.tree_leaves(trainer.model_state)
             if np.asarray(s).dtype.kind == 'f'][0]
  np.testing.assert_allclose(running.reshape(-1), mean, rtol=1e-4, atol=1e-7)


def test_mixed_precision_matches_whole_batch():
  whole, micro = (_trainer(1, precision='bf16'),
                  _trainer(2, precision='bf16'))
  key = fastmath.random.get_prng(1)
  loss_whole, _ = whole.one_step((X, Y, W), key, step=0)
  loss_micro, _ = micro.one_step((X, Y, W), key, step=0)
  # bfloat16 compute: the two orders of summation differ in rounding only.
  np.testing.assert_allclose(float(loss_micro), float(loss_whole), rtol=2e-2)
  assert _max_diff(micro.model_weights, whole.model_weights) < 1e-3


def test_reversible_trainer_equals_whole_batch():
  x = _RS.randn(8, 6).astype(np.float32)
  y, w = _RS.randint(0, 2, 8), np.ones(8, np.float32)

  def make(k):
    model = tl.Serial(
        tl.Dense(6), tl.Dup(),
        tl.ReversibleSerial(tl.ReversibleHalfResidual(tl.Dense(6)),
                            tl.ReversibleSwap()),
        tl.Concatenate(), tl.Dense(2), tl.LogSoftmax())
    blocks, loss_layer = rt.extract_reversible_blocks(
        [model, tl.WeightedCategoryCrossEntropy()])
    rt.init_reversible_blocks(blocks, loss_layer, shapes.signature((x, y, w)),
                              fastmath.random.get_prng(0))
    return rt.ReversibleSerialTrainer(blocks, loss_layer, optimizers.Adam,
                                      gradient_accumulation_steps=k)
  whole, micro = make(1), make(4)
  for step in range(3):
    key = fastmath.random.get_prng(1)
    loss_whole, _ = whole.one_step((x, y, w), key, step=step)
    loss_micro, _ = micro.one_step((x, y, w), key, step=step)
    np.testing.assert_allclose(float(loss_micro), float(loss_whole),
                               rtol=1e-6)
  for a, b in zip(whole.variables()['weights'], micro.variables()['weights']):
    np.testing.assert_allclose(b.numpy(), a.numpy(), atol=1e-6)


def _stream(batch_size):
  i = 0
  while True:
    rows = np.arange(i, i + batch_size) % len(X)
    i += batch_size
    yield X[rows], Y[rows], W[rows]


def _loop(batch_size, k, data=None, output_dir=None, **kwargs):
  task = training.TrainTask(
      data if data is not None else _stream(batch_size),
      tl.WeightedCategoryCrossEntropy(), optimizers.Adam(0.01),
      gradient_accumulation_steps=k)
  evals = training.EvalTask(_stream(8), [tl.WeightedCategoryAccuracy()])
  return training.Loop(_classifier(), task, eval_tasks=[evals],
                       output_dir=output_dir, random_seed=3,
                       eval_at=lambda s: s % 3 == 0, **kwargs)


def _run(loop, n):
  with contextlib.redirect_stdout(io.StringIO()):
    loop.run(n)


@pytest.mark.parametrize('memory_efficient', [False, True])
def test_loop_draws_k_batches_per_update(memory_efficient):
  whole = _loop(8, 1, use_memory_efficient_trainer=memory_efficient)
  micro = _loop(4, 2, use_memory_efficient_trainer=memory_efficient)
  _run(whole, 6)
  _run(micro, 6)
  # Steps, the History and the data position count updates and batches.
  assert micro.step == whole.step == 6
  assert micro._streams[0].position == 12  # pylint: disable=protected-access
  name = 'metrics/WeightedCategoryCrossEntropy'
  got, want = micro.history.get('train', name), whole.history.get('train',
                                                                  name)
  assert [s for s, _ in got] == [s for s, _ in want] == [3, 6]
  np.testing.assert_allclose([v for _, v in got], [v for _, v in want],
                             rtol=1e-6)
  assert _max_diff(micro.model.weights, whole.model.weights) < 1e-6


def test_loop_dataset_input_joins_k_batches():
  whole = _loop(8, 1)
  ds = tf.data.Dataset.from_tensor_slices((X, Y, W)).repeat().batch(4)
  micro = _loop(4, 2, data=ds)
  _run(whole, 4)
  _run(micro, 4)
  assert _max_diff(micro.model.weights, whole.model.weights) < 1e-6


def test_loop_resume_continues_the_micro_batches(tmp_path):
  straight = _loop(4, 2)
  _run(straight, 6)
  first = _loop(4, 2, output_dir=str(tmp_path),
                checkpoint_at=lambda s: s == 3)
  _run(first, 3)
  resumed = _loop(4, 2, output_dir=str(tmp_path),
                  checkpoint_at=lambda s: s == 3)
  assert resumed.step == 3
  _run(resumed, 3)
  assert _max_diff(resumed.model.weights, straight.model.weights) == 0.0


@pytest.mark.parametrize('k', [0, -1, 1.5, True, '2'])
def test_bad_accumulation_steps(k):
  with pytest.raises(ValueError, match='gradient_accumulation_steps must be '
                     'a positive integer'):
    training.TrainTask(_stream(4), tl.WeightedCategoryCrossEntropy(),
                       optimizers.Adam(0.01), gradient_accumulation_steps=k)
  with pytest.raises(ValueError, match='gradient_accumulation_steps'):
    _trainer(k)


def test_batch_must_divide_into_micro_batches():
  trainer = _trainer(3)
  with pytest.raises(ValueError, match=r'batch size 16 does not divide into '
                     r'gradient_accumulation_steps=3'):
    trainer.one_step((X, Y, W), fastmath.random.get_prng(1), step=0)


@pytest.mark.parametrize('n_devices', [2, 4])
def test_replicas_equal_the_whole_batch(n_devices):
  result = _multi_device.run('''
      import numpy as np
      from tfnp_trax import fastmath, optimizers, shapes
      import tfnp_trax.layers as tl
      from tfnp_trax.supervised import trainer as trainer_lib
      rs = np.random.RandomState(0)
      x = rs.randn(16, 5).astype(np.float32)
      y, w = rs.randint(0, 3, 16), np.ones(16, np.float32)
      strategy = tf.distribute.MirroredStrategy(
          [d.name for d in tf.config.list_logical_devices('CPU')])

      def make(k, strategy):
        with strategy.scope():
          with_loss = tl.Serial(tl.Dense(8), tl.Relu(), tl.Dense(3),
                                tl.LogSoftmax(),
                                tl.WeightedCategoryCrossEntropy())
          with_loss.init(shapes.signature((x, y, w)),
                         rng=fastmath.random.get_prng(0))
        return trainer_lib.Trainer(with_loss, optimizers.Adam(0.01), strategy,
                                   gradient_accumulation_steps=k)
      whole = make(1, tf.distribute.get_strategy())
      micro = make(2, strategy)
      losses = []
      for step in range(3):
        key = fastmath.random.get_prng(1)
        losses.append([float(whole.one_step((x, y, w), key, step=step)[0]),
                       float(micro.one_step((x, y, w), key, step=step)[0])])
      diff = max(float(np.max(np.abs(a - b))) for a, b in zip(
          fastmath.tree_leaves(whole.model_weights),
          fastmath.tree_leaves(micro.model_weights)))
      report({'losses': losses, 'diff': diff,
              'replicas': strategy.num_replicas_in_sync})
      ''', n_devices=n_devices)
  assert result['replicas'] == n_devices
  for whole, micro in result['losses']:
    np.testing.assert_allclose(micro, whole, rtol=1e-6)
  assert result['diff'] < 1e-6
