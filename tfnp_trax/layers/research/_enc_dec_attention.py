"""EncDecAttention: memory-efficient encoder-decoder attention."""

from tfnp_trax import fastmath
from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.layers.research import _attention_functions as fns
from tfnp_trax.layers.research import _chunked_attention as chunked
from tfnp_trax.layers.research import _efficient_attention_base as eab
from tfnp_trax.layers.research import _per_head_weights as phw

__all__ = ['EncDecAttention']


def _mask_padding_keys(dots, q_info, kv_info):
  del q_info
  return dots - 1e9 * kv_info.astype(dots.dtype)


class EncDecAttention(eab.EfficientAttentionBase):
  """Multi-head attention of decoder queries over encoder keys/values.

  Inputs: `(q_antecedent, kv_antecedent, mask)` (mask `[batch, kv_len]`,
  True for real encoder tokens), or `(q_antecedent, kv_antecedent)` with
  `masked=False`. The output has q_antecedent's shape.

  Trax quirk, kept: masking shifts every logit by -1e9 (padding by -2e9),
  since `attend` makes infos 1-based. In float32 this rounds the logits of
  real keys to one value, so each query takes the *sum* of the real keys'
  values; float64 inputs keep the logits and give ordinary attention.

  Args:
    n_heads: number of attention heads.
    d_qk: depth of queries and keys.
    d_v: depth of values.
    masked: True to take an encoder padding mask as third input.
    mode: 'train', 'eval' or 'predict'.
    attention_dropout: dropout on attention weights (train mode only).
    output_dropout: dropout on the output (train mode only).
    n_parallel_heads: validated as in Trax.
    use_python_loop: accepted for compatibility with Trax.
    use_reference_code: True for the per-example, per-head Python loop.

  Example:
    >>> layer = EncDecAttention(n_heads=2, d_qk=4, d_v=4, masked=False)
    >>> q, kv = jnp.ones((1, 3, 6), jnp.float32), jnp.ones((1, 5, 8),
    ...                                                    jnp.float32)
    >>> _ = layer.init(shapes.signature((q, kv)))
    >>> tuple(layer((q, kv)).shape)
    (1, 3, 6)
  """

  def __init__(self, n_heads=2, d_qk=64, d_v=64, masked=True, mode='train',
               attention_dropout=0.0, output_dropout=0.0,
               n_parallel_heads=None, use_python_loop=False,
               use_reference_code=False):
    super().__init__(n_heads=n_heads, n_in=(3 if masked else 2),
                     n_parallel_heads=n_parallel_heads,
                     use_python_loop=use_python_loop,
                     use_reference_code=use_reference_code)
    chunked.check_mode(self._name, mode)
    self._d_qk, self._d_v = d_qk, d_v
    self._masked, self._mode = masked, mode
    train = mode == 'train'
    self._attention_dropout = attention_dropout if train else 0.0
    self._output_dropout = output_dropout if train else 0.0

  def create_weights_unbatched(self, input_signature, rng):
    return phw.create_head_weights(
        input_signature[0].shape[-1], self._d_qk, self._d_v, self._n_heads,
        rng, share_qk=False, bias=False, d_kv=input_signature[1].shape[-1])

  def forward_unbatched(self, q_antecedent, kv_antecedent, mask=None, *,
                        weights, state, rng, update_state):
    """Attention of one example and one head (leading axes allowed)."""
    del update_state
    keys = fastmath.random.split(rng)
    proj = phw.HeadProjection(weights, share_qk=False, bias=False)
    q, k, v = proj.q(q_antecedent), proj.k(kv_antecedent), proj.v(
        kv_antecedent)
    mask_fn = kv_info = None
    if self._masked:
      kv_info = jnp.logical_not(mask).astype(jnp.int32)
      mask_fn = _mask_padding_keys
    o, _ = fns.attend(q, k, v, mask_fn=mask_fn, kv_info=kv_info,
                      dropout=self._attention_dropout, rng=keys[0])
    out = fns.apply_broadcasted_dropout(proj.o(o), self._output_dropout,
                                        keys[1])
    return out, state
