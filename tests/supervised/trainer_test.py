"""Trainer: one compiled replica step; replicas agree with one device."""

import re

import numpy as np
import pytest

from tests import _multi_device
from tfnp_trax import fastmath
from tfnp_trax import optimizers
from tfnp_trax import shapes
from tfnp_trax.fastmath import numpy as jnp
import tfnp_trax.layers as tl
from tfnp_trax.supervised import trainer as trainer_lib


def _xent(log_probs, targets):
  return -jnp.mean(jnp.sum(log_probs * fastmath.one_hot(targets, 3), axis=-1))


def _mlp_with_loss(batch):
  model = tl.Serial(tl.Dense(8), tl.Relu(), tl.Dense(3), tl.LogSoftmax(),
                    tl.Fn('Xent', _xent))
  model.init(shapes.signature(batch), rng=fastmath.random.get_prng(0))
  return model


def _batch(n=8):
  r = np.random.default_rng(0)
  return (r.normal(size=(n, 4)).astype(np.float32),
          r.integers(0, 3, size=n).astype(np.int32))


def test_sgd_step_matches_numpy():
  batch = _batch()
  model = _mlp_with_loss(batch)
  (w1, b1), _, (w2, b2), _, _ = [tuple(np.asarray(a, np.float64) for a in w)
                                 if w else () for w in model.weights]
  trainer = trainer_lib.Trainer(model, optimizers.SGD(0.1))
  loss, stats = trainer.one_step(batch, fastmath.random.get_prng(1), 0)

  # NumPy forward and backward of the same MLP in float64.
  x, y = (np.asarray(batch[0], np.float64), batch[1])
  h_pre = x @ w1 + b1
  h = np.maximum(h_pre, 0)
  logits = h @ w2 + b2
  logp = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
  onehot = np.eye(3)[y]
  ref_loss = -np.mean((logp * onehot).sum(-1))
  dlogits = (np.exp(logp) - onehot) / len(y)
  dw2, db2 = h.T @ dlogits, dlogits.sum(0)
  dh = dlogits @ w2.T * (h_pre > 0)
  dw1, db1 = x.T @ dh, dh.sum(0)
  grad_norm = np.sqrt(sum((g * g).sum() for g in (dw1, db1, dw2, db2)))

  np.testing.assert_allclose(float(loss), ref_loss, rtol=1e-5)
  np.testing.assert_allclose(float(stats['gradients_l2']), grad_norm,
                             rtol=1e-4)
  new = trainer.model_weights
  np.testing.assert_allclose(new[0][0], w1 - 0.1 * dw1, rtol=1e-4, atol=1e-6)
  np.testing.assert_allclose(new[2][1], b2 - 0.1 * db2, rtol=1e-4, atol=1e-6)


def test_learning_rate_changes_without_retracing():
  batch = _batch()
  trainer = trainer_lib.Trainer(_mlp_with_loss(batch), optimizers.Adam(0.01))
  for step in range(4):
    trainer.one_step(batch, fastmath.random.get_prng(step), step,
                     learning_rate=0.01 / (step + 1))
  assert trainer.n_traces == 1


def test_batch_shape_changes_trace_once_each_and_compute_the_same():
  big, small = _batch(8), _batch(4)
  runs = []
  for batches in ([big, small, big], [big]):
    trainer = trainer_lib.Trainer(_mlp_with_loss(big), optimizers.SGD(0.1))
    losses = [float(trainer.one_step(b, fastmath.random.get_prng(0), 0)[0])
              for b in batches]
    runs.append((losses, trainer.n_traces))
  (losses, traces), (first, _) = runs
  assert traces == 2  # One trace per batch shape; the third call reuses.
  assert losses[0] == first[0]
  assert losses[1] != losses[0]
  # The step trained twice since, so the same batch gives a lower loss.
  assert losses[2] < losses[0]


def test_uninitialized_model_is_a_clear_error():
  model = tl.Serial(tl.Dense(3), tl.Fn('Loss', lambda x: jnp.mean(x)))
  with pytest.raises(ValueError, match='Trainer: model_with_loss is not '
                     'initialized'):
    trainer_lib.Trainer(model, optimizers.SGD(0.1))


