"""Shortening and upsampling layers for hierarchical (Hourglass) models.

Trax's `layers/research/resampling.py`. Downsampling turns a sequence of
length l into l / k vectors (`AveragePooling`, `LinearPooling`); upsampling
turns l / k vectors back into l (`LinearUpsampling`, `NaiveUpsampling`,
`NoUpsampling`). `AttentionResampling` uses one of them to make the queries
of a relative attention over the other resolution (Nawrot et al., 2021,
"Hierarchical Transformers Are More Efficient Language Models",
https://arxiv.org/abs/2110.13711).

The resampling functions take `(shorten_factor, d_model, *args, **kwargs)`
and ignore what they do not use, so a model can call any of them alike.
"""

from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.layers import base
from tfnp_trax.layers import combinators as cb
from tfnp_trax.layers import core
from tfnp_trax.layers.normalization import LayerNorm
from tfnp_trax.layers.pooling import AvgPool
from tfnp_trax.layers.research.rel_attention import RelativeAttentionLMLayer

__all__ = ['AveragePooling', 'LinearPooling', 'LinearUpsampling',
           'NaiveUpsampling', 'NoUpsampling', 'FeedForwardBlock',
           'AttentionResampling']

# pylint: disable=invalid-name


def AveragePooling(shorten_factor, *args, **kwargs):
  """Means of non-overlapping windows of `shorten_factor` positions.

  Example:
    >>> layer = AveragePooling(2)
    >>> x = jnp.arange(8.0, dtype=jnp.float32).reshape((1, 4, 2))
    >>> _ = layer.init(shapes.signature(x))
    >>> layer(x).numpy().tolist()
    [[[1.0, 2.0], [5.0, 6.0]]]
  """
  del args, kwargs
  return AvgPool(pool_size=(shorten_factor,), strides=(shorten_factor,))


def LinearPooling(shorten_factor, d_model, *args, dropout=0.0, mode='train',
                  **kwargs):
  """Concatenates each window of `shorten_factor` positions, then Dense.

  Args:
    shorten_factor: window length; must divide the sequence length.
    d_model: output width.
    *args: ignored.
    dropout: dropout rate after the projection.
    mode: 'train', 'eval' or 'predict'.
    **kwargs: ignored.

  Returns:
    A layer mapping (b, l, d) to (b, l / shorten_factor, d_model).
  """
  del args, kwargs

  def shorten(x):
    if x.ndim != 3 or x.shape[1] % shorten_factor:
      raise ValueError(
          f'LinearPooling: expects (batch, length, d) with length a multiple '
          f'of shorten_factor {shorten_factor}, got shape {tuple(x.shape)}; '
          f'pad the sequence.')
    return jnp.reshape(x, (-1, x.shape[1] // shorten_factor,
                           x.shape[2] * shorten_factor))

  return cb.Serial(
      base.Fn('Shorten', shorten, n_out=1),
      core.Dense(d_model),
      core.Dropout(rate=dropout, mode=mode))


def LinearUpsampling(shorten_factor, d_model, *args, dropout=0.0,
                     mode='train', **kwargs):
  """Dense to `shorten_factor * d_model`, then unfolds into positions.

  Args:
    shorten_factor: how many positions each input vector becomes.
    d_model: output width.
    *args: ignored.
    dropout: dropout rate after the projection.
    mode: 'train', 'eval' or 'predict'.
    **kwargs: ignored.

  Returns:
    A layer mapping (b, l, d) to (b, l * shorten_factor, d_model).
  """
  del args, kwargs

  def prolong_back(x):
    return jnp.reshape(x, (-1, x.shape[1] * shorten_factor,
                           x.shape[2] // shorten_factor))

  return cb.Serial(
      core.Dense(shorten_factor * d_model),
      core.Dropout(rate=dropout, mode=mode),
      base.Fn('ProlongBack', prolong_back, n_out=1))


def NaiveUpsampling(shorten_factor, d_model, *args, **kwargs):
  """Repeats every position `shorten_factor` times along axis 1."""
  del d_model, args, kwargs
  return base.Fn('Repeat', lambda x: jnp.repeat(x, shorten_factor, axis=1))


def NoUpsampling(shorten_factor, d_model, *args, **kwargs):
  """Zeros of the upsampled shape (drops the shortened information)."""
  del d_model, args, kwargs

  def zeros(x):
    return jnp.zeros((x.shape[0], x.shape[1] * shorten_factor, x.shape[2]),
                     dtype=x.dtype)

  return base.Fn('ReturnZero', zeros)


def FeedForwardBlock(d_model, d_ff, dropout, dropout_shared_axes, mode,
                     activation):
  """[Dense(d_ff), activation(), Dropout, Dense(d_model)], as a list."""
  return [
      core.Dense(d_ff),
      activation(),
      core.Dropout(rate=dropout, shared_axes=dropout_shared_axes, mode=mode),
      core.Dense(d_model),
  ]


def AttentionResampling(shorten_factor, d_model, is_upsampling, d_ff, n_heads,
                        dropout, dropout_shared_axes, mode, ff_activation,
                        context_bias_layer, location_bias_layer, total_pooling,
                        resampling_fn):
  """Resamples with `resampling_fn`, then attends to the other resolution.

  Downsampling (one input, x): the pooled, normalized x queries a causal
  relative attention over the normalized full-length x, followed by a
  residual feed-forward block. Upsampling (two inputs, the short sequence and
  the full-length one it came from): the upsampled short sequence plus the
  full-length one queries the short sequence; the full-length input stays on
  the stack below the result.

  Args:
    shorten_factor: the length ratio of the two resolutions.
    d_model: width of the activations.
    is_upsampling: direction, see above.
    d_ff: width of the feed-forward block's hidden layer.
    n_heads: number of attention heads.
    dropout: dropout rate (train mode).
    dropout_shared_axes: axes sharing one dropout mask.
    mode: 'train', 'eval' or 'predict'.
    ff_activation: activation layer constructor of the feed-forward block.
    context_bias_layer: the shared context bias (`get_rel_att_inputs`).
    location_bias_layer: the shared location bias (`get_rel_att_inputs`).
    total_pooling: how many tokens one position stands for before this.
    resampling_fn: one of the resampling functions of this module.

  Returns:
    A list of layers.
  """
  attention = RelativeAttentionLMLayer(
      d_model, context_bias_layer, location_bias_layer, total_pooling,
      n_heads=n_heads, dropout=dropout, mode=mode)
  feed_forward = FeedForwardBlock(d_model, d_ff, dropout, dropout_shared_axes,
                                  mode, ff_activation)
  resampling = resampling_fn(shorten_factor, d_model, mode=mode)

  def _Dropout():
    return core.Dropout(rate=dropout, shared_axes=dropout_shared_axes,
                        mode=mode)

  # Upsampled queries also get the full-resolution activations added in.
  add_full = (cb.Serial(cb.Select([0, 2, 1, 2]), cb.Add())
              if is_upsampling else [])
  return [
      LayerNorm(),                                          # h
      cb.Branch(cb.Serial(resampling, LayerNorm()), None),  # h', h
      add_full,
      cb.Residual(cb.Select([0, 1, 1]),                     # h', h, h
                  attention,
                  _Dropout()),
      cb.Residual(LayerNorm(), feed_forward, _Dropout()),
  ]
