"""Tests for mixed bfloat16 precision in Trainer, Loop and their evals."""

import itertools

import ml_dtypes
import numpy as np
import pytest
import tensorflow as tf

from tests import _multi_device
from tfnp_trax import fastmath
from tfnp_trax import optimizers
from tfnp_trax import shapes
from tfnp_trax.fastmath import numpy as jnp
import tfnp_trax.layers as tl
from tfnp_trax.supervised import _precision
from tfnp_trax.supervised import trainer as trainer_lib
from tfnp_trax.supervised import training
from tfnp_trax.supervised.loop import evals as evals_lib


def _bf16(a):
  """Rounds a float64 array to bfloat16 and back (round to nearest even)."""
  return np.asarray(a, np.float64).astype(ml_dtypes.bfloat16).astype(
      np.float64)


def _batch(n=8):
  r = np.random.default_rng(0)
  x = r.normal(size=(n, 5)).astype(np.float32)
  y = r.integers(0, 3, size=n).astype(np.int32)
  w = r.uniform(0.5, 1.5, size=n).astype(np.float32)
  return x, y, w


def _mlp_with_loss(batch):
  model = tl.Serial(tl.Dense(4), tl.Relu(), tl.Dense(3),
                    tl.WeightedCategoryCrossEntropy())
  model.init(shapes.signature(batch), rng=fastmath.random.get_prng(0))
  return model


def _reference_loss_and_grads(params, batch):
  """float64 loss and gradients of Dense-Relu-Dense-weighted cross-entropy."""
  w1, b1, w2, b2 = (np.asarray(p, np.float64) for p in params)
  x, y, wt = (np.asarray(a, np.float64) for a in batch)
  pre = x @ w1 + b1
  h = np.maximum(pre, 0.0)
  logits = h @ w2 + b2
  shifted = logits - logits.max(-1, keepdims=True)
  log_probs = shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))
  one_hot = np.eye(3)[y.astype(int)]
  ce = -(one_hot * log_probs).sum(-1)
  loss = (wt * ce).sum() / wt.sum()
  d_logits = (np.exp(log_probs) - one_hot) * (wt / wt.sum())[:, None]
  d_h = d_logits @ w2.T * (pre > 0)
  return loss, (x.T @ d_h, d_h.sum(0), h.T @ d_logits, d_logits.sum(0))


def _params(trainer):
  (w1, b1), _, (w2, b2), _ = trainer.model_weights
  return [w1, b1, w2, b2]


@pytest.mark.parametrize('name', [None, 'float32', 'bf16', 'bfloat16',
                                  'mixed_bfloat16', 'BF16'])
def test_precision_names(name):
  expected = None if name in (None, 'float32') else tf.bfloat16
  assert _precision.resolve(name, 'Trainer') == expected


def test_bad_precision_names_the_caller_and_the_choices():
  with pytest.raises(ValueError, match=r"Trainer: precision must be None or "
                     r"one of \['float32', 'bfloat16', 'bf16', "
                     r"'mixed_bfloat16'\], got 'fp16'"):
    trainer_lib.Trainer(_mlp_with_loss(_batch()), optimizers.SGD(0.1),
                        precision='fp16')
  with pytest.raises(ValueError, match='Loop: precision must be'):
    training.Loop(tl.Dense(3), _train_task(), precision=16)


def test_only_model_inputs_are_cast():
  batch = _batch()
  cast = _precision.cast_inputs(batch, 1, tf.bfloat16)
  assert [a.dtype for a in cast] == [tf.bfloat16, tf.int32, tf.float32]
  assert _precision.model_inputs(_mlp_with_loss(batch)) == 1
  # A layer that is not a Serial gets every float input cast.
  assert _precision.model_inputs(tl.Dense(2)) is None
  cast = _precision.cast_inputs(batch, None, tf.bfloat16)
  assert [a.dtype for a in cast] == [tf.bfloat16, tf.int32, tf.bfloat16]


