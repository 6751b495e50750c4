"""Accelerate: a layer run compiled and, on several devices, data-parallel.

Also `on_cpu` and `on_accelerator`, which place arrays.
"""

# Trax's data-parallel helpers of this module live in `distribute`; they
# are re-exported here for Trax's import path.
from distribute.averaging import mean_or_pmean
from distribute.forward import jit_forward
from distribute.sharding import for_n_devices
from distribute.sharding import reshape_by_device
from tfnp_trax import fastmath
from tfnp_trax import shapes
from tfnp_trax.fastmath import data_parallel
from tfnp_trax.fastmath import devices
from tfnp_trax.layers import _inputs
from tfnp_trax.layers import base

__all__ = ['Accelerate', 'on_cpu', 'on_accelerator', 'mean_or_pmean',
           'jit_forward', 'for_n_devices', 'reshape_by_device']

on_cpu = data_parallel.on_cpu
on_accelerator = data_parallel.on_accelerator


class Accelerate(base.Layer):
  """Runs `layer` compiled, its batch split over the local devices.

  With one device this is `layer` compiled with `tf.function` (with XLA on
  GPUs and TPUs). With `n_devices > 1` each call pads the batch with zeros
  to a multiple of `n_devices`, runs one slice per device under a
  `tf.distribute.MirroredStrategy` (`distribute.pmap`) and joins the
  outputs along the batch axis, so batched outputs equal the plain layer's
  when the batch divides evenly (padding can change layers that mix
  examples, such as BatchNorm in training). As in Trax, a scalar output
  (e.g. a loss) comes back as one value per device, and the new state is
  the first device's. Inside a replica of a strategy (where the batch is
  split already) the layer just runs compiled.

  Weights and state: Trax stores them here replicated, with a leading
  device axis, and offers `replicate_weights`. Here `weights`, `state` and
  `rng` *are* the wrapped layer's, unreplicated: reading or setting them
  on either layer is the same, and each call hands the one copy to every
  device (TensorFlow copies it to each device in the call). So no device
  axis ever appears, `init` gives the same weights as `layer.init` with the
  same key, and `replicate_weights` / `replicate_state` just set them.

  Example:
    >>> layer = tl.Serial(tl.Dense(3), tl.Relu())
    >>> _ = layer.init(shapes.ShapeDtype((4, 2)))
    >>> fast = tl.Accelerate(layer)
    >>> x = jnp.ones((4, 2))
    >>> bool(jnp.allclose(fast(x), layer(x)))
    True
  """

  def __init__(self, layer, n_devices=None, jit=True):
    """Wraps `layer`.

    Args:
      layer: the layer to run, initialized or not.
      n_devices: how many local devices to split the batch over; None uses
        them all (all GPUs or TPU cores, else all logical CPUs).
      jit: compile the layer; False runs it eagerly on one device (for
        debugging; several devices always run compiled).
    """
    super().__init__(n_in=layer.n_in, n_out=layer.n_out)
    self._sublayers = (layer,)
    self._n_devices = n_devices or devices.local_device_count()
    self._run = data_parallel.accelerate(layer.pure_fn, self._n_devices,
                                         jit=jit, fn_name='Accelerate')

  @property
  def sublayer(self):
    """The wrapped layer."""
    return self._sublayers[0]

  @property
  def n_devices(self):
    return self._n_devices

  # The wrapped layer's weights, state and rng, seen through this layer.
  @property
  def weights(self):
    return self.sublayer.weights

  @weights.setter
  def weights(self, weights):
    self.sublayer.weights = weights

  @property
  def state(self):
    return self.sublayer.state

  @state.setter
  def state(self, state):
    self.sublayer.state = state

  @property
  def rng(self):
    return self.sublayer.rng

  @rng.setter
  def rng(self, rng):
    self.sublayer.rng = rng

  @property
  def initialized(self):
    return self.sublayer.initialized

  def replicate_weights(self, weights):
    """Trax's way to set weights; here the same as `self.weights = ...`."""
    self.sublayer.weights = weights

  def replicate_state(self, state):
    """Trax's way to set state; here the same as `self.state = ...`."""
    self.sublayer.state = state

  def init_weights_and_state(self, input_signature):
    self.sublayer.init(input_signature, use_cache=True)

  def _forward_abstract(self, input_signature):
    out, state = self.sublayer._forward_abstract(input_signature)  # pylint: disable=protected-access
    if self._n_devices > 1:  # Scalars come back one per device.
      out = fastmath.nested_map(
          lambda s: shapes.ShapeDtype((self._n_devices,), s.dtype)
          if not s.shape else s, out)
    return out, state

  def pure_fn(self, x, weights, state, rng, use_cache=False):
    """The wrapped layer's `pure_fn`, compiled and split over devices."""
    del use_cache  # The one copy of the weights lives on the sublayer.
    if base.is_cache_marker(weights) and base.is_cache_marker(state):
      weights, state = self.weights, self.state
    x = _inputs.canonical_inputs(x, self.n_in)
    return self._run(x, weights, state, rng)
