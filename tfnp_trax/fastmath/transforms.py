"""Function transforms: jit, grad, value_and_grad, vjp and custom gradients.

These give JAX's signatures on top of `tf.function` and `tf.GradientTape`.
Arguments may be nested tuples/lists/dicts of arrays (weight trees).
"""

import functools

import tensorflow as tf

from tfnp_trax.fastmath import trees

__all__ = ['jit', 'grad', 'value_and_grad', 'vjp', 'custom_grad',
           'custom_vjp', 'stop_gradient', 'in_xla', 'recompute_grad']


def in_xla():
  """Whether the code being traced now will be compiled by XLA.

  True inside a `jit_compile=True` function (or one nested in it), so code
  can choose the form XLA compiles best; False eagerly and in plain graphs.
  """
  try:
    from tensorflow.python.framework import ops  # pylint: disable=g-import-not-at-top
    from tensorflow.python.ops import control_flow_util  # pylint: disable=g-import-not-at-top
    return bool(control_flow_util.GraphOrParentsInXlaContext(
        ops.get_default_graph()))
  except (ImportError, AttributeError):
    return False


def stop_gradient(x):
  """Identity whose gradient is zero; maps over trees."""
  return trees.nested_map(tf.stop_gradient, x)


def _hashable(x):
  try:
    hash(x)
    return x
  except TypeError:
    return ('__id__', id(x))


def jit(f=None, static_argnums=(), jit_compile=None, donate_argnums=()):
  """Compiles `f` with `tf.function`, optionally with XLA.

  Calls with the same shapes and dtypes reuse one trace. Arguments named by
  `static_argnums` are Python values baked into the trace: each distinct value
  gets its own trace. Unlike JAX, plain Python numbers passed to the compiled
  function are static too (TensorFlow's rule), so pass values that change
  from call to call, such as a training step, as arrays.

  Args:
    f: the function to compile.
    static_argnums: int or tuple of positional indices treated as static.
    jit_compile: True forces XLA, False forbids it, None lets TF decide.
    donate_argnums: accepted for JAX compatibility and ignored.

  Returns:
    The compiled function.
  """
  del donate_argnums
  if f is None:
    return functools.partial(jit, static_argnums=static_argnums,
                             jit_compile=jit_compile)
  if isinstance(static_argnums, int):
    static_argnums = (static_argnums,)
  static_argnums = tuple(sorted(static_argnums))
  if not static_argnums:
    return tf.function(f, jit_compile=jit_compile, autograph=False,
                       reduce_retracing=False)

  compiled = {}

  @functools.wraps(f)
  def wrapper(*args, **kwargs):
    statics = tuple(_hashable(args[i]) for i in static_argnums)
    if statics not in compiled:
      static_vals = {i: args[i] for i in static_argnums}

      def dynamic_f(*dyn_args, **kw):
        it = iter(dyn_args)
        full = [static_vals[i] if i in static_vals else next(it)
                for i in range(len(dyn_args) + len(static_vals))]
        return f(*full, **kw)
      compiled[statics] = tf.function(dynamic_f, jit_compile=jit_compile,
                                      autograph=False)
    dyn = [a for i, a in enumerate(args) if i not in static_argnums]
    return compiled[statics](*dyn, **kwargs)
  return wrapper


def _to_tensors(tree):
  return trees.nested_map(tf.convert_to_tensor, tree)


def _dense_grad(g, p):
  # Unconnected inputs get zeros, and gather-based gradients (IndexedSlices,
  # e.g. from an embedding lookup) become dense arrays, as in JAX.
  if g is None:
    return tf.zeros_like(p)
  if isinstance(g, tf.IndexedSlices):
    return tf.convert_to_tensor(g)
  return g


def _zeros_for_none(grads, primals):
  return trees.nested_map_multiarg(_dense_grad, grads, primals,
                                   ignore_nones=False)


def value_and_grad(f, argnums=0, has_aux=False):
  """Returns a function computing `f` and its gradient wrt `argnums`.

  Args:
    f: a function returning a scalar (or `(scalar, aux)` if `has_aux`).
    argnums: int or tuple of ints, positions of the differentiated args.
    has_aux: whether `f` returns a pair whose second element is auxiliary.

  Returns:
    A function returning `(value, grads)`, or `((value, aux), grads)`. Grads
    has the structure of the selected argument, or a tuple of them.
  """
  single = isinstance(argnums, int)
  nums = (argnums,) if single else tuple(argnums)

  def wrapped(*args, **kwargs):
    args = list(args)
    for i in nums:
      if i >= len(args):
        raise ValueError(f'grad: argnums {nums} refers to positional argument '
                         f'{i}, but the function was called with {len(args)}.')
      args[i] = _to_tensors(args[i])
    with tf.GradientTape(watch_accessed_variables=False) as tape:
      for i in nums:
        tape.watch(trees.tree_leaves(args[i]))
      out = f(*args, **kwargs)
      value = out[0] if has_aux else out
    diff_args = tuple(args[i] for i in nums)
    grads = tape.gradient(value, diff_args,
                          unconnected_gradients=tf.UnconnectedGradients.ZERO)
    grads = _zeros_for_none(grads, diff_args)
    return out, (grads[0] if single else tuple(grads))
  return wrapped


def grad(f, argnums=0, has_aux=False):
  """Returns a function computing the gradient of scalar `f`."""
  vg = value_and_grad(f, argnums=argnums, has_aux=has_aux)

  def wrapped(*args, **kwargs):
    out, g = vg(*args, **kwargs)
    return (g, out[1]) if has_aux else g
  return wrapped