def test_sgd_step_matches_float64_reference_within_bf16_rounding():
  batch = _batch()
  trainers = {p: trainer_lib.Trainer(_mlp_with_loss(batch),
                                     optimizers.SGD(1.0), precision=p)
              for p in (None, 'bf16')}
  before = _params(trainers[None])
  ref_loss, ref_grads = _reference_loss_and_grads(before, batch)
  losses = {p: t.one_step(batch, fastmath.random.get_prng(0), 0)[0]
            for p, t in trainers.items()}
  assert losses['bf16'].dtype == tf.float32
  # bfloat16 keeps 8 significant bits: about 0.4% per rounding.
  np.testing.assert_allclose(float(losses['bf16']), ref_loss, rtol=2e-2)
  np.testing.assert_allclose(float(losses[None]), ref_loss, rtol=1e-5)
  # The bf16 step really computed in bfloat16: float32 is far closer.
  assert abs(float(losses['bf16']) - ref_loss) > 1e-4 * ref_loss
  after = _params(trainers['bf16'])
  scale = max(np.abs(g).max() for g in ref_grads)
  for w0, w1, g in zip(before, after, ref_grads):
    assert w1.dtype == np.float32  # Master weights stay float32.
    np.testing.assert_allclose(w0 - w1, g, rtol=3e-2, atol=2e-2 * scale)
  assert all(v.dtype == tf.float32
             for v in trainers['bf16'].variables()['weights'])


@pytest.mark.parametrize('fused', [True, False])
def test_adam_slots_stay_float32_and_hold_the_float32_gradient(fused):
  batch = _batch()
  trainer = trainer_lib.Trainer(_mlp_with_loss(batch),
                                optimizers.Adam(0.01, weight_decay_rate=0.0),
                                fused_update=fused, precision='bf16')
  _, ref_grads = _reference_loss_and_grads(_params(trainer), batch)
  trainer.one_step(batch, fastmath.random.get_prng(0), 0)
  slot_vars = trainer.variables()['slots']
  assert slot_vars and all(v.dtype == tf.float32 for v in slot_vars)
  scale = max(np.abs(g).max() for g in ref_grads)
  # One (m, v) pair per weight array, in the order of the weights.
  for (m, v), g in zip(trainer.slots, ref_grads):
    # After one step m = (1 - b1) g and v = (1 - b2) g^2.
    np.testing.assert_allclose(m / 0.1, g, rtol=3e-2, atol=2e-2 * scale)
    np.testing.assert_allclose(np.sqrt(v / 0.001), np.abs(g), rtol=3e-2,
                               atol=2e-2 * scale)


def test_layer_norm_statistics_are_float32_for_bf16_input():
  # Values 1024 + 8k are exact in bfloat16 (whose spacing there is 8), but
  # their mean is not: statistics rounded to bfloat16 are off by about a
  # third of the standard deviation.
  r = np.random.default_rng(1)
  x = 1024.0 + 8.0 * (r.uniform(size=(4, 64)) < 0.3)
  layer = tl.LayerNorm()
  layer.init(shapes.ShapeDtype(x.shape, jnp.bfloat16))
  y = layer(jnp.asarray(x, dtype=jnp.bfloat16))
  assert y.dtype == jnp.bfloat16
  mean = x.mean(-1, keepdims=True)
  var = ((x - mean) ** 2).mean(-1, keepdims=True)
  expected = (x - mean) / np.sqrt(var + 1e-6)
  tolerance = dict(rtol=1e-2, atol=2e-2)
  np.testing.assert_allclose(np.asarray(y, np.float64), expected, **tolerance)
  # The same formula with bfloat16 statistics fails this tolerance.
  mean_bf = _bf16(mean)
  var_bf = _bf16(_bf16((x - mean_bf) ** 2).mean(-1, keepdims=True))
  bf16_stats = _bf16((x - mean_bf) / np.sqrt(var_bf + 1e-6))
  with pytest.raises(AssertionError):
    np.testing.assert_allclose(bf16_stats, expected, **tolerance)


def test_eager_tf_function_and_xla_steps_agree():
  batch = _batch()
  results = {}
  for mode in ('eager', 'function', 'xla'):
    tf.config.run_functions_eagerly(mode == 'eager')
    try:
      trainer = trainer_lib.Trainer(
          _mlp_with_loss(batch), optimizers.Adam(0.01), precision='bf16',
          jit_compile=True if mode == 'xla' else None)
      for step in range(2):
        loss, _ = trainer.one_step(batch, fastmath.random.get_prng(step),
                                   step)
    finally:
      tf.config.run_functions_eagerly(False)
    results[mode] = (float(loss), _params(trainer))
  for mode in ('function', 'xla'):
    # XLA may fuse (and so round) differently; within bfloat16 rounding.
    np.testing.assert_allclose(results[mode][0], results['eager'][0],
                               rtol=1e-2)
    for a, b in zip(results[mode][1], results['eager'][1]):
      np.testing.assert_allclose(a, b, rtol=1e-2, atol=1e-3)


