"""Compares tfnp_trax with values recorded from real Trax 1.4.1.

The fixtures live in tests/testdata/trax/ (see the README.md there); they were
computed by running Trax 1.4.1 on JAX 0.4.30 (CPU) with
tests/testdata/trax/make_fixtures.py. Trax itself is not needed here.

Each fixture case expression is evaluated with `tl` = tfnp_trax.layers,
`trax` = tfnp_trax, `jnp` = tfnp_trax.fastmath.numpy, `np` = NumPy.
"""

import functools
import importlib
import inspect
import json
import re

import numpy as np
import pytest

from tests import _fixtures
import tfnp_trax
from tfnp_trax import fastmath
from tfnp_trax import shapes
from tfnp_trax.fastmath import numpy as jnp
import tfnp_trax.layers as tl


RTOL = 1e-5
ATOL = 1e-6


# Where tfnp_trax knowingly differs from Trax 1.4.1, by test id, with the
# reason. Each is a strict xfail: a case that starts to match fails until it
# is taken off this list.
_LATER_TRAX = ('BinaryClassifier and MulticlassClassifier come from later Trax '
               'releases; Trax 1.4.1 lacks them and tfnp_trax keeps them.')
_GLU = ("Trax 1.4.1's own Glu cannot be built (its Fn has a default "
        "argument, which Trax's Fn rejects); tfnp_trax's Glu works.")
_DPA = ('In Trax, DotProductAttention is a pure function of (queries, keys, '
        'values, mask, dropout, mode, rng); in tfnp_trax it is a layer.')
_CONV_1D = ('A 1-D kernel with the default 2-D dimension numbers: Trax runs '
            'it, tfnp_trax asks for Conv1d or 1-D dimension_numbers.')
_RNNLM_LAYERS = ("Trax's RNNLM raises unless n_layers == 2; tfnp_trax stacks "
                 'any positive number of cells.')
_MASK_NONE = ("tfnp_trax's estimators accept discount_mask=None (no "
              'masking); Trax 1.4.1 raises TypeError.')
_RL_MODULES = ('Trax RL modules and names tfnp_trax does not implement; '
               'tests/trax_semantics/rl_paths_test.py lists them by name.')
_HALF_DENSE = ("Dense keeps a float16/bfloat16 input's dtype (mixed "
               "precision, pinned by the conformance bf16 check); Trax's "
               'float32 weights promote it to float32.')
_TF_KERNELS = ('TensorFlow has no kernel for this dtype (Neg on uint8, AddV2 '
               'on bool, True converted to int8); JAX computes it.')
_SCAN_CARRY = ('Scan casts a carry whose dtype changes; JAX (lax.scan) '
               'raises.')
_WEAK_INT = ("Python ints alone give TensorFlow NumPy's default int64 (as "
             'jnp.arange(3) and jnp.array(2) do); JAX gives weakly typed '
             'int32.')
_WEAK_ARRAY = ('jnp.array(2.0) is a strong float32 array in TensorFlow NumPy; '
               'in JAX it is weakly typed, so float16 stays float16.')
_MAXIMUM = ("TensorFlow NumPy's maximum keeps int32 against a Python float; "
            'JAX promotes to float32.')

# pylint: disable=line-too-long
_ADAFACTOR_SLOTS = ("Adafactor's slots per weight are a named tuple "
                    '(AdafactorFactoredSlots / AdafactorUnfactoredSlots) '
                    "that flattens to Trax's list, in Trax's order; only the "
                    'container differs (the leaves are compared equal).')

