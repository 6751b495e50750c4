"""Running a pure layer function compiled, its batch split over devices.

`accelerate(fn, n_devices)` is what `tl.Accelerate` runs: `fn(x, weights,
state, rng) -> (y, new_state)` compiled with `tf.function` (XLA on GPUs and
TPUs) and, with several local devices, run once per device on a slice of
the batch through `distribute.pmap`. `on_cpu` / `on_accelerator` place
arrays.
"""

import threading

import tensorflow as tf

from distribute import devices as distribute_devices
from distribute import mapping
from distribute import sharding
from tfnp_trax.fastmath import trees

__all__ = ['accelerate', 'xla_pays', 'in_replica_context', 'on_cpu',
           'on_accelerator']

_lock = threading.Lock()
_strategies = {}  # n_devices -> MirroredStrategy over the first n devices.


def _accelerators():
  return (tf.config.list_logical_devices('TPU') or
          tf.config.list_logical_devices('GPU'))


def xla_pays():
  """Whether to compile with XLA: yes on GPUs and TPUs.

  On the CPU, XLA's compile time usually outweighs what it saves, and some
  ops (e.g. TensorBoard summary writes) have no XLA kernels at all.
  """
  return bool(_accelerators())


def in_replica_context():
  """True inside `strategy.run` of a tf.distribute strategy."""
  return (tf.distribute.has_strategy() and
          tf.distribute.get_replica_context() is not None)


def _strategy(n_devices, fn_name):
  with _lock:
    if n_devices not in _strategies:
      names = distribute_devices.replica_devices()
      if len(names) < n_devices:
        raise ValueError(
            f'{fn_name}: n_devices={n_devices} but this host has only '
            f'{len(names)} local device(s) ({", ".join(names)}). Pass '
            f'n_devices <= {len(names)}, or None for all of them.')
      _strategies[n_devices] = tf.distribute.MirroredStrategy(
          names[:n_devices])
    return _strategies[n_devices]


def _batch_size(x):
  leaves = trees.tree_leaves(x)
  return tf.convert_to_tensor(leaves[0]).shape[0] if leaves else None


def _pad_batch(x, n_devices):
  """Zero-pads axis 0 of every leaf of `x` up to a multiple of n_devices."""
  batch = _batch_size(x)
  extra = -batch % n_devices

  def pad(t):
    t = tf.convert_to_tensor(t)
    paddings = [[0, extra]] + [[0, 0]] * (t.shape.rank - 1)
    return tf.pad(t, paddings)
  return (trees.nested_map(pad, x) if extra else x), batch, batch + extra


def _join(per_device, batch, padded):
  """Per-device outputs -> one batch (scalars -> one value per device)."""
  def join(*ys):
    ys = [tf.convert_to_tensor(y) for y in ys]
    if ys[0].shape.rank == 0:
      return tf.stack(ys)
    joined = tf.concat(ys, axis=0)
    return joined[:batch] if joined.shape[0] == padded else joined
  return trees.nested_map_multiarg(join, *per_device)


def accelerate(fn, n_devices, jit=True, fn_name='accelerate'):
  """`fn(x, weights, state, rng) -> (y, new_state)`, compiled and split.

  With one device (or when already inside a replica of a strategy, where
  the batch is split already) the result is `fn` compiled. With more, each
  call pads the batch (axis 0 of every input) with zeros to a multiple of
  `n_devices`, gives every device its slice, the same weights and state and
  its own key split from `rng`, and joins the outputs along axis 0 (padding
  removed; a scalar output becomes one value per device, as in Trax). The
  new state is the first device's.

  Example:
    >>> f = accelerate(lambda x, w, s, r: (x * w, s), 1)
    >>> float(f(tf.constant(2.0), tf.constant(3.0), (), None)[0])
    6.0

  Args:
    fn: the pure function, e.g. a layer's `pure_fn`.
    n_devices: how many local devices to split the batch over.
    jit: compile `fn` with `tf.function` (XLA where `xla_pays()`).
    fn_name: the caller's name, for error messages.

  Returns:
    A function with `fn`'s signature.
  """
  single = (tf.function(fn, jit_compile=xla_pays() or None, autograph=False,
                        reduce_retracing=False) if jit else fn)
  if n_devices == 1:
    return single
  mapped = {}

  def run(x, weights, state, rng):
    if in_replica_context():
      return single(x, weights, state, rng)
    strategy = _strategy(n_devices, fn_name)
    if strategy not in mapped:
      mapped[strategy] = mapping.pmap(
          single, in_axes=(0, None, None, 0), strategy=strategy)
    x, batch, padded = _pad_batch(x, n_devices)
    rngs = tf.random.experimental.stateless_split(
        tf.convert_to_tensor(rng), num=n_devices)
    outs = mapped[strategy](sharding.shard_batch(x, n_devices), weights,
                            state, rngs)
    y = _join([out[0] for out in outs], batch, padded)
    return y, outs[0][1]
  return run


def _place(x, device):
  with tf.device(device):
    return trees.nested_map(tf.identity, x)


def on_cpu(x):
  """A copy of `x` (an array or a tree of them) in host CPU memory."""
  return _place(x, '/CPU:0')


def on_accelerator(x):
  """`x` copied to the accelerator if there is exactly one, else unchanged.

  As in Trax, with no accelerator or several of them there is no single
  place to put `x`, so it is returned as is.
  """
  devices = _accelerators()
  if len(devices) != 1:
    return x
  return _place(x, devices[0].name)
