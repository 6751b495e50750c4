"""Metrics on 4 replicas equal the metric on the whole batch.

Runs in a subprocess with 4 logical CPUs under tf.distribute.MirroredStrategy:
each replica gets a quarter of the batch and computes every metric; all four
replicas must return the single-device value of the full batch, also when
the nonzero weights sit almost entirely on one replica. Gradients of a shared
parameter, averaged over replicas (as the trainer does), must equal the
single-device gradient.

The exception is Trax's binary cross-entropy composition
(`_BinaryCrossEntropy` then a weighted reduction): each replica first takes
the mean over its own items, so the replicated value is the weighted
combination of per-replica means that Trax's multi-core run gives too.
"""

import numpy as np
import pytest

from tests import _multi_device

_CODE = r'''
import numpy as np
from tfnp_trax import layers as tl

devices = [d.name for d in tf.config.list_logical_devices('CPU')]
strategy = tf.distribute.MirroredStrategy(devices)
n_rep, per = 4, 2

rng = np.random.default_rng(0)
out = rng.normal(size=(8, 3, 4)).astype(np.float32)
targets = rng.integers(0, 4, size=(8, 3)).astype(np.int32)
y = out[..., 0]
arrays = {
    'out': out, 'targets': targets, 'y': y, 'y_target': 2 * out[..., 1],
    'log_probs': (out - np.log(np.exp(out).sum(-1, keepdims=True))),
    'bits': (targets % 2).astype(np.float32),
    'probs': (1 / (1 + np.exp(-y))).astype(np.float32),
}
uneven = rng.uniform(0.5, 2.0, size=(8, 3)).astype(np.float32)
uneven[rng.random((8, 3)) < 0.3] = 0.0
one_replica = np.zeros((8, 3), np.float32)
one_replica[:2] = uneven[:2] + 1.0  # Replica 0 holds almost all the weight.
one_replica[5, 1] = 0.5             # ... and replica 2 one position.
scenarios = {'uneven': uneven, 'one_replica': one_replica,
             'all_zero': np.zeros((8, 3), np.float32)}

metrics = {
    'CategoryAccuracy': (tl.CategoryAccuracy(), ('out', 'targets')),
    'WeightedCategoryAccuracy': (tl.WeightedCategoryAccuracy(),
                                 ('out', 'targets', 'w')),
    'MaskedSequenceAccuracy': (tl.MaskedSequenceAccuracy(),
                               ('out', 'targets', 'w')),
    'SequenceAccuracy': (tl.SequenceAccuracy(), ('out', 'targets', 'w')),
    'Accuracy': (tl.Accuracy(), ('out', 'targets', 'w')),
    'CategoryCrossEntropy': (tl.CategoryCrossEntropy(0.1),
                             ('out', 'targets')),
    'WeightedCategoryCrossEntropy': (
        tl.WeightedCategoryCrossEntropy(label_smoothing=0.1, cutoff=0.5),
        ('out', 'targets', 'w')),
    'CrossEntropyLoss': (tl.CrossEntropyLoss(),
                         ('log_probs', 'targets', 'w')),
    'CrossEntropyLossWithLogSoftmax': (tl.CrossEntropyLossWithLogSoftmax(),
                                       ('out', 'targets', 'w')),
    'CrossEntropySum': (tl.CrossEntropySum(), ('log_probs', 'targets', 'w')),
    'WeightedSum': (tl.WeightedSum(), ('y', 'w')),
    'BinaryCrossEntropy': (tl.BinaryCrossEntropy(), ('y', 'bits')),
    'BinaryCrossEntropyLoss': (tl.BinaryCrossEntropyLoss(),
                               ('probs0', 'bits0', 'w0')),
    'BinaryCrossEntropySum': (tl.BinaryCrossEntropySum(),
                              ('probs0', 'bits0', 'w0')),
    'L2Loss': (tl.L2Loss(), ('y', 'y_target', 'w')),
    'SmoothL1Loss': (tl.SmoothL1Loss(), ('y', 'y_target', 'w')),
    'MacroAveragedFScore': (tl.MacroAveragedFScore(), ('out', 'targets')),
    'WeightedFScore': (tl.WeightedFScore(initial_category_index=1),
                       ('out', 'targets')),
}
names = sorted(arrays) + ['w']
grad_metrics = ('WeightedCategoryCrossEntropy', 'L2Loss')


def evaluate(inputs, scale):
  """All metric values, and d(metric)/d(scale) for a shared `scale`."""
  # 1-D columns for Trax's binary cross-entropy composition.
  inputs = dict(inputs, probs0=inputs['probs'][:, 0],
                bits0=inputs['bits'][:, 0], w0=inputs['w'][:, 0])
  values, grads = {}, {}
  for name, (layer, keys) in metrics.items():
    args = tuple(inputs[k] for k in keys)
    if name in grad_metrics:
      with tf.GradientTape() as tape:
        tape.watch(scale)
        value = layer((scale * args[0],) + args[1:])
      grads[name] = tape.gradient(value, scale)
    else:
      value = layer(args)
    values[name] = value
  return values, grads


def shard(x):
  def piece(ctx):
    i = ctx.replica_id_in_sync_group
    return tf.constant(x[i * per:(i + 1) * per])
  return strategy.experimental_distribute_values_from_function(piece)


@tf.function(autograph=False)
def replicated(*shards):
  def replica_fn(*local):
    values, grads = evaluate(dict(zip(names, local)), tf.constant(1.5))
    ctx = tf.distribute.get_replica_context()
    # Gradients of replicated parameters are averaged, as in the trainer.
    grads = {k: ctx.all_reduce(tf.distribute.ReduceOp.MEAN, g)
             for k, g in grads.items()}
    return values, grads
  return strategy.run(replica_fn, args=shards)


def binary_per_replica(weights):
  """Trax's multi-core binary cross-entropy loss and sum, in float64."""
  p = arrays['probs'][:, 0].astype(np.float64)
  t = arrays['bits'][:, 0].astype(np.float64)
  w = weights[:, 0].astype(np.float64)
  ce = -(t * np.log(p) + (1 - t) * np.log(1 - p))
  means = ce.reshape(n_rep, per).mean(1)
  w_rep = w.reshape(n_rep, per).sum(1)
  total = float(np.sum(means * w_rep))
  return {'BinaryCrossEntropyLoss': total / w.sum() if w.sum() else 0.0,
          'BinaryCrossEntropySum': total}


found = {'n_replicas': strategy.num_replicas_in_sync}
for scenario, weights in scenarios.items():
  full = dict(arrays, w=weights)
  values, grads = evaluate({k: tf.constant(v) for k, v in full.items()},
                           tf.constant(1.5))
  per_replica, per_grads = replicated(*[shard(full[k]) for k in names])
  local = lambda d: {k: [float(v) for v in
                         strategy.experimental_local_results(t)]
                     for k, t in d.items()}
  found[scenario] = {
      'single': {k: float(v) for k, v in values.items()},
      'replicas': local(per_replica),
      'grad_single': {k: float(v) for k, v in grads.items()},
      'grad_replicas': local(per_grads),
      'binary_expected': binary_per_replica(weights),
  }
report(found)
'''