KNOWN_DIFFERENCES = {
    'test_optimizer_tree_init[005:trax.optimizers.Adafactor(0.05)]':
        _ADAFACTOR_SLOTS,
    'test_optimizer_tree_init[006:trax.optimizers.Adafactor(0.05, '
    'factored=False, do_momentum=True)]': _ADAFACTOR_SLOTS,
    'test_repr[027:tl.BinaryClassifier()]': _LATER_TRAX,
    'test_repr[028:tl.MulticlassClassifier()]': _LATER_TRAX,
    'test_repr[120:tl.Glu()]': _GLU,
    'test_repr[129:tl.DotProductAttention()]': _DPA,
    'test_repr[140:tl.Conv(2, (3,), padding="SAME")]': _CONV_1D,
    'test_repr[164:trax.models.RNNLM(vocab_size=10, d_model=8, n_layers=1)]': _RNNLM_LAYERS,
    'test_int_inputs[005:tl.Dense(2) float16]': _HALF_DENSE,
    'test_int_inputs[032:tl.Negate() uint8]': _TF_KERNELS,
    'test_int_inputs[054:tl.Conv(2, (2,)) int64]': _CONV_1D,
    'test_int_inputs[064:tl.Scan(tl.Serial(tl.Add(), tl.Dense(2), tl.Dup()), axis=1) int64,int6]': _SCAN_CARRY,
    'test_int_inputs[075:tl.Add() bool,bool]': _TF_KERNELS,
    'test_int_inputs[115:tl.Fn("PlusOne", lambda x: x + 1) bool]': _WEAK_INT,
    'test_int_inputs[120:tl.Fn("PlusTrue", lambda x: x + True) int8]': _TF_KERNELS,
    'test_int_inputs[128:tl.Fn("Neg", lambda x: -x) uint8]': _TF_KERNELS,
    'test_int_inputs[134:tl.Fn("Max0", lambda x: jnp.maximum(x, 0.0)) int32]': _MAXIMUM,
    'test_int_inputs[137:tl.Fn("Arange", lambda x: x + jnp.arange(3)) int64]': _WEAK_INT,
    'test_int_inputs[138:tl.Fn("Arr", lambda x: x * jnp.array(2.0)) float16]': _WEAK_ARRAY,
    'test_int_inputs[139:tl.Fn("Arr", lambda x: x * jnp.array(2)) int8]': _WEAK_INT,
    'test_metrics[040:tl.BinaryClassifier() bin_probs]': _LATER_TRAX,
    'test_metrics[041:tl.MulticlassClassifier() flat_logits]': _LATER_TRAX,
    'test_advantages[015:td_k m=1 {} mask=none]': _MASK_NONE,
    'test_advantages[019:td_k m=2 {} mask=none]': _MASK_NONE,
    'test_advantages[023:td_k m=3 {} mask=none]': _MASK_NONE,
    "test_advantages[027:td_lambda m=0 {'lambda_': 0.5} mask=none]": _MASK_NONE,
    "test_advantages[031:td_lambda m=1 {'lambda_': 0.5} mask=none]": _MASK_NONE,
    "test_advantages[035:td_lambda m=2 {'lambda_': 0.5} mask=none]": _MASK_NONE,
    "test_advantages[039:td_lambda m=0 {'lambda_': 0.95} mask=none]": _MASK_NONE,
    "test_advantages[043:td_lambda m=1 {'lambda_': 0.95} mask=none]": _MASK_NONE,
    "test_advantages[047:td_lambda m=2 {'lambda_': 0.95} mask=none]": _MASK_NONE,
    "test_advantages[051:gae m=0 {'lambda_': 0.5} mask=none]": _MASK_NONE,
    "test_advantages[055:gae m=1 {'lambda_': 0.5} mask=none]": _MASK_NONE,
    "test_advantages[059:gae m=2 {'lambda_': 0.5} mask=none]": _MASK_NONE,
    "test_advantages[063:gae m=0 {'lambda_': 0.95} mask=none]": _MASK_NONE,
    "test_advantages[067:gae m=1 {'lambda_': 0.95} mask=none]": _MASK_NONE,
    "test_advantages[071:gae m=2 {'lambda_': 0.95} mask=none]": _MASK_NONE,
    'test_rl_module_paths[000:actor_critic]': _RL_MODULES,
}
# pylint: enable=line-too-long


