"""BlockSparseFF and SwitchSparseFF: feed-forward as a mixture of experts.

The d_ff hidden units of Dense(d_ff) -> Relu -> Dense(d_model) are cut into
`n_experts` contiguous blocks (experts); a softmax router x @ m1 picks one
expert per token and only its units are active. The two layers differ in
how the router is trained: BlockSparseFF with the straight-through
Gumbel-softmax trick, SwitchSparseFF by scaling the chosen expert by its
router probability, as in the Switch Transformer
(https://arxiv.org/abs/2101.03961).
"""

from tfnp_trax import fastmath
from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.layers import base
from tfnp_trax.layers import core_extras
from tfnp_trax.layers import initializers as init
from tfnp_trax.layers.research import _gumbel

__all__ = ['BlockSparseFF', 'SwitchSparseFF']


class _ExpertFF(base.Layer):
  """What the two expert layers share: weights, routing, the FF itself.

  Weights, in Trax's layout: m1 (d_model, n_experts) router, w1 (d_model,
  d_ff), w2 (d_ff, d_model), b2 (d_model,); expert e owns hidden units
  [e * d_ff / n_experts, (e + 1) * d_ff / n_experts).
  """

  def __init__(self, d_ff, n_experts, temperature, mode, kernel_initializer,
               bias_initializer):
    super().__init__(name=f'{type(self).__name__}_{d_ff}')
    if n_experts < 1 or d_ff % n_experts:
      raise ValueError(
          f'{self.name}: d_ff {d_ff} is not a multiple of n_experts '
          f'{n_experts}; each expert owns d_ff // n_experts hidden units, '
          f'so pick n_experts dividing d_ff.')
    self._mode = mode
    self._d_ff = d_ff
    self._n_experts = n_experts
    self._temperature = temperature if mode == 'train' else 0.0
    self._n_elements_in_block = d_ff // n_experts
    self._kernel_initializer = kernel_initializer
    self._bias_initializer = bias_initializer

  def _route(self, x, m1, rng):
    """Router probabilities and the Gumbel-chosen expert per token."""
    log_mask = _gumbel.log_softmax(jnp.dot(x, m1))
    selected = _gumbel.gumbel_argmax(rng, log_mask, self._temperature)
    return jnp.exp(log_mask), selected

  def _all_experts(self, x, expert_mask, w1, w2, b2):
    """Every unit computed, scaled by its expert's (n_experts,) weight."""
    unit_mask = jnp.repeat(expert_mask, self._n_elements_in_block, axis=-1)
    mid = jnp.dot(x, w1) * unit_mask
    return jnp.dot(jnp.where(mid <= 0, jnp.zeros_like(mid), mid), w2) + b2

  def _one_expert(self, x, expert, scale, w1, w2, b2):
    """One token (batch 1): slices out the chosen expert's weights only."""
    start = expert * self._n_elements_in_block
    w = fastmath.dynamic_slice(w1, [0, start],
                               [w1.shape[0], self._n_elements_in_block])
    mid = jnp.dot(x, w)
    if scale is not None:
      mid = mid * scale
    v = fastmath.dynamic_slice(w2, [start, 0],
                               [self._n_elements_in_block, w2.shape[-1]])
    return jnp.dot(jnp.where(mid <= 0, jnp.zeros_like(mid), mid), v) + b2

  def forward(self, x):
    m1, w1, w2, b2 = self.weights
    if x.shape[-1] != m1.shape[0]:
      raise ValueError(
          f'{self.name}: input last dim {x.shape[-1]} does not match the '
          f'weights\' d_model {m1.shape[0]} (input shape {tuple(x.shape)}); '
          f'the layer was initialized for width {m1.shape[0]}.')
    x_shape = x.shape
    x = jnp.reshape(x, (-1, x_shape[-1]))
    res = self._expert_ff(x, m1, w1, w2, b2)
    return jnp.reshape(res, x_shape)

  def _expert_ff(self, x, m1, w1, w2, b2):
    raise NotImplementedError

  def init_weights_and_state(self, input_signature):
    d_model = input_signature.shape[-1]
    rng_m1, rng_w1, rng_w2, rng_b2 = fastmath.random.split(self.rng, 4)
    m1 = self._kernel_initializer((d_model, self._n_experts), rng_m1)
    w1 = self._kernel_initializer((d_model, self._d_ff), rng_w1)
    w2 = self._kernel_initializer((self._d_ff, d_model), rng_w2)
    b2 = self._bias_initializer((d_model,), rng_b2)
    self.weights = (m1, w1, w2, b2)


