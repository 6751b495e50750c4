"""Recurrent layers: LSTM and GRU cells, the layers scanning them, and SRU.

A cell maps `(x, state) -> (y, new_state)` for one time step; `LSTM` and
`GRU` scan their cell over axis 1 of a (batch, length, depth) input,
starting from a zero state.
"""

import math

from tfnp_trax import fastmath
from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.layers import activation_fns
from tfnp_trax.layers import base
from tfnp_trax.layers import combinators as cb
from tfnp_trax.layers import core
from tfnp_trax.layers import flow
from tfnp_trax.layers import initializers

__all__ = ['LSTMCell', 'LSTM', 'GRUCell', 'GRU', 'SRU', 'MakeZeroState']


def _gate_dtype(x):
  """Gates are computed in float32 (float64 for float64 inputs)."""
  return jnp.float64 if x.dtype == jnp.float64 else jnp.float32


def _check_cell_inputs(layer_name, x, state, w, n_units, state_depth):
  """Raises a clear error if `x` or `state` do not fit the weights `w`."""
  if state.shape[-1] != state_depth:
    raise ValueError(
        f'{layer_name}: state last dim {state.shape[-1]} must be '
        f'{state_depth} for n_units={n_units} (state shape '
        f'{tuple(state.shape)}, input shape {tuple(x.shape)}).')
  if x.shape[-1] + n_units != w.shape[0]:
    raise ValueError(
        f'{layer_name}: input last dim {x.shape[-1]} does not match the '
        f'weights, built for inputs of depth {w.shape[0] - n_units} (input '
        f'shape {tuple(x.shape)}, kernel shape {tuple(w.shape)}). Re-run '
        f'init with the new input signature.')


class LSTMCell(base.Layer):
  """One step of an LSTM: `(x, state) -> (h, new_state)`.

  The state is the concatenation `[c, h]` on the last axis (2 * n_units).
  With `[i, j, f, o] = [x, h] @ W + b` (forget_bias folded into b at init):
  c' = c * sigmoid(f) + sigmoid(i) * tanh(j), h' = tanh(c') * sigmoid(o).

  Example:
    >>> from tfnp_trax import shapes
    >>> cell = LSTMCell(4)
    >>> _ = cell.init((shapes.ShapeDtype((2, 3)), shapes.ShapeDtype((2, 8))))
    >>> h, state = cell((jnp.ones((2, 3), dtype=jnp.float32),
    ...                  jnp.zeros((2, 8), dtype=jnp.float32)))
    >>> tuple(h.shape), tuple(state.shape)
    ((2, 4), (2, 8))
  """

  def __init__(self, n_units, forget_bias=1.0,
               kernel_initializer=initializers.GlorotUniformInitializer(),
               bias_initializer=initializers.RandomNormalInitializer(1e-6)):
    super().__init__(n_in=2, n_out=2)  # Named 'LSTMCell', as in Trax.
    self._n_units = n_units
    self._forget_bias = forget_bias
    self._kernel_initializer = kernel_initializer
    self._bias_initializer = bias_initializer

  def forward(self, inputs):
    x, state = jnp.asarray(inputs[0]), jnp.asarray(inputs[1])
    w, b = (jnp.asarray(a) for a in self.weights)
    _check_cell_inputs(self.name, x, state, w, self._n_units,
                       2 * self._n_units)
    dtype = _gate_dtype(x)
    c, h = jnp.split(state, 2, axis=-1)
    # The matmul runs in the input dtype, the gates in at least float32.
    y = jnp.matmul(jnp.concatenate([x, h.astype(x.dtype)], axis=-1),
                   w.astype(x.dtype)).astype(dtype) + b.astype(dtype)
    i, j, f, o = jnp.split(y, 4, axis=-1)
    new_c = (c.astype(dtype) * fastmath.expit(f) +
             fastmath.expit(i) * jnp.tanh(j))
    new_h = jnp.tanh(new_c) * fastmath.expit(o)
    return new_h.astype(x.dtype), jnp.concatenate(
        [new_c, new_h], axis=-1).astype(state.dtype)

  def init_weights_and_state(self, input_signature):
    x_sig, state_sig = input_signature
    if state_sig.shape[-1] != 2 * self._n_units:
      raise ValueError(
          f'{self.name}: state last dim {state_sig.shape[-1]} must be '
          f'2 * n_units = {2 * self._n_units} (state shape '
          f'{tuple(state_sig.shape)}).')
    rng_w, rng_b = fastmath.random.split(self.rng, 2)
    w = self._kernel_initializer(
        (x_sig.shape[-1] + self._n_units, 4 * self._n_units), rng_w)
    # As in Trax the forget bias is added to every gate's bias.
    b = self._bias_initializer((4 * self._n_units,), rng_b) + self._forget_bias
    self.weights = (w, b)