@pytest.fixture(autouse=True)
def _known_difference(request):
  reason = KNOWN_DIFFERENCES.get(request.node.name)
  if reason:
    request.applymarker(pytest.mark.xfail(strict=True, reason=reason))


# ----------------------------------------------------------------------------
# Fixture loading and decoding.

@functools.lru_cache(maxsize=None)
def _load(name):
  return _fixtures.json_file('trax', name)


def _cases(name):
  return _load(name)['cases']


def _ids(cases, key):
  out = []
  for i, c in enumerate(cases):
    label = key(c) if callable(key) else c[key]
    label = re.sub(r'\s+', ' ', str(label))[:70]
    out.append(f'{i:03d}:{label}')
  return out


def _is_array_record(obj):
  return isinstance(obj, dict) and 'dtype' in obj and 'values' in obj


def _decode(obj):
  """Inverse of make_fixtures.encode."""
  if obj is None:
    return None
  if _is_array_record(obj):
    return np.array(obj['values'], dtype=obj['dtype']).reshape(obj['shape'])
  if 'tuple' in obj:
    return tuple(_decode(v) for v in obj['tuple'])
  if 'list' in obj:
    return [_decode(v) for v in obj['list']]
  if 'dict' in obj:
    return {k: _decode(v) for k, v in obj['dict'].items()}
  if 'py' in obj:
    return obj['value']
  raise ValueError(f'cannot decode {obj!r}')


def _namespace():
  """Names the fixture expressions use, bound to tfnp_trax."""
  for sub in ('models', 'optimizers', 'rl', 'rl.distributions'):
    try:
      importlib.import_module('tfnp_trax.' + sub)
    except Exception:  # pylint: disable=broad-except
      pass  # The expression that needs it fails and reports the problem.
  return {'tl': tl, 'np': np, 'jnp': jnp, 'trax': tfnp_trax,
          'shapes': shapes, 'fastmath': fastmath}


def _eval(expr):
  return eval(expr, _namespace())  # pylint: disable=eval-used


def _attempt(fn, *args, **kwargs):
  """Returns (result, None) or (None, exception); keeps failures short."""
  try:
    return fn(*args, **kwargs), None
  except Exception as e:  # pylint: disable=broad-except
    return None, e


def _err(rec):
  if rec is None:
    return '?'
  cause = f"{rec['cause_type']}: {rec['cause_message']}"
  if rec['type'] != rec['cause_type']:
    return f"{rec['type']} ({cause})"
  return cause


def _short(e):
  """One-line description; for a multi-line message (LayerError), the first
  line and the last (the exception raised inside the layer)."""
  lines = [l for l in str(e).splitlines() if l.strip()]
  if not lines:
    return type(e).__name__
  text = lines[0][:300]
  if len(lines) > 1:
    text += ' ... ' + lines[-1].strip()[:300]
  return f'{type(e).__name__}: {text}'


def _outline(x):
  """Like make_fixtures.structure, for our trees."""
  if x is None:
    return None
  if isinstance(x, tuple):
    return {'tuple': [_outline(v) for v in x]}
  if isinstance(x, list):
    return [_outline(v) for v in x]
  if isinstance(x, dict):
    return {'dict': {str(k): _outline(v) for k, v in x.items()}}
  if hasattr(x, 'shape') and hasattr(x, 'dtype'):
    return f'{np.asarray(x).dtype}{list(np.shape(x))}'
  return f'{type(x).__name__}:{x!r}'


def _np(x):
  return np.asarray(x)


