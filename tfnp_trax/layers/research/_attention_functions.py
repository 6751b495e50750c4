"""The functions Trax's efficient attention is built from.

Trax writes these for one example and one head: arrays of shape
`[length, depth]`. Here every function also accepts leading batch axes
(`[..., length, depth]`), so the layers can run all examples and heads in one
call and still share this code with the per-head reference path.

Masking works on integer "info" vectors that travel with queries and keys
(their original positions); a negative key info marks a padding key.
"""

import math

from tfnp_trax import fastmath
from tfnp_trax.fastmath import numpy as jnp

__all__ = ['length_normalized', 'hash_vecs', 'look_adjacent',
           'mask_self_attention', 'attend', 'apply_broadcasted_dropout',
           'permute_via_gather', 'permute_via_sort', 'random_rotations',
           'hash_with_rotations', 'n_buckets_total', 'xla_stable_key']

# Two 23-bit integers per normal sample: float32 holds them exactly.
_BITS = 23


def length_normalized(x, epsilon=1e-6):
  """Scales `x` to unit root-mean-square over its last axis.

  Example:
    >>> y = length_normalized(jnp.array([[3.0, 4.0]]))
    >>> [round(float(v), 3) for v in y[0]]
    [0.849, 1.131]
  """
  variance = jnp.mean(x**2, axis=-1, keepdims=True)
  return x / jnp.sqrt(variance + epsilon)


def _bucket_factors(n_buckets_in, fn_name='hash_vecs'):
  factors = ([n_buckets_in] if isinstance(n_buckets_in, int) else
             list(n_buckets_in))
  if not factors or any(int(f) != f or f < 2 or f % 2 for f in factors):
    raise ValueError(
        f'{fn_name}: n_buckets must be an even int >= 2 or a list of such '
        f'factors (random rotations give an even number of buckets), got '
        f'{n_buckets_in!r}.')
  return [int(f) for f in factors]


def n_buckets_total(n_buckets_in):
  """The number of buckets an int or a factor list `[a, b, ...]` gives."""
  total = 1
  for f in _bucket_factors(n_buckets_in):
    total *= f
  return total


def xla_stable_key(key):
  """`key` with its sign bits cleared.

  TensorFlow's stateless random ops read a negative int32 key word
  differently eagerly and under XLA; non-negative keys give the same
  numbers in both.
  """
  return jnp.bitwise_and(key, 0x7FFFFFFF)


