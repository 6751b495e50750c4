"""FromKeras: a Keras 3 layer as a tfnp_trax layer.

The Keras layer's trainable variables become the tfnp_trax weights and its
non-trainable variables (e.g. BatchNormalization statistics, dropout seed
generators) the state. It runs functionally through Keras 3's
`stateless_call`, so it composes with combinators, `fastmath.grad`,
`fastmath.jit` and the tfnp_trax optimizers like any other layer.
"""

import inspect
import sys

import tensorflow as tf

from tfnp_trax.export import _args
from tfnp_trax.layers import base

__all__ = ['FromKeras']


class FromKeras(base.Layer):
  """Runs `keras_layer` inside tfnp_trax combinators.

  Example:
    >>> layer = FromKeras(keras.layers.Dense(3))
    >>> _ = layer.init(shapes.ShapeDtype((2, 4)))
    >>> [tuple(w.shape) for w in layer.weights]
    [(4, 3), (3,)]

  Initializing builds the Keras layer (if it is not built yet) and copies
  its variable values into the weights and state; the Keras variables are
  not updated afterwards. Randomness inside the Keras layer comes from its
  own seed-generator state, not from the tfnp_trax rng.
  """

  def __init__(self, keras_layer, mode='train', n_in=1, n_out=1):
    """Wraps `keras_layer`.

    Args:
      keras_layer: a `keras.layers.Layer` (Keras 3).
      mode: 'train' calls it with `training=True` (dropout active, batch
        statistics updated); 'eval' and 'predict' with `training=False`.
      n_in: number of inputs, passed to the Keras layer as a list if > 1.
      n_out: number of outputs the Keras layer returns.
    """
    if not hasattr(keras_layer, 'stateless_call'):
      raise TypeError(f'FromKeras: expects a Keras 3 layer (with '
                      f'stateless_call), got {type(keras_layer).__name__}.')
    # A Keras layer is called with at least one input and gives at least
    # one output.
    _args.check_count(n_in, 'n_in', 'FromKeras')
    _args.check_count(n_out, 'n_out', 'FromKeras')
    if mode not in ('train', 'eval', 'predict'):
      raise ValueError(f"FromKeras: mode must be 'train', 'eval' or "
                       f"'predict', got {mode!r}.")
    super().__init__(n_in=n_in, n_out=n_out,
                     name=f'FromKeras_{keras_layer.name}')
    self._keras_layer = keras_layer
    self._training = mode == 'train'
    # Only some Keras layers take a `training` argument (Add does not).
    self._takes_training = 'training' in inspect.signature(
        keras_layer.call).parameters
    # Errors name the caller's line, not this file's.
    frame = sys._getframe(1)  # pylint: disable=protected-access
    self._caller = f'{frame.f_code.co_filename}:{frame.f_lineno}'

  @property
  def keras_layer(self):
    return self._keras_layer

  def _keras_inputs(self, x):
    return list(x) if self.n_in > 1 else x

  def init_weights_and_state(self, input_signature):
    layer = self._keras_layer
    if not layer.built:
      sigs = input_signature if self.n_in > 1 else (input_signature,)
      # Build by calling on zeros: some layers infer shapes only in call.
      zeros = [tf.zeros(s.shape, s.dtype) for s in sigs]
      layer(zeros if self.n_in > 1 else zeros[0])
    self.weights = tuple(tf.convert_to_tensor(v.value)
                         for v in layer.trainable_variables)
    self.state = tuple(tf.convert_to_tensor(v.value)
                       for v in layer.non_trainable_variables)

  def forward(self, x):
    weights, state = self.weights, self.state
    layer = self._keras_layer
    if len(weights) != len(layer.trainable_variables) or len(state) != len(
        layer.non_trainable_variables):
      raise ValueError(
          f'{self.name}: expected {len(layer.trainable_variables)} weights '
          f'and {len(layer.non_trainable_variables)} state arrays (the Keras '
          f'layer\'s variables), got {len(weights)} and {len(state)}. Call '
          f'layer.init(input_signature) first.')
    kwargs = {'training': self._training} if self._takes_training else {}
    y, new_state = layer.stateless_call(
        list(weights), list(state), self._keras_inputs(x), **kwargs)
    self.state = tuple(new_state)
    return tuple(y) if isinstance(y, list) else y