def _assert_close(ours, expected, what):
  ours = _np(ours)
  assert list(ours.shape) == list(expected.shape), (
      f'{what}: shape {list(ours.shape)}, Trax {list(expected.shape)}')
  if expected.dtype.kind in 'fc' or ours.dtype.kind in 'fc':
    # Half precision carries ~3 decimal digits: allow one or two ulps there.
    half = np.float16 in (expected.dtype, ours.dtype) or 'bfloat16' in (
        str(expected.dtype), str(ours.dtype))
    np.testing.assert_allclose(
        ours.astype(np.float64), expected.astype(np.float64),
        rtol=2e-3 if half else RTOL, atol=1e-3 if half else ATOL,
        equal_nan=True, err_msg=what)
  else:
    np.testing.assert_array_equal(ours, expected, err_msg=what)


# ----------------------------------------------------------------------------
# Shared: build / init / set Trax's weights / call / compare.

def _set_from_fixture(layer, attr, fixture_flat, fixture_outline):
  """Puts Trax's recorded leaves into our tree; returns a problem or None."""
  ours = getattr(layer, attr)
  leaves = fastmath.tree_flatten(ours)
  real = [l for l in leaves if l is not None]
  expected = [_decode(w) for w in fixture_flat]
  ours_shapes = [list(np.shape(l)) for l in real]
  trax_shapes = [list(w.shape) for w in expected]
  if ours_shapes != trax_shapes:
    return (f'{attr} tree differs from Trax: Trax {json.dumps(fixture_outline)}'
            f' (leaf shapes {trax_shapes}), tfnp_trax '
            f'{json.dumps(_outline(ours))} (leaf shapes {ours_shapes})')
  if not real:
    return None
  it = iter(expected)
  new_flat = [None if l is None else next(it) for l in leaves]
  new_tree, _ = fastmath.tree_unflatten(new_flat, ours)
  setattr(layer, attr, new_tree)
  return None


def _describe_output(y):
  if isinstance(y, (bool, int, float)):
    return f'Python {type(y).__name__} {y!r}'
  return f'{type(y).__name__} {_np(y).dtype}'


def _compare_call(ours_out, trax_call, what):
  """Compares one call's outputs with the recorded Trax call."""
  t_outs = trax_call['outputs']
  if trax_call['is_tuple']:
    assert isinstance(ours_out, (tuple, list)), (
        f'{what}: Trax returns a tuple of {len(t_outs)}, tfnp_trax '
        f'{_describe_output(ours_out)}')
    ours_list = list(ours_out)
  else:
    assert not isinstance(ours_out, (tuple, list)), (
        f'{what}: Trax returns one output, tfnp_trax a '
        f'{type(ours_out).__name__} of {len(ours_out)}')
    ours_list = [ours_out]
  assert len(ours_list) == len(t_outs), (
      f'{what}: {len(ours_list)} outputs, Trax {len(t_outs)}')
  for i, (o, t) in enumerate(zip(ours_list, t_outs)):
    w = f'{what}, output {i}'
    if not t['is_array']:
      assert isinstance(o, (bool, int, float)) and type(o).__name__ == t[
          'python_type'], (f'{w}: Trax gives Python {t["python_type"]} '
                           f'{t["value"]["value"]!r}, tfnp_trax '
                           f'{_describe_output(o)}')
      assert o == t['value']['value'], f'{w}: {o!r} vs Trax {t["value"]}'
      continue
    assert not isinstance(o, (bool, int, float)), (
        f'{w}: Trax gives an array ({t["python_type"]} {t["dtype"]}), '
        f'tfnp_trax Python {type(o).__name__} {o!r}')
    got = str(_np(o).dtype)
    assert got == t['dtype'], (
        f'{w}: dtype {got}, Trax {t["dtype"]}')
    _assert_close(o, _decode(t['value']), w)


