"""Per-head attention layers: weights and state per head, two ways to run.

Trax's efficient attention layers define the attention of ONE example and
ONE head (`forward_unbatched`) and leave the rest to shared machinery, which
this module holds:

* weights are stacked per head (`[n_heads, ...]`), state per example and head
  (`[batch * n_heads, ...]`, example-major, as in Trax);
* `use_reference_code=True` loops over examples and heads in Python and
  sums the heads; by default all examples and heads run in one call (the
  per-head functions accept leading batch axes: inputs get a head axis of
  size 1, weights broadcast along it);
* the default path has Trax's custom backward: the gradient is computed by
  re-running the forward pass (rematerialization, with the state the forward
  pass produced, e.g. the same LSH buckets), so no activations are kept.
  Both paths compute the same function; tests hold them to each other.
* `mode='predict'` keeps a cache of the last `predict_mem_len` inputs and
  decodes from it (`_use_predict_mem`).
"""

import functools

from tfnp_trax import fastmath
from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.layers import base

__all__ = ['EfficientAttentionBase']


def _check_parallel_heads(name, n_heads, n_parallel_heads):
  if n_parallel_heads and (
      (n_parallel_heads > n_heads and n_parallel_heads % n_heads) or
      (n_parallel_heads < n_heads and n_heads % n_parallel_heads)):
    raise ValueError(
        f'{name}: n_parallel_heads must be a multiple or fraction of n_heads, '
        f'got n_parallel_heads={n_parallel_heads}, n_heads={n_heads}.')


def _as_tuple(x):
  return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def _is_float(x):
  return x.dtype in (jnp.float16, jnp.bfloat16, jnp.float32, jnp.float64)


