"""ReversibleSerialTrainer: trains as Trainer does, layer by layer."""

import numpy as np
import pytest

from tests import _multi_device
from tfnp_trax import fastmath
from tfnp_trax import optimizers
from tfnp_trax import shapes
from tfnp_trax.fastmath import numpy as jnp
import tfnp_trax.layers as tl
from tfnp_trax.supervised import reversible_trainer as rt
from tfnp_trax.supervised import trainer as trainer_lib


def _xent(log_probs, targets):
  return -jnp.mean(jnp.sum(log_probs * fastmath.one_hot(targets, 3), axis=-1))


def _rev_block(d):
  return [tl.ReversibleHalfResidual(tl.Dense(d), tl.Relu()),
          tl.ReversibleSwap(), tl.ReversibleHalfResidual(tl.Dense(d)),
          tl.ReversibleSwap()]


def _model(d=8, two_blocks=True):
  """Dense, Dup, reversible layers [, Parallel(Dense), reversible], head."""
  middle = [tl.Parallel(tl.Dense(d), None)] + _rev_block(d) if (
      two_blocks) else []
  return tl.Serial(tl.Dense(d), tl.Dup(), tl.ReversibleSerial(_rev_block(d)),
                   middle, tl.Concatenate(), tl.Dense(3), tl.LogSoftmax())


def _batch(n=8):
  r = np.random.default_rng(0)
  return (r.normal(size=(n, 5)).astype(np.float32),
          r.integers(0, 3, size=n).astype(np.int32))


def _trainers(opt_fn, two_blocks=True, jit_compile=None):
  """A Trainer and a ReversibleSerialTrainer starting from equal weights.

  Only the reversible trainer gets `jit_compile`: the standard one is the
  reference.
  """
  batch = _batch()
  model, loss = _model(two_blocks=two_blocks), tl.Fn('Xent', _xent)
  full = tl.Serial(model, loss)
  full.init(shapes.signature(batch), rng=fastmath.random.get_prng(0))
  standard = trainer_lib.Trainer(full, opt_fn())
  blocks, loss_layer = rt.extract_reversible_blocks([model, loss])
  reversible = rt.ReversibleSerialTrainer(blocks, loss_layer, opt_fn,
                                          jit_compile=jit_compile)
  return batch, standard, reversible


def _layer_weights(trainer):
  return fastmath.tree_leaves([l.weights for l in trainer.all_layers])


def test_trains_like_the_standard_trainer():
  batch, standard, reversible = _trainers(lambda: optimizers.Adam(0.01))
  for step in range(3):
    rng = fastmath.random.get_prng(step)
    want, _ = standard.one_step(batch, rng, step)
    got_loss, stats = reversible.one_step(batch, rng, step)
    np.testing.assert_allclose(float(got_loss), float(want), rtol=1e-5)
  want = fastmath.tree_leaves(standard.model_weights)
  got = _layer_weights(reversible)
  assert len(got) == len(want) == 14
  for g, w in zip(got, want):
    np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
  # Trax's stats: per layer (in all_layers order), the loss on the last;
  # layer 2 (a ReversibleSwap) has no weights and so no optimizer stats.
  assert len(reversible.all_layers) == 11
  assert float(stats['layer10/loss']) == float(got_loss)
  assert 'layer0/gradients_l2' in stats and 'layer2/weights_l2' not in stats
  assert reversible.n_traces == 1


def test_xla_step_trains_like_the_standard_trainer():
  batch, standard, reversible = _trainers(
      lambda: optimizers.Adam(0.01), two_blocks=False, jit_compile=True)
  for step in range(2):
    rng = fastmath.random.get_prng(step)
    want, _ = standard.one_step(batch, rng, step)
    got, _ = reversible.one_step(batch, rng, step)
    np.testing.assert_allclose(float(got), float(want), rtol=1e-5)
  for g, w in zip(_layer_weights(reversible),
                  fastmath.tree_leaves(standard.model_weights)):
    np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