def _check_layer_case(case, hint=None):
  """Runs a recorded run_layer case on tfnp_trax and compares."""
  expr = case['expr']
  inputs = [_decode(x) for x in case['inputs']]
  x = tuple(inputs) if case['input_is_tuple'] else inputs[0]
  ins = ', '.join(f"{i['dtype']}{i['shape']}" for i in case['inputs'])
  what = f'{expr} on ({ins})'
  hint = f' [{hint}]' if hint else ''

  layer, e = _attempt(_eval, expr)
  if e is not None:
    if not case['build_ok']:
      return
    pytest.fail(f'{what}: Trax builds it, tfnp_trax raises {_short(e)}')
  if not case['build_ok']:
    pytest.fail(f'{what}: Trax raises {_err(case["error"])} building it, '
                f'tfnp_trax builds {layer}')

  trax_fails = not case['init_ok'] or not case['call_ok']
  trax_error = case.get('error') or (
      case['calls'][-1].get('error') if case.get('calls') else None)
  stage = 'init' if not case['init_ok'] else 'call'

  _, e = _attempt(layer.init, shapes.signature(x),
                  rng=fastmath.random.get_prng(0))
  if e is not None:
    if trax_fails:
      return
    pytest.fail(f'{what}: Trax inits it, tfnp_trax init raises {_short(e)}'
                f'{hint}')
  if case['init_ok']:
    problem = _set_from_fixture(layer, 'weights', case['weights_flat'],
                                case['weights_structure'])
    if problem:
      pytest.fail(f'{what}: {problem}')
    # State: set it where the structures agree (it seldom matters at call).
    _set_from_fixture(layer, 'state', case['state_flat'],
                      case['state_structure'])

  calls = case.get('calls') or [{'ok': False, 'error': case.get('error')}]
  for n, t_call in enumerate(calls):
    w = what if len(calls) == 1 else f'{what}, call {n + 1}'
    out, e = _attempt(layer, x)
    if e is not None:
      if not t_call['ok']:
        return
      pytest.fail(f'{w}: Trax succeeds, tfnp_trax raises {_short(e)}{hint}')
    if not t_call['ok']:
      pytest.fail(f'{w}: Trax raises {_err(trax_error)} (at {stage}), '
                  f'tfnp_trax returns {_describe_output(out) if not isinstance(out, (tuple, list)) else [_describe_output(o) for o in out]}')
    try:
      _compare_call(out, t_call, w)
    except AssertionError as e:
      raise AssertionError(f'{e}{hint}') from None


# ----------------------------------------------------------------------------
# 1. reprs.json

REPR_CASES = _cases('reprs.json')


@pytest.mark.parametrize('case', REPR_CASES, ids=_ids(REPR_CASES, 'expr'))
def test_repr(case):
  layer, e = _attempt(_eval, case['expr'])
  if e is not None:
    if case['ok']:
      pytest.fail(f'Trax builds {case["expr"]} as {case["str"]!r}; tfnp_trax '
                  f'raises {_short(e)}')
    assert type(e).__name__ == case['error']['cause_type'], (
        f'Trax raises {_err(case["error"])}; tfnp_trax raises {_short(e)}')
    return
  if not case['ok']:
    pytest.fail(f'Trax raises {_err(case["error"])}; tfnp_trax builds '
                f'{str(layer)!r}')
  assert str(layer) == case['str'], (
      f'str differs.\nTrax:\n{case["str"]}\ntfnp_trax:\n{layer}')
  assert (layer.n_in, layer.n_out) == (case['n_in'], case['n_out'])


# ----------------------------------------------------------------------------
# 2. int_inputs.json

INT_CASES = _cases('int_inputs.json')


@pytest.mark.parametrize(
    'case', INT_CASES,
    ids=_ids(INT_CASES, lambda c: c['expr'] + ' ' + ','.join(
        i['dtype'] for i in c['inputs'])))
def test_int_inputs(case):
  # Trax called eagerly on NumPy arrays lets NumPy-only layers (Add, x + 1)
  # follow NumPy's int64/float64 rules, while inside any jitted step, and on
  # jnp arrays, JAX canonicalises to int32/float32. tfnp_trax follows the
  # latter everywhere, so the JAX-array call is the reference.
  jnp_call = case.get('jnp_input_call')
  if jnp_call is not None:
    case = dict(case, calls=[jnp_call], call_ok=jnp_call['ok'])
    if not jnp_call['ok']:
      case['error'] = jnp_call.get('error')
  _check_layer_case(case)


