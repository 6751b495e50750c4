"""The Optimizer base class (per-weight `init`/`update` over weight trees), SGD.

A subclass says what happens to one weight array: `init(weights)` builds its
slots and `update(step, grads, weights, slots, opt_params)` returns new
weights and slots. `tree_init` and `tree_update` apply these to every leaf of
a model's (nested tuple) weight tree, add global-norm gradient clipping and
report gradient and weight norms. Everything is pure and traceable:
hyperparameters travel in the `opt_params` dict of scalars (cast to float32
for the update), so a learning-rate schedule can change them every step
without retracing.

An optimizer whose update TensorFlow runs as fused kernels on the variables
themselves (Adam, and SGD here) also writes them in place:
`supports_in_place` says whether it can for given variables, and
`apply_in_place` updates them, with the same norms, read ordering and
clipping as `tree_update` (`_norms_and_clipping`, their one home). A trainer
asks the optimizer, never its class.

The object's public state follows Trax: `opt.slots` is None until
`tree_init`, then holds the latest slots (`tree_update` refreshes it unless
`store_slots=False`); `opt.opt_params` is the dict of initial
hyperparameters, `learning_rate` included, keyed by the constructor's
argument names. Each slot entry has the structure Trax's optimizer gives it
(None for SGD, one array for Momentum and RMSProp, `(m, v)` for Adam, a list
for Adafactor, `(momentum, accumulators, graft_accumulators)` for SM3).
"""

from tfnp_trax import debug
from tfnp_trax import fastmath
from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.optimizers import _trees
from tfnp_trax.optimizers import validation

__all__ = ['Optimizer', 'SGD', 'l2_norm', 'clip_grads', 'sgd_update',
           'float32_variables']


def l2_norm(tree):
  """The L2 norm of all elements of all arrays in `tree`, as a scalar.

  float32, or float64 if any array is float64; bfloat16 and float16 arrays
  are summed in float32.
  """
  return jnp.sqrt(fastmath.sums_of_squares([fastmath.tree_flatten(tree)])[0])


def clip_grads(grad_tree, max_norm, norm=None):
  """Scales `grad_tree` by `max_norm / max(norm, max_norm)` (global norm).

  Args:
    grad_tree: a tree of gradient arrays.
    max_norm: the largest global L2 norm allowed.
    norm: the global norm of `grad_tree` if already computed (default:
      computed here).
  """
  norm = l2_norm(grad_tree) if norm is None else norm
  scale = max_norm / jnp.maximum(norm, max_norm)
  return fastmath.nested_map(lambda g: g * scale.astype(g.dtype), grad_tree)


def _initial_params(opt_params):
  """Opt params as Trax stores them: float32, int32 or bool arrays.

  Trax keeps `jnp.array(value)`, which (64-bit types off) makes floats
  float32, integers int32 and bools bool; `tree_update` computes in float32
  whatever the stored dtype.
  """
  def convert(value):
    if not (isinstance(value, (bool, int, float)) or hasattr(value, 'dtype')):
      return value  # Non-numeric extras pass through untouched.
    x = jnp.asarray(value)
    if x.dtype.is_bool:
      return x
    return x.astype(jnp.int32 if x.dtype.is_integer else jnp.float32)
  return {name: convert(value) for name, value in opt_params.items()}


def _float32_params(opt_params):
  """Numeric opt params as float32, so no value silently widens the math."""
  def convert(value):
    if isinstance(value, (int, float)) or hasattr(value, 'dtype'):
      return jnp.asarray(value, dtype=jnp.float32)
    return value  # Non-numeric extras pass through untouched.
  return {name: convert(value) for name, value in opt_params.items()}