class GRUCell(base.Layer):
  """One step of a GRU: `(x, h) -> (h', h')`.

  [u, r] = sigmoid([x, h] @ W1 + b1) (forget_bias folded into b1 at init),
  c = [x, r * h] @ W2 + b2, h' = u * h + (1 - u) * tanh(c).

  Example:
    >>> from tfnp_trax import shapes
    >>> cell = GRUCell(4)
    >>> _ = cell.init((shapes.ShapeDtype((2, 3)), shapes.ShapeDtype((2, 4))))
    >>> y, h = cell((jnp.ones((2, 3), dtype=jnp.float32),
    ...              jnp.zeros((2, 4), dtype=jnp.float32)))
    >>> tuple(y.shape)
    (2, 4)
  """

  def __init__(self, n_units, forget_bias=0.0,
               kernel_initializer=initializers.RandomUniformInitializer(0.01),
               bias_initializer=initializers.RandomNormalInitializer(1e-6)):
    super().__init__(n_in=2, n_out=2)  # Named 'GRUCell', as in Trax.
    self._n_units = n_units
    self._forget_bias = forget_bias
    self._kernel_initializer = kernel_initializer
    self._bias_initializer = bias_initializer

  def forward(self, inputs):
    x, h = jnp.asarray(inputs[0]), jnp.asarray(inputs[1])
    w1, b1, w2, b2 = (jnp.asarray(a) for a in self.weights)
    _check_cell_inputs(self.name, x, h, w1, self._n_units, self._n_units)
    dtype = _gate_dtype(x)
    hx = h.astype(x.dtype)
    # The matmuls run in the input dtype, the gates in at least float32.
    gates = jnp.matmul(jnp.concatenate([x, hx], axis=-1), w1.astype(x.dtype))
    u, r = jnp.split(fastmath.expit(gates.astype(dtype) + b1.astype(dtype)),
                     2, axis=-1)
    rh = (r * h.astype(dtype)).astype(x.dtype)
    c = jnp.matmul(jnp.concatenate([x, rh], axis=-1), w2.astype(x.dtype))
    c = jnp.tanh(c.astype(dtype) + b2.astype(dtype))
    new_h = u * h.astype(dtype) + (1 - u) * c
    return new_h.astype(x.dtype), new_h.astype(h.dtype)

  def init_weights_and_state(self, input_signature):
    x_sig, state_sig = input_signature
    if state_sig.shape[-1] != self._n_units:
      raise ValueError(
          f'{self.name}: state last dim {state_sig.shape[-1]} must be '
          f'n_units = {self._n_units} (state shape '
          f'{tuple(state_sig.shape)}).')
    d_in = x_sig.shape[-1] + self._n_units
    rngs = fastmath.random.split(self.rng, 4)
    n = self._n_units
    self.weights = (
        self._kernel_initializer((d_in, 2 * n), rngs[0]),
        self._bias_initializer((2 * n,), rngs[1]) + self._forget_bias,
        self._kernel_initializer((d_in, n), rngs[2]),
        self._bias_initializer((n,), rngs[3]))


def _check_rank3(layer_name, x):
  if x.ndim != 3:
    raise ValueError(
        f'{layer_name}: expects input of rank 3 (batch, length, depth), got '
        f'shape {tuple(x.shape)}. Add a length axis, e.g. x[:, None, :] '
        f'for one step.')


def MakeZeroState(depth_multiplier=1):  # pylint: disable=invalid-name
  """Zeros of shape (batch, depth_multiplier * depth) for x (batch, len, depth).

  The zeros take x's dtype so that bfloat16 models stay bfloat16.

  Example:
    >>> tuple(MakeZeroState(2)(jnp.ones((2, 5, 3), dtype=jnp.float32)).shape)
    (2, 6)
  """
  def zeros(x):
    _check_rank3('MakeZeroState', x)
    return jnp.zeros((x.shape[0], depth_multiplier * x.shape[-1]),
                     dtype=x.dtype)
  return base.Fn('MakeZeroState', zeros)


def _zero_state(layer_name, depth):
  """Zeros of shape (batch, depth): a cell's initial state for x.

  Named 'MakeZeroState' like the sublayer Trax uses here. Trax's
  MakeZeroState sizes the state from the input depth, so its LSTM and GRU
  fail unless the input depth equals n_units; this one sizes it from
  n_units, which works for any input depth and agrees where Trax works.
  """
  def zeros(x):
    _check_rank3(layer_name, x)
    return jnp.zeros((x.shape[0], depth), dtype=x.dtype)
  return base.Fn('MakeZeroState', zeros)


