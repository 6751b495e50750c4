"""Trax's research positional encodings.

`AxialPositionalEncoding`, the Reformer's position embedding, lives here;
`SinCosPositionalEncoding`, `FixedBasePositionalEncoding`,
`InfinitePositionalEncoding`, `TimeBinPositionalEncoding` and the Threefry
functions live in private modules beside it and are re-exported.

Axial encoding: a sequence of length L = n_1 * ... * n_k is viewed as a
k-dimensional grid. Each axis j has a learned table of n_j rows and d_j
features; position p, with grid coordinates (i_1, ..., i_k), gets the
concatenation of row i_j of every table, so sum(d_j) must equal the model
width. The tables hold sum(n_j * d_j) numbers instead of L * d_model, which
is what lets a model take sequences of 64k positions. From the Reformer paper (Kitaev et al.,
2020, https://arxiv.org/abs/2001.04451).
"""

import math

from tfnp_trax import fastmath
from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.layers import _attention_core as core_attn
from tfnp_trax.layers import base
from tfnp_trax.layers import initializers as init
from tfnp_trax.layers.research._fixed_base_encoding import FixedBasePositionalEncoding
from tfnp_trax.layers.research._infinite_encoding import InfinitePositionalEncoding
from tfnp_trax.layers.research._sin_cos_encoding import SinCosPositionalEncoding
from tfnp_trax.layers.research._threefry import threefry_2x32_prange
from tfnp_trax.layers.research._threefry import threefry_2x32_prf
from tfnp_trax.layers.research._time_bin_encoding import TimeBinPositionalEncoding

__all__ = ['AxialPositionalEncoding', 'FixedBasePositionalEncoding',
           'InfinitePositionalEncoding', 'SinCosPositionalEncoding',
           'TimeBinPositionalEncoding', 'threefry_2x32_prange',
           'threefry_2x32_prf']


class AxialPositionalEncoding(base.Layer):
  """Adds a learned axial position embedding: (batch, L, d) -> same.

  Weights: one array per axis, axis j shaped (1, 1, .., n_j, .., 1, d_j).
  The input length L must equal prod(shape). In 'predict' mode the state
  counts the positions seen, so the layer can be fed a few positions per
  call. In 'train' mode with `dropout > 0` the summed embedding is dropped
  out, one decision shared over each axis in `dropout_broadcast_dims`
  (axes of the (batch, n_1, .., n_k, d) grid).

  Example:
    >>> layer = AxialPositionalEncoding(shape=(2, 3), d_embs=(4, 4))
    >>> _ = layer.init(shapes.ShapeDtype((1, 6, 8)))
    >>> [tuple(w.shape) for w in layer.weights]
    [(1, 2, 1, 4), (1, 1, 3, 4)]

  Args:
    shape: the grid the sequence is folded into; its product is the length.
    d_embs: features per axis; must sum to the input width.
    kernel_initializer: initializer of each axis table.
    dropout: dropout rate on the embedding ('train' mode only).
    dropout_broadcast_dims: grid axes that share one dropout decision.
    mode: 'train', 'eval' or 'predict'.
  """

  def __init__(self, shape=(64, 64, 3), d_embs=(384, 384, 256),
               kernel_initializer=init.RandomNormalInitializer(1.0),
               dropout=0.0, dropout_broadcast_dims=(), mode='train'):
    super().__init__()
    core_attn.check_mode(self.name, mode)
    if len(shape) != len(d_embs):
      raise ValueError(
          f'{self.name}: shape {tuple(shape)} and d_embs {tuple(d_embs)} '
          f'must have one entry per axis, got {len(shape)} and '
          f'{len(d_embs)}.')
    if dropout >= 1.0:
      raise ValueError(f'{self.name}: dropout must be < 1, got {dropout}.')
    self._kernel_initializer = kernel_initializer
    self._shape = tuple(shape)
    self._d_embs = tuple(d_embs)
    self._dropout = dropout if mode == 'train' else 0.0
    self._dropout_broadcast_dims = tuple(dropout_broadcast_dims)
    self._mode = mode

  def forward(self, x):
    if x.ndim != 3:
      raise ValueError(f'{self.name}: expects activations of shape (batch, '
                       f'length, d_feature), got shape {tuple(x.shape)}.')
    batch, length, d_feature = x.shape
    if d_feature != sum(self._d_embs):
      raise ValueError(
          f'{self.name}: input width {d_feature} does not match '
          f'sum(d_embs) = {sum(self._d_embs)} (d_embs {self._d_embs}, input '
          f'shape {tuple(x.shape)}).')
    grid = math.prod(self._shape)
    if self._mode == 'predict':
      return self._predict(x, grid)
    if length != grid:
      raise ValueError(
          f'{self.name}: input length {length} must equal the product of '
          f'shape {self._shape} = {grid} (input shape {tuple(x.shape)}); '
          f'pad the inputs to {grid} or pick a matching pos_axial_shape.')
    if self._dropout == 0.0:
      # Each axis table is broadcast over the grid and flattened to the
      # sequence on its own: concatenating first and reshaping once costs
      # a (batch, L, d_model) temporary, which at 64k positions matters.
      parts = [jnp.reshape(self._broadcast(w, batch), (batch, length, -1))
               for w in self.weights]
      return x + jnp.concatenate(parts, -1)
    emb = jnp.concatenate([self._broadcast(w, batch) for w in self.weights],
                          -1)
    noise_shape = list(emb.shape)
    for dim in self._dropout_broadcast_dims:
      noise_shape[dim] = 1
    keep_prob = 1.0 - self._dropout
    keep = fastmath.random.bernoulli(self.rng, keep_prob, tuple(noise_shape))
    emb = emb * (keep.astype(emb.dtype) / keep_prob)
    return x + jnp.reshape(emb, x.shape)

  def _broadcast(self, axis_table, batch):
    return jnp.broadcast_to(axis_table, (batch,) + self._shape +
                            (axis_table.shape[-1],))

  def _predict(self, x, grid):
    batch, length, _ = x.shape
    start = self.state
    position = core_attn.static_int(start)
    if position is not None and position + length > grid:
      raise ValueError(
          f'{self.name}: decoding position {position + length} exceeds the '
          f'grid size prod({self._shape}) = {grid}.')
    emb = jnp.concatenate([self._broadcast(w, batch) for w in self.weights],
                          -1)
    emb = jnp.reshape(emb, (batch, grid, emb.shape[-1]))
    emb = fastmath.dynamic_slice_in_dim(emb, start, length, axis=1)
    self.state = start + length
    return x + emb

  def init_weights_and_state(self, input_signature):
    d_feature = input_signature.shape[-1]
    if sum(self._d_embs) != d_feature:
      raise ValueError(
          f'{self.name}: sum(d_embs) = {sum(self._d_embs)} (d_embs '
          f'{self._d_embs}) must equal the input width {d_feature} (input '
          f'shape {tuple(input_signature.shape)}).')
    rngs = fastmath.random.split(self.rng, len(self._d_embs))
    weights = []
    for axis, d_emb in enumerate(self._d_embs):
      axis_shape = [1] * len(self._shape)
      axis_shape[axis] = self._shape[axis]
      weights.append(self._kernel_initializer(
          (1,) + tuple(axis_shape) + (d_emb,), rngs[axis]))
    if self._mode == 'predict':
      self.state = jnp.zeros((), dtype=jnp.int32)
    self.weights = tuple(weights)
