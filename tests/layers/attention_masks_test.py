"""PaddingMask and EncoderDecoderMask vs NumPy."""

import numpy as np
import pytest
import tensorflow as tf

from tests import _layer_testing as lt
from tfnp_trax import layers as tl
from tfnp_trax.fastmath import numpy as jnp


@pytest.mark.parametrize('pad', [0, 3])
def test_padding_mask_matches_numpy(pad):
  tokens = np.array([[5, 3, 0, 0], [1, 2, 3, 4]], np.int32)
  want = (tokens != pad)[:, None, None, :]
  lt.check_layer(tl.PaddingMask(pad), tokens, lambda t, _: want,
                 check_grad=False)


def test_encoder_decoder_mask_repeats_the_padding_mask(rng):
  decoder = rng.normal(size=(2, 3, 4))
  mask = np.array([[True, False], [True, True]])[:, None, None, :]
  want = np.broadcast_to(mask, (2, 1, 3, 2))
  lt.check_layer(tl.EncoderDecoderMask(), (decoder, mask),
                 lambda inputs, _: want, check_grad=False)


def test_shape_errors_name_the_layer():
  # As in Trax, PaddingMask's shape check ('bs->b11l') reports it first.
  with pytest.raises(tl.LayerError, match=r"AssertShape: spec 'bs->b11l' "
                     r'\(around layer PaddingMask\(0\)\): input 0 has rank 3 '
                     r"but 'bs' needs rank 2"):
    tl.PaddingMask()(jnp.zeros((2, 3, 1), jnp.int32))
  with pytest.raises(tl.LayerError, match=r'EncoderDecoderMask: expects '
                     r'decoder activations .* got shape \(2, 3\)'):
    tl.EncoderDecoderMask()((jnp.zeros((2, 3), jnp.float32),
                             jnp.ones((2, 1, 1, 3), bool)))


def test_masks_with_lengths_unknown_while_tracing():
  # Follows trax/layers/attention.py PaddingMask and EncoderDecoderMask, as
  # used by a predict-mode Transformer decoded at a new input length (the
  # intro notebook): traced with unknown lengths, both masks still build.
  ids = np.array([[5, 3, 0], [1, 0, 0]], np.int32)
  dec = np.zeros((2, 4, 8), np.float32)
  spec_ids = tf.TensorSpec((None, None), tf.int32)
  spec_dec = tf.TensorSpec((None, None, 8), tf.float32)

  @tf.function(input_signature=(spec_ids, spec_dec), autograph=False)
  def masks(t, d):
    pad = tl.PaddingMask()(t)
    return pad, tl.EncoderDecoderMask()((d, pad))
  pad, enc_dec = masks(ids, dec)
  want = (ids != 0)[:, None, None, :]
  np.testing.assert_array_equal(pad, want)
  np.testing.assert_array_equal(enc_dec, np.broadcast_to(want, (2, 1, 4, 3)))
