"""Mixed bfloat16 precision for the Trainer, Loop and their evals.

The policy is that of Keras's `mixed_bfloat16`: variables (weights, optimizer
slots, model state) stay float32, and each step computes in bfloat16. Inside
the step the float32 weights are cast to bfloat16 before the model runs, as
are the float32 inputs the model body reads; integer ids are untouched. The
gradient of that cast is the float32 cast of the bfloat16 gradient, so the
optimizer updates float32 master weights with float32 slots (the fused
Adam/SGD kernels included).

Statistics that bfloat16 would ruin are computed in float32 by the layers
themselves: LayerNorm/BatchNorm mean and variance, attention logits and
softmax, and every loss and metric (which upcast their inputs). The loss the
step returns is float32.
"""

import tensorflow as tf

from tfnp_trax import fastmath
from tfnp_trax import layers as tl

__all__ = ['PRECISIONS', 'resolve', 'cast_floats', 'model_inputs',
           'cast_inputs']

# Accepted spellings of `precision=`; None means float32 (no casting).
PRECISIONS = {None: None, 'float32': None, 'bfloat16': tf.bfloat16,
              'bf16': tf.bfloat16, 'mixed_bfloat16': tf.bfloat16}


def resolve(precision, owner):
  """The compute dtype for `precision` (None: plain float32 training).

  Args:
    precision: None, 'float32', or 'bfloat16' / 'bf16' / 'mixed_bfloat16'.
    owner: the caller's name, for the error message.

  Returns:
    None, or tf.bfloat16.

  Raises:
    ValueError: naming `owner`, for any other value.
  """
  if isinstance(precision, str) or precision is None:
    key = precision.lower() if isinstance(precision, str) else None
    if key in PRECISIONS:
      return PRECISIONS[key]
  names = [k for k in PRECISIONS if k is not None]
  raise ValueError(
      f'{owner}: precision must be None or one of {names}, got '
      f'{precision!r}. Use precision=\'bf16\' for mixed bfloat16 training '
      f'(float32 weights, bfloat16 compute).')


def cast_floats(tree, dtype):
  """Casts the float32 leaves of `tree` to `dtype`; other leaves unchanged.

  Only float32 is lowered: float64 leaves (e.g. gradient checks) and
  integer ids keep their dtype.
  """
  def cast(x):
    x = tf.convert_to_tensor(x)
    return tf.cast(x, dtype) if x.dtype == tf.float32 else x
  return fastmath.nested_map(cast, tree)


def model_inputs(model_with_loss):
  """How many leading batch items the model body reads (None: all).

  For the usual `Serial(model, loss_layer)` that is the model's `n_in`:
  targets and loss weights then reach the loss layer in float32, as Keras
  leaves `y_true` and sample weights uncast. For any other layer every float
  input is cast.
  """
  if isinstance(model_with_loss, tl.Serial) and model_with_loss.sublayers:
    return model_with_loss.sublayers[0].n_in
  return None


def cast_inputs(batch, n_inputs, dtype):
  """Casts the float32 leaves of the first `n_inputs` batch items."""
  if not isinstance(batch, (list, tuple)):
    return cast_floats(batch, dtype)
  if n_inputs is None:
    n_inputs = len(batch)
  items = list(batch)
  items[:n_inputs] = [cast_floats(x, dtype) for x in items[:n_inputs]]
  return tuple(items) if isinstance(batch, tuple) else items
