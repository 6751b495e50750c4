"""Optimizers behave as Trax 1.4.1's, attribute for attribute and step by step.

Checked here: `opt.slots` is None until `tree_init`; `tree_init` returns the
stored slots and the stored `opt_params`; `store_slots`; Trax's constructor
arguments, defaults and `opt_params` keys and dtypes; the structure Trax
gives each weight's slots; and three `tree_update` steps of every optimizer
against a NumPy float64 transcription of Trax's update equations, each naming
the Trax source file it follows.
"""

import functools
import inspect

import numpy as np
import pytest

from tests.optimizers import _harness
from tfnp_trax import fastmath
from tfnp_trax import optimizers
from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.optimizers import base
from tfnp_trax.optimizers import MomentumType


def _tree(leaves):
  a2, a1, a3 = leaves
  # An empty tuple stands for a weightless layer, as in a Trax model.
  return ((jnp.asarray(a2), ()), [jnp.asarray(a1), jnp.asarray(a3)])


# -- NumPy float64 transcriptions of Trax's per-weight updates ----------------
# Each is (init(w) -> slots, update(step, g, w, slots) -> (w, slots)).

def _sgd(lr):
  """trax/optimizers/base.py, class SGD."""
  return (lambda w: None,
          lambda step, g, w, s: (w - lr * g, None))


def _momentum(lr, mass, wd, nesterov):
  """trax/optimizers/momentum.py."""
  def update(step, g, w, v):
    del step
    v = mass * v + g
    u = mass * v + g if nesterov else v
    return (1 - wd) * w - lr * u, v
  return np.zeros_like, update


def _rms_prop(lr, gamma, eps):
  """trax/optimizers/rms_prop.py: the average starts at ones."""
  def update(step, g, w, avg):
    del step
    avg = avg * gamma + g ** 2 * (1 - gamma)
    return w - lr * g / (np.sqrt(avg) + eps), avg
  return np.ones_like, update


def _adam(lr, wd, b1, b2, eps):
  """trax/optimizers/adam.py."""
  def update(step, g, w, slots):
    m, v = slots
    m = (1 - b1) * g + b1 * m
    v = (1 - b2) * g ** 2 + b2 * v
    m_hat = m / (1 - b1 ** (step + 1))
    v_hat = v / (1 - b2 ** (step + 1))
    return (1 - wd) * w - lr * m_hat / (np.sqrt(v_hat) + eps), (m, v)
  return lambda w: (np.zeros_like(w), np.zeros_like(w)), update


def _adafactor(lr=0.05, factored=True, scale=True, clipping=True,
               momentum=False, beta1=0.0, decay_rate=0.8, threshold=1.0,
               wd=1e-5, wd_n_steps=0, eps1=1e-16, eps2=1e-3):
  """trax/optimizers/adafactor.py."""
  def is_factored(w):
    return factored and w.ndim >= 2

  def init(w):
    if is_factored(w):
      slots = [np.zeros(w.shape[:-1]), np.zeros(w.shape[:-2] + w.shape[-1:])]
    else:
      slots = [np.zeros_like(w)]
    return slots + ([np.zeros_like(w)] if momentum else [])

  def update(step, g, w, slots):
    rate = wd if wd_n_steps < 1 else (
        wd * max(wd_n_steps - step, 0.0) / max(wd_n_steps, 0.0))
    decay = 1.0 - (step + 1.0) ** (-decay_rate)
    update_scale = lr * (max(np.sqrt(np.mean(w * w)), eps2) if scale else 1)
    mix = 1.0 - decay
    if is_factored(w):
      v_row = decay * slots[0] + mix * np.mean(g * g, axis=-1)
      v_col = decay * slots[1] + mix * np.mean(g * g, axis=-2)
      new = [v_row, v_col]
      row_factor = (np.mean(v_row, axis=-1, keepdims=True) /
                    (v_row + eps1)) ** 0.5
      col_factor = (v_col + eps1) ** -0.5
      y = g * row_factor[..., :, None] * col_factor[..., None, :]
    else:
      v = decay * slots[0] + mix * g * g
      new = [v]
      y = g * (v + eps1) ** -0.5
    if clipping:
      y = y / max(1.0, np.sqrt(np.mean(y * y)) / threshold)
    subtrahend = update_scale * y
    if momentum:
      m = beta1 * slots[-1] + (1.0 - beta1) * subtrahend
      subtrahend = m
      new.append(m)
    return (1 - rate) * w - subtrahend, new
  return init, update


