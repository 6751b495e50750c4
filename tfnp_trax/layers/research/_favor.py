"""FAVOR+ fast attention (Performer): FavorAttention, Favor and causal kin.

Softmax attention costs O(L^2) in the sequence length L. FAVOR+ replaces the
attention kernel exp(q.k) by a dot product of non-negative feature maps,
phi(q).phi(k), so that attention can be regrouped as

    out_i = phi(q_i) . (sum_j phi(k_j) v_j^T) / phi(q_i) . (sum_j phi(k_j)),

which is linear in L. The causal variant sums only over j <= i: prefix sums.
Paper: Choromanski et al., "Rethinking Attention with Performers",
https://arxiv.org/abs/2006.03555.

Two feature maps are available, as in Trax: Relu features (the default,
phi(x) = relu(x) + numerical_stabilizer) and positive random features
approximating the softmax kernel (`use_approximate_softmax=True`).
"""

import math

from tfnp_trax import fastmath
from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.layers import base
from tfnp_trax.layers import core
from tfnp_trax.layers import causal_attention

__all__ = ['FavorAttention', 'Favor', 'CausalFavorAttention', 'CausalFavor']

# Layer constructors are CamelCase functions, as in Trax.
# pylint: disable=invalid-name


def _check_heads(name, d_feature, n_heads):
  if n_heads < 1 or d_feature % n_heads:
    raise ValueError(
        f'{name}: d_feature {d_feature} is not a multiple of n_heads '
        f'{n_heads}; each head gets d_feature // n_heads features, so pick '
        f'n_heads dividing d_feature (e.g. n_heads=1).')


def _compute_dtype(x):
  # As Trax's float32 constants do under JAX, bfloat16 inputs compute (and
  # come out) in float32.
  return jnp.promote_types(x.dtype, jnp.float32)


def _relu_features(x, numerical_stabilizer):
  """Relu feature map: positive everywhere, so denominators stay > 0."""
  return jnp.where(x <= 0, jnp.zeros_like(x), x) + numerical_stabilizer