_REPLICAS = '''
import numpy as np
from tfnp_trax import fastmath, optimizers, shapes
from tfnp_trax.fastmath import numpy as jnp
import tfnp_trax.layers as tl
from tfnp_trax.supervised.trainer import Trainer

def xent(lp, t):
  return -jnp.mean(jnp.sum(lp * fastmath.one_hot(t, 3), axis=-1))

def mlp():
  return tl.Serial(tl.Dense(16), tl.Relu(), tl.Dense(3), tl.LogSoftmax(),
                   tl.Fn('Xent', xent))

def batchnorm_model():
  # No bias before BatchNorm: its gradient is zero up to rounding noise,
  # which Adafactor's normalized update would amplify into a mismatch.
  return tl.Serial(tl.Dense(16, use_bias=False), tl.BatchNorm(axis=(0,)),
                   tl.Relu(),
                   tl.Dense(3), tl.LogSoftmax(), tl.Fn('Xent', xent))

r = np.random.default_rng(0)
batch = (r.normal(size=(16, 5)).astype(np.float32),
         r.integers(0, 3, size=16).astype(np.int32))
devices = [d.name for d in tf.config.list_logical_devices('CPU')]
# One strategy per process: separate MirroredStrategy objects over the same
# devices would reuse collective instance keys.
mirrored = tf.distribute.MirroredStrategy(devices)
out = {}
for name, make, opt in [('mlp_adam', mlp, lambda: optimizers.Adam(0.01)),
                        ('bn_adafactor', batchnorm_model,
                         lambda: optimizers.Adafactor(0.05))]:
  results = []
  for strategy in [None, mirrored]:
    model = make()
    model.init(shapes.signature(batch), rng=fastmath.random.get_prng(0))
    trainer = Trainer(model, opt(), strategy=strategy)
    losses = [float(trainer.one_step(batch, fastmath.random.get_prng(s), s)[0])
              for s in range(4)]
    results.append((fastmath.tree_flatten(trainer.model_weights),
                    fastmath.tree_flatten(trainer.model_state), losses,
                    trainer))
  (w1, s1, l1, _), (w4, s4, l4, t4) = results
  assert t4.strategy.num_replicas_in_sync == 4
  for a, b in zip(w1 + s1, w4 + s4):
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(l1, l4, rtol=1e-5)
  out[name] = l4

# The compiled step: collectives inside, only reduced scalars out.
ops = set()
for fn in t4._step_fn._list_all_concrete_functions():
  graphs = [fn.graph] + [f.graph for f in fn.graph._functions.values()
                         if hasattr(f, 'graph')]
  for g in graphs:
    ops.update(op.type for op in g.get_operations())
  outputs = fastmath.tree_flatten(fn.structured_outputs)
  out['output_shapes'] = [list(o.shape) for o in outputs]
out['collective'] = sorted(o for o in ops if 'Collective' in o)
report(out)
'''


def test_replicas_agree_with_one_device_and_reduce_on_device():
  result = _multi_device.run(_REPLICAS, n_devices=4, timeout=300)
  assert 'CollectiveReduceV2' in result['collective']
  # Only scalars (loss, gradients_l2, weights_l2) travel to the host.
  assert all(shape == [] for shape in result['output_shapes'])
  assert len(result['output_shapes']) == 3


def test_xla_modes_match_plain_step():
  batch = _batch()
  results = {}
  for mode in (None, 'update', True):
    trainer = trainer_lib.Trainer(_mlp_with_loss(batch),
                                  optimizers.Adam(0.01), jit_compile=mode)
    for step in range(3):
      loss, _ = trainer.one_step(batch, fastmath.random.get_prng(step), step)
    results[mode] = (float(loss), fastmath.tree_flatten(trainer.model_weights))
    assert trainer.n_traces == 1
  for mode in ('update', True):
    np.testing.assert_allclose(results[mode][0], results[None][0], rtol=1e-5)
    for a, b in zip(results[mode][1], results[None][1]):
      np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)


def _nested_call_ops(concrete):
  return [op.type for op in concrete.graph.get_operations()
          if op.type in ('PartitionedCall', 'StatefulPartitionedCall')]


