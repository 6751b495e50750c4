"""ReZero residual connections and the ReZero Transformer blocks.

`ResidualZero` computes `shortcut(x) + alpha * F(x)` with a learned scalar
alpha initialized to zero. The blocks are Trax's pre-norm sub-blocks
(LayerNorm, attention or feed-forward, dropout) wrapped in it.
"""

from tfnp_trax import layers as tl
from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.models import _transformer_blocks as blocks

__all__ = ['ResidualZero', 'encoder_block', 'decoder_block',
           'encoder_decoder_block']

# Layer constructors are CamelCase functions, as in Trax.
# pylint: disable=invalid-name


def _zeros(shape, rng):
  del rng  # The gain always starts at exactly zero.
  return jnp.zeros(shape, dtype=jnp.float32)


def _ScaleByGain():
  """`(alpha, x) -> alpha * x`, named 'Multiply' as in Trax.

  The gain is cast to x's dtype so bfloat16 activations stay bfloat16, as
  Dense and LayerNorm here keep them.
  """
  return tl.Fn('Multiply', lambda alpha, x: alpha.astype(x.dtype) * x)


def _flatten(items):
  """Nested lists and tuples of layers as one flat list."""
  flat = []
  for item in items:
    if isinstance(item, (list, tuple)):
      flat.extend(_flatten(item))
    elif item is not None:
      flat.append(item)
  return flat


def ResidualZero(*layers, shortcut=None):
  """`shortcut(x) + alpha * layers(x)`, alpha a learned scalar (init 0).

  Example:
    >>> from tfnp_trax import shapes
    >>> layer = ResidualZero(tl.Dense(3))
    >>> _ = layer.init(shapes.ShapeDtype((2, 3)))
    >>> x = jnp.ones((2, 3), dtype=jnp.float32)
    >>> bool(jnp.all(layer(x) == x))  # The identity at init.
    True

  Args:
    *layers: layers applied in series to the stack's inputs.
    shortcut: layer applied to a copy of the inputs; None is the identity
      on the top input.

  Returns:
    A layer computing the gated residual; any further outputs of `layers`
    (e.g. an attention mask) follow the sum on the stack.
  """
  layers = _flatten(layers)
  if not layers:
    raise ValueError('ResidualZero: expects at least one layer, got none.')
  layer = layers[0] if len(layers) == 1 else tl.Serial(layers)
  return tl.Serial(
      tl.Branch(shortcut, tl.Serial(
          layer,
          tl.Weights(_zeros),  # alpha, a scalar
          _ScaleByGain(),
      )),
      tl.Add(),
  )


def _dropout(dropout, dropout_shared_axes, mode):
  return tl.Dropout(rate=dropout, shared_axes=dropout_shared_axes, mode=mode)


def _ff_block(d_model, d_ff, dropout, dropout_shared_axes, mode, activation):
  return ResidualZero(
      tl.LayerNorm(),
      blocks.feed_forward(d_model, d_ff, dropout, dropout_shared_axes, mode,
                          activation),
      _dropout(dropout, dropout_shared_axes, mode))


def encoder_block(d_model, d_ff, n_heads, dropout, dropout_shared_axes,
                  mode, ff_activation):
  """`(vecs, mask) -> (vecs, mask)`: gated self-attention and FF."""
  return [
      ResidualZero(
          tl.LayerNorm(),
          tl.Attention(d_model, n_heads=n_heads, dropout=dropout, mode=mode),
          _dropout(dropout, dropout_shared_axes, mode)),
      _ff_block(d_model, d_ff, dropout, dropout_shared_axes, mode,
                ff_activation),
  ]


def decoder_block(d_model, d_ff, n_heads, dropout, dropout_shared_axes,
                  mode, ff_activation, max_len):
  """`vecs -> vecs`: gated causal self-attention and FF."""
  return [
      ResidualZero(
          tl.LayerNorm(),
          tl.CausalAttention(d_model, n_heads=n_heads, dropout=dropout,
                             max_inference_length=max_len, mode=mode),
          _dropout(dropout, dropout_shared_axes, mode)),
      _ff_block(d_model, d_ff, dropout, dropout_shared_axes, mode,
                ff_activation),
  ]


def encoder_decoder_block(d_model, d_ff, n_heads, dropout,
                          dropout_shared_axes, mode, ff_activation, max_len):
  """`(dec, mask, enc) -> (dec, mask, enc)`: causal, cross-attention, FF."""
  return [
      ResidualZero(
          tl.LayerNorm(),
          tl.CausalAttention(d_model, n_heads=n_heads,
                             max_inference_length=max_len, mode=mode),
          _dropout(dropout, dropout_shared_axes, mode)),
      ResidualZero(
          tl.LayerNorm(),
          tl.Select([0, 2, 2, 1, 2]),  # dec enc enc mask enc
          tl.AttentionQKV(d_model, n_heads=n_heads, dropout=dropout,
                          mode=mode, cache_KV_in_predict=True),
          _dropout(dropout, dropout_shared_axes, mode)),
      _ff_block(d_model, d_ff, dropout, dropout_shared_axes, mode,
                ff_activation),
  ]
