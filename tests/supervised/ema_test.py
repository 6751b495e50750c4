"""The weights' exponential moving average: Trainer, Loop, checkpoints, export."""

import contextlib
import io
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from tfnp_trax import export
from tfnp_trax import fastmath
from tfnp_trax import optimizers
from tfnp_trax import shapes
import tfnp_trax.layers as tl
from tfnp_trax.supervised import callbacks
from tfnp_trax.supervised import reversible_trainer as rt
from tfnp_trax.supervised import trainer as trainer_lib
from tfnp_trax.supervised import training

_RS = np.random.RandomState(0)
X = _RS.randn(32, 5).astype(np.float32)
Y = _RS.randint(0, 3, 32)
W = np.ones(32, np.float32)

_PROGRAMS = [dict(), dict(fused_update=False), dict(jit_compile=True),
             dict(jit_compile='update')]


def _numpy_ema(sequence, decay, warmup):
  """float64 EMA of a list of weight-leaf lists, from the first entry."""
  average = [np.asarray(v, np.float64) for v in sequence[0]]
  for n, leaves in enumerate(sequence[1:]):
    d = min(decay, (1 + n) / (10 + n)) if warmup else decay
    average = [d * a + (1 - d) * np.asarray(w, np.float64)
               for a, w in zip(average, leaves)]
  return average


def _classifier():
  return tl.Serial(tl.Dense(8), tl.Relu(), tl.Dense(3), tl.LogSoftmax())


@pytest.mark.parametrize('program', _PROGRAMS,
                         ids=['in_place', 'tree_update', 'xla_step',
                              'xla_update'])
@pytest.mark.parametrize('warmup', [False, True])
def test_trainer_average_equals_numpy(program, warmup):
  with_loss = tl.Serial(_classifier(), tl.WeightedCategoryCrossEntropy())
  with_loss.init(shapes.signature((X, Y, W)), rng=fastmath.random.get_prng(0))
  trainer = trainer_lib.Trainer(with_loss, optimizers.Adam(0.05),
                                ema_decay=0.8, ema_warmup=warmup, **program)
  sequence = [fastmath.tree_leaves(trainer.model_weights)]
  for step in range(5):
    trainer.one_step((X, Y, W), fastmath.random.get_prng(1), step=step)
    sequence.append(fastmath.tree_leaves(trainer.model_weights))
  want = _numpy_ema(sequence, 0.8, warmup)
  got = fastmath.tree_leaves(trainer.ema_weights)
  for g, w in zip(got, want):
    np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
  # The average lags the weights: it is not just a copy of them.
  assert not np.allclose(got[0], sequence[-1][0], atol=1e-4)
  assert int(trainer.variables()['ema'][-1].numpy()) == 5


def test_reversible_trainer_average_equals_numpy():
  x = _RS.randn(8, 6).astype(np.float32)
  y, w = _RS.randint(0, 2, 8), np.ones(8, np.float32)
  model = tl.Serial(
      tl.Dense(6), tl.Dup(),
      tl.ReversibleSerial(tl.ReversibleHalfResidual(tl.Dense(6)),
                          tl.ReversibleSwap()),
      tl.Concatenate(), tl.Dense(2), tl.LogSoftmax())
  blocks, loss_layer = rt.extract_reversible_blocks(
      [model, tl.WeightedCategoryCrossEntropy()])
  rt.init_reversible_blocks(blocks, loss_layer, shapes.signature((x, y, w)),
                            fastmath.random.get_prng(0))
  trainer = rt.ReversibleSerialTrainer(blocks, loss_layer,
                                       lambda: optimizers.Adam(0.05),
                                       ema_decay=0.7, ema_warmup=False)
  read = lambda: [v.numpy() for v in trainer.variables()['weights']]
  sequence = [read()]
  for step in range(4):
    trainer.one_step((x, y, w), fastmath.random.get_prng(1), step=step)
    sequence.append(read())
  got = fastmath.tree_leaves(trainer.ema_weights)
  for g, want in zip(got, _numpy_ema(sequence, 0.7, False)):
    np.testing.assert_allclose(g, want, rtol=1e-5, atol=1e-6)


def _stream(batch_size, seed=0):
  rs = np.random.RandomState(seed)
  while True:
    rows = rs.randint(0, len(X), batch_size)
    yield X[rows], Y[rows], W[rows]


class _Recorder(callbacks.TrainingStepCallback):
  """Keeps the model's weights after every step."""

  def __init__(self, loop):
    super().__init__(loop)
    self.sequence = [fastmath.tree_leaves(loop.model.weights)]

  def call_at(self, step):
    return True

  def on_step_begin(self, step):
    pass

  def on_step_end(self, step):
    self.sequence.append([np.asarray(w) for w in
                          fastmath.tree_leaves(self._loop.model.weights)])


def _loop(output_dir=None, callbacks_=(), eval_model=None, **kwargs):
  task = training.TrainTask(_stream(8), tl.WeightedCategoryCrossEntropy(),
                            optimizers.Adam(0.05))
  evals = training.EvalTask(_stream(32, seed=1),
                            [tl.WeightedCategoryCrossEntropy()],
                            metric_names=['ce'])
  return training.Loop(_classifier(), task, eval_tasks=[evals],
                       eval_model=eval_model, output_dir=output_dir,
                       random_seed=3, eval_at=lambda s: s % 4 == 0,
                       callbacks=list(callbacks_), **kwargs)


def _run(loop, n):
  with contextlib.redirect_stdout(io.StringIO()):
    loop.run(n)


