"""TimeBinPositionalEncoding: three engineered features of the time bin."""

from absl import logging

from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.layers import _attention_core as core_attn
from tfnp_trax.layers import base

__all__ = ['TimeBinPositionalEncoding', 'time_bin_features']

N_FEATURES = 3


def time_bin_features(t, time_bin_length):
  """float32 [..., 3] features of int positions `t`, bins of that length.

  For bin index k = t // time_bin_length and offset r = t % time_bin_length
  the features are 1 / (1 + k), r / time_bin_length and k mod 2.
  Works on NumPy arrays and tensors alike.
  """
  bin_index, offset = t // time_bin_length, t % time_bin_length
  features = [1 / (1 + bin_index), offset / time_bin_length, bin_index % 2]
  return jnp.stack([jnp.asarray(f).astype(jnp.float32) for f in features],
                   -1)


class TimeBinPositionalEncoding(base.Layer):
  """Overwrites the last 3 features with time-bin features: (b, L, d) -> same.

  The features of position t (see `time_bin_features`) tell a model whose
  first layer attends within bins of `time_bin_length` positions (Trax's
  TimeBinCausalAttention) where it is. They replace the input's last 3
  features; with fewer than 3 features the input is replaced by the last
  d of them, with a warning, as in Trax. No weights. In 'predict' mode the
  state holds each example's position (int32 [batch]), one per call.

  Example:
    >>> layer = TimeBinPositionalEncoding(time_bin_length=2, mode='eval')
    >>> _ = layer.init(shapes.ShapeDtype((1, 3, 4)))
    >>> y = layer(jnp.zeros((1, 3, 4), jnp.float32))
    >>> [float(v) for v in y[0, 2]]  # position 2: bin 1, offset 0.
    [0.0, 0.5, 0.0, 1.0]

  Args:
    time_bin_length: the bin length of the first attention layer.
    mode: 'train', 'eval' or 'predict'.
  """
  num_features = N_FEATURES

  def __init__(self, time_bin_length, mode='train'):
    super().__init__()
    core_attn.check_mode(self.name, mode)
    self._time_bin_length = time_bin_length
    self._mode = mode

  def forward(self, x):
    depth = x.shape[-1]
    if self._mode == 'predict':
      features = time_bin_features(self.state, self._time_bin_length)
      features = features[:, None, :]
      self.state = self.state + 1
    else:
      t = jnp.arange(x.shape[-2], dtype=jnp.int32)
      features = time_bin_features(t, self._time_bin_length)
      features = jnp.broadcast_to(features[None],
                                  tuple(x.shape[:-1]) + (N_FEATURES,))
    y = jnp.concatenate([x[..., :-N_FEATURES], features], -1)
    if y.shape[-1] > depth:
      logging.warning('%s: dropping feature(s): %d down to %d', self.name,
                      y.shape[-1], depth)
      y = y[..., -depth:]
    return y

  def init_weights_and_state(self, input_signature):
    if self._mode == 'predict':
      self.state = jnp.zeros((input_signature.shape[0],), dtype=jnp.int32)