# ----------------------------------------------------------------------------
# 3. fn_checks.json

FN_CASES = _cases('fn_checks.json')


@pytest.mark.parametrize('case', FN_CASES, ids=_ids(FN_CASES, 'name'))
def test_fn_checks(case):
  layer, e = _attempt(_eval, case['expr'])
  if e is not None:
    if case['ok']:
      pytest.fail(f'Trax accepts {case["expr"]} (n_in={case["n_in"]}); '
                  f'tfnp_trax raises {_short(e)}')
    t = case['error']
    assert type(e).__name__ == t['type'], (
        f'Trax raises {t["type"]}: {t["message"]}; tfnp_trax {_short(e)}')
    m = re.search(r'has (.*?) \(', t['message'])
    key = m.group(1) if m else t['message']
    assert key.lower() in str(e).lower(), (
        f'Trax message {t["message"]!r} (key words {key!r}); tfnp_trax '
        f'message {str(e)!r}')
    return
  if not case['ok']:
    pytest.fail(f'Trax raises {case["error"]["type"]}: '
                f'{case["error"]["message"]}; tfnp_trax accepts it: {layer}')
  assert (layer.n_in, layer.n_out) == (case['n_in'], case['n_out'])
  assert str(layer) == case['str']


# ----------------------------------------------------------------------------
# 4. shapes.json

SHAPE_CASES = _cases('shapes.json')


def _plain(v):
  if isinstance(v, dict) and 'tuple' in v:
    return tuple(_plain(x) for x in v['tuple'])
  return v


@pytest.mark.parametrize('case', SHAPE_CASES, ids=_ids(SHAPE_CASES, 'expr'))
def test_shapes(case):
  v, e = _attempt(_eval, case['expr'])
  if e is not None:
    if case['ok']:
      pytest.fail(f'Trax gives {case["value"]!r}; tfnp_trax raises '
                  f'{_short(e)}')
    t = case['error']
    assert (type(e).__name__, str(e)) == (t['type'], t['message']), (
        f'Trax raises {t["type"]}: {t["message"]}; tfnp_trax {_short(e)}')
    return
  if not case['ok']:
    pytest.fail(f'Trax raises {_err(case["error"])}; tfnp_trax gives {v!r}')
  expected = _plain(case['value'])
  if isinstance(expected, dict) and 'repr' in expected:
    assert repr(v) == expected['repr']
  else:
    assert v == expected, f'tfnp_trax {v!r}; Trax {expected!r}'
    assert type(v) is type(expected), (
        f'tfnp_trax {type(v).__name__}; Trax {type(expected).__name__}')


# ----------------------------------------------------------------------------
# 5. combinators.json

COMB_CASES = _cases('combinators.json')


@pytest.mark.parametrize('case', COMB_CASES, ids=_ids(COMB_CASES, 'expr'))
def test_combinators(case):
  _check_layer_case(case)


BASE_NAMES = _load('combinators.json')['base_names']


@pytest.mark.parametrize('rec', BASE_NAMES, ids=_ids(BASE_NAMES, 'name'))
def test_base_names(rec):
  assert hasattr(tl, rec['name']) == rec['exists'], (
      f'tl.{rec["name"]}: exists in Trax: {rec["exists"]}')
  if rec['exists'] and 'repr' in rec:
    assert repr(getattr(tl, rec['name'])) == rec['repr']


TO_LIST = _load('combinators.json')['to_list']


@pytest.mark.parametrize('rec', TO_LIST, ids=_ids(TO_LIST, 'expr'))
def test_to_list(rec):
  v = _eval(rec['expr'])
  assert type(v).__name__ == rec['type']
  assert v == rec['value']


# ----------------------------------------------------------------------------
# 6. optimizers.json