class FavorAttention(base.Layer):
  """FAVOR+ bidirectional attention: (Q, K, V, MASK) -> (ATTENTION, MASK).

  Q, K and V are split into heads, shaped (batch * n_heads, length, d_head)
  with the heads of one batch element adjacent (as `SplitIntoHeads` makes
  them). MASK has batch * length entries (e.g. a (batch, 1, 1, length)
  padding mask); masked keys get zero features, so no query attends to them.
  MASK is passed through unchanged.

  With `use_approximate_softmax=True` the features are the positive random
  features of the paper, which approximate softmax attention with kernel
  exp(q.k) (or exp(q.k / sqrt(d_head)) with `normalize_data=True`); the
  approximation improves as `n_random_features` grows. As in Trax, the
  random matrix is drawn once, when the layer is built, from the fixed key
  `fastmath.random.get_prng(0)`, and kept as `_projection_matrix` (not a
  weight). It follows Trax's distribution (blocks of orthogonal rows,
  scaled by the norms of Gaussian vectors) but not JAX's random bits, so the
  numbers differ from Trax's; set `_projection_matrix` to reproduce them.
  Otherwise the features are relu(x) + numerical_stabilizer.

  Args:
    d_feature: width of the activations before heads are split.
    n_heads: number of heads; must divide `d_feature`.
    n_random_features: rows of the random projection (softmax features).
    numerical_stabilizer: added to the Relu features.
    use_approximate_softmax: random softmax features instead of Relu.
    scale_by_norm: scale each random row by the norm of a Gaussian vector
      (else by sqrt(d_head)).
    normalize_data: scale q and k by d_head ** -0.25 (softmax features).
    epsilon: added to the softmax features.
    mode: 'train', 'eval' or 'predict' (all compute the same).

  Example:
    >>> layer = FavorAttention(d_feature=4, n_heads=1)
    >>> q = jnp.ones((2, 3, 4), jnp.float32)
    >>> mask = jnp.ones((2, 1, 1, 3), jnp.bool_)
    >>> out, _ = layer((q, q, q, mask))
    >>> tuple(out.shape)
    (2, 3, 4)
  """

  def __init__(self, d_feature=4, n_heads=1, n_random_features=256,
               numerical_stabilizer=0.001, use_approximate_softmax=False,
               scale_by_norm=True, normalize_data=False, epsilon=0.0001,
               mode='train'):
    super().__init__(n_in=4, n_out=2)
    _check_heads('FavorAttention', d_feature, n_heads)
    self._d_feature = d_feature
    self._n_heads = n_heads
    self._n_random_features = n_random_features
    self._numerical_stabilizer = numerical_stabilizer
    self._mode = mode
    self._use_approximate_softmax = use_approximate_softmax
    self._normalize_data = normalize_data
    self._epsilon = epsilon
    self._projection_matrix = None
    if use_approximate_softmax:
      if n_random_features < 1:
        raise ValueError(
            f'FavorAttention: n_random_features must be >= 1 with '
            f'use_approximate_softmax=True, got {n_random_features}.')
      self._projection_matrix = self.get_2d_array(
          fastmath.random.get_prng(0), n_rows=n_random_features,
          n_columns=d_feature // n_heads, scale_by_norm=scale_by_norm,
          normalize_data=normalize_data, epsilon=epsilon)

  @staticmethod
  def get_2d_array(rng, n_rows=256, n_columns=0, scale_by_norm=True,
                   normalize_data=False, epsilon=0.0001):
    """A random (n_rows, n_columns) matrix with blockwise orthogonal rows.

    Rows come in blocks of `n_columns` mutually orthogonal unit vectors (the
    Q of a Gaussian matrix's QR decomposition); the last block is cut to fit.
    Each row is then scaled, by the norm of a fresh Gaussian vector if
    `scale_by_norm` (so row norms follow a chi distribution, as Gaussian rows
    would) or by sqrt(n_columns). As in Trax, Q is not sign-corrected
    (R's diagonal may be negative), so the directions are not exactly
    uniform: the rows have a small nonzero mean, and the softmax estimate a
    bias that more features do not remove.

    Args:
      rng: int32 [2] key.
      n_rows: number of random features.
      n_columns: feature width (d_head).
      scale_by_norm: see above.
      normalize_data: unused; kept for Trax's signature.
      epsilon: unused; kept for Trax's signature.

    Returns:
      A float32 (n_rows, n_columns) matrix.
    """
    del normalize_data, epsilon
    norm_key = rng
    blocks = []
    n_full_blocks, remaining_rows = divmod(n_rows, n_columns)
    for n_keep in [n_columns] * n_full_blocks + [remaining_rows]:
      if not n_keep:
        continue
      rng, block_key = fastmath.random.split(rng)
      gaussian = fastmath.random.normal(block_key, (n_columns, n_columns))
      q, _ = fastmath.qr(gaussian)
      blocks.append(jnp.transpose(q)[:n_keep])
    matrix = jnp.concatenate(blocks, axis=0)
    if scale_by_norm:
      gaussian = fastmath.random.normal(norm_key, (n_rows, n_columns))
      multiplier = jnp.sqrt(jnp.sum(jnp.square(gaussian), axis=1))
    else:
      multiplier = jnp.full((n_rows,), math.sqrt(float(n_columns)),
                            dtype=jnp.float32)
    return multiplier[:, None] * matrix

  def nonnegative_softmax_kernel_feature_creator(self, x, is_query):
    """Positive random features phi(x) with E[phi(q).phi(k)] ~ exp(q.k).

    phi(x)_r = exp(w_r.x - |x|^2 / 2 - c) / sqrt(n_random_features) +
    epsilon (before the 1/sqrt scaling, epsilon included), with c a maximum
    subtracted to avoid overflow: per query row for queries, per batch entry
    for keys. Both shifts cancel in the attention's normalization.

    Args:
      x: (batch, length, d_head) queries or keys.
      is_query: whether `x` holds queries.

    Returns:
      (batch, length, n_random_features) features.
    """
    x = x.astype(_compute_dtype(x))
    projection = self._projection_matrix.astype(x.dtype)
    normalizer = x.shape[-1] ** -0.25 if self._normalize_data else 1.0
    ratio = 1.0 / math.sqrt(projection.shape[0])
    data_dash = jnp.einsum('bld,md->blm', normalizer * x, projection)
    diag_data = jnp.sum(jnp.square(x), axis=-1, keepdims=True)
    diag_data = diag_data * (0.5 * normalizer * normalizer)
    max_axes = (-1,) if is_query else (-1, -2)
    shift = jnp.max(data_dash, axis=max_axes, keepdims=True)
    return ratio * (jnp.exp(data_dash - diag_data - shift) + self._epsilon)

  @staticmethod
  def bidirectional_numerator(query_prime, key_prime, value):
    """sum_j phi(q_i).phi(k_j) v_j, length-major ([L, B, m], [L, B, d])."""
    kvs = jnp.einsum('lbm,lbd->bmd', key_prime, value)
    return jnp.einsum('lbm,bmd->lbd', query_prime, kvs)

  @staticmethod
  def bidirectional_denominator(query_prime, key_prime):
    """sum_j phi(q_i).phi(k_j), length-major ([L, B, m] -> [L, B])."""
    ks_sum = jnp.sum(key_prime, axis=0)
    return jnp.einsum('lbm,bm->lb', query_prime, ks_sum)

  @staticmethod
  def relu(x):
    return jnp.where(x <= 0, jnp.zeros_like(x), x)

  def _check_inputs(self, query, key, value, mask):
    if not len(query.shape) == len(key.shape) == len(value.shape) == 3:
      raise ValueError(
          f'{self.name}: Q, K, V must be 3-d (batch * n_heads, length, '
          f'd_head), got shapes {tuple(query.shape)}, {tuple(key.shape)}, '
          f'{tuple(value.shape)}; split heads first (tl.SplitIntoHeads).')
    if query.shape[-1] != key.shape[-1] or key.shape[:2] != value.shape[:2]:
      raise ValueError(
          f'{self.name}: Q and K must share d_head and K and V their first '
          f'two axes, got shapes {tuple(query.shape)}, {tuple(key.shape)}, '
          f'{tuple(value.shape)}.')
    if self._use_approximate_softmax:
      d_head = self._projection_matrix.shape[-1]
      if query.shape[-1] != d_head:
        raise ValueError(
            f'{self.name}: queries have d_head {query.shape[-1]} but the '
            f'layer was built for d_feature {self._d_feature} // n_heads '
            f'{self._n_heads} = {d_head}.')
    batch, length = key.shape[0], key.shape[1]
    if batch % self._n_heads:
      raise ValueError(
          f'{self.name}: K has {batch} rows (batch * n_heads), not a '
          f'multiple of n_heads {self._n_heads}.')
    n_mask = 1
    for d in mask.shape:
      n_mask *= d
    if n_mask != batch // self._n_heads * length:
      raise ValueError(
          f'{self.name}: mask of shape {tuple(mask.shape)} has {n_mask} '
          f'entries; expected batch * length = {batch // self._n_heads} * '
          f'{length} (e.g. a (batch, 1, 1, length) padding mask).')

  def forward(self, inputs):
    query, key, value, mask = inputs
    self._check_inputs(query, key, value, mask)
    dtype = _compute_dtype(value)
    query, key, value = (t.astype(dtype) for t in (query, key, value))
    if self._use_approximate_softmax:
      query_prime = self.nonnegative_softmax_kernel_feature_creator(query,
                                                                    True)
      key_prime = self.nonnegative_softmax_kernel_feature_creator(key, False)
    else:
      query_prime = _relu_features(query, self._numerical_stabilizer)
      key_prime = _relu_features(key, self._numerical_stabilizer)
    batch, length = key.shape[0], key.shape[1]
    # One mask row per batch element, shared by its n_heads adjacent rows.
    key_mask = jnp.reshape(mask, (batch // self._n_heads, 1, length))
    key_mask = jnp.broadcast_to(key_mask.astype(jnp.float32),
                                (batch // self._n_heads, self._n_heads,
                                 length))
    key_prime = key_prime * jnp.reshape(key_mask.astype(dtype),
                                        (batch, length, 1))
    q_l, k_l = jnp.moveaxis(query_prime, 1, 0), jnp.moveaxis(key_prime, 1, 0)
    w = self.bidirectional_numerator(q_l, k_l, jnp.moveaxis(value, 1, 0))
    r = self.bidirectional_denominator(q_l, k_l)
    w, r = jnp.moveaxis(w, 0, 1), jnp.moveaxis(r, 0, 1)
    return w * jnp.reciprocal(r)[..., None], mask


def Favor(d_feature, n_heads=1, n_random_features=256, dropout=0.0,
          numerical_stabilizer=0.001, use_approximate_softmax=False,
          scale_by_norm=0, normalize_data=False, epsilon=0.0001,
          mode='train'):
  """FAVOR+ self-attention: (activations, mask) -> (activations, mask).

  Dense projections to Q, K, V, heads split, `FavorAttention`, heads
  merged, a final Dense: Trax's `ConfigurableAttention` layout, so Trax's
  weight files load. Note that `scale_by_norm` defaults to 0 here, as in
  Trax (FavorAttention's own default is True).

  Args:
    d_feature: width of the activations in and out.
    n_heads: number of heads; must divide `d_feature`.
    n_random_features: see `FavorAttention`.
    dropout: accepted for Trax's signature; not applied (as in Trax).
    numerical_stabilizer: see `FavorAttention`.
    use_approximate_softmax: see `FavorAttention`.
    scale_by_norm: see `FavorAttention`.
    normalize_data: see `FavorAttention`.
    epsilon: see `FavorAttention`.
    mode: 'train', 'eval' or 'predict'.

  Returns:
    A layer with n_in=2, n_out=2.

  Example:
    >>> layer = Favor(4, n_heads=2)
    >>> x = jnp.ones((2, 3, 4), jnp.float32)
    >>> mask = jnp.ones((2, 1, 1, 3), jnp.bool_)
    >>> _ = layer.init(shapes.signature((x, mask)))
    >>> tuple(layer((x, mask))[0].shape)
    (2, 3, 4)
  """
  del dropout  # Not applied, as in Trax.
  _check_heads('Favor', d_feature, n_heads)
  return causal_attention.ConfigurableAttention(
      core.Dense(d_feature), core.Dense(d_feature), core.Dense(d_feature),
      core.Dense(d_feature),
      FavorAttention(d_feature, n_heads, n_random_features,
                     numerical_stabilizer, use_approximate_softmax,
                     scale_by_norm, normalize_data, epsilon, mode),
      n_heads=n_heads)


def _causal_favor(query_prime, key_prime, value):
  """Causal FAVOR: phi(q_i).S_i / phi(q_i).z_i with prefix sums over j <= i.

  S_i = sum_{j<=i} phi(k_j) v_j^T and z_i = sum_{j<=i} phi(k_j) are
  cumulative sums along the length axis. Trax runs them as a scan with a
  hand-written gradient that subtracts terms back out in reverse; cumsum is
  exact under autodiff, compiles under XLA, and never subtracts, at the cost
  of holding all L prefix matrices (batch * L * m * d values) at once.

  Args:
    query_prime: (batch, length, m) query features.
    key_prime: (batch, length, m) key features.
    value: (batch, length, d) values.

  Returns:
    (batch, length, d) attention outputs.
  """
  kv_prefix = jnp.cumsum(jnp.einsum('blm,bld->blmd', key_prime, value),
                         axis=1)
  numerator = jnp.einsum('blm,blmd->bld', query_prime, kv_prefix)
  k_prefix = jnp.cumsum(key_prime, axis=1)
  denominator = jnp.sum(query_prime * k_prefix, axis=-1)
  return numerator * jnp.reciprocal(denominator)[..., None]


class CausalFavorAttention(base.Layer):
  """Causal FAVOR attention with Relu features: (Q, K, V) -> ATTENTION.

  Position i attends to positions j <= i with weights proportional to
  phi(q_i).phi(k_j), phi(x) = relu(x) + numerical_stabilizer. Inputs are
  (batch * n_heads, length, d_head); the output has V's shape. Computed in
  float32 for bfloat16 inputs, as in Trax. See `_causal_favor` for how the
  prefix sums are taken.

  Args:
    numerical_stabilizer: added to the Relu features.
    mode: 'train', 'eval' or 'predict' (all compute the same, as in Trax:
      there is no decoding cache).

  Example:
    >>> layer = CausalFavorAttention()
    >>> x = jnp.ones((2, 3, 4), jnp.float32)
    >>> tuple(layer((x, x, x)).shape)
    (2, 3, 4)
  """

  def __init__(self, numerical_stabilizer=0.001, mode='train'):
    super().__init__(n_in=3, n_out=1)
    self._numerical_stabilizer = numerical_stabilizer
    self._mode = mode

  def forward(self, inputs):
    query, key, value = inputs
    shapes_ = [tuple(t.shape) for t in (query, key, value)]
    if (len({len(s) for s in shapes_}) != 1 or len(shapes_[0]) != 3 or
        shapes_[0] != shapes_[1] or shapes_[1][:2] != shapes_[2][:2]):
      raise ValueError(
          f'{self.name}: expected Q and K of one shape (batch * n_heads, '
          f'length, d_head) and V sharing their first two axes, got shapes '
          f'{shapes_[0]}, {shapes_[1]}, {shapes_[2]}.')
    dtype = _compute_dtype(value)
    query_prime = _relu_features(query.astype(dtype),
                                 self._numerical_stabilizer)
    key_prime = _relu_features(key.astype(dtype), self._numerical_stabilizer)
    return _causal_favor(query_prime, key_prime, value.astype(dtype))


def CausalFavor(d_feature, n_heads=1, dropout=0.0,
                numerical_stabilizer=0.001, mode='train'):
  """Causal FAVOR self-attention: activations -> activations.

  Like `CausalAttention` (Dense Q/K/V projections, heads, a final Dense:
  Trax's layout), with `CausalFavorAttention` in place of softmax
  attention.

  Args:
    d_feature: width of the activations in and out.
    n_heads: number of heads; must divide `d_feature`.
    dropout: accepted for Trax's signature; not applied (as in Trax).
    numerical_stabilizer: added to the Relu features.
    mode: 'train', 'eval' or 'predict'.

  Returns:
    A layer mapping (batch, length, d_feature) to the same shape.

  Example:
    >>> layer = CausalFavor(4, n_heads=2)
    >>> x = jnp.ones((2, 3, 4), jnp.float32)
    >>> _ = layer.init(shapes.signature(x))
    >>> tuple(layer(x).shape)
    (2, 3, 4)
  """
  del dropout  # Not applied, as in Trax.
  _check_heads('CausalFavor', d_feature, n_heads)
  return causal_attention.ConfigurableAttention(
      core.Dense(d_feature), core.Dense(d_feature), core.Dense(d_feature),
      core.Dense(d_feature), n_heads=n_heads,
      qkv_attention_layer=CausalFavorAttention(numerical_stabilizer, mode))
