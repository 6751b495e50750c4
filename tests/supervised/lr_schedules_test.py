"""Learning-rate schedules against hand-computed values, eager and traced."""

import math

import numpy as np
import pytest

from tfnp_trax import fastmath
from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.supervised import lr_schedules

STEPS = (0, 1, 10, 100, 1000)


def _cosine(x):
  return 0.5 * (1 + math.cos(math.pi * (x % 1.0)))


# (name, schedule, {step: expected value}), values worked out by hand.
_CASES = [
    ('constant', lr_schedules.constant(0.3),
     {0: 0.0, 1: 0.3, 10: 0.3, 100: 0.3, 1000: 0.3}),
    ('warmup', lr_schedules.warmup(n_warmup_steps=99, max_value=0.5),
     {0: 0.0, 1: 0.005, 10: 0.05, 100: 0.5, 1000: 0.5}),
    ('warmup_and_rsqrt_decay',
     lr_schedules.warmup_and_rsqrt_decay(n_warmup_steps=9, max_value=0.2),
     {0: 0.0, 1: 0.02, 10: 0.2, 100: 0.2 * math.sqrt(10 / 100),
      1000: 0.2 * math.sqrt(10 / 1000)}),
    ('cosine_sawtooth_tail',
     lr_schedules.cosine_sawtooth_tail(n_warmup_steps=9, max_value=1.0,
                                       steps_per_cycle=360, min_value=0.1),
     {0: 0.0, 1: 0.1, 10: 1.0, 100: 0.1 + 0.9 * _cosine(90 / 360),
      1000: 0.1 + 0.9 * _cosine(990 / 360)}),
    ('multifactor_defaults', lr_schedules.multifactor(),
     {0: 0.0, 1: 0.1 / 400 / 20, 10: 0.1 * 10 / 400 / 20,
      100: 0.1 * 100 / 400 / 20, 1000: 0.1 / math.sqrt(1000)}),
    ('constant_factor', lr_schedules.multifactor('constant', constant=0.7),
     {s: 0.7 for s in STEPS}),
    ('two_constants',
     lr_schedules.multifactor('two_constants', constant=0.5,
                              second_constant=0.25, second_constant_step=100),
     {0: 0.5, 1: 0.5, 10: 0.5, 100: 0.25, 1000: 0.25}),
    ('linear_warmup', lr_schedules.multifactor('linear_warmup',
                                               warmup_steps=100),
     {0: 0.0, 1: 0.01, 10: 0.1, 100: 1.0, 1000: 1.0}),
    ('rsqrt_decay', lr_schedules.multifactor('rsqrt_decay', warmup_steps=4),
     {0: 0.5, 1: 0.5, 10: 1 / math.sqrt(10), 100: 0.1,
      1000: 1 / math.sqrt(1000)}),
    ('rsqrt_normalized_decay',
     lr_schedules.multifactor('rsqrt_normalized_decay', warmup_steps=100),
     {0: 1.0, 1: 1.0, 10: 1.0, 100: 1.0, 1000: math.sqrt(0.1)}),
    ('decay_every',
     lr_schedules.multifactor('constant * decay_every', constant=2.0,
                              decay_factor=0.5, steps_per_decay=10),
     {0: 2.0, 1: 2.0, 10: 1.0, 100: 2.0 * 0.5 ** 10,
      1000: 2.0 * 0.5 ** 100}),
    ('cosine_decay',
     lr_schedules.multifactor('cosine_decay', warmup_steps=10,
                              steps_per_cycle=360),
     {0: 1.0, 1: 1.0, 10: 1.0, 100: _cosine(90 / 360),
      1000: _cosine(990 / 360)}),
    ('minimum',
     lr_schedules.multifactor('constant * decay_every', constant=1.0,
                              decay_factor=0.1, steps_per_decay=10,
                              minimum=1e-3),
     {0: 1.0, 1: 1.0, 10: 0.1, 100: 1e-3, 1000: 1e-3}),
]
_IDS = [c[0] for c in _CASES]


@pytest.mark.parametrize('name, schedule, want', _CASES, ids=_IDS)
def test_schedule_values_with_python_steps(name, schedule, want):
  del name
  for step in STEPS:
    got = schedule(step)
    assert got.dtype == np.float32
    np.testing.assert_allclose(float(got), want[step], rtol=1e-5, atol=1e-12,
                               err_msg=f'step {step}')


@pytest.mark.parametrize('jit_compile', [None, True], ids=['tf_function',
                                                            'xla'])
@pytest.mark.parametrize('dtype', [jnp.int32, jnp.float32])
@pytest.mark.parametrize('name, schedule, want', _CASES, ids=_IDS)
def test_schedule_values_traced_with_tensor_steps(name, schedule, want,
                                                  dtype, jit_compile):
  del name
  traces = []

  def traced(step):
    traces.append(step)
    return schedule(step)
  compiled = fastmath.jit(traced, jit_compile=jit_compile)
  for step in STEPS:
    got = compiled(jnp.asarray(step, dtype))
    np.testing.assert_allclose(float(got), want[step], rtol=1e-5, atol=1e-12,
                               err_msg=f'step {step}')
  assert len(traces) == 1


def test_all_factors_together_under_xla():
  schedule = lr_schedules.multifactor(
      'constant * two_constants * linear_warmup * rsqrt_decay * '
      'rsqrt_normalized_decay * decay_every * cosine_decay')
  sawtooth = lr_schedules.cosine_sawtooth_tail(10, 1.0, 100)
  compiled = fastmath.jit(lambda s: (schedule(s), sawtooth(s)),
                          jit_compile=True)
  for step in STEPS:
    product, tail = compiled(jnp.asarray(step, jnp.int32))
    np.testing.assert_allclose(float(product), float(schedule(step)),
                               rtol=1e-5)
    # The cosine passes near 0 here, where float32 ulps of XLA's fused form
    # show as relative error; compare absolutely.
    np.testing.assert_allclose(float(tail), float(sawtooth(step)), atol=1e-6)


def test_multifactor_unknown_factor():
  with pytest.raises(ValueError, match=(
      r"multifactor: unknown factor 'cosine_deay' in 'constant \* "
      r"cosine_deay'; known factors: \['constant', 'two_constants'")):
    lr_schedules.multifactor('constant * cosine_deay')


def test_body_and_tail_needs_a_start_and_a_tail_fn():
  # pylint: disable=protected-access
  with pytest.raises(ValueError, match='body_start and tail_start are both'):
    lr_schedules._body_and_tail(1.0)
  with pytest.raises(ValueError, match='tail_start is 5 but tail_fn is None'):
    lr_schedules._body_and_tail(1.0, tail_start=5)