def _sm3(lr=0.01, beta=0.9, b2=1.0, wd=0.0, kind=MomentumType.EMA):
  """trax/optimizers/sm3.py (diagonal for rank <= 1, sketched above)."""
  graft = b2 != 1.0

  def init(w):
    zeros = [np.zeros(n) for n in w.shape]
    return (np.zeros_like(w) if beta > 0 else [], zeros,
            [np.zeros(n) for n in w.shape] if graft else [])

  def expand(v, shape, i):
    return v.reshape([1] * i + [shape[i]] + [1] * (len(shape) - i - 1))

  def precondition(acc):
    return np.where(acc > 0, 1.0 / (np.sqrt(acc) + 1e-16), 0.0)

  def update(step, g, w, slots):
    del step
    m, v1, v2 = slots
    coeff = 1.0 if b2 == 1 else 1.0 - b2
    acc = functools.reduce(np.minimum, [expand(v, w.shape, i)
                                        for i, v in enumerate(v1)])
    acc = b2 * acc + coeff * g * g
    pg = g * precondition(acc)
    if graft:
      acc2 = functools.reduce(np.minimum, [expand(v, w.shape, i)
                                           for i, v in enumerate(v2)])
      acc2 = acc2 + g * g
      pg_graft = g * precondition(acc2)
      pg = pg * np.linalg.norm(pg_graft) / (np.linalg.norm(pg) + 1e-16)
    pg = pg + w * wd
    u = pg
    if beta > 0:
      if kind == MomentumType.EMA:
        m = (1 - beta) * pg + beta * m
        u = m
      elif kind == MomentumType.HEAVY_BALL:
        m = pg + beta * m
        u = m
      else:
        m = pg + beta * m
        u = pg + beta * m
    w = w - lr * u

    def project(a):
      return [a.max(axis=tuple(j for j in range(a.ndim) if j != i))
              for i in range(a.ndim)]
    return w, (m, project(acc), project(acc2) if graft else [])
  return init, update


def _clip(grads, max_norm):
  """trax/optimizers/base.py, Optimizer.tree_update: global-norm clipping."""
  norm = np.sqrt(sum(np.sum(g * g) for g in grads))
  if max_norm is None or norm < max_norm:
    return grads, norm
  return [g * (max_norm / norm) for g in grads], norm


_CASES = {
    'sgd': (lambda: optimizers.SGD(learning_rate=0.1), _sgd(0.1), None),
    'sgd_clipped': (lambda: optimizers.SGD(learning_rate=0.1,
                                           clip_grad_norm=1.0),
                    _sgd(0.1), 1.0),
    'momentum': (lambda: optimizers.Momentum(learning_rate=0.1, mass=0.8,
                                             weight_decay_rate=0.01),
                 _momentum(0.1, 0.8, 0.01, True), None),
    'momentum_plain': (lambda: optimizers.Momentum(0.05, nesterov=False),
                       _momentum(0.05, 0.9, 1e-5, False), None),
    'rms_prop': (lambda: optimizers.RMSProp(learning_rate=0.01, gamma=0.8),
                 _rms_prop(0.01, 0.8, 1e-8), None),
    'adam': (lambda: optimizers.Adam(learning_rate=0.01,
                                     weight_decay_rate=0.01),
             _adam(0.01, 0.01, 0.9, 0.999, 1e-5), None),
    'adam_clipped': (lambda: optimizers.Adam(learning_rate=0.01,
                                             clip_grad_norm=2.0),
                     _adam(0.01, 1e-5, 0.9, 0.999, 1e-5), 2.0),
    'adafactor': (optimizers.Adafactor, _adafactor(), None),
    'adafactor_momentum': (
        lambda: optimizers.Adafactor(factored=False, do_momentum=True,
                                     beta1=0.9, weight_decay_n_steps=2,
                                     weight_decay_rate=0.1),
        _adafactor(factored=False, momentum=True, beta1=0.9, wd_n_steps=2,
                   wd=0.1), None),
    'sm3': (optimizers.SM3, _sm3(), None),
    'sm3_grafted_nesterov': (
        lambda: optimizers.SM3(learning_rate=0.05, momentum=0.5,
                               second_moment_averaging=0.9,
                               weight_decay=0.01,
                               momentum_type=MomentumType.NESTEROV),
        _sm3(0.05, 0.5, 0.9, 0.01, MomentumType.NESTEROV), None),
}


