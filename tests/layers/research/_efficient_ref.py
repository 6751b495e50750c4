"""NumPy float64 references for the efficient-attention tests.

Written from the definitions (not from the layer code): each query attends
to the keys its chunk window allows, with causal and self masks.
"""

import numpy as np

# Trax's mask offsets: -1e9 removes a key, -1e5 demotes self-attention.
_NEG, _SELF = 1e9, 1e5


def softmax(logits):
  z = logits - logits.max(axis=-1, keepdims=True)
  e = np.exp(z)
  return e / e.sum(axis=-1, keepdims=True)


def rms_normalize(x, eps=1e-6):
  return x / np.sqrt(np.mean(x**2, axis=-1, keepdims=True) + eps)


def window(length, chunk_len, n_before, n_after):
  """allowed[i, j]: key j lies in a chunk query i's chunk attends to."""
  if chunk_len is None:
    return np.ones((length, length), bool)
  n_chunks = length // chunk_len
  chunk = np.arange(length) // chunk_len
  allowed = np.zeros((length, length), bool)
  for i in range(length):
    for off in range(-n_before, n_after + 1):
      allowed[i, chunk == (chunk[i] + off) % n_chunks] = True
  return allowed


def head_attention(q, k, v, allowed, causal, exclude_self, key_valid=None):
  """One head: q, k `[L, d]`, v `[L, dv]`, allowed `[L, L]` -> `[L, dv]`."""
  length = q.shape[0]
  logits = q @ k.T / np.sqrt(k.shape[-1])
  logits = np.where(allowed, logits, -np.inf)
  pos = np.arange(length)
  if causal:
    logits = np.where(pos[None, :] > pos[:, None], -np.inf, logits)
  if key_valid is not None:
    logits = np.where(key_valid[None, :], logits, -np.inf)
  if exclude_self:
    logits = logits - _SELF * np.eye(length)
  return softmax(logits) @ v


def self_attention(x, heads, *, chunk_len=None, n_before=0, n_after=0,
                   causal=False, share_qk=False, mask=None):
  """Multi-head (summed) self-attention of x `[B, L, D]`.

  heads: per-head tuples `(w_q, w_k or None, w_v, w_o)` of float64 arrays.
  mask: optional `[B, L]` bool of real tokens.
  """
  batch, length, _ = x.shape
  allowed = window(length, chunk_len, n_before, n_after)
  out = np.zeros(x.shape)
  for b in range(batch):
    for w_q, w_k, w_v, w_o in heads:
      q = x[b] @ w_q
      k = rms_normalize(q) if share_qk else x[b] @ w_k
      valid = None if mask is None else mask[b]
      o = head_attention(q, k, x[b] @ w_v, allowed, causal, share_qk, valid)
      out[b] += o @ w_o
  return out


def heads_of(weights, share_qk):
  """Per-head float64 `(w_q, w_k, w_v, w_o)` from a layer's weight tree."""
  leaves = [np.asarray(w, np.float64) for w in weights]
  n_heads = leaves[0].shape[0]
  if share_qk:
    return [(leaves[0][h], None, leaves[1][h], leaves[2][h])
            for h in range(n_heads)]
  return [(leaves[0][h], leaves[1][h], leaves[2][h], leaves[3][h])
          for h in range(n_heads)]


def lsh_head(q, v, buckets, n_hashes, chunk_len, n_before, n_after, causal,
             mask=None):
  """LSH attention of one head, given its flat buckets `[n_hashes * L]`.

  Sorts (round, position) pairs by bucket then position, lets each chunk of
  the sorted order attend to itself and its neighbours (wrapping), masks by
  original positions, and mixes the rounds by their softmax normalizers.
  """
  length = q.shape[0]
  k = rms_normalize(q) / np.sqrt(q.shape[-1])
  order = np.argsort(length * buckets + np.arange(n_hashes * length) % length,
                     kind='stable')
  pos = order % length
  n_chunks = len(order) // chunk_len
  out = np.zeros((n_hashes, length, v.shape[-1]))
  lse = np.zeros((n_hashes, length))
  for s, r_i in enumerate(order):
    c = s // chunk_len
    keys = np.concatenate([
        np.arange(chunk_len) + ((c + off) % n_chunks) * chunk_len
        for off in range(-n_before, n_after + 1)])
    kp = pos[keys]
    logits = k[kp] @ q[pos[s]]
    if causal:
      logits = logits - _NEG * (kp > pos[s])
    logits = logits - _SELF * (kp == pos[s])
    if mask is not None:
      logits = logits - _NEG * (~mask[kp])
    m = logits.max()
    w = np.exp(logits - m)
    out[r_i // length, r_i % length] = (w / w.sum()) @ v[kp]
    lse[r_i // length, r_i % length] = m + np.log(w.sum())
  probs = softmax(lse.T).T  # Over rounds.
  return np.sum(out * probs[..., None], axis=0)