class BlockSparseFF(_ExpertFF):
  """Feed-forward block with one active expert (block of units) per token.

  The router's choice is argmax(log p + temperature * Gumbel noise) in
  'train' mode (temperature 0, i.e. argmax, otherwise). In 'train' mode a
  coin flip per call (for the whole batch) uses either the one-hot choice
  with a straight-through gradient to the router or the router's soft
  probabilities. 'predict' with a single token slices out the chosen
  expert's weights, as decoding would; it computes the same numbers.
  Leading axes are folded into one batch axis and restored.

  Args:
    d_ff: hidden width.
    n_experts: number of experts; must divide `d_ff`.
    temperature: Gumbel noise scale in 'train' mode.
    mode: 'train', 'eval' or 'predict'.
    kernel_initializer: initializer of m1, w1 and w2.
    bias_initializer: initializer of b2.

  Example:
    >>> layer = BlockSparseFF(8, n_experts=2, mode='eval')
    >>> x = jnp.ones((2, 3, 4), jnp.float32)
    >>> _ = layer.init(shapes.signature(x))
    >>> tuple(layer(x).shape)
    (2, 3, 4)
  """

  def __init__(self, d_ff, n_experts=64, temperature=0.7, mode='train',
               kernel_initializer=init.GlorotUniformInitializer(),
               bias_initializer=init.RandomNormalInitializer(1e-6)):
    super().__init__(d_ff, n_experts, temperature, mode, kernel_initializer,
                     bias_initializer)

  def _expert_ff(self, x, m1, w1, w2, b2):
    keys = fastmath.random.split(self.rng, 2)  # Indexed: may be symbolic.
    rng_choice, rng_select = keys[0], keys[1]
    mask, selected = self._route(x, m1, rng_choice)
    hard = core_extras.one_hot(selected, self._n_experts, dtype=mask.dtype)
    if self._mode == 'train':
      # Straight-through (https://arxiv.org/abs/1801.09797, Section 2.1):
      # one-hot forward value, softmax gradient.
      hard = fastmath.stop_gradient(hard) + mask - fastmath.stop_gradient(
          mask)
      select = fastmath.random.uniform(rng_select, (), jnp.float32, -1.0,
                                       1.0)
      hard = jnp.where(select > 0.0, hard, mask)
    if self._mode == 'predict' and x.shape[0] == 1:
      return self._one_expert(x, selected[0], None, w1, w2, b2)
    return self._all_experts(x, hard, w1, w2, b2)


class SwitchSparseFF(_ExpertFF):
  """Feed-forward block with one expert per token, Switch-Transformer style.

  The chosen expert (argmax of log p + temperature * Gumbel noise in
  'train' mode, plain argmax otherwise) has its hidden pre-activations
  scaled by its router probability p, so the router learns through that
  factor; other experts are zero. 'predict' with a single token slices out
  the chosen expert's weights (same numbers). Leading axes are folded into
  one batch axis and restored.

  Args:
    d_ff: hidden width.
    n_experts: number of experts; must divide `d_ff`.
    temperature: Gumbel noise scale in 'train' mode.
    mode: 'train', 'eval' or 'predict'.
    kernel_initializer: initializer of m1, w1 and w2.
    bias_initializer: initializer of b2.

  Example:
    >>> layer = SwitchSparseFF(8, n_experts=2, mode='eval')
    >>> x = jnp.ones((2, 3, 4), jnp.float32)
    >>> _ = layer.init(shapes.signature(x))
    >>> tuple(layer(x).shape)
    (2, 3, 4)
  """

  def __init__(self, d_ff, n_experts=64, temperature=0.1, mode='train',
               kernel_initializer=init.GlorotUniformInitializer(),
               bias_initializer=init.RandomNormalInitializer(1e-6)):
    super().__init__(d_ff, n_experts, temperature, mode, kernel_initializer,
                     bias_initializer)

  def _expert_ff(self, x, m1, w1, w2, b2):
    # Trax splits the key and uses the first half; kept for the same keys.
    rng_choice = fastmath.random.split(self.rng, 2)[0]
    mask, selected = self._route(x, m1, rng_choice)
    hard = fastmath.stop_gradient(
        core_extras.one_hot(selected, self._n_experts, dtype=mask.dtype))
    if self._mode == 'predict' and x.shape[0] == 1:
      scale = jnp.sum(mask * hard, axis=-1, keepdims=True)
      return self._one_expert(x, selected[0], scale, w1, w2, b2)
    return self._all_experts(x, hard * mask, w1, w2, b2)
