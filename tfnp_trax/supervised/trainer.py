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
from tfnp_trax.supervised import _accumulation
from tfnp_trax.supervised import _batches
from tfnp_trax.supervised import _ema
from tfnp_trax.supervised import _precision
from tfnp_trax.supervised import _step_calls
from tfnp_trax.supervised import _variables

__all__ = ['Trainer', 'after', 'mean_state', 'run_replicated', 'split_batch']


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


def run_replicated(strategy, replica_fn, args, first_replica_prefix=None):
  """Runs `replica_fn` on every replica; its `(loss, stats)` averaged.

  The outer part of every replicated training step: `replica_fn` returns
  a scalar loss and a dict of scalar stats on each replica, and the host
  gets one mean of each.

  Args:
    strategy: the tf.distribute strategy.
    replica_fn: `(*args) -> (loss, stats)`, run in each replica context.
    args: its arguments (tensors or distributed values).
    first_replica_prefix: stats whose key starts with this are taken from
      the first replica instead of averaged (values the replicas agree on
      that need not be scalars).
  """
  loss, stats = strategy.run(replica_fn, args=args)
  mean = tf.distribute.ReduceOp.MEAN
  loss = strategy.reduce(mean, loss, axis=None)
  stats = {k: (strategy.experimental_local_results(v)[0]
               if first_replica_prefix and k.startswith(first_replica_prefix)
               else strategy.reduce(mean, v, axis=None))
           for k, v in stats.items()}
  return loss, stats


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
  return _batches.BatchDistributor(strategy, owner, device).split(batch)


# Key prefix of step outputs that carry state leaves whose shape changed.
_NEW_STATE = '_new_state/'


