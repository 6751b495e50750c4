"""Splitting a model into the blocks `ReversibleSerialTrainer` trains.

A block is a pair `(standard_layers, reversible_layers)`: the model is
flattened into single layers, and each run of reversible layers closes a
block together with the standard layers before it. Whatever follows the
last reversible layer becomes the loss layer.
"""

from absl import logging

from tfnp_trax import fastmath
from tfnp_trax.fastmath import numpy as jnp
import tfnp_trax.layers as tl

__all__ = ['extract_reversible_blocks', 'init_reversible_blocks']

# Layers after which a chunked loss may start, and the loss tail it chunks.
_BORDER_LAYERS = ('StripFromConcatenateWithPadding', 'Select')
_CHUNKABLE_TAIL = 'LogSoftmax _CrossEntropy _WeightedMean'


def _flatten(layers):
  """All Serial layers (ReversibleSerial included) opened into a list."""
  if isinstance(layers, (list, tuple)):
    return [x for layer in layers for x in _flatten(layer)]
  if isinstance(layers, tl.Serial):
    return _flatten(list(layers.sublayers))
  return [layers]


def extract_reversible_blocks(layers, loss_chunk_size=0):
  """Splits `layers` into blocks and a loss layer for the reversible trainer.

  Args:
    layers: a layer or a list of layers ending with a loss, e.g.
      `[model, loss]` or `tl.Serial(model, loss)`.
    loss_chunk_size: if > 0, the loss tail `[Dense..., LogSoftmax,
      _CrossEntropy, _WeightedMean]` (after a `Select` or
      `StripFromConcatenateWithPadding`) is computed in chunks of this many
      positions, to save memory with large vocabularies.

  Returns:
    `(blocks, loss_layer)`: a list of `(standard_layers,
    reversible_layers)` pairs and the loss layer, a `Serial`.

  Raises:
    ValueError: if the last layer is reversible, or the loss cannot be
      chunked as asked.
  """
  blocks, std_layers, rev_layers = [], [], []
  for layer in _flatten(layers):
    if isinstance(layer, tl.ReversibleLayer):
      rev_layers.append(layer)
    elif not rev_layers:
      std_layers.append(layer)
    else:
      blocks.append((std_layers, rev_layers))
      std_layers, rev_layers = [layer], []
  if rev_layers:
    raise ValueError(
        f'extract_reversible_blocks: the final layer must be a standard '
        f'loss, not reversible ({rev_layers[-1].name}); append the loss '
        f'layer, e.g. [model, tl.CrossEntropyLoss()].')
  if loss_chunk_size <= 0:
    return blocks, tl.Serial(std_layers)
  return blocks, _chunked_loss(std_layers, loss_chunk_size)


def _chunked_loss(std_layers, chunk_size):
  """The loss tail recomputed in chunks, as Trax's loss_chunk_size does."""
  names = [layer.name for layer in std_layers]
  starts = [i + 1 for i, name in enumerate(names) if name in _BORDER_LAYERS]
  if not starts:
    raise ValueError(f'extract_reversible_blocks: a chunked loss must follow '
                     f'one of {list(_BORDER_LAYERS)}; got layers {names}.')
  start = starts[-1]
  if len(std_layers) - start < 4:
    raise ValueError(f'extract_reversible_blocks: the loss after layer '
                     f'{start - 1} ({names[start - 1]}) is too short to '
                     f'chunk: {names[start:]}.')
  tail = ' '.join(names[-3:])
  if tail != _CHUNKABLE_TAIL:
    raise ValueError(f'extract_reversible_blocks: loss chunking needs the '
                     f'last layers to be "{_CHUNKABLE_TAIL}", got "{tail}".')

  # The chunks run over batch and length merged into one axis.
  def to_rows(preds, targets):
    return (jnp.reshape(preds, [-1, preds.shape[-1]]),
            jnp.reshape(targets, [-1]), targets)

  def from_rows(xent, targets):
    return jnp.reshape(xent, targets.shape)

  chunked = tl.Serial(
      tl.Fn('pre_xent_rebatch', to_rows, n_out=3),
      tl.Chunk(tl.Serial(std_layers[start:-1]), chunk_size),
      tl.Fn('after_xent_rebatch', from_rows))
  return tl.Serial(std_layers[:start] + [chunked], std_layers[-1])


def init_reversible_blocks(blocks, loss_layer, input_signature, rng):
  """Initializes every layer of `blocks` and `loss_layer`, in model order.

  Args:
    blocks: `(standard_layers, reversible_layers)` pairs of lists.
    loss_layer: the final loss layer.
    input_signature: the signature of the batch fed to the first block.
    rng: an int32 [2] key; split per block and per layer as Trax does.
  """
  sig_stack = input_signature
  for std_layers, rev_layers in blocks:
    layers = list(std_layers) + list(rev_layers)
    rngs = fastmath.random.split(rng, len(layers) + 1)
    rng = rngs[0]
    for layer, layer_rng in zip(layers, rngs[1:]):
      sig = tl.inputs_from_stack(sig_stack, layer.n_in, layer.name)
      layer.init(sig, rng=layer_rng)
      logging.info('init_reversible_blocks: initialized %s', layer.name)
      out_sig = layer.output_signature(sig)
      sig_stack = tl.outputs_onto_stack(out_sig, sig_stack, layer.n_in,
                                        layer.n_out)
  loss_layer.init(
      tl.inputs_from_stack(sig_stack, loss_layer.n_in, loss_layer.name),
      rng=rng)
