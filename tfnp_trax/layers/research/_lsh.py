"""LSH attention for one head: hashing, sort-based bucketing, decoding step.

Shared by `LSHSelfAttention` (which projects its own queries/values) and
`PureLSHSelfAttention` (which takes them as inputs). Every function accepts
leading batch axes; per-head hash keys then carry the same leading axes.

Attention within buckets (Kitaev et al., 2020, arXiv:2001.04451): each
position is hashed `n_hashes` times; all (round, position) pairs are sorted
by (round, bucket, position), the sorted sequence is cut into chunks of
`chunk_len`, and each chunk attends to itself and `n_chunks_before` earlier
chunks with shared, length-normalized keys. The rounds' outputs are
combined with weights softmax(logsumexp of each round's logits).
"""

import functools
import math

from tfnp_trax import fastmath
from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.layers.research import _attention_functions as fns

__all__ = ['split_keys', 'resolve_n_buckets', 'hash_vectors',
           'lsh_attention', 'bucket_state', 'lsh_decode_step',
           'lsh_prefill']


def _map_keys(fn, keys):
  """`fn(key)` for every int32 [2] key in `keys` `[..., 2]`, stacked."""
  lead = tuple(keys.shape[:-1])
  if not lead:
    return fn(keys)
  flat = jnp.reshape(keys, (-1, 2))
  # A Python loop: the number of heads and examples is static and small,
  # and TensorFlow's stateless ops take one key each.
  outs = [fn(flat[i]) for i in range(flat.shape[0])]
  return fastmath.nested_map_multiarg(
      lambda *o: jnp.reshape(jnp.stack(o, 0), lead + tuple(o[0].shape)),
      *outs)


def split_keys(keys):
  """Splits each key of `keys` `[..., 2]` in two: `(next_keys, subkeys)`."""
  both = _map_keys(
      lambda k: fastmath.random.split(fns.xla_stable_key(k)), keys)
  return both[..., 0, :], both[..., 1, :]