@pytest.mark.parametrize('mode', ['eager', 'jit'])
@pytest.mark.parametrize('name', sorted(_CASES))
def test_three_steps_match_trax_equations(name, mode):
  make, (ref_init, ref_update), max_norm = _CASES[name]
  opt = make()
  weights, grads = _harness.random_problem(n_steps=3)
  tree = _tree(weights)
  slots, opt_params = opt.tree_init(tree)
  update = opt.tree_update
  if mode == 'jit':
    update = fastmath.jit(functools.partial(opt.tree_update,
                                            store_slots=False))
  ref_w = [w.astype(np.float64) for w in weights]
  ref_s = [ref_init(w) for w in ref_w]
  for step in range(3):
    tree, slots, stats = update(jnp.asarray(step, jnp.int32),
                                _tree(grads[step]), tree, slots, opt_params)
    g64, g_norm = _clip([g.astype(np.float64) for g in grads[step]],
                        max_norm)
    w_norm = np.sqrt(sum(np.sum(w * w) for w in ref_w))
    for i, g in enumerate(g64):
      ref_w[i], ref_s[i] = ref_update(step, g, ref_w[i], ref_s[i])
    np.testing.assert_allclose(float(stats['gradients_l2']), g_norm,
                               rtol=1e-5)
    np.testing.assert_allclose(float(stats['weights_l2']), w_norm, rtol=1e-5)
    for i, (got, want) in enumerate(zip(_harness.leaves_of(tree), ref_w)):
      assert got.dtype == np.float32
      np.testing.assert_allclose(got.numpy(), want, rtol=5e-5, atol=5e-6,
                                 err_msg=f'{name}: step {step}, leaf {i}')
    for i, (got, want) in enumerate(zip(slots, ref_s)):
      got, want = fastmath.tree_leaves(got), fastmath.tree_leaves(want)
      assert len(got) == len(want)
      for j, (a, b) in enumerate(zip(got, want)):
        np.testing.assert_allclose(
            np.asarray(a), b, rtol=5e-5, atol=5e-6,
            err_msg=f'{name}: step {step}, slots of leaf {i}, entry {j}')


# -- Object state: slots, opt_params, store_slots -----------------------------
_MAKERS = {'SGD': optimizers.SGD, 'Momentum': optimizers.Momentum,
           'RMSProp': optimizers.RMSProp, 'Adam': optimizers.Adam,
           'Adafactor': optimizers.Adafactor, 'SM3': optimizers.SM3}


@pytest.mark.parametrize('name', sorted(_MAKERS))
def test_slots_are_none_until_tree_init_then_the_returned_ones(name):
  opt = _MAKERS[name]()
  assert opt.slots is None
  weights, _ = _harness.random_problem(n_steps=0)
  slots, opt_params = opt.tree_init(_tree(weights))
  assert isinstance(slots, tuple) and len(slots) == 3
  assert opt.slots is slots
  assert opt_params is opt.opt_params


@pytest.mark.parametrize('name', sorted(_MAKERS))
def test_store_slots(name):
  opt = _MAKERS[name]()
  weights, grads = _harness.random_problem(n_steps=2)
  tree = _tree(weights)
  slots, params = opt.tree_init(tree)
  # store_slots=False: a pure function, the object keeps what it had.
  _, kept, _ = opt.tree_update(0, _tree(grads[0]), tree, slots, params,
                               store_slots=False)
  assert opt.slots is slots
  assert kept is not slots and isinstance(kept, tuple)
  # Default: the returned slots are stored.
  _, stored, _ = opt.tree_update(1, _tree(grads[1]), tree, kept, params)
  assert opt.slots is stored


def test_slots_and_opt_params_are_settable():
  opt = optimizers.Adam()
  opt.slots = ('anything',)
  assert opt.slots == ('anything',)
  opt.opt_params = {'learning_rate': 0.5}
  assert opt.opt_params == {'learning_rate': 0.5}
  # A fresh tree_init starts from the opt_params now held.
  _, params = opt.tree_init((jnp.ones((2,), jnp.float32),))
  assert params == {'learning_rate': 0.5}


