"""ReversibleSerialTrainer: trains a model layer by layer, reversing activations.

The model is given as blocks, each a list of standard layers followed by a
list of reversible ones, then a loss layer: together they compute what
`tl.Serial(blocks + [loss_layer])` computes, and one step trains them as the
standard `Trainer` would. The backward pass differs: it walks the layers
from the loss down, and rebuilds the inputs of each reversible layer from
its outputs (`reverse_and_grad`) instead of keeping them from the forward
pass, so activation memory does not grow with the number of reversible
layers. Each layer has its own optimizer and is updated as soon as its
gradient is known.

As in `Trainer`, the whole step is one `tf.function` run by
`strategy.run`: each layer's weight gradients are averaged across replicas
by a collective inside the replica function (`ReplicaContext.all_reduce`),
and every replica applies the same update to its copy of the weights.
"""

import copy

from absl import logging
import numpy as onp
import tensorflow as tf

from distribute import collectives
from tfnp_trax import fastmath
import tfnp_trax.layers as tl
from tfnp_trax.supervised import _accumulation
from tfnp_trax.supervised import _batches
from tfnp_trax.supervised import _ema
from tfnp_trax.supervised import _variables
from tfnp_trax.supervised._reversible_blocks import extract_reversible_blocks
from tfnp_trax.supervised._reversible_blocks import init_reversible_blocks
# Float state is averaged over replicas, and the step reduced, exactly as the
# standard Trainer does.
from tfnp_trax.supervised import trainer as trainer_lib

__all__ = ['ReversibleSerialTrainer', 'extract_reversible_blocks',
           'init_reversible_blocks']


def _is_empty(tree):
  """True for `()` and tuples/lists of (tuples of) nothing."""
  if not isinstance(tree, (list, tuple)):
    return False
  return all(_is_empty(x) for x in tree)


def _uninitialized(layer):
  """The first leaf layer under `layer` that needs `init` but had none."""
  if layer.sublayers:
    for sub in layer.sublayers:
      missing = _uninitialized(sub)
      if missing is not None:
        return missing
    return None
  has_init = (type(layer).init_weights_and_state is not
              tl.Layer.init_weights_and_state)
  return layer if has_init and not layer.initialized else None


def _vjp(f, x, weights):
  """`fastmath.vjp` of `f(x, weights) -> (y, aux)` wrt float leaves of x.

  Integer inputs (token ids, targets) get zero cotangents without being
  watched. Each float leaf is made its own tensor: the stack may hold one
  tensor twice (after `Dup`), and a tape would give each copy the sum of
  both cotangents.
  """
  flat = [tf.convert_to_tensor(t) for t in fastmath.tree_flatten(x)]
  floats = [i for i, t in enumerate(flat) if t.dtype.is_floating]

  def with_floats(float_leaves, w):
    leaves = list(flat)
    for i, t in zip(floats, float_leaves):
      leaves[i] = t
    return f(fastmath.tree_unflatten(leaves, x)[0], w)

  out, vjp_fn, aux = fastmath.vjp(
      with_floats, [tf.identity(flat[i]) for i in floats],
      tf.nest.map_structure(tf.identity, weights), has_aux=True)

  def full_vjp(ct):
    float_cts, w_ct = vjp_fn(ct)
    cts = [tf.zeros_like(t) for t in flat]
    for i, c in zip(floats, float_cts):
      cts[i] = c
    return fastmath.tree_unflatten(cts, x)[0], w_ct
  return out, full_vjp, aux


def _adasum_merge(g1, g2):
  """Adasum of two gradients: each loses its projection on the other / 2."""
  dot = tf.reduce_sum(g1 * g2)
  frac1 = dot / (2 * tf.reduce_sum(g1 * g1) + 1e-30)
  frac2 = dot / (2 * tf.reduce_sum(g2 * g2) + 1e-30)
  return (1 - frac1) * g1 + (1 - frac2) * g2


