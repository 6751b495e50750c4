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

  Example:
    >>> PaddingMask()(jnp.array([[5, 0]]))[0, 0, 0].numpy().tolist()
    [True, False]
  """
  def f(x):
    if x.ndim != 2:
      raise ValueError(f'PaddingMask: expects token ids of shape (batch, '
                       f'length), got shape {tuple(x.shape)}.')
    batch, length = x.shape
    return (x != pad).reshape((batch, 1, 1, length))
  return base.Fn(f'PaddingMask({pad})', f)


def EncoderDecoderMask():  # pylint: disable=invalid-name
  """`(decoder_activations, encoder_mask)` -> (batch, 1, dec_len, enc_len).

  The encoder's padding mask, repeated for every decoder position, for the
  decoder's attention over encoder outputs.
  """
  def f(decoder_input, mask):
    if decoder_input.ndim != 3:
      raise ValueError(
          f'EncoderDecoderMask: expects decoder activations of shape (batch, '
          f'decoder_length, d_model), got shape {tuple(decoder_input.shape)}.')
    batch, enc_len = mask.shape[0], mask.shape[-1]
    if mask.size != batch * enc_len:
      raise ValueError(
          f'EncoderDecoderMask: expects an encoder padding mask of shape '
          f'(batch, 1, 1, encoder_length) as from tl.PaddingMask(), got shape '
          f'{tuple(mask.shape)}.')
    mask = mask.reshape((batch, 1, 1, enc_len))
    if mask.dtype != jnp.bool_:
      mask = mask != 0
    return jnp.broadcast_to(
        mask, (batch, 1, decoder_input.shape[1], enc_len))
  return base.Fn('EncoderDecoderMask', f)