def test_whole_step_xla_is_the_outer_function_under_the_default_strategy():
  """With jit_compile=True and no strategy, the traced step is itself the
  XLA program (no function-call op around an inner XLA cluster); inside a
  one-device strategy's scope the step keeps the inner XLA function. Both
  match the plain step."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  batch = _batch()
  plain = trainer_lib.Trainer(_mlp_with_loss(batch), optimizers.Adam(0.01))
  outer = trainer_lib.Trainer(_mlp_with_loss(batch), optimizers.Adam(0.01),
                              jit_compile=True)
  strategy = tf.distribute.OneDeviceStrategy('/cpu:0')
  with strategy.scope():
    scoped = trainer_lib.Trainer(_mlp_with_loss(batch),
                                 optimizers.Adam(0.01), jit_compile=True)
  for step in range(3):
    rng = fastmath.random.get_prng(step)
    lr = 0.01 / (1 + step)
    losses = [float(t.one_step(batch, rng, step, learning_rate=lr)[0])
              for t in (plain, outer, scoped)]
    np.testing.assert_allclose(losses[1:], [losses[0]] * 2, rtol=1e-5)
  for t in (outer, scoped):
    assert t.n_traces == 1
    for a, b in zip(fastmath.tree_flatten(t.model_weights),
                    fastmath.tree_flatten(plain.model_weights)):
      np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)
  assert outer._step_fn._jit_compile is True
  assert not _nested_call_ops(outer._fast_fn)
  assert scoped._step_fn._jit_compile is None
  assert _nested_call_ops(scoped._fast_fn)


def _optimized_hlo(trainer, batch, step):
  """The whole-step XLA program after XLA's optimizations, as text."""
  rng = fastmath.random.get_prng(step)
  hparams = trainer._pack_hparams(step, trainer._default_opt_params)  # pylint: disable=protected-access
  return trainer._step_fn.experimental_get_compiler_ir(  # pylint: disable=protected-access
      trainer.distribute_batch(batch), rng, hparams)(stage='optimized_hlo')


def test_whole_step_xla_updates_weights_the_norm_reads_in_place(monkeypatch):
  """The weights norm reads every old weight and the backward pass reads
  the second kernel; the whole-step program still writes both kernels in
  place, with no copy. Without the ordering (`fastmath.ordered_after` in
  `tree_update`) XLA copies them. The ordered step's weights equal the
  plain step's, and its `weights_l2` is the norm of the weights before the
  step."""
  batch = _batch()
  plain = trainer_lib.Trainer(_mlp_with_loss(batch), optimizers.Adam(0.01))
  ordered = trainer_lib.Trainer(_mlp_with_loss(batch), optimizers.Adam(0.01),
                                jit_compile=True)
  unordered = trainer_lib.Trainer(_mlp_with_loss(batch),
                                  optimizers.Adam(0.01), jit_compile=True)
  kernel_copies = re.compile(r'f32\[(4,8|8,3)\]\{1,0\} copy\(')
  assert not kernel_copies.findall(_optimized_hlo(ordered, batch, 0))
  with monkeypatch.context() as patch:
    patch.setattr(fastmath, 'ordered_after', lambda leaves, values: leaves)
    unordered_hlo = _optimized_hlo(unordered, batch, 0)
  assert sorted(kernel_copies.findall(unordered_hlo)) == ['4,8', '8,3']
  for step in range(3):
    rng = fastmath.random.get_prng(step)
    before = np.sqrt(sum(np.sum(np.asarray(w, np.float64) ** 2)
                         for w in fastmath.tree_flatten(ordered.model_weights)))
    plain.one_step(batch, rng, step)
    _, stats = ordered.one_step(batch, rng, step)
    # The norm is of the weights before the update, as Trax reports it.
    np.testing.assert_allclose(float(stats['weights_l2']), before, rtol=1e-5)
  for a, b in zip(fastmath.tree_flatten(ordered.model_weights),
                  fastmath.tree_flatten(plain.model_weights)):
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_flat_fast_call_equals_the_structured_call_bitwise():
  """After the first step the Trainer calls its traced step on the flat
  input tensors; the weights equal, bit for bit, those of calls through
  the structured signature."""
  batch = _batch()
  flat = trainer_lib.Trainer(_mlp_with_loss(batch), optimizers.Adam(0.01))
  structured = trainer_lib.Trainer(_mlp_with_loss(batch),
                                   optimizers.Adam(0.01))
  calls = []
  for step in range(4):
    rng = fastmath.random.get_prng(step)
    flat.one_step(batch, rng, step, learning_rate=0.01 / (1 + step))
    structured._caller._flat = None  # pylint: disable=protected-access
    structured.one_step(batch, rng, step, learning_rate=0.01 / (1 + step))
    if step == 0:
      inner = flat._caller._flat  # pylint: disable=protected-access
      assert inner is not None
      flat._caller._flat = lambda xs: calls.append(1) or inner(xs)  # pylint: disable=protected-access
  assert len(calls) == 3 and flat.n_traces == 1
  for a, b in zip(fastmath.tree_flatten(flat.model_weights),
                  fastmath.tree_flatten(structured.model_weights)):
    np.testing.assert_array_equal(a, b)


