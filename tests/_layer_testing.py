"""Shared helpers for testing layers and functions in every execution mode.

Import it as `from tests import _layer_testing as lt`.

Execution modes. Users run tfnp_trax code eagerly, under `tf.function`
(`fastmath.jit`) and under XLA (`fastmath.jit(..., jit_compile=True)`), and
the three can disagree (shapes known only at trace time, ops XLA lowers
differently, random streams XLA draws differently). Tests parametrize over
`MODES` and wrap the code under test with `compile_fn(f, mode)`;
`run_layer` does this for a layer's `pure_fn`.

Layer checks against NumPy. `check_layer` initializes a layer, optionally
sets its weights, and compares its outputs and the gradients of
`sum(outputs * ct)` (for a random cotangent `ct`, with respect to the float
inputs and every weight) with a float64 NumPy reference function, in each
mode. The reference gradients are central finite differences of that NumPy
function (`numeric_grad`), so they share no code with the layer.
`check_parallel` checks many small layers in one compiled program, and
`check_bfloat16` checks that bfloat16 inputs stay bfloat16.

Lower-level pieces for tests that build their own comparison:
`forward_and_grads` (the layer side, by autodiff), `numeric_grads` (the NumPy
side), `assert_close`, and the converters `to_tensors`, `to_numpy64` and
`leaves`.
"""

import numpy as np
import tensorflow as tf

from tfnp_trax import fastmath
from tfnp_trax import layers as tl
from tfnp_trax import shapes
from tfnp_trax.fastmath import numpy as jnp

__all__ = ['MODES', 'compile_fn', 'run_layer', 'layer_outputs',
           'to_numpy64', 'to_tensors', 'leaves', 'random', 'init_layer',
           'initialized', 'numeric_grad', 'numeric_grads',
           'forward_and_grads', 'assert_close', 'check_layer',
           'check_parallel', 'check_bfloat16']

MODES = ('eager', 'jit', 'xla')


# -- Running in a mode ---------------------------------------------------------


def compile_fn(f, mode):
  """`f` itself, or `f` compiled by `fastmath.jit` (with XLA for 'xla')."""
  if mode == 'eager':
    return f
  return fastmath.jit(f, jit_compile=(mode == 'xla'))


def run_layer(layer, x, mode, weights=None, state=None, rng=None):
  """Runs the initialized `layer.pure_fn` in `mode`.

  Args:
    layer: an initialized layer.
    x: its inputs.
    mode: one of `MODES`.
    weights: weights to use instead of `layer.weights`.
    state: state to use instead of `layer.state`.
    rng: key to use instead of `fastmath.random.get_prng(0)`.

  Returns:
    `(outputs, new_state)`.
  """
  weights = layer.weights if weights is None else weights
  state = layer.state if state is None else state
  rng = fastmath.random.get_prng(0) if rng is None else rng

  def apply(xs, w, s, r):
    return layer.pure_fn(xs, w, s, r)
  return compile_fn(apply, mode)(x, weights, state, rng)


def layer_outputs(layer, inputs, mode='eager', weights=None, seed=1):
  """Like `run_layer`, but with a key from `seed`; returns only the outputs."""
  return run_layer(layer, inputs, mode, weights=weights,
                   rng=fastmath.random.get_prng(seed))[0]


# -- Converting and making arrays ----------------------------------------------


def _is_float(a):
  return np.issubdtype(np.asarray(a).dtype, np.floating)


def to_numpy64(tree):
  """Float leaves as float64 NumPy arrays; other leaves as NumPy arrays."""
  def conv(t):
    a = np.asarray(t.numpy() if hasattr(t, 'numpy') else t)
    if a.dtype.name == 'bfloat16' or _is_float(a):
      return a.astype(np.float64)
    return a
  return fastmath.nested_map(conv, tree)


def to_tensors(tree, dtype=np.float32):
  """Float leaves as `dtype` tensors; integer leaves keep their dtype."""
  def conv(a):
    a = np.asarray(a)
    return jnp.asarray(a.astype(dtype) if _is_float(a) else a)
  return fastmath.nested_map(conv, tree)


def leaves(tree):
  """The array leaves of a weight tree, in order, as NumPy arrays."""
  return [np.asarray(t) for t in fastmath.tree_leaves(tree)]


def random(rng, *shape, scale=1.0):
  """Float32 normal samples of `shape` from the NumPy generator `rng`."""
  return (rng.normal(size=shape) * scale).astype(np.float32)


# -- Initializing --------------------------------------------------------------


def init_layer(layer, inputs, weights=None, seed=0):
  """Inits `layer` for `inputs` (and sets float32 `weights` if given).

  Returns:
    `(layer.weights, layer.state)`.
  """
  layer.init(shapes.signature(inputs), rng=fastmath.random.get_prng(seed))
  if weights is not None:
    layer.weights = to_tensors(weights)
  return layer.weights, layer.state


def initialized(layer, *arrays):
  """Inits `layer` (default key) for inputs shaped like `arrays`; returns it."""
  layer.init(shapes.signature(arrays[0] if len(arrays) == 1 else arrays))
  return layer


