"""vmap, scan, fori_loop and cond with JAX's signatures; `after` for ordering."""

import tensorflow as tf

from tfnp_trax.fastmath import trees

__all__ = ['vmap', 'scan', 'fori_loop', 'cond', 'after']


def vmap(f, in_axes=0, out_axes=0):
  """Vectorizes `f` over a leading axis with `tf.vectorized_map`.

  Only `in_axes` of 0 (or None for broadcast arguments, given per argument
  as a tuple) and `out_axes=0` are supported.
  """
  if out_axes != 0:
    raise ValueError(f'vmap: only out_axes=0 is supported, got {out_axes}.')

  def wrapped(*args):
    axes = in_axes if isinstance(in_axes, (tuple, list)) else (in_axes,) * len(
        args)
    if len(axes) != len(args):
      raise ValueError(f'vmap: in_axes has {len(axes)} entries but the '
                       f'function got {len(args)} arguments.')
    for a in axes:
      if a not in (0, None):
        raise ValueError(f'vmap: in_axes entries must be 0 or None, got {a}.')
    mapped = tuple(a for a, ax in zip(args, axes) if ax == 0)

    def body(mapped_args):
      it = iter(mapped_args)
      full = [next(it) if ax == 0 else a for a, ax in zip(args, axes)]
      return f(*full)
    return tf.vectorized_map(body, mapped, fallback_to_while_loop=True)
  return wrapped


def scan(f, init, xs, length=None, reverse=False):
  """Loops `carry, y = f(carry, x)` over the leading axis of `xs`.

  Returns:
    `(final_carry, ys)` with ys stacked along a new leading axis.
  """
  # None leaves (e.g. xs=None with `length`) stay None at every step.
  flat_xs = [tf.convert_to_tensor(x) for x in trees.tree_leaves(xs)]
  if length is None:
    if not flat_xs:
      raise ValueError('scan: give `length` when xs is empty.')
    # A static length keeps TensorArray sizes known to XLA.
    length = flat_xs[0].shape[0]
    if length is None:
      length = tf.shape(flat_xs[0])[0]
  init = trees.nested_map(tf.convert_to_tensor, init)
  flat_init = trees.tree_flatten(init)

  # Trace f once to learn the structure of its per-step output.
  def x_at(i):
    return trees.tree_unflatten([x[i] for x in flat_xs], xs,
                                copy_from_tree=[None])[0]

  probe_carry, probe_y = f(init, x_at(0))
  flat_y_probe = [tf.convert_to_tensor(y) for y in trees.tree_flatten(probe_y)]
  tas = [tf.TensorArray(y.dtype, size=length, element_shape=y.shape)
         for y in flat_y_probe]
  del probe_carry

  def body(i, carry_flat, tas):
    idx = length - 1 - i if reverse else i
    carry = trees.tree_unflatten(carry_flat, init)[0]
    new_carry, y = f(carry, x_at(idx))
    new_flat = [tf.cast(c, o.dtype) for c, o in
                zip(trees.tree_flatten(new_carry), carry_flat)]
    tas = [ta.write(idx, tf.convert_to_tensor(v))
           for ta, v in zip(tas, trees.tree_flatten(y))]
    return i + 1, new_flat, tas

  # maximum_iterations bounds the gradient's accumulators, which XLA needs.
  _, carry_flat, tas = tf.while_loop(
      lambda i, *_: i < length, body, (tf.constant(0), flat_init, tas),
      shape_invariants=(tf.TensorShape([]),
                        [tf.TensorShape(c.shape) for c in flat_init],
                        [tf.TensorShape(None) for _ in tas]),
      maximum_iterations=length)
  ys = [ta.stack() for ta in tas]
  carry = trees.tree_unflatten(carry_flat, init)[0]
  return carry, trees.tree_unflatten(ys, probe_y)[0]


def fori_loop(lower, upper, body_fun, init_val):
  """Runs `val = body_fun(i, val)` for i in [lower, upper)."""
  init_val = trees.nested_map(tf.convert_to_tensor, init_val)
  flat_init = trees.tree_flatten(init_val)

  def body(i, flat):
    val = trees.tree_unflatten(flat, init_val)[0]
    new = body_fun(i, val)
    return i + 1, [tf.cast(n, o.dtype) for n, o in
                   zip(trees.tree_flatten(new), flat)]
  _, flat = tf.while_loop(lambda i, _: i < upper, body,
                          (tf.convert_to_tensor(lower), flat_init))
  return trees.tree_unflatten(flat, init_val)[0]


_NO_ARG = object()


def cond(pred, true_operand, true_fun=_NO_ARG, false_operand=_NO_ARG,
         false_fun=_NO_ARG, *more_operands):
  """Runs one of two functions, chosen by a scalar boolean `pred`.

  Two calling forms are accepted:
    * JAX's current form `cond(pred, true_fun, false_fun, *operands)`, with
      zero or more operands passed to the chosen function;
    * the older five-argument form
      `cond(pred, true_operand, true_fun, false_operand, false_fun)`.

  Returns:
    The output of the chosen function; both must return the same structure.
  """
  pred = tf.convert_to_tensor(pred)
  if callable(true_operand):
    t_fun, f_fun = true_operand, true_fun
    if not callable(f_fun):
      raise TypeError('cond: with a function as the second argument, the '
                      'third must be the false function: '
                      'cond(pred, true_fun, false_fun, *operands).')
    operands = tuple(a for a in (false_operand, false_fun)
                     if a is not _NO_ARG) + more_operands
    return tf.cond(pred, lambda: t_fun(*operands), lambda: f_fun(*operands))
  if (any(a is _NO_ARG for a in (true_fun, false_operand, false_fun)) or
      more_operands):
    raise TypeError('cond: expected cond(pred, true_fun, false_fun, '
                    '*operands) or cond(pred, true_operand, true_fun, '
                    'false_operand, false_fun).')
  return tf.cond(pred, lambda: true_fun(true_operand),
                 lambda: false_fun(false_operand))


def after(x, deps):
  """`x` unchanged, but computed in a graph only once `deps` are computed.

  A traced graph runs an op as soon as its inputs exist. A backward pass
  that rebuilds activations from outputs (reversible layers) would then
  rebuild every layer's activations at once, right after the forward pass,
  and hold them all until their gradients arrive. Making each rebuild wait
  for its layer's incoming gradient keeps one layer's activations alive at
  a time. Eagerly, ops already run in program order and this is the
  identity.

  Args:
    x: a tensor or a tree of tensors.
    deps: a tensor or a tree of tensors (None leaves are ignored).

  Returns:
    `x`, as identities that depend on `deps`.
  """
  if tf.executing_eagerly():
    return x
  flat = [d for d in tf.nest.flatten(deps) if d is not None]
  if not flat:
    return x
  with tf.control_dependencies([tf.convert_to_tensor(d) for d in flat]):
    return tf.nest.map_structure(
        lambda t: t if t is None else tf.identity(t), x)