def _numpy_ce(leaves, x, y):
  """The classifier's mean cross-entropy in float64."""
  a1, b1, a2, b2 = [np.asarray(v, np.float64) for v in leaves]
  logits = np.maximum(x @ a1 + b1, 0) @ a2 + b2
  logp = logits - np.log(np.sum(np.exp(logits - logits.max(1, keepdims=True)),
                                1, keepdims=True)) - logits.max(1,
                                                                keepdims=True)
  return -np.mean(logp[np.arange(len(y)), y])


def test_loop_average_evals_and_export(tmp_path):
  recorders = []

  def record(loop):
    recorders.append(_Recorder(loop))
    return recorders[0]
  loop = _loop(callbacks_=[record], ema_decay=0.9)
  _run(loop, 8)
  want = _numpy_ema(recorders[0].sequence, 0.9, True)
  got = fastmath.tree_leaves(loop.ema_weights)
  for g, w in zip(got, want):
    np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
  # Evals run on the average: the logged value is its cross-entropy on the
  # eval batch of that step (the eval stream is the same seeded stream).
  evals = _stream(32, seed=1)
  next(evals)  # The EvalTask's sample batch is evaluated first, at step 4.
  x8, y8, _ = next(evals)
  np.testing.assert_allclose(loop.history.last('eval', 'metrics/ce'),
                             _numpy_ce(got, x8.astype(np.float64), y8),
                             rtol=1e-5)
  # The model layer keeps the trained weights; export writes the average.
  for m, w in zip(fastmath.tree_leaves(loop.model.weights),
                  recorders[0].sequence[-1]):
    np.testing.assert_array_equal(np.asarray(m), w)
  path = str(tmp_path / 'saved')
  export.export_loop(loop, path)
  code = textwrap.dedent(f'''
      import sys, numpy as np
      sys.modules['tfnp_trax'] = None  # Loads without the library.
      import tensorflow as tf
      f = tf.saved_model.load({path!r}).signatures['serving_default']
      x = np.load({str(tmp_path / 'x.npy')!r})
      out = list(f(tf.constant(x)).values())[0].numpy()
      np.save({str(tmp_path / 'out.npy')!r}, out)
      ''')
  np.save(tmp_path / 'x.npy', X[:4])
  subprocess.run([sys.executable, '-c', code], check=True, timeout=120,
                 capture_output=True)
  a1, b1, a2, b2 = [np.asarray(v, np.float64) for v in got]
  logits = np.maximum(X[:4] @ a1 + b1, 0) @ a2 + b2
  logp = logits - np.log(np.sum(np.exp(logits), 1, keepdims=True))
  np.testing.assert_allclose(np.load(tmp_path / 'out.npy'), logp, atol=1e-5)


def test_eval_without_average_and_separate_eval_model():
  raw = _loop(ema_decay=0.9, eval_with_ema=False)
  averaged = _loop(ema_decay=0.9, eval_model=_classifier())
  _run(raw, 4)
  _run(averaged, 4)
  # Same training (same seed and data); only what is evaluated differs.
  evals = _stream(32, seed=1)
  x, y, _ = next(evals)
  np.testing.assert_allclose(
      raw.history.last('eval', 'metrics/ce'),
      _numpy_ce(fastmath.tree_leaves(raw.model.weights), x, y), rtol=1e-5)
  ema = fastmath.tree_leaves(averaged.ema_weights)
  np.testing.assert_allclose(averaged.history.last('eval', 'metrics/ce'),
                             _numpy_ce(ema, x, y), rtol=1e-5)
  # A separate eval model holds the average.
  for e, a in zip(fastmath.tree_leaves(averaged.eval_model.weights), ema):
    np.testing.assert_array_equal(np.asarray(e), a)


def test_checkpoint_holds_the_average_and_resume_continues(tmp_path):
  straight = _loop(ema_decay=0.9)
  _run(straight, 8)
  at = lambda s: s == 4
  first = _loop(output_dir=str(tmp_path), ema_decay=0.9, checkpoint_at=at)
  _run(first, 4)
  resumed = _loop(output_dir=str(tmp_path), ema_decay=0.9, checkpoint_at=at)
  assert resumed.step == 4
  for r, f in zip(fastmath.tree_leaves(resumed.ema_weights),
                  fastmath.tree_leaves(first.ema_weights)):
    np.testing.assert_array_equal(r, f)
  _run(resumed, 4)
  for r, s in zip(fastmath.tree_leaves(resumed.ema_weights),
                  fastmath.tree_leaves(straight.ema_weights)):
    np.testing.assert_array_equal(r, s)


def test_setting_weights_restarts_the_average():
  loop = _loop(ema_decay=0.9)
  _run(loop, 2)
  new = fastmath.nested_map(lambda w: np.full(np.shape(w), 0.5, np.float32),
                            loop.model.weights)
  loop.update_weights_and_state(weights=new)
  for a in fastmath.tree_leaves(loop.ema_weights):
    np.testing.assert_array_equal(a, 0.5)


def test_memory_efficient_loop_keeps_an_average():
  loop = _loop(ema_decay=0.5, use_memory_efficient_trainer=True)
  _run(loop, 2)
  assert loop.ema_weights is not None
  shapes_ = [np.shape(a) for a in fastmath.tree_leaves(loop.ema_weights)]
  assert shapes_ == [np.shape(w) for w in
                     fastmath.tree_leaves(loop.model.weights)]


@pytest.mark.parametrize('decay', [1.0, -0.1, 1.5, '0.9', True])
def test_bad_decay(decay):
  with pytest.raises(ValueError, match=r'ema_decay must be a number in '
                     r'\[0, 1\)'):
    _loop(ema_decay=decay)


def test_no_average():
  loop = _loop()
  assert loop.ema_weights is None and not loop.eval_with_ema
  with pytest.raises(ValueError, match='use_ema=True, but the Loop keeps no '
                     'moving average'):
    export.export_loop(loop, '/tmp/unused-export-dir-ema', use_ema=True)