def random_rotations(rng, depth, n_hashes, n_buckets_in):
  """Standard normal `[depth, n_hashes, rot_size // 2]` rotations from `rng`.

  The normals come from integer draws (Box-Muller on two 23-bit uniforms)
  with a non-negative key: TensorFlow's integer stateless stream is then
  the same eagerly and under XLA, while its float streams are not, and LSH
  buckets must not depend on how the layer was compiled.
  """
  rot_size = sum(_bucket_factors(n_buckets_in))
  shape = (depth, n_hashes, rot_size // 2)
  bits = fastmath.random.randint(xla_stable_key(rng), shape + (2,), 0,
                                 2**_BITS, dtype=jnp.int32)
  u = (bits.astype(jnp.float32) + 0.5) / float(2**_BITS)  # In (0, 1).
  radius = jnp.sqrt(-2.0 * jnp.log(u[..., 0]))
  return radius * jnp.cos(2.0 * jnp.pi * u[..., 1])


def hash_with_rotations(vecs, rotations, n_buckets_in):
  """Buckets `[..., n_hashes, length]` of `vecs` `[..., length, depth]`.

  `rotations` is `[depth, n_hashes, r]`, or carries `vecs`' leading axes
  (`[..., depth, n_hashes, r]`) to hash each batch entry its own way. A
  factor list hashes once per factor and combines the bucket ids.
  """
  factors = _bucket_factors(n_buckets_in)
  rotations = rotations.astype(vecs.dtype)
  if len(rotations.shape) == 3:
    rotated = jnp.einsum('...tf,fhb->...htb', vecs, rotations)
  else:
    rotated = jnp.einsum('...tf,...fhb->...htb', vecs, rotations)
  buckets, start, scale = None, 0, 1
  for factor in factors:
    part = rotated[..., start:start + factor // 2]
    start += factor // 2
    # argmax over [r, -r]: the nearest of `factor` signed axes.
    ids = jnp.argmax(jnp.concatenate([part, -part], axis=-1),
                     axis=-1).astype(jnp.int32)
    buckets = ids if buckets is None else buckets + scale * ids
    scale *= factor
  return buckets


def hash_vecs(vecs, n_buckets_in, n_hashes, rng):
  """Angular LSH of `vecs` into buckets (arXiv:1509.02897).

  Args:
    vecs: `[length, depth]` vectors (leading batch axes allowed).
    n_buckets_in: even int, or a list of even factors for hierarchical
      hashing (the total is their product).
    n_hashes: number of independent hashing rounds.
    rng: key for the random rotations, one per round.

  Returns:
    `(buckets, n_buckets)`: int32 `[n_hashes, length]` ids and their total.

  Example:
    >>> rng = fastmath.random.get_prng(0)
    >>> b, n = hash_vecs(jnp.ones((3, 4), jnp.float32), 4, 2, rng)
    >>> tuple(b.shape), n
    ((2, 3), 4)
  """
  n_buckets = n_buckets_total(n_buckets_in)
  rotations = random_rotations(rng, vecs.shape[-1], n_hashes, n_buckets_in)
  return hash_with_rotations(vecs, rotations, n_buckets_in), n_buckets


def _look_adjacent(x, n_chunks_before, n_chunks_after, axis):
  """`look_adjacent` along chunk axis `axis` (positions on `axis + 1`)."""
  if n_chunks_before == 0 and n_chunks_after == 0:
    return x
  # Chunk c sees chunk c + i; the chunk axis wraps around at both ends.
  slices = [x if i == 0 else jnp.roll(x, -i, axis=axis)
            for i in range(-n_chunks_before, n_chunks_after + 1)]
  return jnp.concatenate(slices, axis=axis + 1)


def look_adjacent(x, n_chunks_before, n_chunks_after):
  """Appends neighbouring chunks to each chunk of `x` `[n_chunks, len, ...]`.

  Returns `[n_chunks, (1 + n_chunks_before + n_chunks_after) * len, ...]`;
  chunk `c` is followed by chunks `c - n_chunks_before .. c +
  n_chunks_after` in order, wrapping around at both ends.

  Example:
    >>> x = jnp.array([[0], [1], [2]])
    >>> look_adjacent(x, 1, 0).numpy().tolist()
    [[2, 0], [0, 1], [1, 2]]
  """
  return _look_adjacent(x, n_chunks_before, n_chunks_after, axis=0)


def mask_self_attention(dots, q_info, kv_info, causal=True, exclude_self=True,
                        masked=False):
  """Pushes down the logits `dots` that self-attention must not use.

  Causal masking removes keys after the query (by position info); excluding
  self subtracts a smaller 1e5, so a query that sees only itself still
  attends to itself; `masked` removes keys with negative info (padding).
  """
  q_info = q_info.astype(jnp.float32)
  kv_info = kv_info.astype(jnp.float32)
  if causal:
    dots = dots - 1e9 * (q_info < kv_info).astype(dots.dtype)
  if exclude_self:
    dots = dots - 1e5 * (q_info == kv_info).astype(dots.dtype)
  if masked:
    dots = dots - 1e9 * (kv_info < 0).astype(dots.dtype)
  return dots


def _chunk(x, chunk_len, lead):
  """`[..., length, *rest]` -> `[..., length // chunk_len, chunk_len, *rest]`."""
  rest = tuple(x.shape[len(lead) + 1:])
  return jnp.reshape(x, tuple(lead) + (-1, chunk_len) + rest)


def attend(q, k=None, v=None, q_chunk_len=None, kv_chunk_len=None,
           n_chunks_before=0, n_chunks_after=0, mask_fn=None, q_info=None,
           kv_info=None, dropout=0.0, rng=None):
  """Dot-product attention, optionally chunked and masked.

  Args:
    q: queries `[q_len, d_qk]` (leading batch axes allowed).
    k: keys `[kv_len, d_qk]`, or None to share queries as keys (the keys are
      then length-normalized).
    v: values `[kv_len, d_v]`.
    q_chunk_len: chunk queries into pieces of this length, if set.
    kv_chunk_len: chunk keys/values likewise (must be set with q_chunk_len).
    n_chunks_before: previous chunks each query chunk also sees.
    n_chunks_after: following chunks each query chunk also sees.
    mask_fn: `mask_fn(dots, q_info, kv_info) -> dots`, e.g. a partial of
      `mask_self_attention`.
    q_info: int query infos (positions), default `arange(q_len)`.
    kv_info: int key infos, default `arange(kv_len)` (or q_info when shared).
    dropout: attention dropout rate, one mask shared by all chunks and
      batch entries.
    rng: key for the dropout.

  Returns:
    `(out, dots_logsumexp)`, `[q_len, d_v]` and `[q_len]`: the logsumexp is
    the softmax normalizer multi-round LSH uses to combine its rounds.
  """
  if v is None:
    raise ValueError('attend: values `v` are required.')
  share_qk = k is None
  lead = tuple(q.shape[:-2])
  # Infos become 1-based so that position 0 can be negated (masked) too.
  q_info = (jnp.arange(1, q.shape[-2] + 1, dtype=jnp.int32) if q_info is None
            else q_info + 1)
  if kv_info is None and not share_qk:
    kv_info = jnp.arange(1, v.shape[-2] + 1, dtype=jnp.int32)
  elif kv_info is not None:
    kv_info = kv_info + 1

  chunked = q_chunk_len is not None or kv_chunk_len is not None
  if chunked and (q_chunk_len is None or
                  (kv_chunk_len is None and not share_qk)):
    raise ValueError('attend: set both q_chunk_len and kv_chunk_len, got '
                     f'{q_chunk_len} and {kv_chunk_len}.')
  if not chunked and (n_chunks_before or n_chunks_after):
    raise ValueError('attend: n_chunks_before/after need chunking '
                     '(q_chunk_len and kv_chunk_len).')
  if q_chunk_len is not None:
    q = _chunk(q, q_chunk_len, lead)
    q_info = _chunk(jnp.broadcast_to(q_info, q.shape[:-3] + (
        q.shape[-3] * q_chunk_len,)), q_chunk_len, lead)
  if share_qk:
    k = q
    kv_chunk_len = q_chunk_len
    if kv_info is None:
      kv_info = q_info
    elif kv_chunk_len is not None:
      kv_info = _chunk(kv_info, kv_chunk_len, tuple(kv_info.shape[:-1]))
    k = length_normalized(k)
  elif kv_chunk_len is not None:
    k = _chunk(k, kv_chunk_len, tuple(k.shape[:-2]))
    kv_info = _chunk(kv_info, kv_chunk_len, tuple(kv_info.shape[:-1]))
  if kv_chunk_len is not None:
    v = _chunk(v, kv_chunk_len, tuple(v.shape[:-2]))
  k = k / math.sqrt(k.shape[-1])

  if chunked:
    k = _look_adjacent(k, n_chunks_before, n_chunks_after, axis=-3)
    v = _look_adjacent(v, n_chunks_before, n_chunks_after, axis=-3)
    kv_info = _look_adjacent(kv_info, n_chunks_before, n_chunks_after,
                             axis=-2)

  dots = jnp.matmul(q, jnp.swapaxes(k, -1, -2))
  if mask_fn is not None:
    dots = mask_fn(dots, q_info[..., :, None], kv_info[..., None, :])
  dots_logsumexp = fastmath.logsumexp(dots, axis=-1, keepdims=True)
  dots = jnp.exp(dots - dots_logsumexp)
  if dropout > 0.0:
    if rng is None:
      raise ValueError('attend: dropout > 0 needs an rng.')
    keep_prob = 1.0 - dropout
    keep = fastmath.random.bernoulli(rng, keep_prob,
                                     (dots.shape[-2], dots.shape[-1]))
    dots = dots * (keep.astype(dots.dtype) / keep_prob)
  out = jnp.matmul(dots, v)
  out = jnp.reshape(out, lead + (-1, out.shape[-1]))
  dots_logsumexp = jnp.reshape(dots_logsumexp, lead + (-1,))
  return out, dots_logsumexp


def apply_broadcasted_dropout(vecs, dropout_rate, rng):
  """Dropout with one keep-mask over the last axis, shared by all others."""
  if dropout_rate <= 0.0:
    return vecs
  if rng is None:
    raise ValueError('apply_broadcasted_dropout: dropout_rate > 0 needs an '
                     'rng.')
  keep_prob = 1.0 - dropout_rate
  keep = fastmath.random.bernoulli(rng, keep_prob, (vecs.shape[-1],))
  return vecs * (keep.astype(vecs.dtype) / keep_prob)


def _take(val, idx, axis):
  return jnp.take(val, idx, axis=axis)


def permute_via_gather(val, permutation, inverse_permutation, axis=0):
  """`val` permuted along `axis`; its gradient gathers by the inverse.

  Autodiff of a gather would scatter; knowing the inverse permutation, the
  backward pass is another gather.
  """
  def fwd(p, ip, x):
    return _take(x, p, axis), None

  def bwd(unused_p, ip, unused_residual, permuted_grad):
    return (_take(permuted_grad, ip, axis),)
  permute = fastmath.custom_vjp(lambda p, ip, x: _take(x, p, axis), fwd, bwd,
                                nondiff_argnums=(0, 1))
  return permute(permutation, inverse_permutation, val)


def _sort_by(keys, x, axis):
  return fastmath.sort_key_val(keys, x, dimension=axis)[1]


def permute_via_sort(val, keys, inverse_keys, axis=0):
  """`val` sorted by `keys` along `axis`; the gradient sorts by the inverse."""
  def fwd(k, ik, x):
    return _sort_by(k, x, axis), None

  def bwd(unused_k, ik, unused_residual, permuted_grad):
    return (_sort_by(ik, permuted_grad, axis),)
  permute = fastmath.custom_vjp(lambda k, ik, x: _sort_by(k, x, axis), fwd,
                                bwd, nondiff_argnums=(0, 1))
  return permute(keys, inverse_keys, val)