@pytest.fixture(scope='module')
def report():
  return _multi_device.run(_CODE, n_devices=4, timeout=240)


_METRICS = ['CategoryAccuracy', 'WeightedCategoryAccuracy',
            'MaskedSequenceAccuracy', 'SequenceAccuracy', 'Accuracy',
            'CategoryCrossEntropy', 'WeightedCategoryCrossEntropy',
            'CrossEntropyLoss', 'CrossEntropyLossWithLogSoftmax',
            'CrossEntropySum', 'WeightedSum', 'BinaryCrossEntropy',
            'L2Loss', 'SmoothL1Loss', 'MacroAveragedFScore', 'WeightedFScore']
_BATCH_THEN_WEIGHT = ['BinaryCrossEntropyLoss', 'BinaryCrossEntropySum']
_SCENARIOS = ['uneven', 'one_replica', 'all_zero']


def test_four_replicas(report):
  assert report['n_replicas'] == 4


@pytest.mark.parametrize('scenario', _SCENARIOS)
@pytest.mark.parametrize('metric', _METRICS)
def test_every_replica_sees_the_full_batch_value(report, scenario, metric):
  single = report[scenario]['single'][metric]
  replicas = report[scenario]['replicas'][metric]
  assert np.isfinite(single)
  assert len(replicas) == 4
  np.testing.assert_allclose(replicas, [single] * 4, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize('scenario', _SCENARIOS)
@pytest.mark.parametrize('metric', _BATCH_THEN_WEIGHT)
def test_binary_cross_entropy_composition_weights_replica_means(
    report, scenario, metric):
  replicas = report[scenario]['replicas'][metric]
  want = report[scenario]['binary_expected'][metric]
  np.testing.assert_allclose(replicas, [want] * 4, rtol=1e-5, atol=1e-6)


def test_binary_cross_entropy_loss_single_device_ignores_weights(report):
  # One device: the batch mean, whatever the (not all zero) weights; four
  # replicas: their means weighted by each replica's weight, which differ.
  uneven = report['uneven']
  single = uneven['single']['BinaryCrossEntropyLoss']
  assert single == pytest.approx(
      report['one_replica']['single']['BinaryCrossEntropyLoss'], rel=1e-6)
  assert uneven['binary_expected']['BinaryCrossEntropyLoss'] != (
      pytest.approx(single, rel=1e-3))


def test_all_zero_weights_give_documented_values(report):
  single = report['all_zero']['single']
  for name in ('WeightedCategoryAccuracy', 'Accuracy',
               'WeightedCategoryCrossEntropy', 'CrossEntropyLoss',
               'CrossEntropySum', 'WeightedSum', 'L2Loss',
               'BinaryCrossEntropyLoss', 'BinaryCrossEntropySum'):
    assert single[name] == 0.0, name
  assert single['SequenceAccuracy'] == 1.0


@pytest.mark.parametrize('scenario', ['uneven', 'one_replica'])
@pytest.mark.parametrize('metric', ['WeightedCategoryCrossEntropy', 'L2Loss'])
def test_averaged_replica_gradients_equal_full_batch_gradient(
    report, scenario, metric):
  single = report[scenario]['grad_single'][metric]
  replicas = report[scenario]['grad_replicas'][metric]
  assert single != 0.0
  np.testing.assert_allclose(replicas, [single] * 4, rtol=1e-5, atol=1e-6)