def resolve_n_buckets(n_buckets, length, chunk_len):
  """Trax's default: 2 buckets per chunk, factorized beyond 128 buckets."""
  if n_buckets is not None:
    return n_buckets
  n_buckets = 2 * max(1, length // chunk_len)
  if n_buckets <= 128:
    return n_buckets
  first = 2**math.ceil(math.log2(math.sqrt(n_buckets)))
  return [first, 2 * (n_buckets // (2 * first))]


def hash_vectors(vecs, keys, n_buckets, n_hashes, chunk_len, mask=None):
  """Flat bucket ids `[..., n_hashes * length]`, rounds offset apart.

  Args:
    vecs: `[..., length, depth]` vectors to hash.
    keys: int32 `[..., 2]` keys, one per leading index (or a single key).
    n_buckets: int, factor list, or None for Trax's length-based default.
    n_hashes: hashing rounds.
    chunk_len: chunk length (for the default n_buckets).
    mask: optional bool `[..., length]`; padding goes to an extra bucket.
  """
  length, depth = vecs.shape[-2], vecs.shape[-1]
  n_buckets_in = resolve_n_buckets(n_buckets, length, chunk_len)
  total = fns.n_buckets_total(n_buckets_in)
  rotations = _map_keys(
      lambda k: fns.random_rotations(k, depth, n_hashes, n_buckets_in), keys)
  if len(keys.shape) > 1:
    # Per-key rotations have the keys' leading axes; match vecs' rank.
    while len(rotations.shape) - 3 < len(vecs.shape) - 2:
      rotations = rotations[None]
  buckets = fns.hash_with_rotations(vecs, rotations, n_buckets_in)
  if mask is not None:
    total += 1
    buckets = jnp.where(mask[..., None, :], buckets, total - 1)
  offsets = jnp.arange(n_hashes, dtype=jnp.int32) * total
  buckets = buckets + offsets[:, None]
  return jnp.reshape(buckets, tuple(buckets.shape[:-2]) + (-1,))


def _flat_offsets(lead, n):
  """Offsets that turn per-row indices into indices of the flattened rows."""
  count = 1
  for d in lead:
    count *= d
  return jnp.reshape(jnp.arange(count, dtype=jnp.int32) * n, lead + (1,))


def _gather_rows(x, idx):
  """`x[..., idx, :]` per leading index: x `[..., n, d]`, idx `[..., m]`.

  A plain gather on flattened rows: TF NumPy's take_along_axis does not
  compile with XLA here.
  """
  lead = tuple(idx.shape[:-1])
  n, d = x.shape[-2], x.shape[-1]
  x = jnp.reshape(jnp.broadcast_to(x, lead + (n, d)), (-1, d))
  flat = jnp.reshape(idx + _flat_offsets(lead, n), (-1,))
  return jnp.reshape(jnp.take(x, flat, axis=0), lead + (idx.shape[-1], d))


def _gather_last(x, idx):
  """`x[..., idx]` per leading index: x `[..., n]`, idx `[..., m]`."""
  return _gather_rows(x[..., None], idx)[..., 0]


def _argsort_pair(keys):
  """`(sort_order, inverse_order)` of distinct int keys on the last axis."""
  order = jnp.argsort(keys, axis=-1).astype(jnp.int32)
  undo = jnp.argsort(order, axis=-1).astype(jnp.int32)
  return (fastmath.stop_gradient(order), fastmath.stop_gradient(undo))


def lsh_attention(q, v, buckets, *, n_hashes, chunk_len, n_chunks_before,
                  n_chunks_after, causal, mask=None, dropout=0.0, rng=None):
  """LSH attention of shared queries/keys `q` over values `v`.

  Args:
    q: `[..., length, d_qk]` queries (also the keys, after normalization).
    v: `[..., length, d_v]` values.
    buckets: int `[..., n_hashes * length]` from `hash_vectors`.
    n_hashes: hashing rounds.
    chunk_len: sorted positions per chunk.
    n_chunks_before: earlier chunks each chunk attends to.
    n_chunks_after: later chunks each chunk attends to.
    causal: mask out later positions (by original position).
    mask: optional bool `[..., length]` padding mask (True = real token).
    dropout: attention dropout rate.
    rng: dropout key.

  Returns:
    `[..., length, d_v]`.
  """
  length = q.shape[-2]
  lead = tuple(buckets.shape[:-1])
  ticker = jnp.arange(n_hashes * length, dtype=jnp.int32)
  # Sort by (round, bucket) and, within a bucket, by position.
  buckets_and_t = fastmath.stop_gradient(length * buckets + ticker % length)
  sticker, undo_sort = _argsort_pair(buckets_and_t)
  st = sticker % length
  sq, sv = _gather_rows(q, st), _gather_rows(v, st)

  kv_info = None
  if mask is not None:
    smask = _gather_last(mask, st)
    kv_info = st * jnp.where(smask, 1, -1).astype(jnp.int32)
  mask_fn = functools.partial(fns.mask_self_attention, causal=causal,
                              exclude_self=True, masked=mask is not None)
  so, slogits = fns.attend(
      sq, None, sv, q_chunk_len=chunk_len, n_chunks_before=n_chunks_before,
      n_chunks_after=n_chunks_after, mask_fn=mask_fn, q_info=st,
      kv_info=kv_info, dropout=dropout, rng=rng)
  o = _gather_rows(so, undo_sort)
  logits = _gather_last(slogits, undo_sort)
  if n_hashes > 1:
    o = jnp.reshape(o, lead + (n_hashes, length, o.shape[-1]))
    logits = jnp.reshape(logits, lead + (n_hashes, length, 1))
    probs = jnp.exp(logits - fastmath.logsumexp(logits, axis=-3,
                                                keepdims=True))
    o = jnp.sum(o * probs, axis=-3)
  return o


def bucket_state(state, vecs, mask, update_state, *, n_buckets, n_hashes,
                 chunk_len, max_length_for_buckets):
  """Buckets to use and the new `(buckets, hash_rng)` state.

  With `update_state`, hashes with a fresh subkey of the state's key (and
  advances the key); otherwise reuses the buckets the state holds, as the
  backward pass must.
  """
  length = vecs.shape[-2]
  if not update_state:
    buckets = state[0]
    if max_length_for_buckets:
      buckets = buckets[..., :n_hashes * length]
    return buckets, state
  hash_rng, hash_subrng = split_keys(state[1])
  buckets = hash_vectors(vecs, hash_subrng, n_buckets, n_hashes, chunk_len,
                         mask)
  stored = buckets
  if max_length_for_buckets:
    pad = n_hashes * max_length_for_buckets - buckets.shape[-1]
    if pad > 0:
      stored = jnp.concatenate(
          [buckets, jnp.zeros(tuple(buckets.shape[:-1]) + (pad,),
                              dtype=jnp.int32)], axis=-1)
  return buckets, (stored, hash_rng)


def lsh_prefill(q, v, state, q_start, q_len, *, attend_fn, n_buckets,
                n_hashes, chunk_len, predict_mem_len):
  """Decoding a prefix of `q_len` > 1 tokens (at the sequence start).

  Pads the prefix to whole chunks, attends as in training with buckets
  hashed by the state's key, and stores the prefix's buckets.
  """
  buckets, buckets_idx, hash_rng = state
  length = q.shape[-2]
  pad = (-length) % chunk_len
  if pad:
    widths = [(0, 0)] * (len(q.shape) - 2) + [(0, pad), (0, 0)]
    q = jnp.pad(q, widths, mode='constant')
    v = jnp.pad(v, widths, mode='constant')
  new_buckets = hash_vectors(q, hash_rng, n_buckets, n_hashes, chunk_len)
  o = attend_fn(q, v, new_buckets)[..., :q_len, :]
  lead = tuple(buckets.shape[:-1])
  rounds = jnp.reshape(buckets, lead + (n_hashes, -1))
  update = jnp.reshape(new_buckets, lead + (n_hashes, -1))[..., :q_len]
  if q_len > predict_mem_len:
    update = update[..., -predict_mem_len:]
  rounds = fastmath.dynamic_update_slice_in_dim(rounds, update, q_start,
                                                axis=-1)
  return o, (jnp.reshape(rounds, lead + (-1,)), buckets_idx + q_len,
             hash_rng)


def lsh_decode_step(qk, v, state, q_start, *, n_buckets, n_hashes, chunk_len,
                    n_chunks_before, predict_drop_len, normalize_keys,
                    dropout=0.0, rng=None):
  """One decoding step: the query at `q_start` over the cached positions.

  Args:
    qk: `[..., mem_len, d_qk]` queries of the cached positions (keys are
      these, length-normalized, when `normalize_keys`).
    v: `[..., mem_len, d_v]` cached values.
    state: `(buckets, buckets_idx, hash_rng)`, buckets flat
      `[..., n_hashes * mem_len]`.
    q_start: traced index of the new query in the cache.
    n_buckets: as in `hash_vectors` (length-based default uses 2 vectors).
    n_hashes: hashing rounds.
    chunk_len: attention window unit.
    n_chunks_before: earlier chunks a query sees.
    predict_drop_len: how far the cache rolled when it was full.
    normalize_keys: length-normalize the keys.
    dropout: attention dropout rate.
    rng: dropout key.

  Returns:
    `(o, new_state)`, o `[..., 1, d_v]`.

  The query attends to the `n_hashes * chunk_len * (1 + n_chunks_before)`
  latest earlier positions, preferring those sharing one of its buckets,
  which is what it could see in chunked, sorted LSH attention.
  """
  buckets, buckets_idx, hash_rng = state
  lead = tuple(buckets.shape[:-1])
  rounds = jnp.reshape(buckets, lead + (n_hashes, -1))
  # When the cache rolled, the stored buckets shift with it.
  shifted = jnp.concatenate(
      [rounds, jnp.zeros(lead + (n_hashes, predict_drop_len),
                         dtype=rounds.dtype)], axis=-1)
  shifted = _shift_rows(
      shifted, jnp.clip(buckets_idx - q_start, 0, predict_drop_len),
      rounds.shape[-1])
  rounds = jnp.where((buckets_idx > q_start)[..., None, None], shifted,
                     rounds)

  q = jnp.take(qk, q_start + jnp.arange(1, dtype=jnp.int32), axis=-2)
  q_buckets = jnp.reshape(
      hash_vectors(q, hash_rng, n_buckets, n_hashes, chunk_len),
      lead + (n_hashes, 1))
  rounds = _write_column(rounds, q_buckets, q_start)
  is_valid = jnp.any(rounds == q_buckets, axis=-2)  # [..., mem_len]

  mem_len = qk.shape[-2]
  positions = jnp.arange(mem_len, dtype=jnp.int32)
  priorities = jnp.where(positions > q_start + 1, -(mem_len + positions),
                         positions)
  priorities = priorities + mem_len * is_valid.astype(jnp.int32)
  kv_indices = jnp.argsort(priorities, axis=-1).astype(jnp.int32)
  kv_indices = kv_indices[...,
                          -n_hashes * chunk_len * (1 + n_chunks_before):]
  k = _gather_rows(qk, kv_indices)
  if normalize_keys:
    k = fns.length_normalized(k)
  v = _gather_rows(v, kv_indices)
  mask_fn = functools.partial(fns.mask_self_attention, causal=True,
                              masked=True, exclude_self=True)
  q_info = jnp.reshape(q_start, (1,)).astype(jnp.int32)
  o, _ = fns.attend(q, k, v, mask_fn=mask_fn, q_info=q_info,
                    kv_info=kv_indices, dropout=dropout, rng=rng)
  new_state = (jnp.reshape(rounds, lead + (-1,)),
               jnp.broadcast_to(q_start + 1, buckets_idx.shape).astype(
                   buckets_idx.dtype), hash_rng)
  return o, new_state


def _shift_rows(x, start, size):
  """`x[..., start:start + size]` with a traced `start` per leading index."""
  idx = start[..., None, None] + jnp.arange(size, dtype=jnp.int32)
  idx = jnp.broadcast_to(idx, tuple(x.shape[:-1]) + (size,))
  return _gather_last(x, idx)


def _write_column(rounds, column, index):
  """`rounds[..., index] = column[..., 0]` for a traced scalar `index`."""
  hit = jnp.arange(rounds.shape[-1], dtype=jnp.int32) == index
  return jnp.where(hit, column, rounds)
