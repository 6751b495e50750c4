"""GRU cells built from a pluggable transform: GeneralGRUCell, ConvGRUCell.

Unlike `GRUCell` (one Dense over `[x, state]`), these cells update a state
from itself alone: three copies of `candidate_transform` compute the update
gate u, the reset gate r and the candidate c, and

  u = gate_nl(T_u(s) + sigmoid_bias)
  r = gate_nl(T_r(s) + sigmoid_bias)
  c = Dropout(candidate_nl(T_c(r * s)))
  s' = u * M(s) + (1 - u) * c

with M an optional memory transform (identity by default). The Neural GPU
(`tfnp_trax.models.NeuralGPU`) is a stack of such cells with convolutions.
Layer order and names follow Trax, so weight trees line up with Trax's.
"""

from tfnp_trax import fastmath
from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.layers import activation_fns
from tfnp_trax.layers import base
from tfnp_trax.layers import combinators as cb
from tfnp_trax.layers import convolution
from tfnp_trax.layers import core

__all__ = ['GeneralGRUCell', 'ConvGRUCell']

# Layer constructors are CamelCase functions, as in Trax.
# pylint: disable=invalid-name


def _AddSigmoidBias(sigmoid_bias):
  """Adds a constant before a gate's nonlinearity, in the input's dtype."""
  def f(x):
    # A weakly typed bias, as in JAX: bfloat16 stays bfloat16 (TensorFlow's
    # NumPy alone would give float32).
    x, bias = fastmath.promote_args(x, sigmoid_bias)
    return x + bias
  # Trax's name has the braces literally (its f-string prefix is missing);
  # kept so that models print as Trax's do.
  return base.Fn('AddSigmoidBias({sigmoid_bias})', f)


def _ResetState():
  """`(r, s) -> r * s`, named 'Multiply' as in Trax, with a clear error."""
  def f(r, s):
    if tuple(r.shape) != tuple(s.shape):
      raise ValueError(
          f'GeneralGRUCell: candidate_transform must keep the state\'s shape '
          f'{tuple(s.shape)}, got {tuple(r.shape)} (for ConvGRUCell: the '
          f'state depth must equal n_units).')
    r, s = fastmath.promote_args(r, s)  # JAX's promotion: int32 s -> f32.
    return r * s
  return base.Fn('Multiply', f)


def _MemoryGate():
  """`(memory, gate, candidate) -> gate * memory + (1 - gate) * candidate`.

  Trax's `Gate` takes its inputs in this order (memory first); it is named
  'Gate' as in Trax.
  """
  def f(m, g, c):
    # JAX's promotion (an int32 memory meets float32 gates in float32);
    # TensorFlow's NumPy would widen int32 * float32 to float64.
    m, g, c = fastmath.promote_args(m, g, c)
    return g * m + (jnp.ones_like(g) - g) * c
  return base.Fn('Gate', f)


def GeneralGRUCell(candidate_transform, memory_transform_fn=None,
                   gate_nonlinearity=activation_fns.Sigmoid,
                   candidate_nonlinearity=activation_fns.Tanh,
                   dropout_rate_c=0.1, sigmoid_bias=0.5, mode='train'):
  """A GRU cell `state -> new_state` whose transforms are given as builders.

  Example:
    >>> from tfnp_trax import shapes
    >>> cell = GeneralGRUCell(lambda: core.Dense(3), mode='eval')
    >>> _ = cell.init(shapes.ShapeDtype((2, 3)))
    >>> tuple(cell(jnp.ones((2, 3), dtype=jnp.float32)).shape)
    (2, 3)

  Args:
    candidate_transform: a function of no arguments returning a new layer;
      called three times (update gate, reset gate, candidate), so each
      gets its own weights. Its output must have the state's shape.
    memory_transform_fn: optional function of no arguments returning a
      layer applied to the state before gating (None: identity).
    gate_nonlinearity: layer constructor for the gates (e.g. HardSigmoid).
    candidate_nonlinearity: layer constructor for the candidate.
    dropout_rate_c: dropout rate on the candidate only.
    sigmoid_bias: constant added before both gates; a positive value starts
      the cell close to keeping its state.
    mode: the candidate dropout's mode. Not in Trax, whose dropout here is
      always in 'train' mode; 'eval' and 'predict' make the cell
      deterministic. The default keeps Trax's behaviour.

  Returns:
    A layer with n_in=1, n_out=1.
  """
  def gate():
    return [candidate_transform(), _AddSigmoidBias(sigmoid_bias),
            gate_nonlinearity()]

  candidate = [
      cb.Dup(),
      gate(),          # r, s
      _ResetState(),   # r * s
      candidate_transform(),
      candidate_nonlinearity(),
      # Dropout works best on the candidate alone (Semeniuta et al., 2016).
      core.Dropout(rate=dropout_rate_c, mode=mode),
  ]
  memory = memory_transform_fn() if memory_transform_fn else []
  return cb.Serial(
      cb.Branch(memory, gate(), candidate),  # M(s), u, c
      _MemoryGate(),
  )


def ConvGRUCell(n_units, kernel_size=(3, 3), mode='train'):
  """A convolutional GRU cell (Kaiser & Sutskever, 2015): 'SAME' convs.

  The state is channels-last, e.g. (batch, height, width, n_units); the
  gates are sigmoids and the candidate a tanh.

  Example:
    >>> from tfnp_trax import shapes
    >>> cell = ConvGRUCell(4, mode='eval')
    >>> _ = cell.init(shapes.ShapeDtype((1, 5, 5, 4)))
    >>> tuple(cell(jnp.ones((1, 5, 5, 4), dtype=jnp.float32)).shape)
    (1, 5, 5, 4)

  Args:
    n_units: channels of the state (and of every convolution).
    kernel_size: the convolutions' window.
    mode: the candidate dropout's mode (see `GeneralGRUCell`; not in Trax).

  Returns:
    A layer with n_in=1, n_out=1.
  """
  def conv():
    return convolution.Conv(filters=n_units, kernel_size=kernel_size,
                            padding='SAME')
  return GeneralGRUCell(
      candidate_transform=conv,
      memory_transform_fn=None,
      gate_nonlinearity=activation_fns.Sigmoid,
      candidate_nonlinearity=activation_fns.Tanh,
      mode=mode)