class Optimizer:
  """Base class of optimizers acting on Trax weight trees.

  Subclasses implement `init` and `update` for a single weight array; this
  class assembles them over a whole tree.

  Example:

  >>> from tfnp_trax import optimizers
  >>> opt = optimizers.SGD(learning_rate=0.5)
  >>> weights = (jnp.ones((2,), jnp.float32), ())
  >>> slots, opt_params = opt.tree_init(weights)
  >>> grads = (jnp.ones((2,), jnp.float32), ())
  >>> new_weights, slots, stats = opt.tree_update(0, grads, weights, slots,
  ...                                             opt_params)
  >>> new_weights[0].numpy().tolist(), new_weights[1]
  ([0.5, 0.5], ())
  """

  def __init__(self, learning_rate=0.01, clip_grad_norm=None,
               **init_opt_params):
    """Sets the initial hyperparameters.

    Args:
      learning_rate: the initial learning rate; a schedule may change it
        between steps through `opt_params['learning_rate']`.
      clip_grad_norm: if not None, gradients are rescaled so that the global
        L2 norm of the whole gradient tree is at most this value.
      **init_opt_params: initial values of further hyperparameters; each
        becomes a scalar array in `opt_params`, float32 for floats, int32
        for integers, bool for bools (Trax's dtypes).
    """
    if isinstance(learning_rate, bool) or not (
        isinstance(learning_rate, (int, float)) or
        hasattr(learning_rate, 'dtype')):
      raise validation.HyperparameterTypeError(
          f'{type(self).__name__}: learning_rate must be a number, got '
          f'{learning_rate!r} ({type(learning_rate).__name__}). A schedule '
          f'(step -> rate) goes to TrainTask(lr_schedule=...), not to the '
          f'optimizer.')
    # A gin binding of the wrong type (`Adam.b1 = "high"`) fails here, not
    # in the first update.
    validation.check_numbers(
        type(self), dict(init_opt_params, clip_grad_norm=clip_grad_norm),
        optional=('clip_grad_norm',))
    init_opt_params['learning_rate'] = learning_rate
    self._init_opt_params = _initial_params(init_opt_params)
    self._slots = None
    # Clipping needs the norm of the whole tree, so it lives here rather
    # than in the per-weight `update`.
    self._clip_grad_norm = clip_grad_norm

  def init(self, weights):
    """Returns the slots for one weight array (float32 for low precision)."""
    raise NotImplementedError

  def update(self, step, grads, weights, slots, opt_params):
    """Returns `(new_weights, new_slots)` for one weight array.

    Args:
      step: the 0-based training step (int or float, Python or tensor).
      grads: the gradient of the loss with respect to `weights`.
      weights: the current weight array.
      slots: this weight's slots, as built by `init`.
      opt_params: dict of hyperparameters (scalars; float32 inside
        `tree_update`).
    """
    raise NotImplementedError

  @property
  def slots(self):
    return self._slots

  @slots.setter
  def slots(self, slots):
    self._slots = slots

  @property
  def opt_params(self):
    return self._init_opt_params

  @opt_params.setter
  def opt_params(self, opt_params):
    self._init_opt_params = opt_params

  def _l2_norm(self, flat_list):
    """The global L2 norm of a flat list of arrays (Trax's private helper)."""
    return l2_norm(list(flat_list))

  def tree_init(self, weight_tree):
    """Returns `(slots, opt_params)` for a whole weight tree.

    Args:
      weight_tree: a model's weights; nested tuples, lists or dicts whose
        leaves are arrays (empty tuples stand for layers without weights).

    Returns:
      `slots`, a tuple with one entry per weight leaf (in flatten order),
      which is also stored in `self.slots`, and `opt_params`, the dict
      `self.opt_params` of scalar hyperparameters.
    """
    self._slots = tuple(self.init(_trees.to_compute(w))
                        for w in fastmath.tree_flatten(weight_tree))
    return self._slots, self._init_opt_params

  def tree_update(self, step, grad_tree, weight_tree, slots, opt_params,
                  store_slots=True):
    """Updates a whole weight tree; pure apart from `store_slots`.

    Args:
      step: the 0-based training step; pass a tensor inside `fastmath.jit`
        so that steps do not retrace.
      grad_tree: gradients, with the structure and shapes of `weight_tree`.
      weight_tree: the current weights.
      slots: slots from `tree_init` or a previous `tree_update`.
      opt_params: hyperparameters, e.g. from `tree_init`.
      store_slots: if True, also keep the new slots in `self.slots`; pass
        False inside traced code so no symbolic tensors leak out.

    Returns:
      `(new_weights, new_slots, stats)`; `stats` has `gradients_l2` (global
      norm of the gradients before clipping) and `weights_l2` (global norm
      of the weights passed in, before this update).

    Raises:
      ValueError: if the gradients or slots do not match the weights.
    """
    name = f'{type(self).__name__}.tree_update'
    weights_flat = fastmath.tree_flatten(weight_tree)
    grads_flat = fastmath.tree_flatten(grad_tree)
    _trees.check_grads_match(name, grads_flat, weights_flat, weight_tree)
    _trees.check_slots_match(name, slots, weights_flat)
    debug.check_tree_finite(name, 'gradients', grads_flat)  # Debug mode only.
    opt_params = _float32_params(opt_params)

    grads_flat = [_trees.to_compute(g, like=w)
                  for g, w in zip(grads_flat, weights_flat)]
    grads_flat, ordered, stats = self._norms_and_clipping(
        grads_flat, weights_flat, in_place=False)

    new_weights_flat, new_slots = [], []
    for g, w, s in zip(grads_flat, ordered, slots):
      w = jnp.asarray(w)
      new_w, new_s = self.update(step, g, _trees.to_compute(w), s, opt_params)
      new_weights_flat.append(new_w.astype(w.dtype))
      new_slots.append(new_s)
    new_weights, _ = fastmath.tree_unflatten(new_weights_flat, weight_tree)
    new_slots = tuple(new_slots)
    if store_slots:
      self._slots = new_slots
    return new_weights, new_slots, stats

  def _norms_and_clipping(self, grads_flat, weights_flat, in_place):
    """The update's gradient and weight norms, read order and clipping.

    The one home of what every update does before its per-weight math, for
    both `tree_update` and `apply_in_place`.

    Args:
      grads_flat: the gradients, one per weight, in compute dtypes.
      weights_flat: the weights before the update (arrays).
      in_place: whether the caller writes variables in place (no XLA) or
        computes new arrays (possibly under XLA); each orders the reads its
        own way (below).

    Returns:
      `(grads, weights, stats)`: the gradients to apply (clipped when
      `clip_grad_norm` is set), the weights to update from, and `{
      'gradients_l2': norm before clipping, 'weights_l2': norm of the
      weights passed in}`.
    """
    if in_place:
      # One sum of squares per weight, so that each in-place write need
      # wait only for the read of its own weight. Each gradient is used
      # once every gradient exists (after the whole backward pass, so no
      # update competes with the backward matmuls for the cores) and once
      # its weight's sum of squares has read the old value (so TensorFlow
      # need not copy the weight before writing it: it does while an
      # earlier read is pending). The gradient norm and the rest of the
      # weight norm run beside the updates, off the critical path. Against
      # waiting for both whole norms: MLP +2.7%, LM +3.2% (bench/README.md).
      weight_squares = fastmath.sums_of_squares([[w] for w in weights_flat])
      (grads_squares,) = fastmath.sums_of_squares([grads_flat])
      weights_squares = fastmath.in_place.add_n(weight_squares)
      grads_flat = [fastmath.after(g, grads_flat + [square])
                    for g, square in zip(grads_flat, weight_squares)]
    else:
      # Under XLA (elsewhere `ordered_after` returns its input): the weights
      # are read for their norm only after every gradient exists, so after
      # the backward pass's reads of them (scheduled beside the forward
      # matmuls, the MLP's weight norm took 166 us on one thread, against
      # 65 us over both once ordered), and for the update only after the
      # norm has read them. XLA can then write the new weights over the old
      # in place instead of copying them first.
      (grads_squares,) = fastmath.sums_of_squares([grads_flat])
      weights_flat = fastmath.ordered_after(weights_flat, grads_squares)
      (weights_squares,) = fastmath.sums_of_squares([weights_flat])
      weights_flat = fastmath.ordered_after(weights_flat, weights_squares)
    grads_norm = jnp.sqrt(grads_squares)
    stats = {'gradients_l2': grads_norm,
             'weights_l2': jnp.sqrt(weights_squares)}
    if self._clip_grad_norm is not None:
      grads_flat = clip_grads(grads_flat, self._clip_grad_norm, grads_norm)
    return grads_flat, weights_flat, stats

  # In-place updates. An optimizer whose update TensorFlow can run as fused
  # kernels on the variables themselves (see `fastmath.in_place`) says so
  # with `supports_in_place` and implements `_apply_in_place`; a trainer
  # asks the optimizer, never its class.

  def supports_in_place(self, weight_vars, slot_vars):
    """Whether `apply_in_place` can update these variables exactly.

    True only where the in-place update computes what `tree_update` would,
    up to float rounding. The base class has no in-place update.

    Args:
      weight_vars: the flat list of weight variables.
      slot_vars: the flat list of slot variables, in `tree_init`'s order.
    """
    del weight_vars, slot_vars
    return False

  def check_in_place_opt_params(self, opt_params):
    """Raises if per-step `opt_params` leave what the in-place step has.

    A compiled in-place step may leave out work its initial
    hyperparameters make unneeded (Adam without weight decay has no decay
    ops); this refuses per-step values that would need it.
    """
    del opt_params

  def apply_in_place(self, step, grads, weights, weight_vars, slot_vars,
                     opt_params):
    """Updates weight and slot variables in place; returns `(stats, ops)`.

    The same update as `tree_update`, with the same norms and clipping,
    written by fused kernels. Call it only where `supports_in_place` is
    True, inside a traced function (a replica context under a strategy).

    Args:
      step: int32 step number (0-based), a tensor.
      grads: flat list of gradients, one per weight variable, all-reduced.
      weights: the weight values read at the start of the step (for
        `weights_l2` and the read ordering).
      weight_vars: the flat list of weight variables.
      slot_vars: the flat list of slot variables.
      opt_params: dict of float32 scalar tensors.

    Returns:
      `{'gradients_l2', 'weights_l2'}` as `tree_update` returns them, and
      the list of write ops (for control dependencies).
    """
    grads, _, stats = self._norms_and_clipping(list(grads), list(weights),
                                               in_place=True)
    return stats, self._apply_in_place(step, grads, weight_vars, slot_vars,
                                       opt_params)

  def _apply_in_place(self, step, grads, weight_vars, slot_vars, opt_params):
    """The per-weight in-place writes; returns the list of write ops."""
    raise NotImplementedError(
        f'{type(self).__name__} has no in-place update; check '
        f'supports_in_place first.')


