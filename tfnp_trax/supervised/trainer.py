"""Trainer: one compiled, replicated training step over a model with loss.

The whole step runs inside `strategy.run`: forward pass, backward pass,
gradient all-reduce (a collective on device), optimizer update and the
in-place write of weights, slots and model state. The host passes in the
batch, an rng, the step number and the learning rate, and gets back only
scalars that were already reduced on device.
"""

import numpy as onp
import tensorflow as tf

from distribute import collectives
from tfnp_trax import fastmath
from tfnp_trax.supervised import _fused_updates
from tfnp_trax.supervised import _precision
from tfnp_trax.supervised import _variables

__all__ = ['Trainer', 'mean_state', 'split_batch']


def mean_state(state):
  """Averages the float leaves of `state` over replicas in one collective.

  Replicas see different data, so float state (e.g. BatchNorm statistics)
  is averaged to stay identical everywhere; integer counters already agree.
  """
  flat = [tf.convert_to_tensor(x) for x in fastmath.tree_flatten(state)]
  floats = [i for i, x in enumerate(flat) if x.dtype.is_floating]
  if floats:
    averaged = collectives.pmean([flat[i] for i in floats])
    for i, x in zip(floats, averaged):
      flat[i] = x
  return fastmath.tree_unflatten(flat, state)[0]