def test_metrics_function_runs_the_model_in_bf16():
  batch = _batch()
  model = tl.Serial(tl.Dense(3))
  model.init(shapes.signature(batch[:1]), rng=fastmath.random.get_prng(0))
  w, b = (np.asarray(a, np.float64) for a in model.weights[0])
  logits = np.asarray(batch[0], np.float64) @ w + b
  values = {}
  for precision in (None, 'bf16'):
    fn = evals_lib.MetricsFunction(
        model, [tl.WeightedCategoryCrossEntropy()], batch,
        precision=precision)
    (ce,) = fn(batch, model.weights, model.state)
    assert ce.dtype == tf.float32
    values[precision] = float(ce)
  shifted = logits - logits.max(-1, keepdims=True)
  ce = -(shifted[np.arange(8), batch[1]] -
         np.log(np.exp(shifted).sum(-1)))
  ref = (batch[2] * ce).sum() / batch[2].sum()
  np.testing.assert_allclose(values[None], ref, rtol=1e-5)
  np.testing.assert_allclose(values['bf16'], ref, rtol=2e-2)
  assert values['bf16'] != values[None]


def _train_task():
  batch = _batch()
  return training.TrainTask(itertools.repeat(batch),
                            tl.WeightedCategoryCrossEntropy(),
                            optimizers.Adam(0.01))


def _loop(tmp_path, precision='bf16'):
  model = tl.Serial(tl.Dense(4), tl.LayerNorm(), tl.Relu(), tl.Dense(3))
  eval_task = training.EvalTask(itertools.repeat(_batch()),
                                [tl.WeightedCategoryCrossEntropy()],
                                n_eval_batches=1)
  return training.Loop(model, _train_task(), eval_tasks=[eval_task],
                       output_dir=str(tmp_path), random_seed=0,
                       checkpoint_at=lambda s: s == 3,
                       eval_at=lambda s: s == 3, precision=precision)


def test_loop_trains_in_bf16_and_resumes(tmp_path, capsys):
  loop = _loop(tmp_path)
  assert loop.trainer.precision == 'bfloat16'
  loop.run(3)
  evals = loop.history.get('eval', 'metrics/WeightedCategoryCrossEntropy')
  assert evals and np.isfinite(evals[-1][1])
  weights = fastmath.tree_leaves(loop.model.weights)
  assert all(np.asarray(w).dtype == np.float32 for w in weights)
  resumed = _loop(tmp_path)
  assert resumed.step == 3
  for a, b in zip(fastmath.tree_leaves(resumed.model.weights), weights):
    np.testing.assert_array_equal(a, b)
  resumed.run(1)
  assert resumed.step == 4
  capsys.readouterr()  # Loop's progress lines.


def test_memory_efficient_trainer_rejects_bf16():
  with pytest.raises(NotImplementedError,
                     match=r"Loop: precision='bf16' is not supported with "
                     r'use_memory_efficient_trainer=True'):
    training.Loop(tl.Dense(3), _train_task(), precision='bf16',
                  use_memory_efficient_trainer=True)


_REPLICAS = '''
import numpy as np
from tfnp_trax import fastmath, optimizers, shapes
import tfnp_trax.layers as tl
from tfnp_trax.supervised.trainer import Trainer

r = np.random.default_rng(0)
batch = (r.normal(size=(8, 5)).astype(np.float32),
         r.integers(0, 3, size=8).astype(np.int32),
         np.ones(8, np.float32))
mirrored = tf.distribute.MirroredStrategy(
    [d.name for d in tf.config.list_logical_devices('CPU')])
out = []
for strategy in [None, mirrored]:
  model = tl.Serial(tl.Dense(8), tl.LayerNorm(), tl.Relu(), tl.Dense(3),
                    tl.WeightedCategoryCrossEntropy())
  model.init(shapes.signature(batch), rng=fastmath.random.get_prng(0))
  trainer = Trainer(model, optimizers.Adam(0.01), strategy=strategy,
                    precision='bf16')
  for step in range(3):
    loss, _ = trainer.one_step(batch, fastmath.random.get_prng(step), step)
  dtypes = sorted({v.dtype.name for group in trainer.variables().values()
                   for v in group})
  out.append({'loss': float(loss), 'dtypes': dtypes,
              'weights': [w.tolist() for w in
                          fastmath.tree_leaves(trainer.model_weights)]})
report(out)
'''


def test_bf16_replicas_agree_with_one_device():
  one, two = _multi_device.run(_REPLICAS, n_devices=2, timeout=300)
  assert one['dtypes'] == two['dtypes'] == ['float32']
  # Each replica rounds its half-batch sums in bfloat16; the mean of the
  # two agrees with the whole batch within bfloat16 rounding.
  np.testing.assert_allclose(two['loss'], one['loss'], rtol=1e-2)
  for a, b in zip(two['weights'], one['weights']):
    np.testing.assert_allclose(a, b, rtol=2e-2, atol=2e-3)
