"""Attention masks built from token ids: PaddingMask, EncoderDecoderMask.

Masks are boolean; True marks a key position that may be attended to. Their
shapes broadcast against attention logits (batch, heads, queries, keys).
"""

from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.layers import base
from tfnp_trax.layers.assert_shape import assert_shape

__all__ = ['PaddingMask', 'EncoderDecoderMask']


@assert_shape('bs->b11l')
def PaddingMask(pad=0):  # pylint: disable=invalid-name
  """Token ids (batch, length) -> mask (batch, 1, 1, length), False at `pad`.

  The new axes are inserted by indexing, so lengths unknown while tracing
  (a step traced for several input lengths) are fine.

  Example:
    >>> PaddingMask()(jnp.array([[5, 0]]))[0, 0, 0].numpy().tolist()
    [True, False]
  """
  def f(x):
    if x.ndim != 2:
      raise ValueError(f'PaddingMask: expects token ids of shape (batch, '
                       f'length), got shape {tuple(x.shape)}.')
    return (x != pad)[:, None, None, :]
  return base.Fn(f'PaddingMask({pad})', f)


def EncoderDecoderMask():  # pylint: disable=invalid-name
  """`(decoder_activations, encoder_mask)` -> (batch, 1, dec_len, enc_len).

  The encoder's padding mask, repeated for every decoder position, for the
  decoder's attention over encoder outputs. Any dimension may be unknown
  while tracing (Trax's intro notebook decodes a pretrained model at a
  length other than the one it was saved at, so the step is traced with an
  unknown encoder length).
  """
  def f(decoder_input, mask):
    if decoder_input.ndim != 3:
      raise ValueError(
          f'EncoderDecoderMask: expects decoder activations of shape (batch, '
          f'decoder_length, d_model), got shape {tuple(decoder_input.shape)}.')
    dims = tuple(mask.shape)
    if mask.ndim == 2:  # (batch, enc_len) ids-shaped: add the two axes.
      mask = mask[:, None, None, :]
    elif not (mask.ndim == 4 and dims[1] in (1, None) and
              dims[2] in (1, None)):
      raise ValueError(
          f'EncoderDecoderMask: expects an encoder padding mask of shape '
          f'(batch, 1, 1, encoder_length) as from tl.PaddingMask(), got shape '
          f'{dims}.')
    if mask.dtype != jnp.bool_:
      mask = mask != 0
    # (1, 1, dec_len, 1) of True, taken from the decoder input so that its
    # length may be unknown; `&` broadcasts it against the mask.
    rows = jnp.ones_like(decoder_input[:1, None, :, :1], dtype=jnp.bool_)
    return mask & rows
  return base.Fn('EncoderDecoderMask', f)