def _adasum(grads):
  """Merges every replica's `grads` by Adasum, as Trax does.

  Trax merges pairs of devices `shift = 1, 2, 4, ...` apart, one
  `ppermute` per level, then averages. Here each replica gathers all the
  gradients in one collective and runs the same pairwise tree locally, so
  all replicas agree without further communication.
  """
  n = collectives.num_replicas()
  if n & (n - 1):
    raise ValueError(f'ReversibleSerialTrainer: adasum needs a power-of-two '
                     f'number of replicas, got {n}.')
  gathered = collectives.all_gather(
      fastmath.nested_map(lambda g: g[tf.newaxis], grads), axis=0)

  def merge(stacked):
    values = [stacked[k] for k in range(n)]
    shift = 1
    while shift < n:
      values = [_adasum_merge(values[k], values[k ^ shift]) for k in range(n)]
      shift *= 2
    return tf.add_n(values) / n
  return fastmath.nested_map(merge, gathered)


class ReversibleSerialTrainer:
  """Runs one optimizer per layer over standard and reversible blocks.

  Example:
    >>> import numpy as np
    >>> from tfnp_trax import optimizers, shapes
    >>> batch = (np.ones((4, 6), np.float32), np.array([0, 1, 0, 1]),
    ...          np.ones(4, np.float32))
    >>> model = tl.Serial(tl.Dense(6), tl.Dup(), tl.ReversibleSerial(
    ...     tl.ReversibleHalfResidual(tl.Dense(6)), tl.ReversibleSwap()),
    ...     tl.Concatenate(), tl.Dense(2))
    >>> blocks, loss_layer = extract_reversible_blocks(
    ...     [model, tl.CrossEntropyLoss()])
    >>> init_reversible_blocks(blocks, loss_layer, shapes.signature(batch),
    ...                        fastmath.random.get_prng(0))
    >>> trainer = ReversibleSerialTrainer(blocks, loss_layer, optimizers.Adam)
    >>> loss, stats = trainer.one_step(batch, fastmath.random.get_prng(1),
    ...                                step=0)
    >>> float(loss) > 0
    True
  """

  def __init__(self, blocks, loss_layer, optimizer_fn, n_devices=None,
               memoize_jit=True, free_accelerators_on_step=False, adasum=False,
               n_steps_per_log=None, strategy=None, jit_compile=None,
               gradient_accumulation_steps=1, ema_decay=None,
               ema_warmup=True):
    """Creates one optimizer and one set of variables per layer.

    Args:
      blocks: a list of `(standard_layers, reversible_layers)` pairs of
        lists, all initialized (see `init_reversible_blocks`).
      loss_layer: the initialized final layer; it must output a scalar loss.
      optimizer_fn: a function returning a new optimizer, e.g.
        `optimizers.Adam` or `lambda: optimizers.Adam(0.01)`; an optimizer
        instance is also accepted and copied for each layer.
      n_devices: optional; if given, must equal the strategy's replicas.
      memoize_jit: accepted for Trax compatibility; the step is compiled
        once as a whole, so there are no per-layer functions to memoize.
      free_accelerators_on_step: accepted for Trax compatibility; TensorFlow
        manages device memory itself.
      adasum: if True, merge the replicas' gradients with Adasum
        (https://arxiv.org/abs/2006.02924) instead of averaging them.
      n_steps_per_log: log the layers being run every this many steps
        (Trax's default: 100).
      strategy: a tf.distribute strategy (default: the current one).
      jit_compile: True compiles the whole step with XLA (one replica only;
        with several, XLA cannot compile the collectives on CPU).
      gradient_accumulation_steps: k > 1 runs the forward and reversible
        backward pass on k micro-batches of each batch, one after another,
        and updates every layer once with the mean gradients (see
        `Trainer`).
      ema_decay: None, or a decay in [0, 1): keep an exponential moving
        average of every layer's weights, updated inside the step (see
        `Trainer`).
      ema_warmup: as in `Trainer`.
    """
    del memoize_jit, free_accelerators_on_step
    self._blocks = [(tl.Serial(std), list(rev)) for std, rev in blocks]
    self._loss_layer = loss_layer
    self._optimizer_fn = optimizer_fn
    self._strategy = strategy or tf.distribute.get_strategy()
    self._batches = _batches.BatchDistributor(self._strategy,
                                              'ReversibleSerialTrainer')
    n_replicas = self._strategy.num_replicas_in_sync
    if n_devices is not None and n_devices != n_replicas:
      raise ValueError(
          f'ReversibleSerialTrainer: n_devices={n_devices} but the strategy '
          f'{type(self._strategy).__name__} has {n_replicas} replicas; pass '
          f'n_devices=None or a strategy over {n_devices} devices.')
    self._n_devices = n_replicas
    self._adasum = adasum
    self._n_steps_per_log = n_steps_per_log or 100
    # As in Trax, uninitialized layers are accepted here (their weights and
    # slots are empty trees, and `slots` reads and assigns them); a step
    # with them is refused in `one_step`, where it could not train.
    self._uninitialized = None
    for i, layer in enumerate(self.all_layers):
      missing = _uninitialized(layer)
      if missing is not None:
        self._uninitialized = (i, layer.name, missing.name)
        break

    self._optimizers = [self._make_optimizer() for _ in self.all_layers]
    self._weights, self._slots, self._states = [], [], []
    self._default_opt_params = []
    for i, (layer, opt) in enumerate(zip(self.all_layers, self._optimizers)):
      slots, opt_params = opt.tree_init(layer.weights)
      self._default_opt_params.append(
          {k: onp.float32(v) for k, v in opt_params.items()})
      self._weights.append(
          _variables.VariableTree(layer.weights, self._strategy, f'w{i}'))
      self._slots.append(
          _variables.VariableTree(slots, self._strategy, f'slot{i}'))
      self._states.append(
          _variables.VariableTree(layer.state, self._strategy, f'state{i}'))
    self._accumulation_steps = _accumulation.check_steps(
        gradient_accumulation_steps, 'ReversibleSerialTrainer')
    self._ema = None
    if ema_decay is not None:
      self._ema = _ema.WeightAverage(
          [layer.weights for layer in self.all_layers], self._strategy,
          _ema.check_decay(ema_decay, 'ReversibleSerialTrainer'), ema_warmup)
    self._step_fn = tf.function(self._distributed_step, autograph=False)
    whole = jit_compile is True and n_replicas == 1
    self._compute_fn = (tf.function(self._compute, autograph=False,
                                    jit_compile=True)
                        if whole else self._compute)
    self.n_traces = 0

  def _make_optimizer(self):
    if callable(self._optimizer_fn):
      return self._optimizer_fn()
    return copy.deepcopy(self._optimizer_fn)

  # -- Trax's properties -----------------------------------------------------
  @property
  def loss_layer(self):
    """The final (loss) layer."""
    return self._loss_layer

  @property
  def all_layers(self):
    """All layers in order: per block its standard Serial and reversibles."""
    layers = []
    for std_layer, rev_layers in self._blocks:
      layers.append(std_layer)
      layers.extend(rev_layers)
    layers.append(self._loss_layer)
    return layers

  @property
  def optimizer_fn(self):
    return self._optimizer_fn

  @property
  def strategy(self):
    return self._strategy

  def _nest_per_block(self, per_layer):
    """`[(std, [rev, ...]) per block] + [loss]`, Trax's layout of slots."""
    out, i = [], 0
    for _, rev_layers in self._blocks:
      out.append((per_layer[i], list(per_layer[i + 1:i + 1 + len(rev_layers)])))
      i += 1 + len(rev_layers)
    return out + [per_layer[i]]

  def _flat_per_layer(self, nested):
    flat = []
    for std, revs in nested[:-1]:
      flat.append(std)
      flat.extend(revs)
    return flat + [nested[-1]]

  @property
  def slots(self):
    """The slots of all optimizers, as `[(std, [revs]) per block, loss]`."""
    return self._nest_per_block([s.numpy() for s in self._slots])

  @slots.setter
  def slots(self, slots):
    for tree, value in zip(self._slots, self._flat_per_layer(slots)):
      tree.assign(value)

  def variables(self):
    """All variables (weights, slots, state, and 'ema' with a moving
    average), e.g. for checkpoints."""
    out = {'weights': [v for t in self._weights for v in t.variables],
           'slots': [v for t in self._slots for v in t.variables],
           'state': [v for t in self._states for v in t.variables]}
    if self._ema is not None:
      out['ema'] = self._ema.variables
    return out

  @property
  def gradient_accumulation_steps(self):
    return self._accumulation_steps

  @property
  def ema_decay(self):
    return None if self._ema is None else self._ema.decay

  @property
  def ema_weights(self):
    """The moving average of every layer's weights (a list), or None."""
    return None if self._ema is None else self._ema.tree.numpy()

  def reset_ema(self):
    """Restarts the moving average from the current weights."""
    if self._ema is not None:
      self._ema.reset([t.numpy() for t in self._weights])

  # -- The step --------------------------------------------------------------
  def _reduce_grads(self, grads):
    if self._adasum and self._n_devices > 1:
      return _adasum(grads)
    return collectives.pmean(grads)

  def _update(self, i, step, grads, weights, slots, opt_params):
    """Averages one layer's gradients over replicas and updates it."""
    if _is_empty(weights):
      return weights, slots, {}
    grads = self._reduce_grads(grads)
    return self._optimizers[i].tree_update(step, grads, weights, slots,
                                           opt_params[i], store_slots=False)

  def _compute(self, batch, rng, step, opt_params, weights, slots, states):
    """The pure replica step over per-layer lists of weights/slots/states."""
    n = len(self.all_layers)
    new_weights, new_slots = list(weights), list(slots)
    stats = [None] * n

    def update(i, grads):
      new_weights[i], new_slots[i], stats[i] = self._update(
          i, step, grads, weights[i], slots[i], opt_params)

    if self._accumulation_steps == 1:
      # Each layer is updated as soon as its gradients exist, so they need
      # not all be held at once.
      loss, new_states = self._forward_backward(batch, rng, weights, states,
                                                update)
    else:
      def grad_fn(micro_batch, micro_rng, micro_states):
        grads = [None] * n

        def keep(i, g):
          grads[i] = g
        loss, out_states = self._forward_backward(
            micro_batch, micro_rng, weights, micro_states, keep)
        return (loss, out_states), grads
      (loss, new_states), grads = _accumulation.accumulate(
          grad_fn, batch, rng, list(states), self._accumulation_steps,
          owner='ReversibleSerialTrainer')
      for i in range(n):
        update(i, grads[i])
    stats[-1] = dict(stats[-1], loss=collectives.pmean(loss))
    new_states = [trainer_lib.mean_state(s) for s in new_states]
    joint = {f'layer{j}/{k}': v for j, s in enumerate(stats)
             for k, v in s.items()}
    return stats[-1]['loss'], joint, new_weights, new_slots, new_states

  def _forward_backward(self, batch, rng, weights, states, on_grads):
    """Forward and reversible backward pass of one (micro-)batch.

    Calls `on_grads(i, grads)` with the weight gradients of each layer `i`
    of `all_layers`, last layer first, as soon as they exist.

    Returns:
      `(loss, new_states)`: the loss on this replica and the layers' states.
    """
    layers = self.all_layers
    n = len(layers)
    rngs = fastmath.random.split(rng, n)
    new_states = list(states)

    # Forward: keep the inputs of standard layers only.
    stack, std_inputs, i = batch, [], 0
    for std_layer, rev_layers in self._blocks:
      for layer in [std_layer] + rev_layers:
        x = tl.inputs_from_stack(stack, layer.n_in, layer.name)
        if layer is std_layer:
          std_inputs.append(x)
        y, new_states[i] = layer.pure_fn(x, weights[i], states[i], rngs[i])
        stack = tl.outputs_onto_stack(y, stack, layer.n_in, layer.n_out)
        i += 1

    # The loss layer: forward and backward with a unit cotangent.
    loss_layer = self._loss_layer
    x = tl.inputs_from_stack(stack, loss_layer.n_in, loss_layer.name)
    loss, vjp_fn, new_states[i] = _vjp(
        lambda xx, ww: loss_layer.pure_fn(xx, ww, states[-1], rngs[-1]),
        x, weights[-1])
    grad_stack, loss_grads = vjp_fn(tf.ones_like(loss))
    on_grads(i, loss_grads)

    # Backward, from the last layer down; reversible layers rebuild their
    # inputs from their outputs.
    for b in reversed(range(len(self._blocks))):
      std_layer, rev_layers = self._blocks[b]
      for layer in reversed(rev_layers):
        i -= 1
        y = tl.inputs_from_stack(stack, layer.n_out, layer.name)
        ct = tl.inputs_from_stack(grad_stack, layer.n_out, layer.name)
        x, (x_ct, w_ct) = layer.reverse_and_grad(
            y, ct, weights[i], states[i], new_states[i], rng=rngs[i])
        on_grads(i, w_ct)
        stack = tl.outputs_onto_stack(x, stack, layer.n_out, layer.n_in)
        grad_stack = tl.outputs_onto_stack(x_ct, grad_stack, layer.n_out,
                                           layer.n_in)
      i -= 1
      x = std_inputs[b]
      ct = tl.inputs_from_stack(grad_stack, std_layer.n_out,
                                std_layer.name)
      # Recompute this layer's forward pass here, as Trax does, rather than
      # keep its activations through the whole reversible stack above.
      _, vjp_fn, _ = _vjp(
          lambda xx, ww, j=i, l=std_layer: l.pure_fn(xx, ww, states[j],
                                                     rngs[j]),
          x, weights[i])
      x_ct, w_ct = vjp_fn(ct)
      on_grads(i, w_ct)
      stack = tl.outputs_onto_stack(x, stack, std_layer.n_out,
                                    std_layer.n_in)
      grad_stack = tl.outputs_onto_stack(x_ct, grad_stack,
                                         std_layer.n_out, std_layer.n_in)
    return loss, new_states

  def _replica_step(self, batch, rng, step, opt_params):
    ctx = tf.distribute.get_replica_context()
    rng = fastmath.random.fold_in(rng, ctx.replica_id_in_sync_group)
    loss, stats, weights, slots, states = self._compute_fn(
        batch, rng, step, opt_params, [t.read() for t in self._weights],
        [t.read() for t in self._slots], [t.read() for t in self._states])
    variables, values = [], []
    for trees, new in ((self._weights, weights), (self._slots, slots),
                       (self._states, states)):
      for tree, value in zip(trees, new):
        variables += tree.variables
        values += fastmath.tree_leaves(value)
    updates = _variables.assign_local(variables, values)
    if self._ema is not None:
      updates += self._ema.updates(fastmath.tree_leaves(weights))
    return trainer_lib.after(updates, loss, stats)

  def _distributed_step(self, batch, rng, step, opt_params):
    self.n_traces += 1
    return trainer_lib.run_replicated(self._strategy, self._replica_step,
                                      (batch, rng, step, opt_params))

  def one_step(self, batch, rng, step=0, learning_rate=None):
    """Runs one training step; returns `(loss, stats)` as host scalars.

    Afterwards the layers hold their new weights and state, as in Trax.

    Args:
      batch: a tuple of arrays (inputs, targets[, weights]) for the whole
        global batch on this worker.
      rng: an int32 [2] key; each replica folds in its replica id.
      step: the 0-based step number.
      learning_rate: optional learning rate for this step, for all layers.

    Returns:
      `(loss, stats)`, with stats keyed `layer{i}/{name}` (`i` indexes
      `all_layers`; the loss layer's stats include `loss`).
    """
    if self._uninitialized is not None:
      i, name, sub = self._uninitialized
      raise ValueError(
          f'ReversibleSerialTrainer.one_step: layer {i} ({name}) was not '
          f'initialized when the trainer was built (its sublayer {sub} had '
          f'no weights); call init_reversible_blocks(blocks, loss_layer, '
          f'input_signature, rng) first, then create the trainer.')
    if step % self._n_steps_per_log == 1:
      logging.info('ReversibleSerialTrainer: step %d over %d layers', step,
                   len(self.all_layers))
    params = []
    for defaults in self._default_opt_params:
      p = dict(defaults)
      if learning_rate is not None:
        p['learning_rate'] = learning_rate
      params.append({k: tf.constant(v, tf.float32) for k, v in p.items()})
    _accumulation.check_batch(batch, self._accumulation_steps,
                              self._n_devices,
                              'ReversibleSerialTrainer.one_step')
    batch = self._batches.place(batch).values
    loss, stats = self._step_fn(batch, tf.convert_to_tensor(rng, tf.int32),
                                tf.constant(step, tf.int32), params)
    # The layers get tensor snapshots of the variables, not NumPy copies, so
    # keeping Trax's contract costs no transfer to the host.
    for layer, weights, state in zip(self.all_layers, self._weights,
                                     self._states):
      layer.weights, layer.state = weights.read(), state.read()
    return loss, stats