# Trax's constructor arguments and defaults, in order (trax/optimizers/*.py).
_SIGNATURES = {
    'SGD': [('learning_rate', 0.01), ('clip_grad_norm', None)],
    'Momentum': [('learning_rate', 0.01), ('mass', 0.9),
                 ('weight_decay_rate', 1e-5), ('nesterov', True)],
    'RMSProp': [('learning_rate', 0.001), ('gamma', 0.9), ('eps', 1e-8),
                ('clip_grad_norm', None)],
    'Adam': [('learning_rate', 0.0001), ('weight_decay_rate', 1e-5),
             ('b1', 0.9), ('b2', 0.999), ('eps', 1e-5),
             ('clip_grad_norm', None)],
    'Adafactor': [('learning_rate', 0.05), ('factored', True),
                  ('multiply_by_parameter_scale', True),
                  ('do_clipping', True), ('do_momentum', False),
                  ('momentum_in_bfloat16', False), ('beta1', 0.0),
                  ('decay_rate', 0.8), ('clipping_threshold', 1.0),
                  ('weight_decay_rate', 1e-5), ('weight_decay_n_steps', 0),
                  ('epsilon1', 1e-16), ('epsilon2', 1e-3)],
    'SM3': [('learning_rate', 0.01), ('momentum', 0.9),
            ('second_moment_averaging', 1.0), ('weight_decay', 0.0),
            ('momentum_type', MomentumType.EMA)],
}

# opt_params after construction with the defaults: keys, values, dtypes.
_OPT_PARAMS = {
    'SGD': {'learning_rate': 0.01},
    'Momentum': {'learning_rate': 0.01, 'mass': 0.9,
                 'weight_decay_rate': 1e-5},
    'RMSProp': {'learning_rate': 0.001, 'gamma': 0.9, 'eps': 1e-8},
    'Adam': {'learning_rate': 0.0001, 'weight_decay_rate': 1e-5, 'b1': 0.9,
             'b2': 0.999, 'eps': 1e-5},
    'Adafactor': {'learning_rate': 0.05, 'beta1': 0.0, 'decay_rate': 0.8,
                  'clipping_threshold': 1.0, 'weight_decay_rate': 1e-5,
                  'weight_decay_n_steps': 0, 'epsilon1': 1e-16,
                  'epsilon2': 1e-3},
    'SM3': {'learning_rate': 0.01, 'momentum': 0.9,
            'second_moment_averaging': 1.0, 'weight_decay': 0.0},
}


@pytest.mark.parametrize('name', sorted(_MAKERS))
def test_constructor_arguments_and_defaults(name):
  params = inspect.signature(_MAKERS[name]).parameters
  got = [(p.name, p.default) for p in params.values()
         if p.kind != p.VAR_KEYWORD]
  assert got == _SIGNATURES[name]
  # Only SGD (Trax's base constructor) takes further opt params as **kwargs.
  takes_kwargs = any(p.kind == p.VAR_KEYWORD for p in params.values())
  assert takes_kwargs == (name == 'SGD')


@pytest.mark.parametrize('name', sorted(_MAKERS))
def test_opt_params_keys_values_and_dtypes(name):
  params = _MAKERS[name]().opt_params
  want = _OPT_PARAMS[name]
  assert sorted(params) == sorted(want)
  for key, value in want.items():
    # Trax stores jnp.array(value): float32 for floats, int32 for ints.
    dtype = np.int32 if isinstance(value, int) else np.float32
    assert np.asarray(params[key]).dtype == dtype, key
    assert np.asarray(params[key]) == dtype(value), key


def test_clip_grad_norm_is_no_opt_param_and_only_where_trax_takes_it():
  for make in (optimizers.SGD, optimizers.RMSProp, optimizers.Adam):
    opt = make(clip_grad_norm=1.0)
    assert 'clip_grad_norm' not in opt.opt_params
    assert opt._clip_grad_norm == 1.0  # pylint: disable=protected-access
  for make in (optimizers.Momentum, optimizers.Adafactor, optimizers.SM3):
    with pytest.raises(TypeError):
      make(clip_grad_norm=1.0)