def test_step_outside_int32_is_refused():
  batch = _batch()
  trainer = trainer_lib.Trainer(_mlp_with_loss(batch), optimizers.SGD(0.1))
  with pytest.raises(ValueError, match=r'Trainer.one_step: step 2147483648 '
                     r'does not fit the int32 step counter'):
    trainer.one_step(batch, fastmath.random.get_prng(0), 2**31)
  with pytest.raises(ValueError, match=r'Trainer.one_step: step must be an '
                     r'integer, got 1.5'):
    trainer.one_step(batch, fastmath.random.get_prng(0), 1.5)


def _ancestors_with_control(op):
  """Every op that `op` depends on, through data or control edges."""
  seen, stack = set(), [op]
  while stack:
    current = stack.pop()
    for parent in [t.op for t in current.inputs] + list(
        current.control_inputs):
      if parent not in seen:
        seen.add(parent)
        stack.append(parent)
  return seen


def test_fused_updates_wait_for_all_gradients_and_their_own_weight_norm():
  """Without XLA, every in-place Adam update depends on every gradient (so
  it runs after the whole backward pass) and on the L2Loss that reads its
  own weight (so TensorFlow need not copy the weight before writing it),
  but on no gradient's L2Loss and no other weight's: the norms run beside
  the updates. The step still matches the pure `tree_update` step."""
  batch = _batch()
  fused = trainer_lib.Trainer(_mlp_with_loss(batch), optimizers.Adam(0.01))
  pure = trainer_lib.Trainer(_mlp_with_loss(batch), optimizers.Adam(0.01),
                             fused_update=False)
  rng = fastmath.random.get_prng(0)
  fused.one_step(batch, rng, 0)
  graph = fused._fast_fn.graph  # pylint: disable=protected-access
  ops = graph.get_operations()
  updates = [op for op in ops if op.type == 'ResourceApplyAdam']
  norms = {op for op in ops if op.type == 'L2Loss'}
  assert len(updates) == 4 and len(norms) == 8
  # The update's gradient input is an identity of the gradient itself.
  grads = {op.inputs[-1].op.inputs[0].op for op in updates}
  grad_norms = {n for n in norms if n.inputs[0].op in grads}
  weight_norms = norms - grad_norms
  assert len(grad_norms) == 4 and len(weight_norms) == 4
  for op in updates:
    ancestors = _ancestors_with_control(op)
    assert grads <= ancestors, op.name
    assert not grad_norms & ancestors, op.name
    own = weight_norms & ancestors
    assert len(own) == 1, op.name
    (norm,) = own
    read = norm.inputs[0].op
    while read.type == 'Identity':
      read = read.inputs[0].op
    assert read.type == 'ReadVariableOp'
    assert read.inputs[0] is op.inputs[0]  # The same variable's handle.
  pure.one_step(batch, rng, 0)
  for step in range(1, 3):
    rng = fastmath.random.get_prng(step)
    _, want = pure.one_step(batch, rng, step)
    _, got = fused.one_step(batch, rng, step)
    for k in ('gradients_l2', 'weights_l2'):
      np.testing.assert_allclose(float(got[k]), float(want[k]), rtol=1e-5)
  for a, b in zip(fastmath.tree_flatten(fused.model_weights),
                  fastmath.tree_flatten(pure.model_weights)):
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_per_step_inputs_are_placed_on_the_weights_device():
  batch = _batch()
  trainer = trainer_lib.Trainer(_mlp_with_loss(batch), optimizers.SGD(0.1))
  device = trainer.variables()['weights'][0].device
  placed = trainer.distribute_batch(batch)
  for leaf, array in zip(placed, batch):
    assert leaf.device == device
    np.testing.assert_array_equal(leaf.numpy(), array)
  hparams = trainer._pack_hparams(3, {'learning_rate': np.float32(0.25)})  # pylint: disable=protected-access
  assert hparams.device == device
  np.testing.assert_array_equal(hparams.numpy(), [3.0, 0.25])