def vjp(f, *primals, has_aux=False):
  """Evaluates `f(*primals)` and returns its vector-Jacobian product function.

  Returns:
    `(out, vjp_fn)` (plus `aux` if `has_aux`); `vjp_fn(ct)` returns a tuple
    with one cotangent per primal.
  """
  primals = tuple(_to_tensors(p) for p in primals)
  with tf.GradientTape(persistent=True,
                       watch_accessed_variables=False) as tape:
    tape.watch(trees.tree_leaves(primals))
    res = f(*primals)
    out, aux = (res if has_aux else (res, None))

  def vjp_fn(ct):
    g = tape.gradient(out, primals, output_gradients=ct,
                      unconnected_gradients=tf.UnconnectedGradients.ZERO)
    return tuple(_zeros_for_none(g, primals))
  return (out, vjp_fn, aux) if has_aux else (out, vjp_fn)


def custom_vjp(f, f_fwd, f_bwd, nondiff_argnums=()):
  """Attaches a custom backward pass to `f`, with JAX's custom_vjp contract.

  Args:
    f: the primal function `f(*args) -> out`; its forward is taken from f_fwd.
    f_fwd: `f_fwd(*args) -> (out, residual)`.
    f_bwd: `f_bwd(*nondiff_args, residual, grad_out) -> tuple of grads, one
      per differentiable argument` (nondiff_args as in JAX: the arguments
      named by `nondiff_argnums`, in order).
    nondiff_argnums: positions of arguments that get no gradient.

  Returns:
    A function computing `f` whose gradient is given by `f_bwd`.
  """
  del f
  if isinstance(nondiff_argnums, int):
    nondiff_argnums = (nondiff_argnums,)
  nondiff_argnums = tuple(sorted(nondiff_argnums))

  def wrapped(*args):
    diff_pos = [i for i in range(len(args)) if i not in nondiff_argnums]
    nondiff_args = tuple(args[i] for i in nondiff_argnums)

    def f_vjp(*diff_args):
      full = list(args)
      for pos, val in zip(diff_pos, diff_args):
        full[pos] = val
      out, residual = f_fwd(*full)
      return out, lambda g: f_bwd(*nondiff_args, residual, g)
    return custom_grad(f_vjp, None)(*[args[i] for i in diff_pos])
  return wrapped


def custom_grad(f_vjp, f_original):
  """Trax's `custom_grad`: `f_vjp(*args) -> (out, vjp_fn)` defines the grad.

  Args:
    f_vjp: returns the output and a function from output cotangent to a
      tuple of input cotangents.
    f_original: the plain function (used for its forward semantics only).

  Returns:
    A function with the forward of `f_vjp` and its custom gradient.
  """
  del f_original

  def wrapped(*args):
    flat_args = [tf.convert_to_tensor(x) for x in trees.tree_flatten(args)]
    holder = {}

    @tf.custom_gradient
    def inner(*flat_in):
      rebuilt, _ = trees.tree_unflatten(list(flat_in), args)
      out, vjp_fn = f_vjp(*rebuilt)
      holder['out'] = out

      def grad_fn(*grad_out):
        g_out, _ = trees.tree_unflatten(list(grad_out), out)
        grads = vjp_fn(g_out)
        grads = _zeros_for_none(tuple(grads), tuple(rebuilt))
        return [tf.convert_to_tensor(g) for g in trees.tree_flatten(grads)]
      # Fresh tensors: tf.custom_gradient refuses outputs that a cond
      # branch passes through unchanged from the enclosing graph.
      return [tf.identity(t) for t in trees.tree_flatten(out)], grad_fn

    flat_out = inner(*flat_args)
    return trees.tree_unflatten(list(flat_out), holder['out'])[0]
  return wrapped


def recompute_grad(fn):
  """`fn` over trees of tensors, recomputed in the backward pass.

  The returned function computes `fn(*trees)`, but keeps none of `fn`'s
  intermediate values for the gradient: the backward pass runs `fn` again.
  Memory for the gradient then holds only the inputs and outputs.
  `tf.recompute_grad` differentiates only with respect to its explicit
  arguments, so every leaf of `trees` is passed to it as one flat list;
  values captured by `fn` from outside (a key, say) are treated as
  constants.

  Args:
    fn: a function of trees of tensors returning a tree of tensors.

  Returns:
    A function of the same trees with the same values and gradients.
  """
  def wrapped(*args):
    flats = [trees.tree_flatten(t) for t in args]
    sizes = [len(f) for f in flats]
    out_tree, out_leaves = [], []

    def run(*flat):
      parts, start = [], 0
      for tree, size in zip(args, sizes):
        parts.append(trees.tree_unflatten(list(flat[start:start + size]),
                                          tree)[0])
        start += size
      result = fn(*parts)
      leaves = [tf.convert_to_tensor(v) for v in trees.tree_flatten(result)]
      out_tree[:], out_leaves[:] = [result], leaves
      # Only differentiable outputs go back through tf.recompute_grad: in a
      # graph, an integer output's incoming gradient is None, which its
      # backward pass cannot take.
      return [v for v in leaves if v.dtype.is_floating or v.dtype.is_complex]

    diff_out = iter(tf.recompute_grad(run)(*[tf.convert_to_tensor(v)
                                             for f in flats for v in f]))
    flat_out = [next(diff_out) if v.dtype.is_floating or v.dtype.is_complex
                else v for v in out_leaves]
    return trees.tree_unflatten(flat_out, out_tree[0])[0]
  return wrapped