class _PerHeadAttention(base.Layer):
  """Machinery shared by `EfficientAttentionBase` and Trax's other classes.

  (In Trax, SelfAttention and LSHSelfAttention repeat this code instead of
  subclassing EfficientAttentionBase; here they share this private base, so
  `isinstance` answers as in Trax.)

  Subclasses define `create_weights_unbatched`, optionally
  `create_state_unbatched` and `_incremental_forward_unbatched`, and
  `forward_unbatched(*inputs, weights, state, rng, update_state)`, which must
  accept leading batch axes on inputs, weights and state.
  """

  # How many inputs size the weights and the predict cache (None: all).
  # SelfAttention and LSHSelfAttention use the first only, as in Trax.
  _n_init_inputs = None

  def _setup(self, n_heads, n_parallel_heads, use_python_loop,
             use_reference_code):
    _check_parallel_heads(self._name, n_heads, n_parallel_heads)
    self._n_heads = n_heads
    self._n_parallel_heads = n_parallel_heads or None
    # Accepted for Trax compatibility: the batched path runs all heads at
    # once, and the reference path always loops in Python.
    self._use_python_loop = use_python_loop
    self._use_reference_code = use_reference_code
    self._incremental = False

  def _setup_predict(self, predict_mem_len, predict_drop_len):
    """Turns on fast decoding with an input cache of `predict_mem_len`."""
    if predict_mem_len is None or predict_drop_len is None:
      raise ValueError(
          f'{self._name}: mode="predict" needs predict_mem_len and '
          f'predict_drop_len (or chunk_len to derive them), got '
          f'{predict_mem_len} and {predict_drop_len}.')
    if not 0 < predict_drop_len <= predict_mem_len:
      raise ValueError(
          f'{self._name}: need 0 < predict_drop_len <= predict_mem_len, got '
          f'predict_drop_len={predict_drop_len}, '
          f'predict_mem_len={predict_mem_len}.')
    self._incremental = True
    self._predict_mem_len = predict_mem_len
    self._predict_drop_len = predict_drop_len

  # -- To override ---------------------------------------------------------
  def create_weights_unbatched(self, input_signature, rng):
    raise NotImplementedError(
        f'{self._name}: subclasses define create_weights_unbatched.')

  def create_state_unbatched(self, input_signature, rng):
    del input_signature, rng
    return ()

  def forward_unbatched(self, *inputs, weights, state, rng, update_state):
    """Attention of one example and one head: `(output, new_state)`."""
    raise NotImplementedError(
        f'{self._name}: subclasses define forward_unbatched.')

  def _incremental_forward_unbatched(self, *inputs, q_start, q_len, weights,
                                     state, rng, update_state):
    raise NotImplementedError(
        f'{self._name}: fast inference is not implemented for this '
        'attention type.')

  def _check_inputs(self, inputs):
    """Hook for subclasses: raise clear errors on bad input shapes."""

  # -- Weights and state ---------------------------------------------------
  def init_weights_and_state(self, input_signature):
    sigs = _as_tuple(input_signature)
    sigs = sigs[:self._n_init_inputs]
    unbatched = tuple(type(s)(shape=s.shape[1:], dtype=s.dtype) for s in sigs)
    batch_size = int(sigs[0].shape[0])
    stack = lambda *xs: jnp.stack(xs, axis=0)

    weight_rngs = fastmath.random.split(self.rng, self._n_heads)
    weights = [self.create_weights_unbatched(unbatched, weight_rngs[i])
               for i in range(self._n_heads)]
    weights = fastmath.nested_map_multiarg(stack, *weights)
    n_states = self._n_heads * batch_size
    state_rngs = fastmath.random.split(self.rng, n_states)
    state = [self.create_state_unbatched(unbatched, state_rngs[i])
             for i in range(n_states)]
    state = fastmath.nested_map_multiarg(stack, *state)

    if self._incremental:
      mem = tuple(
          jnp.zeros((s.shape[0], self._predict_mem_len) + tuple(s.shape[2:]),
                    dtype=s.dtype) for s in sigs)
      state = (jnp.zeros((), dtype=jnp.int32), mem, state)
    self.state = tuple(state)
    self.weights = tuple(weights)

  # -- Forward and backward -------------------------------------------------
  def _prepare_inputs(self, inputs):
    """Hook: the per-head inputs for the layer's inputs (a tuple)."""
    return inputs

  def forward(self, inputs):
    inputs = _as_tuple(inputs)
    self._check_inputs(inputs)
    output, new_state = self._apply(inputs, self.weights, self.state,
                                    self.rng, update_state=True)
    self.state = new_state
    return output

  def _apply(self, inputs, weights, state, rng, update_state):
    """`(output, new_state)` for all examples and heads."""
    inputs = self._prepare_inputs(inputs)
    seqlen = inputs[0].shape[-2]
    if self._incremental:
      if update_state:
        inputs, head_state, q_start, new_mem, new_mem_end = (
            self._use_predict_mem(inputs, state))
      else:
        # Recomputing a step: the cache already holds its inputs.
        new_mem_end, inputs, head_state = state
        new_mem, q_start = inputs, new_mem_end - seqlen
      fn = functools.partial(self._incremental_forward_unbatched,
                             q_start=fastmath.stop_gradient(q_start),
                             q_len=seqlen)
    else:
      head_state, fn = state, self.forward_unbatched
    run = (self._run_per_head if self._use_reference_code else
           self._run_batched)
    output, head_state = run(fn, inputs, weights, head_state, rng,
                             update_state)
    if self._incremental:
      return output, (new_mem_end, new_mem, head_state)
    return output, tuple(head_state)

  def _run_per_head(self, fn, inputs, weights, state, rng, update_state):
    """Trax's reference path: one example and one head at a time."""
    batch_size, n_heads = int(inputs[0].shape[0]), self._n_heads
    outputs, states = [], []
    for b in range(batch_size):
      total = None
      for h in range(n_heads):
        # pylint: disable=cell-var-from-loop
        out, s = fn(*[x[b] for x in inputs],
                    weights=fastmath.nested_map(lambda w: w[h], weights),
                    state=fastmath.nested_map(lambda s: s[b * n_heads + h],
                                              state),
                    rng=rng, update_state=update_state)
        # pylint: enable=cell-var-from-loop
        total = out if total is None else total + out
        states.append(s)
      outputs.append(total)
    output = jnp.stack(outputs, 0).astype(inputs[0].dtype)
    if states and fastmath.tree_leaves(states[0]):
      state = fastmath.nested_map_multiarg(lambda *s: jnp.stack(s, 0),
                                           *states)
    return output, state

  def _run_batched(self, fn, inputs, weights, state, rng, update_state):
    """All examples and heads at once: leading axes [batch, heads]."""
    batch_size, n_heads = int(inputs[0].shape[0]), self._n_heads
    split_heads = lambda s: jnp.reshape(s, (batch_size, n_heads) + tuple(
        s.shape[1:]))
    merge_heads = lambda s: jnp.reshape(s, (batch_size * n_heads,) + tuple(
        s.shape[2:]))
    out, new_state = fn(*[x[:, None] for x in inputs], weights=weights,
                        state=fastmath.nested_map(split_heads, state),
                        rng=rng, update_state=update_state)
    output = jnp.sum(out, axis=1).astype(inputs[0].dtype)
    return output, fastmath.nested_map(merge_heads, new_state)

  @property
  def has_backward(self):
    # Trax's efficient path brings its own backward; the reference code is
    # differentiated by autodiff.
    return not self._use_reference_code

  def backward(self, inputs, output, grad, weights, state, new_state,
               rng=None, **kwargs):
    """Gradients by re-running the forward pass with `new_state`'s state."""
    del output, state, kwargs
    _, _, inputs_grad, weights_grad = self.forward_and_or_backward(
        inputs, weights, new_state, rng, output_grad=grad,
        compute_output=False, update_state=False)
    return inputs_grad, weights_grad

  def forward_and_or_backward(self, inputs, weights, state, rng,
                              output_grad=None, compute_output=True,
                              update_state=True):
    """Forward and/or backward pass, with Trax's contract.

    Reversible residual layers call this to recompute attention during
    backpropagation. With `update_state=False` the state is reused (an LSH
    layer attends with the buckets it stored), so a backward pass sees the
    same attention pattern as its forward pass.

    Returns:
      `(output, new_state, inputs_grad, weights_grad)`, with None for what
      was not asked for (gradients only when `output_grad` is given).
    """
    single = not isinstance(inputs, (tuple, list))
    inputs = _as_tuple(inputs)
    if output_grad is None:
      output, new_state = self._apply(inputs, weights, state, rng,
                                      update_state)
      return (output if compute_output else None,
              new_state if update_state else None, None, None)
    if self._incremental:
      raise NotImplementedError(
          f'{self._name}: no gradients in mode="predict" (fast decoding); '
          'use mode="train" to train.')
    diff = [_is_float(x) for x in inputs]

    def f(diff_inputs, w):
      it = iter(diff_inputs)
      full = tuple(next(it) if d else x for x, d in zip(inputs, diff))
      return self._apply(full, w, state, rng, update_state)
    diff_inputs = tuple(x for x, d in zip(inputs, diff) if d)
    output, vjp_fn, new_state = fastmath.vjp(f, diff_inputs, weights,
                                             has_aux=True)
    g_inputs, g_weights = vjp_fn(output_grad)
    it = iter(g_inputs)
    g_full = tuple(next(it) if d else None for d in diff)
    return (output if compute_output else None,
            new_state if update_state else None,
            g_full[0] if single else g_full, g_weights)

  # -- Fast decoding -------------------------------------------------------
  def _use_predict_mem(self, inputs, state):
    """Adds `inputs` to the decoding cache.

    Returns:
      `(inputs_to_attend, head_state, q_start, new_mem, new_mem_end)`: the
      (cached) inputs to attend over, where the new queries start in them,
      and the cache to keep.
    """
    mem_end, mem, head_state = state
    seqlen = inputs[0].shape[-2]
    mem_len, drop_len = self._predict_mem_len, self._predict_drop_len
    if seqlen <= drop_len and seqlen < mem_len:
      # A few new tokens (one, when decoding): drop the oldest drop_len
      # cache entries if they do not fit, then write the new ones.
      do_roll = mem_end + seqlen > mem_len
      rolled = lambda buf: jnp.concatenate(
          [buf[:, drop_len:], jnp.zeros_like(buf[:, :drop_len])], axis=1)
      mem = tuple(jnp.where(do_roll, rolled(m), m) for m in mem)
      mem_end = jnp.where(do_roll, mem_end - drop_len, mem_end)
      new_mem = tuple(
          fastmath.dynamic_update_slice_in_dim(m, x.astype(m.dtype), mem_end,
                                               axis=1)
          for m, x in zip(mem, inputs))
      return new_mem, head_state, mem_end, new_mem, mem_end + seqlen
    # A long prefix at once: this only works at the start of a sequence.
    new_mem = []
    for x in inputs:
      if seqlen >= mem_len:
        new_mem.append(x[:, seqlen - mem_len:])
      else:
        pad = jnp.zeros((x.shape[0], mem_len - seqlen) + tuple(x.shape[2:]),
                        dtype=x.dtype)
        new_mem.append(jnp.concatenate([x, pad], axis=1))
    # There is no in-graph assert; as in Trax, a prefix fed after the start
    # shows up as NaNs in the output.
    at_start = jnp.equal(mem_end, 0)
    inputs = tuple(jnp.where(at_start, x, x * float('nan')).astype(x.dtype)
                   if x.dtype == jnp.float32 else x for x in inputs)
    return (inputs, head_state, 0, tuple(new_mem),
            jnp.array(min(seqlen, mem_len), dtype=jnp.int32))


