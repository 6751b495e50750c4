"""Recurrent layers: LSTM, GRU and SRU cells and the layers scanning them.

A cell maps `(x, state) -> (y, new_state)` for one time step; `LSTM` and
`GRU` scan their cell over axis 1 of a (batch, length, depth) input,
starting from a zero state. `SRU` computes its gates for all steps at once
and scans only the cheap elementwise recurrence, `ScanSRUCell`.
"""

import math

import numpy as onp

from tfnp_trax import fastmath
from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.layers import activation_fns
from tfnp_trax.layers import base
from tfnp_trax.layers import combinators as cb
from tfnp_trax.layers import core
from tfnp_trax.layers import flow
from tfnp_trax.layers import initializers

from tfnp_trax.layers.general_gru_cell import ConvGRUCell
from tfnp_trax.layers.general_gru_cell import GeneralGRUCell

__all__ = ['LSTMCell', 'LSTM', 'GRUCell', 'GRU', 'InnerSRUCell', 'ScanSRUCell',
           'SRU', 'MakeZeroState', 'ConvGRUCell', 'GeneralGRUCell']


def _gate_dtype(x):
  """Gates are computed in float32 (float64 for float64 inputs)."""
  return jnp.float64 if x.dtype == jnp.float64 else jnp.float32


def _float_input(x):
  """Integer and boolean inputs as float32, as Trax's Dense-built cells give.

  Float inputs keep their dtype, so bfloat16 activations stay bfloat16.
  """
  return x if fastmath.is_float(x) else x.astype(jnp.float32)


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
    x = _float_input(jnp.asarray(inputs[0]))
    state = _float_input(jnp.asarray(inputs[1]))
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
    x = _float_input(jnp.asarray(inputs[0]))
    h = _float_input(jnp.asarray(inputs[1]))
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

  The zeros take x's dtype so that bfloat16 models stay bfloat16; for
  integer x they are float32, as Trax's always are.

  Example:
    >>> tuple(MakeZeroState(2)(jnp.ones((2, 5, 3), dtype=jnp.float32)).shape)
    (2, 6)
  """
  def zeros(x):
    _check_rank3('MakeZeroState', x)
    return jnp.zeros((x.shape[0], depth_multiplier * x.shape[-1]),
                     dtype=_float_input(x).dtype)
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
    return jnp.zeros((x.shape[0], depth), dtype=_float_input(x).dtype)
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


def _check_one_shape(layer_name, names, arrays):
  """Raises a clear error unless the arrays' shapes broadcast together."""
  shapes_ = [tuple(a.shape) for a in arrays]
  try:
    # Unknown (traced) dims are left to the arithmetic: count them as 1.
    onp.broadcast_shapes(*[tuple(1 if d is None else d for d in sh)
                           for sh in shapes_])
  except ValueError:
    listed = ', '.join(f'{n} {sh}' for n, sh in zip(names, shapes_))
    raise ValueError(
        f'{layer_name}: expects inputs of one shape (batch, depth), got '
        f'{listed}.') from None


def InnerSRUCell():  # pylint: disable=invalid-name
  """One step of the SRU recurrence: `(x * (1 - f), f, c) -> (c', c')`.

  With c' = f * c + x * (1 - f); the product x * (1 - f) is computed for
  all steps before the scan, so each step is one multiply-add. The new c is
  both the step's output and the carry.

  Example:
    >>> cell = InnerSRUCell()
    >>> y, c = cell((jnp.full((1, 2), 0.5, dtype=jnp.float32),
    ...              jnp.full((1, 2), 0.5, dtype=jnp.float32),
    ...              jnp.ones((1, 2), dtype=jnp.float32)))
    >>> [float(v) for v in y[0]]
    [1.0, 1.0]

  Returns:
    A layer with n_in=3, n_out=2, named 'InnerSRUCell' as in Trax.
  """
  def step(x_times_one_minus_f, f, c):
    _check_one_shape('InnerSRUCell', ('x * (1 - f)', 'f', 'c'),
                     (x_times_one_minus_f, f, c))
    new_c = f * c + x_times_one_minus_f
    return new_c, new_c
  return base.Fn('InnerSRUCell', step, n_out=2)