def test_learning_rate_and_slots():
  # No weight decay, so a zero learning rate leaves the weights as they are.
  batch, _, reversible = _trainers(
      lambda: optimizers.Momentum(0.05, weight_decay_rate=0.0))
  before = _layer_weights(reversible)
  reversible.one_step(batch, fastmath.random.get_prng(0), 0,
                      learning_rate=0.0)
  for g, w in zip(_layer_weights(reversible), before):
    np.testing.assert_array_equal(g, w)
  reversible.one_step(batch, fastmath.random.get_prng(1), 1)
  assert reversible.n_traces == 1
  # Trax's layout: per block (standard, [reversible...]), then the loss.
  slots = reversible.slots
  assert [len(revs) for _, revs in slots[:-1]] == [4, 4]
  momentum = slots[0][1][0][0]  # First half residual's Dense kernel.
  assert np.abs(momentum).max() > 0
  zeroed = fastmath.nested_map(np.zeros_like, slots)
  reversible.slots = zeroed
  assert np.abs(reversible.slots[0][1][0][0]).max() == 0


def test_extract_and_init_reversible_blocks():
  model, loss = _model(), tl.Fn('Xent', _xent)
  blocks, loss_layer = rt.extract_reversible_blocks(tl.Serial(model, loss))
  assert [([l.name for l in std], [l.name for l in rev])
          for std, rev in blocks] == [
              (['Dense_8', 'Dup'], ['ReversibleHalfResidual',
                                    'ReversibleSwap'] * 2),
              (['Parallel'], ['ReversibleHalfResidual',
                              'ReversibleSwap'] * 2)]
  assert [l.name for l in loss_layer.sublayers] == [
      'Concatenate', 'Dense_3', 'LogSoftmax', 'Xent']
  rt.init_reversible_blocks(blocks, loss_layer, shapes.signature(_batch()),
                            fastmath.random.get_prng(0))
  assert np.asarray(blocks[1][0][0].weights[0][0]).shape == (8, 8)
  assert np.asarray(loss_layer.weights[1][0]).shape == (16, 3)


def test_chunked_loss_computes_the_same_loss():
  r = np.random.default_rng(1)
  x = r.normal(size=(2, 6, 4)).astype(np.float32)
  y = r.integers(0, 5, size=(2, 6)).astype(np.int32)
  w = np.ones((2, 6), np.float32)
  # Trax matches the border layer by exact name, so Select is named so.
  layers = [tl.Select([0, 1, 2], name='Select'), tl.Dense(5), tl.LogSoftmax(),
            tl.CrossEntropyLoss()]
  _, plain = rt.extract_reversible_blocks(layers)
  _, chunked = rt.extract_reversible_blocks(layers, loss_chunk_size=4)
  sig = shapes.signature((x, y, w))
  plain.init(sig, rng=fastmath.random.get_prng(0))
  chunked.init(sig)
  chunked.weights = fastmath.tree_unflatten(
      fastmath.tree_leaves(plain.weights), chunked.weights)[0]
  np.testing.assert_allclose(float(chunked((x, y, w))),
                             float(plain((x, y, w))), rtol=1e-6)
  assert 'Scan' in repr(chunked)


def test_bad_input_errors():
  with pytest.raises(ValueError, match=r'extract_reversible_blocks: the final '
                     r'layer must be a standard loss, not reversible '
                     r'\(ReversibleSwap\)'):
    rt.extract_reversible_blocks([tl.Dense(4), tl.ReversibleSwap()])
  model, loss = _model(), tl.Fn('Xent', _xent)
  blocks, loss_layer = rt.extract_reversible_blocks([model, loss])
  # Built from uninitialized layers, as Trax allows (its slots are empty
  # trees that read and assign; follows trax/optimizers/trainer.py), but a
  # step is refused with the fix.
  early = rt.ReversibleSerialTrainer(blocks, loss_layer, optimizers.Adam)
  early.slots = early.slots
  with pytest.raises(ValueError, match=r'ReversibleSerialTrainer.one_step: '
                     r'layer 0 \(Serial\) was not initialized when the '
                     r'trainer was built \(its sublayer Dense_8'):
    early.one_step(_batch(), fastmath.random.get_prng(0))
  rt.init_reversible_blocks(blocks, loss_layer, shapes.signature(_batch()),
                            fastmath.random.get_prng(0))
  with pytest.raises(ValueError, match=r'ReversibleSerialTrainer: '
                     r'n_devices=4 but the strategy \w+ has 1 replicas'):
    rt.ReversibleSerialTrainer(blocks, loss_layer, optimizers.Adam,
                               n_devices=4)


