"""The body of AsKeras, shared by its Keras 3 and tf_keras faces.

`AsKerasBody` is a mixin: `export/keras.py` puts it before
`keras.layers.Layer` (Keras 3, the default) and `export/tf_keras_layer.py`
before `tf_keras.layers.Layer` (what `tf.keras` is under
`TF_USE_LEGACY_KERAS=1`). It holds everything that does not depend on which
Keras runs it: wrapping and initializing the tfnp_trax layer, its weights as
trainable variables and its state as non-trainable ones, the call (state
and rng advance on training calls only) and the config. Each face adds
what its Keras asks of a layer beyond that (Keras 3's output spec).
"""

import numpy as onp
import tensorflow as tf

from tfnp_trax import fastmath
from tfnp_trax import shapes
from tfnp_trax.export import _args
from tfnp_trax.export import _trees
from tfnp_trax.export import layer_factory as factory_lib
from tfnp_trax.layers import base

__all__ = ['AsKerasBody']


def _key(rng, what):
  """A list of two ints (JSON-friendly) from an int seed or an int32 key."""
  if rng is None:
    return None
  if isinstance(rng, (int, onp.integer)):
    rng = fastmath.random.get_prng(int(rng))
  key = [int(k) for k in onp.asarray(rng).reshape(-1)]
  if len(key) != 2:
    raise ValueError(f'AsKeras: {what} must be an int seed or an int32 key '
                     f'of shape [2], got {rng!r}.')
  return key


def _check_dtypes(input_dtype):
  """Raises unless every leaf of `input_dtype` is a dtype.

  Checked when wrapping: the dtypes are only read when Keras builds the
  layer, far from the call that gave them.
  """
  for dtype in fastmath.tree_flatten(input_dtype):
    try:
      tf.as_dtype(dtype)
    except TypeError:
      raise TypeError(f'AsKeras: input_dtype must be a dtype (or nested '
                      f'dtypes, one per input), e.g. \'float32\' or '
                      f'(\'int32\', \'float32\'), got {dtype!r} in '
                      f'{input_dtype!r}.') from None


def _weight_name(name):
  # Keras names may not contain '/'.
  return name.replace('/', '.')