def split_batch(batch, strategy, owner, device=None):
  """Splits a host batch along axis 0 into one slice per local replica.

  Args:
    batch: a tree of arrays, the global batch on this worker.
    strategy: the tf.distribute strategy.
    owner: the trainer's name, for error messages.
    device: with one replica, a device to place host arrays on as they
      are converted (`fastmath.device_put`), or None to convert them
      unplaced; with several, each slice goes to its replica's device.

  Returns:
    The batch as tensors with one replica, else distributed values.

  Raises:
    ValueError: for an empty batch (it would train silently with a loss of
      0.0) or one whose size does not divide by the replicas.
  """
  n = strategy.num_replicas_in_sync
  leaves = fastmath.tree_flatten(batch)
  if any(len(getattr(x, 'shape', ())) and x.shape[0] == 0 for x in leaves):
    shapes = [tuple(getattr(x, 'shape', ())) for x in leaves]
    raise ValueError(f'{owner}: got an empty batch (leading size 0; leaf '
                     f'shapes {shapes}); every batch needs at least one '
                     f'example.')
  if n == 1:
    return _to_tensors(batch, device)
  for x in leaves:
    if x.shape[0] % n:
      raise ValueError(f'{owner}: batch size {x.shape[0]} does not divide '
                       f'by the {n} replicas; use a multiple of {n}.')

  def value_fn(ctx):
    i = ctx.replica_id_in_sync_group
    return fastmath.nested_map(
        lambda x: tf.convert_to_tensor(
            x[i * (x.shape[0] // n):(i + 1) * (x.shape[0] // n)]), batch)
  return strategy.experimental_distribute_values_from_function(value_fn)


def _to_tensors(tree, device):
  """`tree`'s host arrays as tensors: placed on `device`, or unplaced if None.

  The Trainer passes a device only for one replica on a CPU (see
  `Trainer.__init__`); elsewhere inputs convert as `tf.convert_to_tensor`
  does.
  """
  if device is None:
    return fastmath.nested_map(tf.convert_to_tensor, tree)
  return fastmath.device_put(tree, device)


def _flat_caller(concrete):
  """Calls `concrete` on its flat input tensors, or None if TF can't.

  `ConcreteFunction._call_flat` is TensorFlow's own path below the
  argument binding; a TensorFlow without it gets None, and the caller uses
  the ordinary call.
  """
  call_flat = getattr(concrete, '_call_flat', None)
  if call_flat is None:
    return None
  return lambda flat: call_flat(flat, concrete.captured_inputs)


# Key prefix of step outputs that carry state leaves whose shape changed.
_NEW_STATE = '_new_state/'


def _after(updates, loss, stats):
  """`(loss, stats)`, available only once `updates` have run."""
  with tf.control_dependencies(updates):
    return tf.identity(loss), {k: tf.identity(v) for k, v in stats.items()}


class Trainer:
  """Trains `model_with_loss` (which outputs a scalar loss) on a strategy.

  Example:
    >>> import numpy as np
    >>> from tfnp_trax import optimizers, shapes
    >>> import tfnp_trax.layers as tl
    >>> x = np.ones((4, 3), np.float32)
    >>> y, w = np.array([0, 1, 0, 1]), np.ones(4, np.float32)
    >>> model_with_loss = tl.Serial(tl.Dense(2), tl.LogSoftmax(),
    ...                             tl.CrossEntropyLoss())
    >>> _ = model_with_loss.init(shapes.signature((x, y, w)))
    >>> trainer = Trainer(model_with_loss, optimizers.Adam(0.001))
    >>> loss, stats = trainer.one_step((x, y, w), fastmath.random.get_prng(0),
    ...                                step=0)
    >>> float(loss) > 0
    True
  """

  def __init__(self, model_with_loss, optimizer, strategy=None,
               jit_compile=None, fused_update=True, precision=None):
    """Creates variables for weights, slots and state under `strategy`.

    Args:
      model_with_loss: an initialized layer mapping a batch to a scalar loss.
      optimizer: a tfnp_trax optimizer.
      strategy: a tf.distribute strategy (default: the current one).
      jit_compile: True compiles the whole step with XLA (with several
        replicas, only the optimizer update); 'update' compiles just the
        optimizer update; None or False use no XLA.
      fused_update: update Adam and SGD weights in place with one fused
        kernel per weight (the default; same update as
        `optimizer.tree_update` up to float rounding). False always runs
        `tree_update` and writes its results back.
      precision: None or 'float32' trains in float32. 'bf16' (also
        'bfloat16', 'mixed_bfloat16') is Keras's mixed_bfloat16 policy: the
        step casts the float32 weights and the model's float32 inputs to
        bfloat16 and computes in bfloat16, while weights, optimizer slots
        and state stay float32 variables and the returned loss is float32.
    """
    if not model_with_loss.initialized:
      raise ValueError(
          'Trainer: model_with_loss is not initialized; call '
          'model_with_loss.init(shapes.signature(batch)) first.')
    self._model = model_with_loss
    self._compute_dtype = _precision.resolve(precision, 'Trainer')
    self._n_model_inputs = _precision.model_inputs(model_with_loss)
    self._optimizer = optimizer
    self._strategy = strategy or tf.distribute.get_strategy()
    weights, state = model_with_loss.weights, model_with_loss.state
    slots, opt_params = optimizer.tree_init(weights)
    self._default_opt_params = {k: onp.float32(v)
                                for k, v in opt_params.items()}
    self._weights = _variables.VariableTree(weights, self._strategy, 'w')
    self._slots = _variables.VariableTree(slots, self._strategy, 'slot')
    self._state = _variables.VariableTree(state, self._strategy, 'state')
    # With one replica on a CPU, per-step inputs made from host arrays
    # (batches, the packed hyperparameters) are placed on the weights'
    # device when they are made, which makes each call of the compiled
    # step cheaper (`fastmath.device_put`). Accelerators and several
    # replicas take copies anyway, so there they stay unplaced (a float64
    # tensor cannot even be placed on a TPU).
    self._input_device = None
    first = (self._weights.variables + self._slots.variables)[:1]
    if first and self._strategy.num_replicas_in_sync == 1:
      device = first[0].device or ''
      if tf.DeviceSpec.from_string(device).device_type == 'CPU':
        self._input_device = device
    # jit_compile=True compiles the whole step with XLA on one replica (XLA
    # cannot compile the collectives of a multi-replica step on CPU, so
    # there it compiles the optimizer update). 'update' compiles just the
    # optimizer update: collective-free elementwise work that XLA fuses.
    whole = jit_compile is True and self._strategy.num_replicas_in_sync == 1
    # Under the default strategy the outer step is the XLA program itself:
    # a call runs the compiled executable directly, with no TF executor and
    # no function-call op around an inner XLA cluster (about 5% of the MLP
    # step, and a shorter first step; see bench/README.md).
    outer_xla = (whole and not tf.distribute.has_strategy() and
                 self._strategy is tf.distribute.get_strategy())
    # XLA updates a variable in place when nothing reads its old value after
    # the write; where no data path orders a read before the write, it
    # copies the variable first. Under XLA, `Optimizer.tree_update` reads
    # the weights for the update only after the gradient and weight norms
    # (`fastmath.ordered_after`), so after every gradient exists and after
    # `weights_l2` has read them: XLA need not copy them, and the norm's
    # read runs beside the update instead of competing with the forward
    # matmuls (see bench/README.md).
    self._whole, self._outer_xla = whole, outer_xla
    self._step_fn = tf.function(self._distributed_step, autograph=False,
                                jit_compile=True if outer_xla else None)
    # A whole-step XLA program fuses the pure update itself, and ran faster
    # that way than with the fused kernels inside it, so it keeps the pure
    # update (see bench/README.md).
    self._fused = (_fused_updates.plan(
        optimizer, self._weights.variables, self._slots.variables,
        self._default_opt_params) if fused_update and not whole else None)
    # The whole-step XLA program also writes the variables, so XLA updates
    # them in place instead of returning new arrays to be copied in.
    self._write_fn = (tf.function(self._compute_and_write, autograph=False,
                                  jit_compile=True)
                      if whole and not outer_xla
                      else self._compute_and_write)
    self.n_state_reshapes = 0
    self._update_fn = (tf.function(self._update, autograph=False,
                                   jit_compile=True)
                       if jit_compile in (True, 'update') and not whole
                       else self._update)
    self.n_traces = 0
    # The traced step for the last batch layout, called directly: this
    # skips tf.function's per-call signature matching on the host.
    self._fast_layout, self._fast_fn, self._fast_flat = None, None, None
    self._unused_key = fastmath.random.get_prng(0)

  @property
  def strategy(self):
    return self._strategy

  @property
  def model_weights(self):
    return self._weights.numpy()

  @model_weights.setter
  def model_weights(self, weights):
    self._weights.check_like(weights, 'Trainer.model_weights')
    self._weights.assign(weights)

  @property
  def model_state(self):
    return self._state.numpy()

  @model_state.setter
  def model_state(self, state):
    reshaped = self._state.assign(state, allow_new_shapes=True)
    if reshaped:
      self._retrace_for_new_state()

  def _retrace_for_new_state(self):
    """Traces the step anew: some state variables were re-created.

    As on JAX, whose jitted step retraces when the state's shapes change,
    a layer's state may change shape (a Trax layer whose state goes from
    `()` to `(1,)` on its first call). The variables of those leaves are
    re-created with the new shapes and the compiled step, which captured
    the old ones, is rebuilt once; steps that keep the shapes reuse it.
    """
    self.n_state_reshapes += 1
    self._step_fn = tf.function(self._distributed_step, autograph=False,
                                jit_compile=True if self._outer_xla else None)
    if self._whole and not self._outer_xla:
      self._write_fn = tf.function(self._compute_and_write, autograph=False,
                                   jit_compile=True)
    self._fast_layout, self._fast_fn, self._fast_flat = None, None, None

  def _state_writes(self, new_state):
    """Writes of `new_state`, and the leaves whose shapes changed.

    Returns:
      `(updates, reshaped)`: the write ops for leaves whose static shape
      fits their variable, and `{_NEW_STATE + str(i): value}` for the others,
      which the step returns for `one_step` to store in new variables.
    """
    fits, reshaped = [], {}
    leaves = fastmath.tree_leaves(new_state)
    for i, (v, x) in enumerate(zip(self._state.variables, leaves)):
      if tf.TensorShape(x.shape).is_compatible_with(v.shape):
        fits.append((v, x))
      else:
        reshaped[f'{_NEW_STATE}{i}'] = tf.convert_to_tensor(x)
    updates = _variables.assign_local([v for v, _ in fits],
                                      [x for _, x in fits])
    return updates, reshaped

  @property
  def slots(self):
    return self._slots.numpy()

  @slots.setter
  def slots(self, slots):
    self._slots.assign(slots)

  def variables(self):
    """All variables (weights, slots, state), e.g. for checkpoints."""
    return {'weights': self._weights.variables,
            'slots': self._slots.variables,
            'state': self._state.variables}

  @property
  def precision(self):
    """'bfloat16' under mixed precision, else 'float32'."""
    return 'bfloat16' if self._compute_dtype is not None else 'float32'

  def _loss_and_grads(self, batch, rng, weights, state):
    """`((loss, new_state), grads)` of the model with loss at `weights`."""
    if self._compute_dtype is not None:
      batch = _precision.cast_inputs(batch, self._n_model_inputs,
                                     self._compute_dtype)

    def loss_fn(w):
      if self._compute_dtype is not None:
        # Cast inside the differentiated function: the cast's gradient
        # brings float32 gradients back to the float32 weights.
        w = _precision.cast_floats(w, self._compute_dtype)
        loss, new_state = self._model.pure_fn(batch, w, state, rng)
        return tf.cast(loss, tf.float32), new_state
      return self._model.pure_fn(batch, w, state, rng)
    return fastmath.value_and_grad(loss_fn, has_aux=True)(weights)

  def _compute(self, batch, rng, step, opt_params, weights, slots, state):
    """The pure step: loss, gradients, all-reduce and optimizer update."""
    (loss, new_state), grads = self._loss_and_grads(batch, rng, weights,
                                                    state)
    # The pmean path: gradients and the loss are averaged by collectives
    # inside the replica, never gathered on the host.
    # One batched collective for both.
    grads, loss = collectives.pmean((grads, loss))
    new_weights, new_slots, stats = self._update_fn(step, grads, weights,
                                                    slots, opt_params)
    return loss, stats, new_weights, new_slots, mean_state(new_state)

  def _compute_in_place(self, batch, rng, step, opt_params):
    """`_compute` with the fused optimizer writing the variables itself."""
    weights, state = self._weights.read(), self._state.read()
    (loss, new_state), grads = self._loss_and_grads(batch, rng, weights,
                                                    state)
    grads, loss = collectives.pmean((grads, loss))
    stats, updates = self._fused.apply(
        step, fastmath.tree_leaves(grads), fastmath.tree_leaves(weights),
        opt_params)
    state_updates, reshaped = self._state_writes(mean_state(new_state))
    return _after(updates + state_updates, loss, dict(stats, **reshaped))

  def _compute_and_write(self, batch, rng, step, opt_params):
    """`_compute`, then the new weights, slots and state written."""
    loss, stats, new_weights, new_slots, new_state = self._compute(
        batch, rng, step, opt_params, self._weights.read(),
        self._slots.read(), self._state.read())
    updates = _variables.assign_local(
        self._weights.variables + self._slots.variables,
        fastmath.tree_leaves(new_weights) + fastmath.tree_leaves(new_slots))
    state_updates, reshaped = self._state_writes(new_state)
    return _after(updates + state_updates, loss, dict(stats, **reshaped))

  def _update(self, step, grads, weights, slots, opt_params):
    return self._optimizer.tree_update(step, grads, weights, slots,
                                       opt_params, store_slots=False)

  def _replica_step(self, batch, rng, step, opt_params):
    if self._model.uses_rng:
      # Each replica draws its own random numbers. A model that draws none
      # skips the fold (its ops would be dead weight in every step).
      ctx = tf.distribute.get_replica_context()
      rng = fastmath.random.fold_in(rng, ctx.replica_id_in_sync_group)
    if self._fused is not None:
      return self._compute_in_place(batch, rng, step, opt_params)
    return self._write_fn(batch, rng, step, opt_params)

  def _distributed_step(self, batch, rng, hparams):
    # `hparams` is [step, *opt_params] as float64 (see `_pack_hparams`).
    self.n_traces += 1
    step = tf.cast(hparams[0], tf.int32)
    opt_params = {k: tf.cast(hparams[i + 1], tf.float32)
                  for i, k in enumerate(self._default_opt_params)}
    loss, stats = self._strategy.run(self._replica_step,
                                     args=(batch, rng, step, opt_params))
    mean = tf.distribute.ReduceOp.MEAN
    loss = self._strategy.reduce(mean, loss, axis=None)
    # Replicas agree on new state (see mean_state): the first one's is kept.
    stats = {k: (self._strategy.experimental_local_results(v)[0]
                 if k.startswith(_NEW_STATE) else
                 self._strategy.reduce(mean, v, axis=None))
             for k, v in stats.items()}
    return loss, stats

  def distribute_batch(self, batch):
    """Splits a host batch along axis 0 across the local replicas."""
    return split_batch(batch, self._strategy, 'Trainer', self._input_device)

  def one_step(self, batch, rng, step, learning_rate=None, opt_params=None):
    """Runs one training step and returns `(loss, stats)` as host scalars.

    Args:
      batch: a tuple of arrays (inputs, targets[, weights]) for the whole
        global batch on this worker, or already-distributed values.
      rng: an int32 [2] key; each replica folds in its replica id.
      step: the 0-based step number.
      learning_rate: optional learning rate for this step.
      opt_params: optional dict of further hyperparameter values.
    """
    # Checked eagerly: inside the tf.function a too-large int64 key would
    # wrap silently when cast to int32. This reads no device value for an
    # int32 key, so the step stays free of host round trips.
    rng = fastmath.random.check_key(rng, 'Trainer.one_step')
    if not self._model.uses_rng:
      # The step of a model that draws no random numbers never reads the
      # key, so it takes the same placed key every call: a new input tensor
      # per call costs a compiled step tens of microseconds.
      rng = self._unused_key
    if learning_rate is None and not opt_params:
      params = self._default_opt_params
    else:
      params = dict(self._default_opt_params)
      if opt_params:
        params.update(opt_params)
      if learning_rate is not None:
        params['learning_rate'] = learning_rate
      if self._fused is not None and opt_params:
        self._fused.check_opt_params(params)
      unknown = sorted(set(params) - set(self._default_opt_params))
      if unknown:
        raise ValueError(
            f'Trainer.one_step: opt_params {unknown} are not hyperparameters '
            f'of {type(self._optimizer).__name__} (it has '
            f'{sorted(self._default_opt_params)}).')
    hparams = self._pack_hparams(step, params)
    if not isinstance(batch, tf.distribute.DistributedValues) and not (
        isinstance(batch, tuple) and batch and isinstance(
            batch[0], tf.distribute.DistributedValues)):
      batch = self.distribute_batch(batch)
    loss, stats = self._call_step(batch, rng, hparams)
    if any(k.startswith(_NEW_STATE) for k in stats):
      reshaped = {int(k[len(_NEW_STATE):]): stats.pop(k)
                  for k in list(stats) if k.startswith(_NEW_STATE)}
      self._state.replace(reshaped)
      self._retrace_for_new_state()
    return loss, stats

  def _pack_hparams(self, step, params):
    """The step number and hyperparameters as one float64 tensor.

    One new input tensor per call instead of two, placed on the weights'
    device as it is made: each fresh input, and more so an unplaced one,
    makes a call of the compiled step measurably dearer. float64 holds the
    step exactly (below 2**53; the step casts it to int32) and each float32
    hyperparameter exactly.
    """
    as_int = int(step)
    if as_int != step:
      raise ValueError(f'Trainer.one_step: step must be an integer, got '
                       f'{step!r}.')
    step = as_int
    if not -2**31 <= step < 2**31:
      raise ValueError(f'Trainer.one_step: step {step} does not fit the '
                       f'int32 step counter.')
    packed = onp.array([step] + [onp.float32(params[k])
                                 for k in self._default_opt_params],
                       onp.float64)
    return _to_tensors(packed, self._input_device)

  def _call_step(self, batch, rng, hparams):
    """Runs the compiled step, reusing its traced graph when it can."""
    if (isinstance(batch, tf.distribute.DistributedValues) or
        not isinstance(batch, tuple) or tf.config.functions_run_eagerly()):
      return self._step_fn(batch, rng, hparams)
    leaves = tf.nest.flatten(batch)
    layout = (len(batch), len(leaves), getattr(rng, 'dtype', None),
              tuple(getattr(rng, 'shape', ()))) + tuple(
                  (type(x), tuple(getattr(x, 'shape', ())),
                   getattr(x, 'dtype', None)) for x in leaves)
    if layout == self._fast_layout:
      flat = leaves + [rng, hparams]
      if self._fast_flat is not None and all(
          isinstance(x, tf.Tensor) for x in flat):
        # The layout check above has matched every input's type, shape and
        # dtype to the trace, so the traced function is called on the flat
        # tensors directly, without re-binding the nested arguments (about
        # 0.1 ms of host time per step).
        return self._fast_flat(flat)
      try:
        return self._fast_fn(batch, rng, hparams)
      except TypeError:
        pass  # A difference this check does not see: trace as usual.
    out = self._step_fn(batch, rng, hparams)
    self._fast_fn = self._step_fn.get_concrete_function(batch, rng, hparams)
    self._fast_flat = _flat_caller(self._fast_fn)
    self._fast_layout = layout
    return out