_REPLICAS = '''
import numpy as np
from tfnp_trax import fastmath, optimizers, shapes
from tfnp_trax.fastmath import numpy as jnp
import tfnp_trax.layers as tl
from tfnp_trax.supervised import reversible_trainer as rt
from tfnp_trax.supervised.trainer import Trainer

def xent(lp, t):
  return -jnp.mean(jnp.sum(lp * fastmath.one_hot(t, 3), axis=-1))

def build():
  model = tl.Serial(tl.Dense(6), tl.Dup(), tl.ReversibleSerial(
      tl.ReversibleHalfResidual(tl.Dense(6), tl.Relu()), tl.ReversibleSwap()),
      tl.Concatenate(), tl.Dense(3), tl.LogSoftmax())
  full = tl.Serial(model, tl.Fn('Xent', xent))
  full.init(shapes.signature(batch), rng=fastmath.random.get_prng(0))
  return full

r = np.random.default_rng(0)
batch = (r.normal(size=(8, 5)).astype(np.float32),
         r.integers(0, 3, size=8).astype(np.int32))
devices = [d.name for d in tf.config.list_logical_devices('CPU')]
mirrored = tf.distribute.MirroredStrategy(devices)
out = {}

# Mirrored reversible trainer == mirrored standard trainer (Adam, 3 steps).
full = build()
standard = Trainer(full, optimizers.Adam(0.01), strategy=mirrored)
blocks, loss_layer = rt.extract_reversible_blocks([full])
rev = rt.ReversibleSerialTrainer(blocks, loss_layer,
                                 lambda: optimizers.Adam(0.01),
                                 strategy=mirrored)
for s in range(3):
  l1 = standard.one_step(batch, fastmath.random.get_prng(s), s)[0]
  l2 = rev.one_step(batch, fastmath.random.get_prng(s), s)[0]
  np.testing.assert_allclose(float(l1), float(l2), rtol=1e-5)
w1 = fastmath.tree_leaves(standard.model_weights)
w2 = fastmath.tree_leaves([l.weights for l in rev.all_layers])
assert len(w1) == len(w2) == 6
for a, b in zip(w1, w2):
  np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
ops = set()
for fn in rev._step_fn._list_all_concrete_functions():
  graphs = [fn.graph] + [f.graph for f in fn.graph._functions.values()
                         if hasattr(f, 'graph')]
  for g in graphs:
    ops.update(op.type for op in g.get_operations())
out['collective'] = sorted(o for o in ops if 'Collective' in o)

# Adasum (SGD): the update is -lr * adasum(g_replica0, g_replica1).
full = build()
w0 = [np.asarray(w, np.float64) for w in fastmath.tree_leaves(full.weights)]
def grads_on(half):
  def loss(w):
    return full.pure_fn(half, w, full.state, fastmath.random.get_prng(0))[0]
  return [np.asarray(g, np.float64) for g in
          fastmath.tree_leaves(fastmath.grad(loss)(full.weights))]
ga = grads_on(tuple(x[:4] for x in batch))
gb = grads_on(tuple(x[4:] for x in batch))
blocks, loss_layer = rt.extract_reversible_blocks([full])
rev = rt.ReversibleSerialTrainer(blocks, loss_layer,
                                 lambda: optimizers.SGD(0.1),
                                 strategy=mirrored, adasum=True)
rev.one_step(batch, fastmath.random.get_prng(0), 0)
new = fastmath.tree_leaves([l.weights for l in rev.all_layers])
for w, a, b, n in zip(w0, ga, gb, new):
  dot = np.sum(a * b)
  merged = ((1 - dot / (2 * np.sum(a * a) + 1e-30)) * a +
            (1 - dot / (2 * np.sum(b * b) + 1e-30)) * b)
  np.testing.assert_allclose(n, w - 0.1 * merged, rtol=1e-4, atol=1e-6)
  out['adasum_differs_from_mean'] = bool(
      out.get('adasum_differs_from_mean') or
      not np.allclose(merged, (a + b) / 2, rtol=1e-3))
report(out)
'''


def test_replicas_train_like_the_standard_trainer_with_collectives():
  result = _multi_device.run(_REPLICAS, n_devices=2, timeout=240)
  assert 'CollectiveReduceV2' in result['collective']
  assert result['adasum_differs_from_mean']
