"""tfnp_trax.debug: the switch, the env var, and what it turns on."""

import importlib

import numpy as np
import pytest

from tfnp_trax import debug
from tfnp_trax import shapes
import tfnp_trax.layers as tl


@pytest.fixture(autouse=True)
def _restore_switch():
  before = debug.is_enabled()
  yield
  (debug.enable if before else debug.disable)()


def test_enable_disable_and_context_manager():
  debug.disable()
  assert not debug.is_enabled()
  with debug.enabled():
    assert debug.is_enabled()
    with debug.enabled(False):
      assert not debug.is_enabled()
    assert debug.is_enabled()
  assert not debug.is_enabled()
  debug.enable()
  assert debug.is_enabled()


@pytest.mark.parametrize('value,on', [('1', True), ('true', True),
                                      ('0', False), ('', False),
                                      ('off', False)])
def test_env_var_read_at_import(monkeypatch, value, on):
  monkeypatch.setenv(debug.ENV_VAR, value)
  try:
    importlib.reload(debug)
    assert debug.is_enabled() is on
  finally:
    monkeypatch.delenv(debug.ENV_VAR)
    importlib.reload(debug)
  assert not debug.is_enabled()


def test_value_checks_run_only_in_debug_mode():
  x = np.array([np.nan, 1.0], np.float32)
  debug.check_finite('L', 'x', x)  # Off: nothing.
  debug.check_ids('L', 'ids', np.array([7]), 3)
  with debug.enabled():
    with pytest.raises(FloatingPointError, match=r'^L: x: expected finite'):
      debug.check_finite('L', 'x', x)
    with pytest.raises(FloatingPointError, match=r'^L: w leaf 1: expected'):
      debug.check_tree_finite('L', 'w', (np.ones(2), (x,)))
    with pytest.raises(ValueError, match=r'^L: ids: expected ids in \[0, 3\)'):
      debug.check_ids('L', 'ids', np.array([7]), 3)


def test_always_eager_id_check_runs_without_debug_mode():
  with pytest.raises(ValueError, match=r'L: ids: expected ids in \[0, 3\)'):
    debug.check_ids('L', 'ids', np.array([3]), 3, always_eager=True)


def test_init_in_debug_mode_ignores_the_dummy_zeros():
  # Shape inference runs Log on zeros (-inf); that must not count as a NaN.
  model = tl.Serial(tl.Dense(2), tl.Fn('Log', lambda x: (x * 0.0) ** -1.0))
  with debug.enabled():
    model.init(shapes.ShapeDtype((1, 3), np.float32))
    with pytest.raises(tl.LayerError, match=r'Log: outputs leaf 0: '
                       r'expected finite values but found 0 NaN and 2 Inf'):
      model(np.ones((1, 3), np.float32))


def test_debug_mode_leaves_results_unchanged():
  model = tl.Serial(tl.Dense(3), tl.Relu())
  x = np.random.default_rng(0).normal(size=(2, 4)).astype(np.float32)
  model.init(shapes.signature(x))
  plain = np.asarray(model(x))
  with debug.enabled():
    np.testing.assert_array_equal(np.asarray(model(x)), plain)
