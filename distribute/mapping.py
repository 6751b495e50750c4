"""`pmap`: run a function once per replica of a tf.distribute strategy.

Stands in for JAX's `pmap`. Arguments follow JAX's layout: axis 0 of a
mapped argument indexes replicas (build it with `shard_batch` or
`for_n_devices`), and replica i receives slice i, without that axis.
"""

import threading

import tensorflow as tf

from distribute import devices as devices_lib

__all__ = ['pmap', 'default_strategy', 'OUT_MODES']

OUT_MODES = ('local', 'stack', 'per_replica')

_lock = threading.Lock()
_default = []


def default_strategy():
  """The strategy `pmap` uses when given none.

  The strategy in scope if there is one (`with strategy.scope():`),
  otherwise a MirroredStrategy over all local devices (all GPUs, else all
  logical CPUs), created once per process.
  """
  if tf.distribute.has_strategy():
    return tf.distribute.get_strategy()
  with _lock:
    if not _default:
      _default.append(
          tf.distribute.MirroredStrategy(devices_lib.replica_devices()))
    return _default[0]


def _in_axes_per_arg(in_axes, n_args):
  axes = (tuple(in_axes) if isinstance(in_axes, (tuple, list))
          else (in_axes,) * n_args)
  if len(axes) != n_args:
    raise ValueError(f'pmap: in_axes has {len(axes)} entries but the function '
                     f'was called with {n_args} arguments.')
  for axis in axes:
    if axis not in (0, None):
      raise ValueError(f'pmap: in_axes entries must be 0 (split axis 0 over '
                       f'replicas) or None (same value for every replica), '
                       f'got {axis!r}.')
  return axes


def _distribute(strategy, index, arg):
  """PerReplica nest holding slice i of every leaf of `arg` on replica i."""
  n = strategy.num_replicas_in_sync
  arg = tf.nest.map_structure(tf.convert_to_tensor, arg)
  for leaf in tf.nest.flatten(arg):
    if leaf.shape.rank == 0 or leaf.shape[0] != n:
      raise ValueError(
          f'pmap: argument {index} has shape {tuple(leaf.shape)} but its axis '
          f'0 must have one entry per replica ({n}). Split a batch with '
          f'shard_batch(x, {n}), replicate with for_n_devices(x, {n}), or '
          f'pass in_axes=None for this argument to give every replica the '
          f'same value.')
  return strategy.experimental_distribute_values_from_function(
      lambda ctx: tf.nest.map_structure(
          lambda t: t[ctx.replica_id_in_sync_group], arg))


def _local_tuple(strategy, out):
  """(nest for local replica 0, nest for local replica 1, ...)."""
  leaves = [strategy.experimental_local_results(v)
            for v in tf.nest.flatten(out)]
  count = max((len(vals) for vals in leaves), default=1)
  return tuple(
      tf.nest.pack_sequence_as(
          out, [vals[i] if len(vals) > 1 else vals[0] for vals in leaves])
      for i in range(count))


class _RunOnReplicas:
  """strategy.run(fn, args) as a callable object.

  tf.function counts traces per code object; one shared lambda would make
  every pmap-ed function count toward the same "frequent retracing" warning.
  """

  def __init__(self, strategy, fn):
    self._strategy = strategy
    self._fn = fn

  def __call__(self, *args):
    return self._strategy.run(self._fn, args=args)


def pmap(fn, axis_name='batch', in_axes=0, strategy=None, out='local'):
  """Returns a function that runs `fn` once per replica via `strategy.run`.

  The replicated call is traced once per input signature in a `tf.function`.
  Inside `fn`, `psum`/`pmean`/`pmax`/`all_gather` reduce across replicas.

  Args:
    fn: function of tensors (or nests) to run on every replica.
    axis_name: accepted for Trax compatibility; a strategy has one replica
      axis, so the name is ignored.
    in_axes: 0 (axis 0 of the argument indexes replicas) or None (the whole
      argument goes to every replica), for all arguments or as a tuple with
      one entry per argument.
    strategy: a tf.distribute strategy; None uses `default_strategy()`.
    out: what the returned function gives back:
      * 'local' (default): a tuple with one entry per local replica (on a
        single host, per replica), entry i being `fn`'s output on replica i
        (`strategy.experimental_local_results`). With one replica this is a
        1-tuple holding `fn(x[0], ...)`.
      * 'stack': `fn`'s output nest with each leaf stacked over local replicas
        along a new axis 0 (the JAX `pmap` layout; one copy per replica
        onto the first replica's device).
      * 'per_replica': `strategy.run`'s raw result (leaves are PerReplica
        values) for `strategy.reduce` or `mean_or_pmean`.

  Returns:
    The mapped function.

  With several workers (MultiWorkerMirroredStrategy), axis 0 spans the
  replicas of all workers: every worker passes the same full array and each
  replica takes the slice of its global replica id; 'local' and 'stack'
  results cover this worker's replicas only.

  Raises:
    ValueError: an unknown `out`; when called, a mapped argument whose axis 0
      is not the replica count, or a bad `in_axes`.

  Example:
    >>> import numpy as np
    >>> f = pmap(lambda x: 2 * x, strategy=tf.distribute.get_strategy())
    >>> f(np.ones((1, 3), np.float32))[0].shape
    (3,)
  """
  del axis_name
  if out not in OUT_MODES:
    raise ValueError(f'pmap: out must be one of {OUT_MODES}, got {out!r}.')
  compiled = {}  # strategy -> tf.function running fn on its replicas

  def run_per_replica(strat):
    if strat not in compiled:
      compiled[strat] = tf.function(_RunOnReplicas(strat, fn))
    return compiled[strat]

  def mapped(*args):
    strat = strategy or default_strategy()
    axes = _in_axes_per_arg(in_axes, len(args))
    dist_args = tuple(
        arg if axis is None else _distribute(strat, i, arg)
        for i, (arg, axis) in enumerate(zip(args, axes)))
    result = run_per_replica(strat)(*dist_args)
    if out == 'per_replica':
      return result
    local = _local_tuple(strat, result)
    if out == 'local':
      return local
    return tf.nest.map_structure(lambda *xs: tf.stack(xs), *local)

  return mapped
