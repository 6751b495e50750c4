"""PureLSHSelfAttention: LSH attention over given queries/keys and values.

It has no weights: inputs are already split into heads, `qk` and `v` of
shape `[batch * n_heads, length, d_head]` (and a mask `[batch, length]`
with `masked=True`). `PureLSHSelfAttentionWrapper` adds the projections.
"""

from tfnp_trax import fastmath
from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.layers.research import _efficient_attention_base as eab
from tfnp_trax.layers.research import _lsh_self_attention as lsh_sa

__all__ = ['PureLSHSelfAttention']


class PureLSHSelfAttention(lsh_sa.LSHConfig, eab._PerHeadAttention):  # pylint: disable=protected-access
  """LSH self-attention without weights: `(qk, v[, mask]) -> o`.

  Each of the `batch * n_heads` rows hashes with its own key from the state,
  as in `LSHSelfAttention`; unlike it, there is no output dropout and no
  reference code (as in Trax). Arguments are those of `LSHSelfAttention`
  (`d_qk`, `d_v`, `bias`, `share_qk` are accepted and unused).

  Example:
    >>> layer = PureLSHSelfAttention(n_heads=2, chunk_len=4, n_buckets=2)
    >>> qk = v = jnp.ones((2, 8, 4), jnp.float32)  # batch 1 x 2 heads.
    >>> _ = layer.init(shapes.signature((qk, v)))
    >>> tuple(layer((qk, v)).shape)
    (2, 8, 4)
  """

  # The predict cache holds qk and v, not the mask.
  _n_init_inputs = 2

  def __init__(self, n_heads=2, d_qk=64, d_v=64, share_qk='unused',
               causal=False, masked=False, chunk_len=128, n_chunks_before=1,
               n_chunks_after=0, n_hashes=1, n_buckets=None, mode='train',
               predict_mem_len=2048, predict_drop_len=256,
               attention_dropout=0.0, output_dropout=0.0,
               max_length_for_buckets=None, bias=False, n_parallel_heads=1,
               use_python_loop=False, use_reference_code=False):
    del share_qk
    super().__init__(n_in=(3 if masked else 2), n_out=1)
    # Rows are (example, head) pairs already: the shared machinery runs
    # with one "head" per row.
    self._setup(1, None, use_python_loop, use_reference_code)
    _check_parallel(self._name, n_heads, n_parallel_heads)
    self._n_heads_in_batch = n_heads
    if mode == 'predict' and masked:
      raise ValueError(f'{self._name}: mode="predict" does not take a mask '
                       '(masked=True); decode without padding.')
    self._setup_lsh(mode, causal, masked, chunk_len, n_chunks_before,
                    n_chunks_after, n_hashes, n_buckets, predict_mem_len,
                    predict_drop_len, attention_dropout, output_dropout,
                    max_length_for_buckets)
    self._d_qk, self._d_v, self._bias = d_qk, d_v, bias

  def init_weights_and_state(self, input_signature):
    expected = 3 if self._masked else 2
    if not (isinstance(input_signature, (tuple, list)) and
            len(input_signature) == expected):
      raise ValueError(f'{self._name}: input_signature should be a '
                       f'{expected}-tuple (qk, v{", mask" if self._masked else ""}), '
                       f'but is: {input_signature}')
    rows = input_signature[0].shape[0]
    if rows % self._n_heads_in_batch:
      raise ValueError(
          f'{self._name}: qk has {rows} rows, not a multiple of n_heads='
          f'{self._n_heads_in_batch}; inputs are [batch * n_heads, length, '
          'd_head] (use SplitIntoHeads).')
    super().init_weights_and_state(input_signature)
    self.weights = ()

  def create_weights_unbatched(self, input_signature, rng):
    del input_signature, rng
    return ()

  def _check_inputs(self, inputs):
    self._check_lsh_length(inputs[0].shape)

  def _prepare_inputs(self, inputs):
    if not self._masked:
      return inputs
    qk, v, mask = inputs
    # One mask row per (example, head) row of qk.
    return qk, v, jnp.repeat(mask, self._n_heads_in_batch, axis=0)

  def forward(self, inputs):
    if self._use_reference_code:
      raise NotImplementedError(
          f'{self._name}: reference code is not implemented (as in Trax); '
          'use use_reference_code=False.')
    return super().forward(inputs)

  def forward_unbatched(self, qk, v, mask=None, *, weights, state, rng,
                        update_state):
    del weights
    keys = fastmath.random.split(rng)
    return self._lsh_attend(qk, v, mask, state, keys[0], update_state)

  def _incremental_forward_unbatched(self, qk, v, mask=None, *, q_start,
                                     q_len, weights, state, rng,
                                     update_state):
    del mask, weights, update_state
    keys = fastmath.random.split(rng)
    return self._lsh_incremental(qk, v, q_start, q_len, state, keys[0])

  def forward_and_or_backward(self, inputs, state, rng, output_grad=None,
                              compute_output=True, update_state=True):
    """Trax's contract for this layer: no weights in, no weights' grads out.

    Returns:
      `(output, new_state, inputs_grad)`.
    """
    output, new_state, inputs_grad, _ = super().forward_and_or_backward(
        inputs, (), state, rng, output_grad=output_grad,
        compute_output=compute_output, update_state=update_state)
    return output, new_state, inputs_grad

  def backward(self, inputs, output, grad, weights, state, new_state,
               rng=None, **kwargs):
    del output, state, kwargs
    _, _, inputs_grad = self.forward_and_or_backward(
        inputs, new_state, rng, output_grad=grad, compute_output=False,
        update_state=False)
    return inputs_grad, fastmath.nested_map(jnp.zeros_like, weights)

  @property
  def has_backward(self):
    return True


def _check_parallel(name, n_heads, n_parallel_heads):
  eab._check_parallel_heads(name, n_heads, n_parallel_heads)  # pylint: disable=protected-access
