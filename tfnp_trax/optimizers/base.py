"""The Optimizer base class: per-weight `init`/`update`, lifted to weight trees.

A subclass says what happens to one weight array: `init(weights)` builds its
slots and `update(step, grads, weights, slots, opt_params)` returns new
weights and slots. `tree_init` and `tree_update` apply these to every leaf of
a model's (nested tuple) weight tree, add global-norm gradient clipping and
report gradient and weight norms. Everything is pure and traceable:
hyperparameters travel in the `opt_params` dict of scalars (cast to float32
for the update), so a learning-rate schedule can change them every step
without retracing.

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
from tfnp_trax.optimizers import _validation

__all__ = ['Optimizer', 'l2_norm', 'clip_grads']


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
      raise _validation.HyperparameterTypeError(
          f'{type(self).__name__}: learning_rate must be a number, got '
          f'{learning_rate!r} ({type(learning_rate).__name__}). A schedule '
          f'(step -> rate) goes to TrainTask(lr_schedule=...), not to the '
          f'optimizer.')
    # A gin binding of the wrong type (`Adam.b1 = "high"`) fails here, not
    # in the first update.
    _validation.check_numbers(
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
    # Under XLA (elsewhere `ordered_after` returns its input): the weights
    # are read for their norm only after every gradient exists, so after
    # the backward pass's reads of them (scheduled beside the forward
    # matmuls, the MLP's weight norm took 166 us on one thread, against 65
    # us over both once ordered), and for the update only after the norm
    # has read them. XLA can then write the new weights over the old in
    # place instead of copying them first.
    (grads_squares,) = fastmath.sums_of_squares([grads_flat])
    weights_flat = fastmath.ordered_after(weights_flat, grads_squares)
    (weights_squares,) = fastmath.sums_of_squares([weights_flat])
    ordered = fastmath.ordered_after(weights_flat, weights_squares)
    grads_norm = jnp.sqrt(grads_squares)
    weights_norm = jnp.sqrt(weights_squares)
    if self._clip_grad_norm is not None:
      grads_flat = clip_grads(grads_flat, self._clip_grad_norm, grads_norm)

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
    stats = {'gradients_l2': grads_norm, 'weights_l2': weights_norm}
    return new_weights, new_slots, stats


def __getattr__(name):
  # Trax defines SGD in this module; ours lives in sgd.py (which imports this
  # one), so `base.SGD` is resolved lazily to keep Trax's import path.
  if name == 'SGD':
    from tfnp_trax.optimizers import sgd  # pylint: disable=g-import-not-at-top
    return sgd.SGD
  raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
