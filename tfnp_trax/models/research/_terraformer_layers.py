"""Small layers of the Terraformer: the predict-mode mask portal and friends.

In 'predict' mode the Terraformer concatenates the encoder activations and
the first decoder position into one sequence, so the encoder's padding ends
up between the decoder positions that come later. Layers deep inside the
decoder that cache past positions (causal attention, SRU) need the
encoder's padding mask to skip those positions, but the mask is not on
their data stack. Trax passes it around the stack through a "portal": a
layer on the stack (`_PortalInput`) keeps the mask in its state during the
call, and layers built while the portal is installed read it from there
(directly, or through `_PortalOutput`, a layer with no inputs).

Reading another layer's state mid-call works because Serial and Parallel
run their sublayers with `use_cache=True`: a sublayer keeps the state it
set until the outermost `pure_fn` returns.
"""

import contextlib
import functools

from tfnp_trax import layers as tl
from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.layers import rnn
# A module, not its names: the Reformer's package imports this one back.
from tfnp_trax.models.reformer import _reformer_blocks

__all__ = ['PortalInput', 'PortalOutput', 'AsTokenIDs',
           'ReversibleSerialForget', 'predict_mask_hooks']

# Layer constructors are CamelCase functions, as in Trax.
# pylint: disable=invalid-name


class PortalInput(tl.Layer):
  """Passes its input through and keeps it in its state for other layers.

  Named '_PortalInput', as in Trax. The state holds a 1-tuple with the
  latest input; `get_value()` returns it while the model runs.
  """

  def __init__(self):
    super().__init__(n_in=1, n_out=1, name='_PortalInput')
    self._portal_output = PortalOutput(self)

  def forward(self, x):
    if isinstance(x, (list, tuple)):
      x = x[0]
    self.state = (x,)
    return x

  def init_weights_and_state(self, input_signature):
    if isinstance(input_signature, (list, tuple)):
      input_signature = input_signature[0]
    # Trax starts from float zeros; zeros of the input's own dtype keep the
    # state's dtype the same before and after the first call, which
    # compiled decoding loops need.
    self.state = (jnp.zeros(input_signature.shape,
                            dtype=input_signature.dtype),)

  def get_value(self):
    """The portal's value in the current call (the latest input)."""
    return self.state[0]

  def get_layer(self):
    """A layer with no inputs that outputs `get_value()`."""
    return self._portal_output


class PortalOutput(tl.Layer):
  """No inputs; outputs the value its `PortalInput` holds ('_PortalOutput')."""

  def __init__(self, portal_input):
    super().__init__(n_in=0, n_out=1, name='_PortalOutput')
    self._portal_input = portal_input

  def forward(self, x):
    del x
    return self._portal_input.get_value()

  def get_value(self):
    return self._portal_input.get_value()


def AsTokenIDs():
  """Casts a 0/1 mask to int32, to stand in for token ids (0 = padding)."""
  return tl.Fn('AsTokenIDs', lambda x: jnp.asarray(x).astype(jnp.int32))


def ReversibleSerialForget(layers, d_model, n_layers, forget_dense=True):
  """`ReversibleSerial(layers)`, with a "forgetting" layer every n_layers.

  The forgetting layer averages the two streams, maps the average through
  `Dense(d_model)` (or keeps the streams, if `forget_dense` is False) and
  duplicates it; it is not reversible, so the reversible trainer stores its
  input. Nothing is inserted if `n_layers` is 0 or the layers fit in
  `n_layers + 1` blocks.

  Args:
    layers: the reversible layers (blocks) to run.
    d_model: width of the streams.
    n_layers: how many layers run between two forgetting layers.
    forget_dense: use the Dense forgetting layer (True) or a plain
      `Select([0, 1])` (False).

  Returns:
    A layer taking and returning the two streams (plus whatever the blocks
    pass through).
  """
  if not n_layers or len(layers) <= n_layers + 1:
    return tl.ReversibleSerial(layers)
  if forget_dense:
    forgetting_layer = tl.Serial(_reformer_blocks.XYAvg(), tl.Dense(d_model),
                                 tl.Dup())
  else:
    forgetting_layer = tl.Select([0, 1])
  return tl.Serial(
      tl.ReversibleSerial(layers[:n_layers]),
      forgetting_layer,
      ReversibleSerialForget(layers[n_layers:], d_model, n_layers,
                             forget_dense))


def _hookable_classes():
  """Layer classes that read a predict-mode mask from a portal (if any).

  Trax patches `DotProductCausalAttention` and the sparsity module's
  `_RememberPad`: each calls its `monkey_patched_mask()` method when built
  and keeps the portal it returns. A class here takes part only if it
  defines that method.
  """
  classes = [getattr(tl, 'DotProductCausalAttention', None)]
  try:
    from tfnp_trax.layers.research import sparsity  # pylint: disable=g-import-not-at-top
  except ImportError:
    sparsity = None
  classes.append(getattr(sparsity, '_RememberPad', None))
  return [c for c in classes
          if c is not None and hasattr(c, 'monkey_patched_mask')]


@contextlib.contextmanager
def predict_mask_hooks(portal):
  """While active, newly built layers that support it read `portal`'s mask.

  SRU layers (through `rnn.ScanSRUCell`, which `tl.SRU` looks up when it
  is built) and the classes of `_hookable_classes()` get the portal. All
  is put back on exit, also when building the model fails.

  Args:
    portal: a `PortalInput`.

  Yields:
    None.
  """
  classes = _hookable_classes()
  saved = [c.__dict__.get('monkey_patched_mask') for c in classes]
  saved_scan = rnn.ScanSRUCell
  try:
    for c in classes:
      c.monkey_patched_mask = lambda self: portal
    rnn.ScanSRUCell = functools.partial(saved_scan,
                                        monkey_patched_mask=portal)
    yield
  finally:
    rnn.ScanSRUCell = saved_scan
    for c, method in zip(classes, saved):
      if method is None:
        del c.monkey_patched_mask
      else:
        c.monkey_patched_mask = method