def LSTM(n_units, mode='train', return_state=False, initial_state=False):  # pylint: disable=invalid-name
  """An LSTM over axis 1: (batch, length, depth) -> (batch, length, n_units).

  Example:
    >>> from tfnp_trax import shapes
    >>> layer = LSTM(4)
    >>> _ = layer.init(shapes.ShapeDtype((2, 5, 3)))
    >>> tuple(layer(jnp.ones((2, 5, 3), dtype=jnp.float32)).shape)
    (2, 5, 4)

  Args:
    n_units: the cell's number of units.
    mode: 'train', 'eval' or 'predict'.
    return_state: if True, also output the final state (batch, 2 * n_units).
    initial_state: if True, take the initial state `[c, h]` from the stack,
      after the input; else start from zeros.

  Returns:
    The LSTM layer.
  """
  name = f'LSTM_{n_units}'
  layers = [] if initial_state else [
      cb.Branch([], _zero_state(name, 2 * n_units))]
  layers.append(flow.Scan(LSTMCell(n_units=n_units), axis=1, mode=mode))
  if not return_state:
    layers.append(cb.Select([0], n_in=2))  # Drops the final state.
  return cb.Serial(*layers, name=name, sublayers_to_print=[])


def GRU(n_units, mode='train'):  # pylint: disable=invalid-name
  """A GRU over axis 1: (batch, length, depth) -> (batch, length, n_units).

  Example:
    >>> from tfnp_trax import shapes
    >>> layer = GRU(4)
    >>> _ = layer.init(shapes.ShapeDtype((2, 5, 3)))
    >>> tuple(layer(jnp.ones((2, 5, 3), dtype=jnp.float32)).shape)
    (2, 5, 4)
  """
  name = f'GRU_{n_units}'
  return cb.Serial(
      cb.Branch([], _zero_state(name, n_units)),
      flow.Scan(GRUCell(n_units=n_units), axis=1, mode=mode),
      cb.Select([0], n_in=2),  # Drops the final state.
      name=name, sublayers_to_print=[])


def SRU(n_units, activation=None, mode='train'):  # pylint: disable=invalid-name
  r"""Simple Recurrent Unit (https://arxiv.org/abs/1709.02755) over axis 1.

  With [r, f, y] = split(x @ W + b) and sigmoid gates:
  c_t = sigmoid(f_t) * c_{t-1} + (1 - sigmoid(f_t)) * y_t (c_0 = 0),
  h_t = sigmoid(r_t) * act(c_t) + (1 - sigmoid(r_t)) * x_t * sqrt(3).
  The highway term needs the input depth to equal `n_units`. The sqrt(3)
  follows Trax: it keeps the variance of the skip term near that of act(c).

  Example:
    >>> from tfnp_trax import shapes
    >>> layer = SRU(3)
    >>> _ = layer.init(shapes.ShapeDtype((2, 5, 3)))
    >>> tuple(layer(jnp.ones((2, 5, 3), dtype=jnp.float32)).shape)
    (2, 5, 3)

  Args:
    n_units: output depth; must equal the input depth.
    activation: optional activation layer applied to c (identity if None).
    mode: 'train', 'eval' or 'predict'.

  Returns:
    The SRU layer, (batch, length, n_units) -> (batch, length, n_units).
  """
  name = f'SRU_{n_units}'

  def step(x_times_one_minus_f, f, c):
    new_c = f * c + x_times_one_minus_f
    return new_c, new_c

  def final_gate(c, r, x):
    # The highway term needs x's depth to be n_units; say so before the
    # arithmetic fails with a bare shape mismatch.
    _check_rank3(name, x)
    if x.shape[-1] != n_units:
      raise ValueError(
          f'{name}: input depth {x.shape[-1]} must equal n_units={n_units} '
          f'for the highway connection (input shape {tuple(x.shape)}). Put '
          f'a Dense({n_units}) before the SRU.')
    # Casts keep x's dtype: Python floats and unary ops may widen bfloat16.
    skip = (x * (1 - r)).astype(_gate_dtype(x)) * math.sqrt(3.0)
    return (c.astype(x.dtype) * r + skip.astype(x.dtype)).astype(x.dtype)

  # Trax's sublayers, in Trax's order and with Trax's names (Trax passes one
  # Sigmoid instance twice; two instances compute the same, without a
  # shared-layer cache marker in the weights).
  return cb.Serial(                                           # x
      cb.Branch(core.Dense(3 * n_units), []),                 # rfy, x
      cb.Split(n_items=3),                                    # r, f, y, x
      cb.Parallel(activation_fns.Sigmoid(), activation_fns.Sigmoid()),
      base.Fn('', lambda r, f, y: (y * (1 - f), f, r),
              n_out=3),                                       # y(1-f), f, r, x
      cb.Parallel([], [], cb.Branch(_sru_zero_state(name), [])),
      flow.Scan(base.Fn('InnerSRUCell', step, n_out=2), axis=1, mode=mode),
      cb.Select([0], n_in=2),                                 # c, r, x
      activation if activation is not None else [],
      base.Fn('FinalSRUGate', final_gate),
      name=name, sublayers_to_print=[])


def _sru_zero_state(layer_name):
  """MakeZeroState() for the SRU's c_0, with errors naming the SRU."""
  def zeros(x):
    _check_rank3(layer_name, x)
    return jnp.zeros((x.shape[0], x.shape[-1]), dtype=x.dtype)
  return base.Fn('MakeZeroState', zeros)