def ScanSRUCell(mode, monkey_patched_mask=None):  # pylint: disable=invalid-name
  """`InnerSRUCell` scanned over axis 1: the SRU's recurrence on sequences.

  Maps `(x * (1 - f), f, c_0)`, the first two (batch, length, depth) and
  c_0 (batch, depth), to `(c, c_T)`: every step's c and the last one. In
  'predict' mode the final c is kept and the next call continues from it
  (see `Scan`).

  `monkey_patched_mask` serves Trax's Terraformer, which decodes with
  padding in predict mode: an object whose `get_layer()` gives a layer
  with no inputs that outputs a (batch, m) mask. Steps where the mask is 0
  leave c unchanged. A sequence of length L > 1 uses a mask of ones with
  the given mask written in from position 1 on (from 0 if m = L); a single
  step ignores the mask, as in Trax.

  Example:
    >>> from tfnp_trax import shapes
    >>> layer = ScanSRUCell(mode='train')
    >>> xs = jnp.ones((2, 4, 3), dtype=jnp.float32)
    >>> c0 = jnp.zeros((2, 3), dtype=jnp.float32)
    >>> _ = layer.init(shapes.signature((xs, xs, c0)))
    >>> cs, c_last = layer((xs * 0.5, xs * 0.5, c0))
    >>> tuple(cs.shape), tuple(c_last.shape)
    ((2, 4, 3), (2, 3))

  Args:
    mode: 'train', 'eval' or 'predict'.
    monkey_patched_mask: None, or (predict mode only) the mask source
      described above.

  Returns:
    A layer with n_in=3, n_out=2.
  """
  if monkey_patched_mask is None:
    return flow.Scan(InnerSRUCell(), axis=1, mode=mode)
  if mode != 'predict':
    raise ValueError(
        f"ScanSRUCell: monkey_patched_mask is only used in mode='predict', "
        f'got mode={mode!r}.')

  def update_mask(mask, x_times_one_minus_f):
    # Every step counts by default; the given mask overwrites from step 1
    # (the update start is clamped, so a full-length mask lands at 0).
    length = x_times_one_minus_f.shape[1]
    ones = jnp.ones(x_times_one_minus_f.shape[:2], dtype=jnp.float32)
    if length > 1:
      mask = fastmath.dynamic_update_slice_in_dim(
          ones != 0, jnp.asarray(mask) != 0, 1, axis=1)
    else:
      mask = ones
    return mask, x_times_one_minus_f

  def masked_step(mask, x_times_one_minus_f, f, c):
    # One mask value per example, spread over the depth axis. (Trax
    # multiplies the (batch,) mask into (batch, depth) directly, which
    # agrees with this for batch 1 and fails for most other batch sizes.)
    mask = jnp.asarray(mask).astype(c.dtype)
    for _ in range(c.ndim - mask.ndim):
      mask = jnp.expand_dims(mask, -1)
    new_c = (f * c + x_times_one_minus_f) * mask + (1 - mask) * c
    return new_c, new_c

  return cb.Serial(
      monkey_patched_mask.get_layer(),                  # mask, x(1-f), f, c
      base.Fn('update_mask', update_mask, n_out=2),
      flow.Scan(base.Fn('MaskedInnerSRUCell', masked_step, n_out=2),
                axis=1, mode=mode))


def SRU(n_units, activation=None, mode='train'):  # pylint: disable=invalid-name
  r"""Simple Recurrent Unit (https://arxiv.org/abs/1709.02755) over axis 1.

  With [r, f, y] = split(x @ W + b) and sigmoid gates:
  c_t = sigmoid(f_t) * c_{t-1} + (1 - sigmoid(f_t)) * y_t (c_0 = 0),
  h_t = sigmoid(r_t) * act(c_t) + (1 - sigmoid(r_t)) * x_t * sqrt(3).
  The highway term needs the input depth to equal `n_units`. The sqrt(3)
  follows Trax: it keeps the variance of the skip term near that of act(c).

  The gates come from one Dense(3 * n_units) over the whole sequence; only
  the elementwise recurrence for c runs step by step, in `ScanSRUCell`.

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

  def final_gate(c, r, x):
    # The highway term needs x's depth to be n_units; say so before the
    # arithmetic fails with a bare shape mismatch.
    _check_rank3(name, x)
    if x.shape[-1] != n_units:
      raise ValueError(
          f'{name}: input depth {x.shape[-1]} must equal n_units={n_units} '
          f'for the highway connection (input shape {tuple(x.shape)}). Put '
          f'a Dense({n_units}) before the SRU.')
    x = _float_input(x)
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
      # Looked up at call time, as Trax does, so a ScanSRUCell swapped into
      # this module (Trax's Terraformer does so in predict mode) is used.
      ScanSRUCell(mode=mode),                                 # c, c_T, r, x
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