OPT_CASES = _cases('optimizers.json')
OPT_IDS = _ids(OPT_CASES, 'expr')


def _opt_leaves_close(ours, expected, what):
  ours_l = [l for l in fastmath.tree_flatten(ours) if l is not None]
  exp_l = [l for l in fastmath.tree_flatten(expected) if l is not None]
  assert len(ours_l) == len(exp_l), (
      f'{what}: {len(ours_l)} leaves, Trax {len(exp_l)}')
  for i, (o, e) in enumerate(zip(ours_l, exp_l)):
    _assert_close(o, np.asarray(e), f'{what}, leaf {i}')


@pytest.mark.parametrize('case', OPT_CASES, ids=OPT_IDS)
def test_optimizer_slots_before_init(case):
  opt = _eval(case['expr'])
  assert _outline(opt.slots) == case['slots_before_init'], (
      f'opt.slots before tree_init: tfnp_trax {_outline(opt.slots)!r}, Trax '
      f'{case["slots_before_init"]!r}')


@pytest.mark.parametrize('case', OPT_CASES, ids=OPT_IDS)
def test_optimizer_opt_params(case):
  opt = _eval(case['expr'])
  expected = _decode(case['opt_params'])
  ours = dict(opt.opt_params)
  assert sorted(ours) == sorted(expected), (
      f'opt_params keys: tfnp_trax {sorted(ours)}, Trax {sorted(expected)}')
  for k, v in expected.items():
    _assert_close(ours[k], v, f'opt_params[{k!r}]')
    assert str(_np(ours[k]).dtype) == str(v.dtype), (
        f'opt_params[{k!r}] dtype {_np(ours[k]).dtype}, Trax {v.dtype}')


@pytest.mark.parametrize('case', OPT_CASES, ids=OPT_IDS)
def test_optimizer_tree_init(case):
  opt = _eval(case['expr'])
  weights = _decode(case['weights'])
  slots, _ = opt.tree_init(weights)
  assert _outline(slots) == case['slots_after_init_structure'], (
      f'slots after tree_init: tfnp_trax {json.dumps(_outline(slots))}, Trax '
      f'{json.dumps(case["slots_after_init_structure"])}')
  _opt_leaves_close(slots, _decode(case['slots_after_init']), 'initial slots')
  if case['opt_slots_is_returned']:
    assert _outline(opt.slots) == case['slots_after_init_structure'], (
        'opt.slots after tree_init is not the returned slots')


@pytest.mark.parametrize('case', OPT_CASES, ids=OPT_IDS)
def test_optimizer_steps(case):
  opt = _eval(case['expr'])
  weights = _decode(case['weights'])
  slots, opt_params = opt.tree_init(weights)
  for rec, grads in zip(case['steps'], case['grads']):
    out = opt.tree_update(rec['step'], _decode(grads), weights, slots,
                          opt_params)
    assert len(out) == 3, (
        f'tree_update returns {len(out)} values; Trax returns 3 '
        '(weights, slots, metrics)')
    weights, slots, metrics = out
    what = f'step {rec["step"]}'
    assert _outline(weights) == _outline(_decode(rec['weights'])), (
        f'{what}: weight tree {_outline(weights)}, Trax '
        f'{_outline(_decode(rec["weights"]))}')
    _opt_leaves_close(weights, _decode(rec['weights']), f'{what} weights')
    _opt_leaves_close(slots, _decode(rec['slots']), f'{what} slots')
    exp_metrics = _decode(rec['metrics'])
    assert sorted(metrics) == sorted(exp_metrics), (
        f'{what}: metrics keys {sorted(metrics)}, Trax {sorted(exp_metrics)}')
    for k, v in exp_metrics.items():
      _assert_close(metrics[k], v, f'{what} metrics[{k!r}]')


# ----------------------------------------------------------------------------
# 7. metrics.json

METRIC_CASES = _cases('metrics.json')


