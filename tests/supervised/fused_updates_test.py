"""The Trainer's in-place fused Adam/SGD updates against NumPy references."""

import numpy as np
import pytest

from tfnp_trax import fastmath
from tfnp_trax import optimizers
from tfnp_trax import shapes
from tfnp_trax.fastmath import numpy as jnp
import tfnp_trax.layers as tl
from tfnp_trax.supervised import trainer as trainer_lib


def _linear_model(batch):
  """Dense(2) with loss mean((x W + b - y)^2): gradients in closed form."""
  model = tl.Serial(
      tl.Dense(2),
      tl.Fn('Mse', lambda p, y: jnp.mean(jnp.square(p - y))))
  model.init(shapes.signature(batch), rng=fastmath.random.get_prng(0))
  return model


def _batch():
  r = np.random.default_rng(1)
  return (r.normal(size=(6, 3)).astype(np.float32),
          r.normal(size=(6, 2)).astype(np.float32))


def _grads(w, b, x, y):
  err = x @ w + b - y
  scale = 2.0 / err.size
  return x.T @ err * scale, err.sum(0) * scale


def _adam_reference(w, b, x, y, steps, lr, wd, clip, b1=0.9, b2=0.999,
                    eps=1e-5):
  """Trax's Adam (decoupled decay, global-norm clipping) in float64."""
  params = [w, b]
  slots = [(np.zeros_like(p), np.zeros_like(p)) for p in params]
  for step in range(steps):
    grads = list(_grads(params[0], params[1], x, y))
    norm = np.sqrt(sum((g * g).sum() for g in grads))
    if clip is not None:
      grads = [g * clip / max(norm, clip) for g in grads]
    t = step + 1
    new = []
    for p, g, (m, v) in zip(params, grads, slots):
      m = b1 * m + (1 - b1) * g
      v = b2 * v + (1 - b2) * g * g
      m_hat, v_hat = m / (1 - b1**t), v / (1 - b2**t)
      new.append(((1 - wd) * p - lr * m_hat / (np.sqrt(v_hat) + eps), (m, v)))
    params = [p for p, _ in new]
    slots = [s for _, s in new]
  return params


