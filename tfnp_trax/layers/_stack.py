"""The data stack: how combinators pass values between sublayers.

It knows nothing of `Layer` (only `n_in`/`n_out`), so `base` builds on it.
"""

__all__ = ['inputs_from_stack', 'outputs_onto_stack', 'n_inputs_n_outputs',
           'stack_size']


def stack_size(stack):
  return len(stack) if isinstance(stack, (list, tuple)) else 1


def inputs_from_stack(stack, n_in, layer_name='layer'):
  """Takes the top `n_in` items off the stack (bare if n_in == 1)."""
  if not isinstance(stack, (list, tuple)):
    if n_in == 1:
      return stack
    if n_in == 0:
      return ()
    raise ValueError(f'{layer_name}: needs {n_in} inputs but the data stack '
                     f'holds 1.')
  if len(stack) < n_in:
    raise ValueError(f'{layer_name}: needs {n_in} inputs but the data stack '
                     f'holds {len(stack)}.')
  return stack[0] if n_in == 1 else tuple(stack[:n_in])


def outputs_onto_stack(outputs, stack, n_in, n_out=None):
  """Replaces the top `n_in` stack items by `outputs`."""
  rest = tuple(stack[n_in:]) if isinstance(stack, (list, tuple)) else (
      () if n_in == 1 else (stack,))
  if n_out == 1 or not isinstance(outputs, (list, tuple)):
    outs = (outputs,)
  else:
    outs = tuple(outputs)
  new = outs + rest
  return new[0] if len(new) == 1 else new


def n_inputs_n_outputs(layers):
  """How many inputs a sequence of layers consumes and outputs it leaves."""
  running_max = 0
  running_total = 0
  for layer in layers:
    running_total += layer.n_in
    running_max = max(running_max, running_total)
    running_total -= layer.n_out
  return running_max, running_max - running_total