class AsKerasBody:
  """Runs a tfnp_trax layer as a Keras layer (mixin; see the module doc).

  If the tfnp_trax layer is already initialized its weights and state are
  used; otherwise it is initialized when Keras builds this layer. The
  tfnp_trax layer's `mode` is fixed when it is constructed: Keras's
  `training` flag only controls whether the state and rng advance, so a
  'train'-mode BatchNorm normalizes with batch statistics even in
  `model.predict`. Build an 'eval'-mode twin for inference.

  Saving (`get_config`) needs the layer given as a `LayerFactory`, so that
  loading can construct it again; a bare layer instance works for
  training and `model.export`, but not for `.keras` files.
  """

  def __init__(self, layer, batch_size=None, initializer_rng=None, rng=None,
               input_dtype=None, **kwargs):
    """Wraps `layer`.

    Args:
      layer: a tfnp_trax layer, a `LayerFactory`, or a LayerFactory config
        dict (as written by `get_config`).
      batch_size: the batch size of inputs whose batch size Keras leaves
        unknown: used to initialize the layer (None: 1), and set as the
        static batch size of such inputs when tracing (e.g. `model.export`),
        since many layers need one. Those traces then accept only this size.
      initializer_rng: int seed or int32 [2] key for initializing weights.
      rng: int seed or int32 [2] key: the first rng of training calls.
      input_dtype: dtype (or nested dtypes) of the inputs used to
        initialize; taken from the first call when not given.
      **kwargs: passed to `keras.layers.Layer` (e.g. `name`).
    """
    # No autocast: inputs keep their dtypes (ids stay ints, bfloat16 stays).
    super().__init__(autocast=False, **kwargs)
    if isinstance(layer, dict):
      layer = factory_lib.LayerFactory.from_config(layer)
    factory = layer if isinstance(layer, factory_lib.LayerFactory) else None
    if factory is None and not isinstance(layer, base.Layer):
      raise TypeError(
          f'AsKeras: expected a tfnp_trax layer, a LayerFactory or its config '
          f'dict, got {type(layer).__name__} ({layer!r:.80}). Wrap a layer, '
          f'e.g. AsKeras(tl.Serial(tl.Dense(8), tl.Relu())).')
    _args.check_count(batch_size, 'batch_size', 'AsKeras', allow_none=True)
    if input_dtype is not None:
      _check_dtypes(input_dtype)
    self._held = _trees.Held(layer=factory() if factory else layer,
                       factory=factory, templates=None, weight_vars=[],
                       state_vars=[])
    self._batch_size = batch_size
    self._initializer_rng = _key(initializer_rng, 'initializer_rng')
    self._rng_key = _key(rng, 'rng')
    self._input_dtype = input_dtype

  @property
  def trax_layer(self):
    """The wrapped tfnp_trax layer (it keeps its initial weights)."""
    return self._held.layer

  @property
  def trax_weights(self):
    """The current (e.g. trained) weights as a tfnp_trax weight tree."""
    return _trees.unflatten(self._held.weight_vars, self._held.templates[0])

  @property
  def trax_state(self):
    """The current state as a tfnp_trax state tree."""
    return _trees.unflatten(self._held.state_vars, self._held.templates[1])

  # -- Building ------------------------------------------------------------
  def __call__(self, *args, **kwargs):
    if not self.built and self._input_dtype is None and args:
      self._input_dtype = fastmath.nested_map(
          lambda x: tf.as_dtype(getattr(x, 'dtype', 'float32')).name,
          _as_tuple_tree(args[0]))
    return super().__call__(*args, **kwargs)

  def _signature(self, input_shape):
    input_shape = _plain_shapes(input_shape)
    batch = self._batch_size or 1
    dtypes = self._input_dtype

    def sig(shape, dtype):
      shape = tuple(shape)
      if shape and shape[0] is None:
        shape = (batch,) + shape[1:]
      return shapes.ShapeDtype(shape, dtype or 'float32')
    if _is_shape(input_shape):
      dtype = dtypes[0] if isinstance(dtypes, (list, tuple)) else dtypes
      return sig(input_shape, dtype)
    dtypes = dtypes if isinstance(dtypes, (list, tuple)) else (
        [dtypes] * len(input_shape))
    return tuple(sig(s, d) for s, d in zip(input_shape, dtypes))

  def build(self, input_shape):
    layer = self._held.layer
    if layer.initialized:
      weights, state = layer.weights, layer.state
    else:
      rng = (None if self._initializer_rng is None else
             tf.constant(self._initializer_rng, tf.int32))
      weights, state = layer.init(self._signature(input_shape), rng=rng)
    self._held.templates = (fastmath.nested_map(lambda _: 0, weights),
                            fastmath.nested_map(lambda _: 0, state))
    self._held.weight_vars = self._add_tree(layer, weights, trainable=True)
    self._held.state_vars = self._add_tree(layer, state, trainable=False)
    # Without an explicit rng, derive one from the layer's own key (folded,
    # so that training calls do not reuse the initialization key).
    key = self._rng_key or _key(fastmath.random.fold_in(layer.rng, 1), 'rng')
    self._rng_var = self.add_weight(
        shape=(2,), dtype='int32', trainable=False, name='rng',
        initializer=lambda shape, dtype: tf.constant(key, tf.int32))
    self.built = True

  def _add_tree(self, layer, tree, trainable):
    leaves = fastmath.tree_flatten(tree)
    names = _trees.leaf_names(layer, tree)
    variables = []
    for leaf, name in zip(leaves, names):
      value = tf.convert_to_tensor(leaf)
      variables.append(self.add_weight(
          shape=tuple(value.shape), dtype=value.dtype.name,
          trainable=trainable and value.dtype.is_floating,
          name=_weight_name(name),
          initializer=lambda shape, dtype, v=value: v))
    return variables

  # -- Running -------------------------------------------------------------
  def call(self, inputs, training=None):
    held = self._held
    x = tuple(inputs) if isinstance(inputs, list) else inputs
    if self._batch_size:
      # Keras traces with an unknown batch size (e.g. in model.export); many
      # layers need a static one, so pin it to batch_size.
      x = fastmath.nested_map(self._pin_batch, x)
    weights, state = self.trax_weights, self.trax_state
    rng = tf.convert_to_tensor(self._rng_var)
    if training:
      keys = fastmath.random.split(rng, 2)
      rng = keys[1]
    y, new_state = held.layer.pure_fn(x, weights, state, rng)
    if training:
      self._rng_var.assign(keys[0])
      for var, value in zip(held.state_vars, fastmath.tree_flatten(new_state)):
        var.assign(tf.cast(value, var.dtype))
    return tuple(y) if isinstance(y, list) else y

  def _pin_batch(self, x):
    x = tf.convert_to_tensor(x)
    if x.shape.rank and x.shape[0] is None:
      x = tf.ensure_shape(x, [self._batch_size] + x.shape.as_list()[1:])
    return x

  # -- Saving --------------------------------------------------------------
  def get_config(self):
    factory = self._held.factory
    if factory is None:
      raise NotImplementedError(
          f'AsKeras({self._held.layer.name}): saving the config needs to '
          f'know how to construct the layer again. Wrap it as '
          f'AsKeras(LayerFactory(constructor, **kwargs)) instead of passing '
          f'a built layer.')
    config = super().get_config()
    config.update({
        'layer': factory.get_config(),
        'batch_size': self._batch_size,
        'initializer_rng': self._initializer_rng,
        'rng': self._rng_key,
        'input_dtype': self._input_dtype,
    })
    return config


def _plain_shapes(x):
  """Shapes as tuples: tf_keras builds with TensorShapes (or lists of them)."""
  if isinstance(x, tf.TensorShape):
    return tuple(x.as_list()) if x.rank is not None else ()
  if isinstance(x, (list, tuple)) and not _is_shape(x):
    return type(x)(_plain_shapes(s) for s in x)
  return x


def _is_shape(x):
  return isinstance(x, (list, tuple)) and all(
      d is None or isinstance(d, int) for d in x)


def _as_tuple_tree(x):
  return tuple(x) if isinstance(x, list) else x