def test_default_hyperparameters_equal_the_same_values_passed_explicitly():
  batch = _batch()
  runs = []
  for explicit in (False, True):
    trainer = trainer_lib.Trainer(_mlp_with_loss(batch), optimizers.Adam(0.01))
    for step in range(3):
      trainer.one_step(batch, fastmath.random.get_prng(step), step,
                       learning_rate=0.01 if explicit else None)
    runs.append(fastmath.tree_flatten(trainer.model_weights))
  for a, b in zip(*runs):
    np.testing.assert_array_equal(a, b)


def _spy_on_keys(trainer):
  """Records the key tensor each fast flat call of `trainer` receives."""
  keys, inner = [], trainer._caller._flat  # pylint: disable=protected-access
  def spy(flat):
    keys.append(flat[-2])
    return inner(flat)
  trainer._caller._flat = spy  # pylint: disable=protected-access
  return keys


def test_a_model_without_randomness_gets_one_key_and_one_with_it_each():
  batch = _batch()
  plain = trainer_lib.Trainer(_mlp_with_loss(batch), optimizers.SGD(0.1))
  assert not plain._model.uses_rng  # pylint: disable=protected-access
  plain.one_step(batch, fastmath.random.get_prng(0), 0)
  keys = _spy_on_keys(plain)
  for step in (1, 2):
    plain.one_step(batch, fastmath.random.get_prng(step), step)
  # The step never reads the key, so the same placed tensor is passed.
  assert len(keys) == 2 and keys[0] is keys[1]

  def dropout_model():
    model = tl.Serial(tl.Dense(8), tl.Dropout(0.5, mode='train'), tl.Dense(3),
                      tl.LogSoftmax(), tl.Fn('Xent', _xent))
    model.init(shapes.signature(batch), rng=fastmath.random.get_prng(0))
    return model
  losses = []
  for seed in (5, 5, 6):
    trainer = trainer_lib.Trainer(dropout_model(), optimizers.SGD(0.1))
    assert trainer._model.uses_rng  # pylint: disable=protected-access
    losses.append(float(trainer.one_step(
        batch, fastmath.random.get_prng(seed), 0)[0]))
  # A model that draws random numbers still gets the caller's key.
  assert losses[0] == losses[1] != losses[2]


class _GrowingState(tl.Layer):
  """Identity whose state is () after init and (1,) after each call.

  Counts calls: state 0.0 (shape ()) becomes [1.0], [2.0], ... (shape (1,)),
  as a layer in Trax's Terraformer notebook does.
  """

  def forward(self, x):
    count = jnp.reshape(self.state, (-1,))[:1] if self.state.ndim else (
        jnp.reshape(self.state, (1,)))
    self.state = count + 1.0
    return x

  def init_weights_and_state(self, input_signature):
    self.state = jnp.zeros((), jnp.float32)


@pytest.mark.parametrize('fused', [True, False])
def test_state_that_changes_shape_after_a_step_retraces_once(fused):
  # Follows JAX as Trax's trainer runs on it (trax/optimizers/trainer.py
  # Trainer.one_step): the new state may have a new shape; the step
  # retraces for it once, and later steps keep the same trace.
  batch = _batch()
  model = tl.Serial(_GrowingState(), tl.Dense(3), tl.LogSoftmax(),
                    tl.Fn('Xent', _xent))
  model.init(shapes.signature(batch), rng=fastmath.random.get_prng(0))
  trainer = trainer_lib.Trainer(model, optimizers.SGD(0.1),
                                fused_update=fused)
  for step in range(4):
    loss, _ = trainer.one_step(batch, fastmath.random.get_prng(1), step)
    assert np.isfinite(float(loss))
    np.testing.assert_array_equal(trainer.model_state[0], [step + 1.0])
  assert trainer.n_state_reshapes == 1
  assert trainer.n_traces == 2  # One per state shape.
  trainer.model_state = (np.zeros((), np.float32), (), (), ())
  trainer.one_step(batch, fastmath.random.get_prng(1), 4)
  np.testing.assert_array_equal(trainer.model_state[0], [1.0])