@pytest.mark.parametrize(
    'case', METRIC_CASES,
    ids=_ids(METRIC_CASES, lambda c: c['expr'] + ' ' + ','.join(
        c['input_names'])))
def test_metrics(case):
  _check_layer_case(case)


# ----------------------------------------------------------------------------
# 8. rl_advantages.json

ADV = _load('rl_advantages.json')
ADV_CASES = ADV['cases']


def _adv_module():
  return importlib.import_module('tfnp_trax.rl.advantages')


@pytest.mark.parametrize(
    'case', ADV_CASES,
    ids=_ids(ADV_CASES, lambda c: f"{c['fn']} m={c['margin']} "
             f"{c['kwargs']} mask={c['mask_name']}"))
def test_advantages(case):
  adv = _adv_module()
  inp = ADV['inputs']
  rewards = _decode(inp['rewards'])
  values = _decode(inp['values'])
  dones = _decode(inp['dones'])
  returns = _decode(inp['returns'][case['mask_name']])
  mask = (None if case['mask_name'] == 'none' else
          _decode(inp['discount_masks'][case['mask_name']]))
  what = (f"{case['fn']}(gamma={case['gamma']}, margin={case['margin']}, "
          f"{case['kwargs']}) with discount_mask={case['mask_name']}")
  def run():
    estimator = getattr(adv, case['fn'])(case['gamma'], case['margin'],
                                         **case['kwargs'])
    return estimator(rewards.copy(), returns.copy(), values.copy(),
                     dones.copy(), None if mask is None else mask.copy())
  out, e = _attempt(run)
  if e is not None:
    if not case['ok']:
      return
    pytest.fail(f'{what}: Trax succeeds, tfnp_trax raises {_short(e)}')
  if not case['ok']:
    pytest.fail(f'{what}: Trax raises {_err(case["error"])}, tfnp_trax '
                f'returns {_np(out).shape}')
  _assert_close(out, _decode(case['output']), what)


ADV_NAMES = ADV['public_names']


@pytest.mark.parametrize('rec', ADV_NAMES, ids=_ids(ADV_NAMES, 'name'))
def test_advantages_signature(rec):
  adv = _adv_module()
  assert hasattr(adv, rec['name']), f'tfnp_trax.rl.advantages.{rec["name"]}'
  if 'signature' not in rec:
    return
  ours = inspect.signature(getattr(adv, rec['name']))
  trax_params = rec['signature'].strip('()').split(', ')
  trax_params = [p for p in trax_params if p]
  ours_params = [str(p) for p in ours.parameters.values()]
  assert ours_params[:len(trax_params)] == trax_params, (
      f'{rec["name"]}: tfnp_trax {ours}, Trax {rec["signature"]}')


@pytest.mark.parametrize('rec', ADV['helpers'],
                         ids=[h['fn'] for h in ADV['helpers']])
def test_advantages_helpers(rec):
  adv = _adv_module()
  if rec['fn'] == 'discounted_returns':
    out = adv.discounted_returns(_decode(rec['rewards']),
                                 _decode(rec['gammas']))
  else:
    out = adv.mask_discount(rec['discount'], _decode(rec['discount_mask']))
  _assert_close(out, _decode(rec['output']), rec['fn'])


# ----------------------------------------------------------------------------
# 9. rl_paths.json

RL_PATHS = _cases('rl_paths.json')


@pytest.mark.parametrize('case', RL_PATHS, ids=_ids(RL_PATHS, 'module'))
def test_rl_module_paths(case):
  name = f'tfnp_trax.rl.{case["module"]}'
  mod, e = _attempt(importlib.import_module, name)
  if e is not None:
    pytest.fail(f'import {name}: {_short(e)}')
  wanted = [n['name'] for n in case.get('names', []) if n['defined_here']]
  missing = [n for n in wanted if not hasattr(mod, n)]
  assert not missing, (
      f'{name} lacks {len(missing)} of Trax\'s {len(wanted)} names: '
      f'{", ".join(missing)}')