def test_sgd_keeps_extra_opt_params_with_trax_dtypes():
  opt = optimizers.SGD(0.5, flag=True, n_steps=3, rate=np.float64(0.25))
  dtypes = {k: np.asarray(v).dtype for k, v in opt.opt_params.items()}
  assert dtypes == {'learning_rate': np.float32, 'flag': np.bool_,
                    'n_steps': np.int32, 'rate': np.float32}


# -- Slot structure per weight, as Trax builds it -----------------------------
def _outline(x):
  if x is None:
    return None
  if hasattr(x, '_fields'):
    # Adafactor's named slots flatten to Trax's list, in Trax's order (an
    # absent momentum is an empty field that adds no leaf).
    return [tuple(leaf.shape) for leaf in fastmath.tree_flatten(x)]
  if isinstance(x, tuple):
    return tuple(_outline(y) for y in x)
  if isinstance(x, list):
    return [_outline(y) for y in x]
  return tuple(x.shape)


_SLOT_OUTLINES = {
    # Per leaf: (3, 4), (4,), (2, 3, 4).
    'SGD': (None, None, None),
    'Momentum': ((3, 4), (4,), (2, 3, 4)),
    'RMSProp': ((3, 4), (4,), (2, 3, 4)),
    'Adam': (((3, 4), (3, 4)), ((4,), (4,)), ((2, 3, 4), (2, 3, 4))),
    'Adafactor': ([(3,), (4,)], [(4,)], [(2, 3), (2, 4)]),
    'SM3': (((3, 4), [(3,), (4,)], []), ((4,), [(4,)], []),
            ((2, 3, 4), [(2,), (3,), (4,)], [])),
}


@pytest.mark.parametrize('name', sorted(_MAKERS))
def test_slot_structure_follows_trax(name):
  weights, _ = _harness.random_problem(n_steps=0)
  slots, _ = _MAKERS[name]().tree_init(_tree(weights))
  assert _outline(slots) == _SLOT_OUTLINES[name]


def test_optional_slots_follow_trax():
  w = (jnp.zeros((2, 3), jnp.float32),)
  # SM3 without momentum keeps [] in its place; grafting adds accumulators.
  slots, _ = optimizers.SM3(momentum=0.0,
                            second_moment_averaging=0.5).tree_init(w)
  assert _outline(slots) == (([], [(2,), (3,)], [(2,), (3,)]),)
  # Adafactor with momentum appends it (bfloat16 on request).
  slots, _ = optimizers.Adafactor(do_momentum=True,
                                  momentum_in_bfloat16=True).tree_init(w)
  assert _outline(slots) == ([(2,), (3,), (2, 3)],)
  assert slots[0][-1].dtype.name == 'bfloat16'


def test_trax_module_paths_and_helpers():
  assert base.SGD is optimizers.SGD  # Trax defines SGD in base.py.
  opt = optimizers.SGD()
  leaves = [np.arange(3.0, dtype=np.float32), np.ones((2, 2), np.float32)]
  norm = opt._l2_norm(leaves)  # pylint: disable=protected-access
  np.testing.assert_allclose(float(norm), np.sqrt(9.0), rtol=1e-6)
  tree, norm = {'a': leaves[0], 'b': (leaves[1],)}, np.sqrt(9.0)
  np.testing.assert_allclose(float(optimizers.l2_norm(tree)), norm,
                             rtol=1e-6)
  clipped = optimizers.clip_grads(tree, 1.5)
  np.testing.assert_allclose(clipped['b'][0].numpy(), leaves[1] * 1.5 / norm,
                             rtol=1e-6)
  unclipped = optimizers.clip_grads(tree, 10.0)
  np.testing.assert_allclose(unclipped['a'].numpy(), leaves[0])


def test_tree_update_returns_weights_slots_and_norms():
  opt = optimizers.Momentum()
  weights, grads = _harness.random_problem(n_steps=1)
  tree = _tree(weights)
  slots, params = opt.tree_init(tree)
  out = opt.tree_update(0, _tree(grads[0]), tree, slots, params)
  assert len(out) == 3
  new_tree, _, stats = out
  assert sorted(stats) == ['gradients_l2', 'weights_l2']
  assert isinstance(new_tree[1], list) and new_tree[0][1] == ()