def float32_variables(variables):
  """Whether every variable is float32."""
  return all(v.dtype == jnp.float32 for v in variables)


def sgd_update(grads, weights, learning_rate):
  """One SGD step on one array: `w' = w - lr * g`."""
  return weights - learning_rate * grads  # Step against the gradient.


class SGD(Optimizer):
  """Stochastic gradient descent, without slots.

  Update, with learning rate `lr` and gradient `g`:

    w <- w - lr * g

  As in Trax, SGD keeps no state: each weight's slot entry is None. On
  float32 variables `apply_in_place` runs one fused kernel per weight.

  Reference: Robbins & Monro (1951), "A Stochastic Approximation Method".

  Example:

  >>> from tfnp_trax.fastmath import numpy as jnp
  >>> opt = SGD(learning_rate=0.1)
  >>> w = jnp.ones((2,), jnp.float32)
  >>> new_w, slots = opt.update(0, w, w, opt.init(w), opt.opt_params)
  >>> new_w.numpy().tolist(), slots
  ([0.8999999761581421, 0.8999999761581421], None)
  """

  def init(self, weights):
    del weights
    return None

  def update(self, step, grads, weights, slots, opt_params):
    del step, slots
    new_weights = sgd_update(grads, weights, opt_params['learning_rate'])
    return new_weights.astype(weights.dtype), None

  def supports_in_place(self, weight_vars, slot_vars):
    # The kernel computes this class's own update. A subclass may change
    # `init`, `update` or `tree_update`, so it opts in by overriding this.
    return (type(self) is SGD and bool(weight_vars) and not slot_vars and  # pylint: disable=unidiomatic-typecheck
            float32_variables(weight_vars))

  def _apply_in_place(self, step, grads, weight_vars, slot_vars, opt_params):
    del step, slot_vars
    lr = opt_params['learning_rate']
    return [fastmath.in_place.apply_gradient_descent(var, lr, g)
            for var, g in zip(weight_vars, grads)]