@pytest.mark.parametrize('jit_compile', [None, 'update', True])
@pytest.mark.parametrize('wd,clip', [(0.0, None), (0.1, 0.05)])
def test_adam_in_place_matches_numpy(jit_compile, wd, clip):
  batch = _batch()
  model = _linear_model(batch)
  w0, b0 = (np.asarray(a, np.float64) for a in model.weights[0])
  trainer = trainer_lib.Trainer(
      model, optimizers.Adam(0.03, weight_decay_rate=wd, clip_grad_norm=clip),
      jit_compile=jit_compile)
  # Without XLA the update runs in place; 'update' compiles the pure update
  # with XLA and True the whole step (XLA fuses the update itself). The
  # NumPy reference holds on every path.
  assert trainer.step_program == {None: 'in_place', 'update': 'xla_update',
                                  True: 'xla_step'}[jit_compile]
  for step in range(3):
    _, stats = trainer.one_step(batch, fastmath.random.get_prng(step), step)
  x, y = (np.asarray(a, np.float64) for a in batch)
  w_ref, b_ref = _adam_reference(w0, b0, x, y, 3, 0.03, wd, clip)
  w, b = trainer.model_weights[0]
  np.testing.assert_allclose(w, w_ref, rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(b, b_ref, rtol=1e-5, atol=1e-6)
  assert trainer.n_traces == 1
  # The stats are those of the last step: pre-clip gradient norm and the
  # norm of the weights before that step's update.
  w2, b2 = _adam_reference(w0, b0, x, y, 2, 0.03, wd, clip)
  gw, gb = _grads(w2, b2, x, y)
  np.testing.assert_allclose(float(stats['gradients_l2']),
                             np.sqrt((gw**2).sum() + (gb**2).sum()),
                             rtol=1e-5)
  np.testing.assert_allclose(float(stats['weights_l2']),
                             np.sqrt((w2**2).sum() + (b2**2).sum()),
                             rtol=1e-5)


def test_in_place_equals_tree_update_path():
  batch = _batch()
  results = []
  for fused in (True, False):
    trainer = trainer_lib.Trainer(_linear_model(batch),
                                  optimizers.Adam(0.01), fused_update=fused)
    for step in range(4):
      trainer.one_step(batch, fastmath.random.get_prng(step), step)
    results.append((fastmath.tree_flatten(trainer.model_weights),
                    fastmath.tree_flatten(trainer.slots)))
  assert trainer.step_program == 'tree_update'
  for a, b in zip(results[0][0] + results[0][1],
                  results[1][0] + results[1][1]):
    np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


def test_sgd_in_place_matches_numpy():
  batch = _batch()
  model = _linear_model(batch)
  w, b = (np.asarray(a, np.float64) for a in model.weights[0])
  trainer = trainer_lib.Trainer(model, optimizers.SGD(0.1))
  assert trainer.step_program == 'in_place'
  x, y = (np.asarray(a, np.float64) for a in batch)
  for step in range(3):
    trainer.one_step(batch, fastmath.random.get_prng(step), step,
                     learning_rate=0.1 / (step + 1))
    gw, gb = _grads(w, b, x, y)
    w, b = w - 0.1 / (step + 1) * gw, b - 0.1 / (step + 1) * gb
  np.testing.assert_allclose(trainer.model_weights[0][0], w, rtol=1e-5)
  np.testing.assert_allclose(trainer.model_weights[0][1], b, rtol=1e-5)


def test_other_optimizers_and_dtypes_use_tree_update():
  batch = _batch()

  class MyAdam(optimizers.Adam):
    pass

  for opt in (optimizers.Adafactor(0.01), optimizers.Momentum(0.01),
              MyAdam(0.01)):
    assert trainer_lib.Trainer(_linear_model(batch),
                               opt).step_program == 'tree_update'
  model = _linear_model(batch)
  model.weights = fastmath.nested_map(lambda a: jnp.asarray(a, jnp.bfloat16),
                                      model.weights)
  assert trainer_lib.Trainer(
      model, optimizers.Adam(0.01)).step_program == 'tree_update'


def test_decay_passed_per_step_without_decay_is_an_error():
  batch = _batch()
  trainer = trainer_lib.Trainer(_linear_model(batch),
                                optimizers.Adam(0.01, weight_decay_rate=0.0))
  with pytest.raises(ValueError, match=r'weight_decay_rate=0\.5 was passed '
                     r'for one step.*built with weight_decay_rate=0\.0'):
    trainer.one_step(batch, fastmath.random.get_prng(0), 0,
                     opt_params={'weight_decay_rate': 0.5})


def test_unknown_hyperparameter_is_named():
  batch = _batch()
  trainer = trainer_lib.Trainer(_linear_model(batch), optimizers.SGD(0.1))
  with pytest.raises(ValueError, match=r"opt_params \['momentum'\] are not "
                     r"hyperparameters of SGD \(it has \['learning_rate'\]"):
    trainer.one_step(batch, fastmath.random.get_prng(0), 0,
                     opt_params={'momentum': 0.9})


@pytest.mark.parametrize('jit_compile', ['update', True])
def test_fused_update_with_xla_is_refused(jit_compile):
  batch = _batch()
  with pytest.raises(ValueError, match=r'Trainer: fused_update=True updates '
                     r'the variables in place without XLA, but '
                     rf'jit_compile={jit_compile!r} compiles the update'):
    trainer_lib.Trainer(_linear_model(batch), optimizers.Adam(0.01),
                        jit_compile=jit_compile, fused_update=True)


def test_fused_update_for_an_optimizer_without_one_is_refused():
  batch = _batch()
  with pytest.raises(ValueError, match=r'Trainer: fused_update=True, but '
                     r'Momentum cannot update these variables in place'):
    trainer_lib.Trainer(_linear_model(batch), optimizers.Momentum(0.01),
                        fused_update=True)


def test_unknown_jit_compile_is_refused():
  batch = _batch()
  with pytest.raises(ValueError, match=r"Trainer: jit_compile must be None, "
                     r"False, True or 'update', got 'all'"):
    trainer_lib.Trainer(_linear_model(batch), optimizers.Adam(0.01),
                        jit_compile='all')


@pytest.mark.parametrize('jit_compile,fused,program', [
    (None, None, 'in_place'), (False, True, 'in_place'),
    (None, False, 'tree_update'), ('update', None, 'xla_update'),
    ('update', False, 'xla_update'), (True, None, 'xla_step'),
    (True, False, 'xla_step'), (1, None, 'xla_step'), (0, 1, 'in_place')])
def test_step_program_follows_the_table(jit_compile, fused, program):
  batch = _batch()
  trainer = trainer_lib.Trainer(_linear_model(batch), optimizers.SGD(0.1),
                                jit_compile=jit_compile, fused_update=fused)
  assert trainer.step_program == program
