"""The host side of a compiled training step: packing and calling it cheaply.

Design note. A small model's step takes well under a millisecond of device
time, so what the host does around each call shows in the step rate. Three
things keep it small, and they live here together:

* **Packed hyperparameters.** The step number and every hyperparameter
  travel as one float64 tensor (`pack_hparams`), placed on the weights'
  device as it is made: one new input per call instead of several, and a
  placed one (each fresh input, more so an unplaced one, makes a call of a
  compiled step dearer). float64 holds the step exactly below 2**53 (the
  step casts it to int32) and each float32 hyperparameter exactly.
* **The traced graph called directly.** `StepCaller` keeps the concrete
  function traced for the last batch layout (number, types, shapes and
  dtypes of the leaves and the key) and calls it without `tf.function`'s
  per-call signature matching.
* **Flat calls.** When every input is a plain tensor it calls the graph on
  the flat list of tensors (`ConcreteFunction._call_flat`, TensorFlow's own
  path below argument binding): about 0.1 ms of host time per step. A
  TensorFlow without that method gets the ordinary concrete call.

Distributed batches, a different layout, or functions run eagerly take the
ordinary `tf.function` call, which traces when it must.
"""

import numpy as onp
import tensorflow as tf

from tfnp_trax import fastmath

__all__ = ['StepCaller', 'pack_hparams']


def pack_hparams(step, params, names, device, owner):
  """The step number and hyperparameters `names` as one float64 tensor.

  Args:
    step: the 0-based step number (an integer value).
    params: dict of hyperparameter values, with every name in `names`.
    names: the order of the hyperparameters in the packed tensor.
    device: a device to place the tensor on, or None.
    owner: the component named in error messages.

  Raises:
    ValueError: if `step` is not an integer or does not fit int32.
  """
  as_int = int(step)
  if as_int != step:
    raise ValueError(f'{owner}.one_step: step must be an integer, got '
                     f'{step!r}.')
  if not -2**31 <= as_int < 2**31:
    raise ValueError(f'{owner}.one_step: step {as_int} does not fit the '
                     f'int32 step counter.')
  packed = onp.array([as_int] + [onp.float32(params[k]) for k in names],
                     onp.float64)
  if device is None:
    return tf.convert_to_tensor(packed)
  return fastmath.device_put(packed, device)


def _flat_caller(concrete):
  """Calls `concrete` on its flat input tensors, or None if TF can't."""
  call_flat = getattr(concrete, '_call_flat', None)
  if call_flat is None:
    return None
  return lambda flat: call_flat(flat, concrete.captured_inputs)


class StepCaller:
  """Calls a `tf.function(batch, rng, hparams)` step, reusing its trace.

  Args:
    step_fn: the `tf.function` of the step.
  """

  def __init__(self, step_fn):
    self._step_fn = step_fn
    self._layout, self._concrete, self._flat = None, None, None

  @property
  def concrete(self):
    """The concrete function of the last layout, or None before a call."""
    return self._concrete

  def __call__(self, placed, rng, hparams):
    """Runs the step on a `_batches.Placed` batch."""
    batch, leaves = placed.values, placed.leaves
    if leaves is None or tf.config.functions_run_eagerly():
      return self._step_fn(batch, rng, hparams)
    layout = (len(batch), len(leaves), getattr(rng, 'dtype', None),
              tuple(getattr(rng, 'shape', ()))) + tuple(
                  (type(x), tuple(x.shape), x.dtype) for x in leaves)
    if layout == self._layout:
      flat = leaves + [rng, hparams]
      if self._flat is not None and isinstance(rng, tf.Tensor) and (
          isinstance(hparams, tf.Tensor)):
        # The layout check has matched every input's type, shape and dtype
        # to the trace, so the graph is called on the flat tensors.
        return self._flat(flat)
      try:
        return self._concrete(batch, rng, hparams)
      except TypeError:
        pass  # A difference this check does not see: trace as usual.
    out = self._step_fn(batch, rng, hparams)
    self._concrete = self._step_fn.get_concrete_function(batch, rng, hparams)
    self._flat = _flat_caller(self._concrete)
    self._layout = layout
    return out