# -- Gradients -----------------------------------------------------------------


def _as_list(x):
  return list(x) if isinstance(x, (list, tuple)) else [x]


def numeric_grad(f, args, eps=1e-6):
  """Central differences of scalar `f(*args)` wrt each float array in `args`.

  Returns:
    A list with one float64 gradient array per arg (None for non-float args).
  """
  args = [np.array(a, dtype=np.float64) if _is_float(a) else np.asarray(a)
          for a in args]
  grads = []
  for a in args:
    if not _is_float(a):
      grads.append(None)
      continue
    g = np.zeros_like(a)
    for idx in np.ndindex(a.shape):
      old = a[idx]
      a[idx] = old + eps
      hi = f(*args)
      a[idx] = old - eps
      lo = f(*args)
      a[idx] = old
      g[idx] = (hi - lo) / (2 * eps)
    grads.append(g)
  return grads


def numeric_grads(f, args, ct, eps=1e-6):
  """Central differences of sum(f(*args) * ct) wrt each of `args`.

  Args:
    f: float64 NumPy function of `args`; returns an array or a list of them.
    args: float arrays.
    ct: cotangent(s) with the shape(s) of `f`'s output(s).
    eps: finite-difference step.

  Returns:
    A list with one float64 gradient array per arg.
  """
  cts = [np.asarray(c, np.float64) for c in _as_list(ct)]

  def objective(*values):
    return sum(float(np.sum(o * c))
               for o, c in zip(_as_list(f(*values)), cts))
  return numeric_grad(objective, [np.asarray(a, np.float64) for a in args],
                      eps)


def forward_and_grads(layer, x, weights, state, ct, mode, rng=None):
  """Runs `layer` in `mode` and differentiates loss sum(y * ct) by autodiff.

  Returns:
    `(y, new_state, grad_x, grad_weights)`.
  """
  rng = rng if rng is not None else fastmath.random.get_prng(0)
  cts = [jnp.asarray(c) for c in _as_list(ct)]

  def loss(xx, ww):
    y, new_state = layer.pure_fn(xx, ww, state, rng)
    total = sum(jnp.sum(yi * ci.astype(yi.dtype))
                for yi, ci in zip(_as_list(y), cts))
    return total, (y, new_state)

  value_and_grad = fastmath.value_and_grad(loss, argnums=(0, 1), has_aux=True)

  def run(xx, ww):
    (_, (y, new_state)), (gx, gw) = value_and_grad(xx, ww)
    return y, new_state, gx, gw
  return compile_fn(run, mode)(x, weights)


def assert_close(got, want, rtol=1e-4, atol=1e-5, err_msg=''):
  """Item-wise `assert_allclose` of arrays or lists of arrays, in float64."""
  got = [np.asarray(g, np.float64) for g in _as_list(got)]
  want = [np.asarray(w, np.float64) for w in _as_list(want)]
  assert len(got) == len(want), (len(got), len(want), err_msg)
  for i, (g, w) in enumerate(zip(got, want)):
    assert g.shape == w.shape, (i, g.shape, w.shape, err_msg)
    np.testing.assert_allclose(g, w, rtol=rtol, atol=atol,
                               err_msg=f'{err_msg} (item {i})')


# -- Whole-layer checks --------------------------------------------------------


def _flat(tree):
  return list(fastmath.tree_flatten(tree))


def _reference(numpy_fn, x64, w64, check_grad):
  """Reference outputs, cotangents and finite-difference gradients.

  Returns:
    `(outputs, cts, x_grads, w_grads)`: flat lists, the gradients of
    sum(outputs * cts) wrt the flat input and weight leaves (None for
    integer leaves, or empty lists without `check_grad`).
  """
  outputs = [np.asarray(e, np.float64) for e in _flat(numpy_fn(x64, w64))]
  rng = np.random.default_rng(7)
  cts = [rng.normal(size=e.shape) for e in outputs]
  if not check_grad:
    return outputs, cts, [], []
  x_leaves, w_leaves = _flat(x64), _flat(w64)

  def ref_loss(*flat_leaves):
    xs, _ = fastmath.tree_unflatten(list(flat_leaves[:len(x_leaves)]), x64)
    ws, _ = fastmath.tree_unflatten(list(flat_leaves[len(x_leaves):]), w64)
    outs = _flat(numpy_fn(xs, ws))
    return sum(float(np.sum(np.asarray(o) * c)) for o, c in zip(outs, cts))
  grads = numeric_grad(ref_loss, x_leaves + w_leaves)
  return outputs, cts, grads[:len(x_leaves)], grads[len(x_leaves):]


