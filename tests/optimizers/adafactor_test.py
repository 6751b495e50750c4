"""Adafactor against a NumPy reference, across its structural options."""

import numpy as np
import pytest

from tests.optimizers import _harness
from tfnp_trax import fastmath
from tfnp_trax import optimizers
from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.optimizers import adafactor

_DEFAULTS = dict(learning_rate=0.05, factored=True,
                 multiply_by_parameter_scale=True, do_clipping=True,
                 do_momentum=False, beta1=0.0, decay_rate=0.8,
                 clipping_threshold=1.0, weight_decay_rate=1e-5,
                 weight_decay_n_steps=0, epsilon1=1e-16, epsilon2=1e-3)


def _rms(x):
  return np.sqrt(np.mean(x ** 2))


def _reference(c):
  """Adafactor's equations in float64 for config `c`."""
  def is_factored(w):
    return c['factored'] and w.ndim >= 2

  def ref_init(w):
    if is_factored(w):
      v = (np.zeros(w.shape[:-1]), np.zeros(w.shape[:-2] + w.shape[-1:]))
    else:
      v = (np.zeros_like(w),)
    return v, np.zeros_like(w)

  def ref_update(step, g, w, state):
    v, m = state
    d = 1.0 - (step + 1.0) ** (-c['decay_rate'])
    e1 = c['epsilon1']
    if is_factored(w):
      r = d * v[0] + (1 - d) * np.mean(g ** 2, axis=-1)
      col = d * v[1] + (1 - d) * np.mean(g ** 2, axis=-2)
      r_mean = np.mean(r, axis=-1)[..., None, None]
      # y = g / sqrt(v_hat), v_hat = outer(r + e1, col + e1) / mean(r).
      v_hat = (r + e1)[..., :, None] * (col + e1)[..., None, :] / r_mean
      y, v = g / np.sqrt(v_hat), (r, col)
    else:
      full = d * v[0] + (1 - d) * g ** 2
      y, v = g / np.sqrt(full + e1), (full,)
    if c['do_clipping']:
      y = y / max(1.0, _rms(y) / c['clipping_threshold'])
    scale = c['learning_rate']
    if c['multiply_by_parameter_scale']:
      scale *= max(_rms(w), c['epsilon2'])
    sub = scale * y
    if c['do_momentum']:
      m = c['beta1'] * m + (1 - c['beta1']) * sub
      sub = m
    wd, n = c['weight_decay_rate'], c['weight_decay_n_steps']
    if n >= 1:
      wd = wd * max(n - step, 0) / n
    return (1 - wd) * w - sub, (v, m)
  return ref_init, ref_update


_CONFIGS = {
    'defaults': {},
    'momentum_and_fading_decay': dict(do_momentum=True, beta1=0.9,
                                      weight_decay_rate=0.1,
                                      weight_decay_n_steps=3),
    'not_factored': dict(factored=False),
    'no_scale_no_clipping': dict(multiply_by_parameter_scale=False,
                                 do_clipping=False, learning_rate=0.01),
    'tight_clipping': dict(clipping_threshold=0.5),
}


@pytest.mark.parametrize('mode', ['eager', 'jit'])
@pytest.mark.parametrize('name', sorted(_CONFIGS))
def test_adafactor_matches_numpy(name, mode):
  kwargs = _CONFIGS[name]
  config = dict(_DEFAULTS, **kwargs)
  ref_init, ref_update = _reference(config)
  _harness.check_against_reference(optimizers.Adafactor(**kwargs), ref_init,
                                   ref_update, mode=mode, rtol=5e-5,
                                   atol=5e-6)


def test_adafactor_defaults_follow_trax():
  structural = ('factored', 'multiply_by_parameter_scale', 'do_clipping',
                'do_momentum')
  _harness.assert_opt_params(optimizers.Adafactor(), {
      k: v for k, v in _DEFAULTS.items() if k not in structural})


@pytest.mark.parametrize('kwargs, shape, want', [
    ({}, (3, 4), [((3,), 'float32'), ((4,), 'float32')]),
    ({}, (2, 3, 4), [((2, 3), 'float32'), ((2, 4), 'float32')]),
    ({}, (4,), [((4,), 'float32')]),
    ({'factored': False}, (3, 4), [((3, 4), 'float32')]),
    ({'do_momentum': True, 'momentum_in_bfloat16': True}, (4,),
     [((4,), 'float32'), ((4,), 'bfloat16')]),
])
def test_adafactor_slots(kwargs, shape, want):
  slots = optimizers.Adafactor(**kwargs).init(jnp.zeros(shape, jnp.float32))
  # Flattened, the slots are Trax's list, in Trax's order.
  assert [(tuple(s.shape), s.dtype.name)
          for s in fastmath.tree_flatten(slots)] == want


def test_adafactor_slots_are_named_by_layout():
  opt = optimizers.Adafactor(do_momentum=True)
  factored = opt.init(jnp.zeros((3, 4), jnp.float32))
  assert isinstance(factored, adafactor.AdafactorFactoredSlots)
  assert [tuple(x.shape) for x in factored] == [(3,), (4,), (3, 4)]
  plain = opt.init(jnp.zeros((4,), jnp.float32))
  assert isinstance(plain, adafactor.AdafactorUnfactoredSlots)
  assert tuple(plain.v.shape) == (4,) and tuple(plain.momentum.shape) == (4,)
  no_momentum = optimizers.Adafactor().init(jnp.zeros((4,), jnp.float32))
  assert no_momentum.momentum == ()


@pytest.mark.parametrize('do_momentum', [False, True])
def test_adafactor_update_takes_trax_slot_lists(do_momentum):
  # Slots read from a Trax checkpoint are plain lists in Trax's order.
  opt = optimizers.Adafactor(do_momentum=do_momentum, beta1=0.5)
  params = {k: np.float32(v) for k, v in opt.opt_params.items()}
  w = jnp.asarray(np.arange(12, dtype=np.float32).reshape(3, 4))
  g = jnp.asarray(np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4))
  named = opt.init(w)
  w_named, s_named = opt.update(1, g, w, named, params)
  w_list, s_list = opt.update(1, g, w, list(fastmath.tree_flatten(named)),
                              params)
  np.testing.assert_array_equal(w_named, w_list)
  assert type(s_list) is adafactor.AdafactorFactoredSlots
  for a, b in zip(fastmath.tree_flatten(s_named),
                  fastmath.tree_flatten(s_list)):
    np.testing.assert_array_equal(a, b)


def test_adafactor_bfloat16_momentum_slot_keeps_its_dtype():
  opt = optimizers.Adafactor(do_momentum=True, beta1=0.9,
                             momentum_in_bfloat16=True)
  w = (jnp.ones((3, 4), jnp.float32),)
  slots, params = opt.tree_init(w)
  for step in range(2):
    w, slots, _ = opt.tree_update(step, w, w, slots, params)
  assert slots[0][-1].dtype.name == 'bfloat16'