class EfficientAttentionBase(_PerHeadAttention):
  """Base class for memory-efficient multi-head attention layers.

  Subclasses override `create_weights_unbatched`, and optionally
  `create_state_unbatched`, `forward_unbatched` and
  `_incremental_forward_unbatched`, to define the attention of one example
  and one head; this class handles batching, head summation, the
  rematerializing backward pass and the fast-decoding cache.

  Args:
    n_heads: number of attention heads.
    n_in: number of inputs.
    n_parallel_heads: Trax's degree of head parallelism; validated and kept
      (here all heads run at once, or one at a time with the reference code).
    incremental: True to enable fast decoding (self-attention only).
    predict_mem_len: inputs kept in the decoding cache.
    predict_drop_len: inputs dropped from the cache when it is full.
    use_python_loop: accepted for compatibility with Trax.
    use_reference_code: True to loop over examples and heads in Python, with
      autodiff gradients (slow; for tests).
  """

  def __init__(self, n_heads, n_in=1, n_parallel_heads=None,
               incremental=False, predict_mem_len=None, predict_drop_len=None,
               use_python_loop=False, use_reference_code=False):
    super().__init__(n_in=n_in, n_out=1)
    self._setup(n_heads, n_parallel_heads, use_python_loop,
                use_reference_code)
    if incremental:
      self._setup_predict(predict_mem_len, predict_drop_len)