def _compare(layer, inputs, reference, modes, rtol, atol, grad_rtol,
             grad_atol):
  """Runs the initialized `layer` in each mode and compares to `reference`."""
  expected, cts, x_grads, w_grads = reference
  check_grad = bool(x_grads or w_grads)
  state, key = layer.state, fastmath.random.get_prng(1)

  def apply(x, w):
    return layer.pure_fn(x, w, state, key)[0]

  def apply_and_vjp(x, w):
    y, vjp_fn = fastmath.vjp(apply, x, w)
    ct, _ = fastmath.tree_unflatten(
        [jnp.asarray(c.astype(np.float32)) for c in cts], y)
    # Gathers give IndexedSlices gradients; compare them densely.
    return y, fastmath.nested_map(tf.convert_to_tensor, vjp_fn(ct))

  for mode in modes:
    fn = apply_and_vjp if check_grad else apply
    result = compile_fn(fn, mode)(inputs, layer.weights)
    outputs, grads = result if check_grad else (result, None)
    out_flat = _flat(outputs)
    assert len(out_flat) == len(expected), (layer.name, mode)
    for got, want in zip(out_flat, expected):
      np.testing.assert_allclose(
          np.asarray(got, np.float64), want, rtol=rtol, atol=atol,
          err_msg=f'{layer.name}: {mode} forward')
    if not check_grad:
      continue
    got_grads = _flat(grads[0]) + _flat(grads[1])
    for i, (got, want) in enumerate(zip(got_grads, x_grads + w_grads)):
      if want is None:
        continue
      np.testing.assert_allclose(
          np.asarray(got, np.float64), want, rtol=grad_rtol, atol=grad_atol,
          err_msg=f'{layer.name}: {mode} gradient of leaf {i}')


def check_layer(layer, inputs, numpy_fn, weights=None, rtol=1e-5, atol=1e-5,
                check_grad=True, grad_rtol=1e-4, grad_atol=1e-4,
                modes=MODES, seed=0):
  """Checks `layer` against `numpy_fn(inputs64, weights64)` in every mode.

  Args:
    layer: an uninitialized layer.
    inputs: NumPy inputs (an array or a tuple); floats are fed as float32.
    numpy_fn: float64 reference `(inputs, weights) -> outputs`, both with
      the layer's tree structure.
    weights: optional weights to set after init (NumPy, any float dtype).
    rtol: forward relative tolerance.
    atol: forward absolute tolerance.
    check_grad: also compare gradients of sum(outputs * ct) for a random
      cotangent ct, wrt float inputs and every weight.
    grad_rtol: gradient relative tolerance.
    grad_atol: gradient absolute tolerance.
    modes: subset of MODES to run.
    seed: init key seed.

  Returns:
    The layer's weights.
  """
  inputs_t = to_tensors(inputs)
  init_layer(layer, inputs_t, weights, seed)
  reference = _reference(numpy_fn, to_numpy64(inputs_t),
                         to_numpy64(layer.weights), check_grad)
  _compare(layer, inputs_t, reference, modes, rtol, atol, grad_rtol,
           grad_atol)
  return layer.weights


def check_parallel(cases, modes=('jit', 'xla'), rtol=1e-5, atol=1e-5,
                   grad_rtol=1e-4, grad_atol=1e-4):
  """Checks several layers in one compiled program (one trace per mode).

  Compiling each small layer separately dominates test time; running them
  side by side in a `Parallel` checks the same numbers at a fraction of it.
  Outputs and gradients are checked as in `check_layer`.

  Args:
    cases: a list of `(layer, inputs, numpy_fn)` or
      `(layer, inputs, numpy_fn, weights)` tuples, as for `check_layer`;
      each layer must take one input and give one output.
    modes: subset of MODES to run.
    rtol: forward relative tolerance.
    atol: forward absolute tolerance.
    grad_rtol: gradient relative tolerance.
    grad_atol: gradient absolute tolerance.
  """
  cases = [tuple(c) + (None,) * (4 - len(c)) for c in cases]
  layer = tl.Parallel(*[c[0] for c in cases])
  inputs = to_tensors(tuple(c[1] for c in cases))
  init_layer(layer, inputs)
  layer.weights = tuple(w if c[3] is None else to_tensors(c[3])
                        for c, w in zip(cases, layer.weights))
  # Each case's reference is computed on its own, so finite differences do
  # not re-run every other case's reference.
  refs = [_reference(c[2], to_numpy64(x), to_numpy64(w), True)
          for c, x, w in zip(cases, inputs, layer.weights)]
  reference = tuple(sum((list(r[i]) for r in refs), []) for i in range(4))
  _compare(layer, inputs, reference, modes, rtol, atol, grad_rtol, grad_atol)


def check_bfloat16(layer, inputs, rtol=0.05, atol=0.05, modes=MODES):
  """bfloat16 inputs give bfloat16 outputs close to the float32 ones."""
  inputs32 = to_tensors(inputs)
  init_layer(layer, inputs32)
  want = _flat(layer_outputs(layer, inputs32))
  inputs16 = fastmath.nested_map(
      lambda t: t.astype('bfloat16') if fastmath.is_float(t) else t, inputs32)
  for mode in modes:
    got = _flat(layer_outputs(layer, inputs16, mode))
    for g, w in zip(got, want):
      assert g.dtype.name == 'bfloat16', (layer.name, mode, g.dtype)
      np.testing.assert_allclose(np.asarray(g.astype('float32')),
                                 np.asarray(w), rtol=rtol, atol=atol,
                                 err_msg=f'{layer.name}: {mode} bfloat16')