def after(updates, loss, stats):
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
               jit_compile=None, fused_update=None, precision=None,
               gradient_accumulation_steps=1, ema_decay=None,
               ema_warmup=True):
    """Creates variables for weights, slots and state under `strategy`.

    What one step runs (`step_program` names it):

    | jit_compile   | fused_update  | replicas | step_program  |
    |---------------|---------------|----------|---------------|
    | None or False | None or True  | any      | 'in_place' [1] |
    | None or False | False         | any      | 'tree_update' |
    | 'update'      | None or False | any      | 'xla_update'  |
    | True          | None or False | 1        | 'xla_step'    |
    | True          | None or False | > 1      | 'xla_update'  |
    | True/'update' | True          | any      | ValueError    |

    [1] 'in_place' where `optimizer.supports_in_place` the variables (Adam
    and SGD on float32 weights); otherwise 'tree_update' with the default
    fused_update=None, and a ValueError with fused_update=True.

    * 'in_place': the optimizer writes weights and slots with one fused
      kernel per weight (`Optimizer.apply_in_place`), no XLA.
    * 'tree_update': the pure `optimizer.tree_update`, its results written
      back, no XLA.
    * 'xla_update': the same pure update compiled by XLA; the forward and
      backward passes run without XLA (XLA cannot compile the collectives
      of a multi-replica step on CPU).
    * 'xla_step': forward, backward, update and the variable writes as one
      XLA program.

    Every program computes the same update up to float rounding.

    Args:
      model_with_loss: an initialized layer mapping a batch to a scalar loss.
      optimizer: a tfnp_trax optimizer.
      strategy: a tf.distribute strategy (default: the current one).
      jit_compile: True compiles the whole step with XLA (with several
        replicas, only the optimizer update); 'update' compiles just the
        optimizer update; None or False use no XLA.
      fused_update: None (the default) updates in place when the optimizer
        supports it and no XLA compiles the update; True requires the
        in-place update; False always runs `optimizer.tree_update`.
      precision: None or 'float32' trains in float32. 'bf16' (also
        'bfloat16', 'mixed_bfloat16') is Keras's mixed_bfloat16 policy: the
        step casts the float32 weights and the model's float32 inputs to
        bfloat16 and computes in bfloat16, while weights, optimizer slots
        and state stay float32 variables and the returned loss is float32.
      gradient_accumulation_steps: k > 1 splits each batch along axis 0
        into k micro-batches inside the step, runs them one after another
        and updates once with the mean of their gradients (see
        `_accumulation`); the batch must hold k x replicas x the
        micro-batch.
      ema_decay: None, or a decay in [0, 1): the trainer then keeps an
        exponential moving average of the weights, updated inside every
        step (`ema_weights`; see `_ema`).
      ema_warmup: with `ema_decay`, use `min(ema_decay, (1 + n) / (10 + n))`
        after n averaged updates, as `tf.train.ExponentialMovingAverage`
        does; False keeps the decay fixed, as Keras's `ema_momentum`.

    Raises:
      ValueError: for an uninitialized model, an unknown `jit_compile`, or
        `fused_update=True` where the update cannot run in place.
    """
    if not model_with_loss.initialized:
      raise ValueError(
          'Trainer: model_with_loss is not initialized; call '
          'model_with_loss.init(shapes.signature(batch)) first.')
    if jit_compile not in (None, False, True, 'update'):
      raise ValueError(f"Trainer: jit_compile must be None, False, True or "
                       f"'update', got {jit_compile!r}.")
    if fused_update not in (None, False, True):
      raise ValueError(f'Trainer: fused_update must be None, True or False, '
                       f'got {fused_update!r}.')
    # 0 and 1 mean False and True, as in the membership checks above.
    if jit_compile != 'update':
      jit_compile = bool(jit_compile)
    if fused_update is not None:
      fused_update = bool(fused_update)
    if fused_update is True and jit_compile:
      raise ValueError(
          f'Trainer: fused_update=True updates the variables in place '
          f'without XLA, but jit_compile={jit_compile!r} compiles the update '
          f'with XLA; pass one of them (fused_update=None picks the in-place '
          f'update whenever no XLA is asked for).')
    self._accumulation_steps = _accumulation.check_steps(
        gradient_accumulation_steps, 'Trainer')
    if ema_decay is not None:
      ema_decay = _ema.check_decay(ema_decay, 'Trainer')
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
    self._ema = (None if ema_decay is None else
                 _ema.WeightAverage(weights, self._strategy, ema_decay,
                                    ema_warmup))
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
    self._batches = _batches.BatchDistributor(self._strategy, 'Trainer',
                                              self._input_device)
    self.step_program = self._choose_program(jit_compile, fused_update)
    # Under the default strategy the outer step is the XLA program itself:
    # a call runs the compiled executable directly, with no TF executor and
    # no function-call op around an inner XLA cluster (about 5% of the MLP
    # step, and a shorter first step; see bench/README.md).
    self._outer_xla = (self.step_program == 'xla_step' and
                       not tf.distribute.has_strategy() and
                       self._strategy is tf.distribute.get_strategy())
    # XLA updates a variable in place when nothing reads its old value after
    # the write; where no data path orders a read before the write, it
    # copies the variable first. Under XLA, `Optimizer.tree_update` reads
    # the weights for the update only after the gradient and weight norms
    # (`fastmath.ordered_after`), so after every gradient exists and after
    # `weights_l2` has read them: XLA need not copy them, and the norm's
    # read runs beside the update instead of competing with the forward
    # matmuls (see bench/README.md).
    self._update_fn = (tf.function(self._update, autograph=False,
                                   jit_compile=True)
                       if self.step_program == 'xla_update' else self._update)
    self.n_state_reshapes = 0
    self.n_traces = 0
    self._build_step()
    self._unused_key = fastmath.random.get_prng(0)

  def _choose_program(self, jit_compile, fused_update):
    """The step program for these settings (see `__init__`)."""
    if jit_compile is True and self._strategy.num_replicas_in_sync == 1:
      # A whole-step XLA program fuses the pure update itself, and ran
      # faster that way than with the fused kernels inside it.
      return 'xla_step'
    if jit_compile:
      return 'xla_update'
    if fused_update is False:
      return 'tree_update'
    if self._optimizer.supports_in_place(self._weights.variables,
                                         self._slots.variables):
      return 'in_place'
    if fused_update is True:
      raise ValueError(
          f'Trainer: fused_update=True, but {type(self._optimizer).__name__} '
          f'cannot update these variables in place (in-place updates exist '
          f'for Adam and SGD on float32 weights); pass fused_update=None to '
          f'run its tree_update.')
    return 'tree_update'

  def _build_step(self):
    """Traces the step anew (at construction and after a state reshape)."""
    self._step_fn = tf.function(self._distributed_step, autograph=False,
                                jit_compile=True if self._outer_xla else None)
    # The whole-step XLA program also writes the variables, so XLA updates
    # them in place instead of returning new arrays to be copied in.
    self._write_fn = (tf.function(self._compute_and_write, autograph=False,
                                  jit_compile=True)
                      if self.step_program == 'xla_step' and
                      not self._outer_xla else self._compute_and_write)
    self._caller = _step_calls.StepCaller(self._step_fn)

  @property
  def _fast_fn(self):
    """The concrete step function last called (for inspecting its graph)."""
    return self._caller.concrete

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
    self._build_step()

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
    """All variables (weights, slots, state, and the weights' moving average
    with its update count under 'ema' when there is one), e.g. for
    checkpoints."""
    out = {'weights': self._weights.variables,
           'slots': self._slots.variables,
           'state': self._state.variables}
    if self._ema is not None:
      out['ema'] = self._ema.variables
    return out

  @property
  def gradient_accumulation_steps(self):
    """How many micro-batches each step splits its batch into."""
    return self._accumulation_steps

  @property
  def ema_decay(self):
    """The decay of the weights' moving average, or None without one."""
    return None if self._ema is None else self._ema.decay

  @property
  def ema_weights(self):
    """The moving average of the weights, as NumPy arrays (or None)."""
    return None if self._ema is None else self._ema.tree.numpy()

  @ema_weights.setter
  def ema_weights(self, weights):
    if self._ema is None:
      raise ValueError('Trainer.ema_weights: this trainer keeps no moving '
                       'average; pass ema_decay=... when building it.')
    self._ema.tree.check_like(weights, 'Trainer.ema_weights')
    self._ema.tree.assign(weights)

  def reset_ema(self):
    """Restarts the moving average from the current weights."""
    if self._ema is not None:
      self._ema.reset(self._weights.numpy())

  @property
  def precision(self):
    """'bfloat16' under mixed precision, else 'float32'."""
    return 'bfloat16' if self._compute_dtype is not None else 'float32'

  def _loss_and_grads(self, batch, rng, weights, state):
    """`((loss, new_state), grads)` of the model with loss at `weights`,
    averaged over the step's micro-batches (see `_accumulation`)."""
    return _accumulation.accumulate(
        lambda b, r, s: self._micro_loss_and_grads(b, r, weights, s),
        batch, rng, state, self._accumulation_steps,
        fold_rng=self._model.uses_rng, owner='Trainer')

  def _micro_loss_and_grads(self, batch, rng, weights, state):
    """`((loss, new_state), grads)` on one (micro-)batch."""
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
    """`_compute` with the optimizer writing the variables itself."""
    weights, state = self._weights.read(), self._state.read()
    (loss, new_state), grads = self._loss_and_grads(batch, rng, weights,
                                                    state)
    grads, loss = collectives.pmean((grads, loss))
    stats, updates = self._optimizer.apply_in_place(
        step, fastmath.tree_leaves(grads), fastmath.tree_leaves(weights),
        self._weights.variables, self._slots.variables, opt_params)
    if self._ema is not None:
      with tf.control_dependencies(updates):
        new_weights = [v.read_value() for v in self._weights.variables]
      updates = updates + self._ema.updates(new_weights)
    state_updates, reshaped = self._state_writes(mean_state(new_state))
    return after(updates + state_updates, loss, dict(stats, **reshaped))

  def _compute_and_write(self, batch, rng, step, opt_params):
    """`_compute`, then the new weights, slots and state written."""
    loss, stats, new_weights, new_slots, new_state = self._compute(
        batch, rng, step, opt_params, self._weights.read(),
        self._slots.read(), self._state.read())
    updates = _variables.assign_local(
        self._weights.variables + self._slots.variables,
        fastmath.tree_leaves(new_weights) + fastmath.tree_leaves(new_slots))
    if self._ema is not None:
      updates += self._ema.updates(fastmath.tree_leaves(new_weights))
    state_updates, reshaped = self._state_writes(new_state)
    return after(updates + state_updates, loss, dict(stats, **reshaped))

  def _update(self, step, grads, weights, slots, opt_params):
    return self._optimizer.tree_update(step, grads, weights, slots,
                                       opt_params, store_slots=False)

  def _replica_step(self, batch, rng, step, opt_params):
    if self._model.uses_rng:
      # Each replica draws its own random numbers. A model that draws none
      # skips the fold (its ops would be dead weight in every step).
      ctx = tf.distribute.get_replica_context()
      rng = fastmath.random.fold_in(rng, ctx.replica_id_in_sync_group)
    if self.step_program == 'in_place':
      return self._compute_in_place(batch, rng, step, opt_params)
    return self._write_fn(batch, rng, step, opt_params)

  def _distributed_step(self, batch, rng, hparams):
    # `hparams` is [step, *opt_params] as float64 (see `_pack_hparams`).
    self.n_traces += 1
    step = tf.cast(hparams[0], tf.int32)
    opt_params = {k: tf.cast(hparams[i + 1], tf.float32)
                  for i, k in enumerate(self._default_opt_params)}
    # Replicas agree on new state (see mean_state): the first one's is kept.
    return run_replicated(self._strategy, self._replica_step,
                          (batch, rng, step, opt_params), _NEW_STATE)

  def distribute_batch(self, batch):
    """Splits a host batch along axis 0 across the local replicas."""
    return self._batches.split(batch)

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
      if self.step_program == 'in_place' and opt_params:
        self._optimizer.check_in_place_opt_params(params)
      unknown = sorted(set(params) - set(self._default_opt_params))
      if unknown:
        raise ValueError(
            f'Trainer.one_step: opt_params {unknown} are not hyperparameters '
            f'of {type(self._optimizer).__name__} (it has '
            f'{sorted(self._default_opt_params)}).')
    hparams = self._pack_hparams(step, params)
    _accumulation.check_batch(batch, self._accumulation_steps,
                              self._strategy.num_replicas_in_sync,
                              'Trainer.one_step')
    loss, stats = self._caller(self._batches.place(batch), rng, hparams)
    if any(k.startswith(_NEW_STATE) for k in stats):
      reshaped = {int(k[len(_NEW_STATE):]): stats.pop(k)
                  for k in list(stats) if k.startswith(_NEW_STATE)}
      self._state.replace(reshaped)
      self._retrace_for_new_state()
    return loss, stats

  def _pack_hparams(self, step, params):
    """The step number and hyperparameters as one placed float64 tensor."""
    return _step_calls.pack_hparams(step, params, self._default_opt_params,
                                    self._input_device, 'Trainer')
