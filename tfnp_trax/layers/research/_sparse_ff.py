"""SparseFF: a feed-forward block with one active unit per block of units.

The hidden layer of Dense(d_ff) -> Relu -> Dense(d_model) is cut into
d_ff / n_elements_in_block blocks, and a cheap low-rank controller picks one
unit in each block per token; only those units are computed at inference
('predict'), so decoding fetches a fraction of the weights. Training uses
the straight-through Gumbel-softmax trick (Section 2.1 of
https://arxiv.org/abs/1801.09797). Trax's Terraformer uses it inside
reversible layers, where `_RememberInReverse` and `_RecallQuantMaskInReverse`
make the backward recomputation reuse the forward pass's choices.
"""

from tfnp_trax import fastmath
from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.layers import _dtypes
from tfnp_trax.layers import base
from tfnp_trax.layers import combinators as cb
from tfnp_trax.layers import core
from tfnp_trax.layers import core_extras
from tfnp_trax.layers import flow
from tfnp_trax.layers import initializers as init
from tfnp_trax.layers.research import _gumbel

__all__ = ['SparseFF']

# Layer constructors are CamelCase functions, as in Trax.
# pylint: disable=invalid-name

# The state marker Trax's reversible layers write into a _RememberInReverse
# state when they recompute a layer's forward pass in reverse_and_grad.
_SECOND_RUN = 'running_second_time_yes'


def _check_blocks(name, d_ff, n_elements_in_block):
  if n_elements_in_block < 1 or d_ff % n_elements_in_block:
    raise ValueError(
        f'{name}: d_ff {d_ff} is not a multiple of n_elements_in_block '
        f'{n_elements_in_block}; the hidden units are cut into blocks of '
        f'n_elements_in_block, so pick one that divides d_ff.')


def _check_width(layer, x, d_model):
  if x.shape[-1] != d_model:
    raise ValueError(
        f'{layer.name}: input last dim {x.shape[-1]} does not match the '
        f'weights\' d_model {d_model} (input shape {tuple(x.shape)}); the '
        f'layer was initialized for width {d_model}.')


def _relu(x):
  return jnp.where(x <= 0, jnp.zeros_like(x), x)


class _RememberInReverse(base.Layer):
  """Keeps its input in its state; replays it when recomputed in reverse.

  On a normal run it returns its input (or nothing if `output=False`) and
  stores it in its state as `(x, {'running_second_time': ()})`. A reversible
  layer recomputing the forward pass for its gradient hands the state back
  with the key 'running_second_time_yes'; the layer then returns the stored
  value instead of its new input, so quantization choices made in the forward
  pass are not re-made (possibly differently) in the backward pass.

  Args:
    output: whether to return the (remembered) input.
  """

  def __init__(self, output=True):
    self._output = output
    super().__init__(name='_RememberInReverse', n_out=1 if output else 0)

  def forward(self, x):
    if _SECOND_RUN in self.state[1]:
      result = self.state[0]
    else:
      result = x
    self.state = (x, {'running_second_time': ()})
    return result if self._output else ()

  def init_weights_and_state(self, input_signature):
    if isinstance(input_signature, (list, tuple)):
      input_signature = input_signature[0]
    self.weights = ()
    self.state = (jnp.zeros(input_signature.shape, dtype=jnp.int32),
                  {'running_second_time': ()})


class _RecallQuantMaskInReverse(base.Layer):
  """Pairs x with a quant mask: -1s, or the remembered one in reverse.

  x -> (x, quant_mask). quant_mask is all -1 (the controller's "choose
  yourself") on a normal run, and the mask stored by `remember_layer` when
  that layer's state carries the reverse-recomputation marker.

  Args:
    remember_layer: the `_RememberInReverse` holding the forward mask.
    elements: mask width (number of blocks).
  """

  def __init__(self, remember_layer, elements):
    self._remember_layer = remember_layer
    self._elements = elements
    super().__init__(name='_RecallQuantMaskInReverse', n_in=1, n_out=2)

  def forward(self, x):
    # The remembering layer's state is the one of this call: the parent's
    # pure_fn sets the states of all sublayers before any of them runs.
    remembered = self._remember_layer.state
    if remembered and _SECOND_RUN in remembered[1]:
      return x, remembered[0]
    return x, -jnp.ones((x.shape[0], self._elements), dtype=jnp.int32)


class _SparseFFController(base.Layer):
  """Chooses one unit per block: (x, recalled_mask) -> quant_mask[, mask].

  Logits are x @ m1 @ m2 + mb, shaped (tokens, d_ff / n, n) for n =
  n_elements_in_block. quant_mask (int32, (tokens, d_ff / n)) is their
  argmax, with Gumbel noise scaled by `temperature` in 'train' mode; mask is
  the softmax over each block. In 'train' mode entries of recalled_mask
  other than -1 replace the choice.
  """

  def __init__(self, d_ff, n_elements_in_block, d_lowrank, temperature,
               use_bfloat16, mode, kernel_initializer, bias_initializer,
               also_return_nondiscrete_output):
    n_out = 2 if also_return_nondiscrete_output else 1
    super().__init__(name=f'_SparseFFController_{d_ff}', n_in=2, n_out=n_out)
    _check_blocks(self.name, d_ff, n_elements_in_block)
    self._use_bfloat16 = use_bfloat16
    self._d_ff = d_ff
    self._d_lowrank = d_lowrank
    self._temperature = temperature if mode == 'train' else 0.0
    self._mode = mode
    self._n_elements_in_block = n_elements_in_block
    self._kernel_initializer = kernel_initializer
    self._bias_initializer = bias_initializer
    self._d1 = d_ff // n_elements_in_block
    self._d2 = n_elements_in_block
    self._also_return_nondiscrete_output = also_return_nondiscrete_output

  def forward(self, x):
    x, recalled_quant_mask = x
    m1, m2, mb = self.weights
    _check_width(self, x, m1.shape[0])
    x = jnp.reshape(x, (-1, x.shape[-1]))
    mask_logits = jnp.einsum('bd,dl,lxy->bxy', x, m1, m2) + mb
    if self._also_return_nondiscrete_output:
      log_mask = _gumbel.log_softmax(mask_logits)
      mask = jnp.exp(log_mask)
      if self._temperature == 0.0:
        quant_mask = jnp.argmax(log_mask, axis=-1).astype(jnp.int32)
      else:
        quant_mask = _gumbel.gumbel_argmax(self.rng, log_mask,
                                           self._temperature)
    else:
      quant_mask = jnp.argmax(mask_logits, axis=-1).astype(jnp.int32)
    if self._mode == 'train':
      recalled = recalled_quant_mask.astype(jnp.int32)
      quant_mask = jnp.where(recalled == -1, quant_mask, recalled)
    if self._also_return_nondiscrete_output:
      return quant_mask, mask
    return quant_mask

  def init_weights_and_state(self, input_signature):
    d_model = input_signature[0].shape[-1]
    rng_m1, rng_m2, rng_mb = fastmath.random.split(self.rng, 3)
    m1 = self._kernel_initializer((d_model, self._d_lowrank), rng_m1)
    m2 = self._kernel_initializer((self._d_lowrank, self._d_ff), rng_m2)
    mb = self._bias_initializer((self._d_ff,), rng_mb)
    if self._use_bfloat16:
      m1, m2, mb = (w.astype(_dtypes.BFLOAT16) for w in (m1, m2, mb))
    # Trax stores m2 and mb already split into blocks.
    m2 = jnp.reshape(m2, (self._d_lowrank, self._d1, self._d2))
    mb = jnp.reshape(mb, (self._d1, self._d2))
    self.weights = (m1, m2, mb)


class _SparseFFMain(base.Layer):
  """The feed-forward part: (quant_mask[, mask], x) -> (quant_mask, y).

  Weights, in Trax's layout: w1 (d_model, d_ff / n, n), w2 (n, d_ff / n,
  d_model), b2 (d_model,). Hidden unit (block j, element e) reads
  w1[:, j, e] and writes w2[e, j, :].
  """

  def __init__(self, d_ff, n_elements_in_block, d_lowrank, quant_prob,
               use_bfloat16, big_weights_in_bfloat16, mode, kernel_initializer,
               bias_initializer, multiply_by_controller_output, kernel_scaling):
    n_in = 3 if mode == 'train' or multiply_by_controller_output else 2
    super().__init__(name=f'_SparseFFMain_{d_ff}', n_in=n_in, n_out=2)
    _check_blocks(self.name, d_ff, n_elements_in_block)
    self._mode = mode
    self._use_bfloat16 = use_bfloat16
    self._big_weights_in_bfloat16 = big_weights_in_bfloat16
    self._d_ff = d_ff
    self._d_lowrank = d_lowrank
    self._quant_prob = quant_prob
    self._n_elements_in_block = n_elements_in_block
    self._kernel_initializer = kernel_initializer
    self._bias_initializer = bias_initializer
    self._d1 = d_ff // n_elements_in_block
    self._d2 = n_elements_in_block
    self._multiply_by_controller_output = multiply_by_controller_output
    self._kernel_scaling = kernel_scaling

  def forward(self, x):
    if self._mode == 'train' or self._multiply_by_controller_output:
      quant_mask, mask, x = x
    else:
      (quant_mask, x), mask = x, None
    w1, w2, b2 = self.weights
    _check_width(self, x, w1.shape[0])
    x_shape = x.shape
    x = jnp.reshape(x, (-1, x_shape[-1]))
    if self._mode == 'train':
      res = self._train(quant_mask, mask, x, w1, w2, b2)
    elif self._mode == 'predict':
      res = self._predict(quant_mask, mask, x, w1, w2, b2)
    else:
      hard = core_extras.one_hot(quant_mask, self._d2)
      res = self._dense(x, hard, mask, w1, w2, b2)
    return quant_mask, jnp.reshape(res, x_shape)

  def _dense(self, x, block_mask, mult, w1, w2, b2):
    """All units computed, then masked: (tokens, d1, d2) hidden layer."""
    mid = jnp.einsum('bd,dxy->bxy', x, w1) * block_mask
    relu = _relu(mid)
    if mult is not None:
      relu = relu * mult
    return jnp.einsum('bxy,yxd->bd', relu, w2) + b2

  def _train(self, quant_mask, mask, x, w1, w2, b2):
    # Straight-through: the forward value is one-hot, the gradient flows
    # to the controller through the softmax mask.
    hard = fastmath.stop_gradient(core_extras.one_hot(quant_mask, self._d2))
    hard = hard + mask - fastmath.stop_gradient(mask)
    # A quant_prob fraction of steps use the one-hot mask, the rest the soft
    # one (one draw per call, for the whole batch), for stability.
    select = fastmath.random.uniform(self.rng, (), jnp.float32, 0.0, 1.0)
    use_hard = select < self._quant_prob
    block_mask = jnp.where(use_hard, hard, mask)
    mult = None
    if self._multiply_by_controller_output:
      # Soft-mask steps already scaled by the mask above; the gradient to it
      # already flows through the straight-through term.
      mult = fastmath.stop_gradient(
          jnp.where(use_hard, mask, jnp.ones_like(mask)))
    return self._dense(x, block_mask, mult, w1, w2, b2)

  def _predict(self, quant_mask, mask, x, w1, w2, b2):
    """Gathers only the chosen units' weights, as decoding would."""
    d_model = w1.shape[0]
    # Row j * d2 + e of the (d1 * d2, d_model) tables is unit (j, e).
    w1_rows = jnp.reshape(jnp.transpose(w1, (1, 2, 0)), (-1, d_model))
    w2_rows = jnp.reshape(jnp.transpose(w2, (1, 0, 2)), (-1, d_model))
    rows = (jnp.arange(self._d1, dtype=jnp.int32)[None, :] * self._d2 +
            quant_mask.astype(jnp.int32))  # (tokens, d1)
    w = jnp.take(w1_rows, rows, axis=0)  # (tokens, d1, d_model)
    relu = _relu(jnp.einsum('ai,aji->aj', x, w))
    if self._multiply_by_controller_output:
      # The chosen unit's probability (a one-hot sum: XLA cannot
      # differentiate tf.numpy's take_along_axis).
      hard = core_extras.one_hot(quant_mask, self._d2, dtype=mask.dtype)
      relu = relu * jnp.sum(mask * hard, axis=-1)
    v = jnp.take(w2_rows, rows, axis=0)
    return jnp.einsum('ai,aij->aj', relu, v) + b2

  def init_weights_and_state(self, input_signature):
    d_model = input_signature[-1].shape[-1]
    rng_w1, rng_w2, rng_b2 = fastmath.random.split(self.rng, 3)
    w1 = self._kernel_initializer((d_model, self._d_ff), rng_w1)
    w2 = self._kernel_initializer((self._d_ff, d_model), rng_w2)
    b2 = self._bias_initializer((d_model,), rng_b2)
    if self._use_bfloat16:
      b2 = b2.astype(_dtypes.BFLOAT16)
    if self._use_bfloat16 or self._big_weights_in_bfloat16:
      w1 = w1.astype(_dtypes.BFLOAT16)
      w2 = w2.astype(_dtypes.BFLOAT16)
    # Trax's layout (note the two different splits of d_ff).
    w1 = jnp.reshape(w1, (-1, self._d1, self._d2))
    w2 = jnp.reshape(w2, (self._d2, self._d1, -1))
    if self._kernel_scaling:
      # Keeps the output's variance independent of n_elements_in_block.
      w2 = w2 * (self._n_elements_in_block ** 0.5)
    self.weights = (w1, w2, b2)


def SparseFF(d_ff, n_elements_in_block=32, d_lowrank=64, temperature=0.1,
             quant_prob=0.3, use_bfloat16=False,
             big_weights_in_bfloat16=False, mode='train',
             kernel_initializer=init.GlorotUniformInitializer(),
             bias_initializer=init.RandomNormalInitializer(1e-6),
             dropout_rate=0.0, dropout_shared_axes=None, ff_chunk_size=0,
             multiply_by_controller_output=False, kernel_scaling=False):
  """Feed-forward block with one active hidden unit per block.

  Dense(d_ff) -> Relu -> Dense(d_model), where the d_ff hidden units are cut
  into blocks of `n_elements_in_block` and a low-rank controller picks one
  unit per block for each token. 'eval' computes all units and masks them;
  'predict' gathers only the chosen ones (same numbers). 'train' picks with
  Gumbel noise (`temperature`) and, on a `quant_prob` fraction of steps,
  uses the one-hot choice with a straight-through gradient, else the
  controller's softmax. Leading axes are folded into one batch axis.

  Args:
    d_ff: hidden width.
    n_elements_in_block: block size; one unit per block is active.
    d_lowrank: rank of the controller.
    temperature: Gumbel noise scale of the controller in 'train' mode.
    quant_prob: fraction of training steps using the one-hot choice.
    use_bfloat16: store all weights in bfloat16.
    big_weights_in_bfloat16: store the main w1, w2 in bfloat16.
    mode: 'train', 'eval' or 'predict'.
    kernel_initializer: initializer of the weight matrices.
    bias_initializer: initializer of the biases.
    dropout_rate: dropout on the output ('train' mode).
    dropout_shared_axes: axes sharing one dropout mask value.
    ff_chunk_size: if > 0, run on chunks of this many tokens.
    multiply_by_controller_output: scale each active unit by its softmax
      probability.
    kernel_scaling: scale w2 by sqrt(n_elements_in_block) at init.

  Returns:
    A layer mapping (..., d_model) to (..., d_model).

  Example:
    >>> layer = SparseFF(8, n_elements_in_block=4, d_lowrank=2, mode='eval')
    >>> x = jnp.ones((2, 3, 4), jnp.float32)
    >>> _ = layer.init(shapes.signature(x))
    >>> tuple(layer(x).shape)
    (2, 3, 4)
  """
  _check_blocks('SparseFF', d_ff, n_elements_in_block)
  also_return_nondiscrete_output = (mode == 'train' or
                                    multiply_by_controller_output)
  controller = _SparseFFController(
      d_ff=d_ff, n_elements_in_block=n_elements_in_block,
      d_lowrank=d_lowrank, temperature=temperature,
      use_bfloat16=use_bfloat16, mode=mode,
      kernel_initializer=kernel_initializer,
      bias_initializer=bias_initializer,
      also_return_nondiscrete_output=also_return_nondiscrete_output)
  main = [
      _SparseFFMain(
          d_ff=d_ff, n_elements_in_block=n_elements_in_block,
          d_lowrank=d_lowrank, quant_prob=quant_prob,
          use_bfloat16=use_bfloat16,
          big_weights_in_bfloat16=big_weights_in_bfloat16, mode=mode,
          kernel_initializer=kernel_initializer,
          bias_initializer=bias_initializer,
          multiply_by_controller_output=multiply_by_controller_output,
          kernel_scaling=kernel_scaling),  # quant_mask, y
      cb.Select([1, 0]),  # y, quant_mask
      core.Dropout(rate=dropout_rate, shared_axes=dropout_shared_axes,
                   mode=mode),
      cb.Select([1, 0]),  # quant_mask, y
  ]
  # The mask is remembered after chunking and recalled before it, so the
  # reverse pass reuses the forward pass's choices chunk for chunk.
  remembering = _RememberInReverse(output=False)
  recalling = _RecallQuantMaskInReverse(
      remember_layer=remembering, elements=d_ff // n_elements_in_block)
  return flow.BatchLeadingAxes(cb.Serial(
      recalling,  # x, recalled_mask
      flow.Chunk(chunk_size=ff_chunk_size, layer=cb.Serial(
          cb.Select((0, 1, 0)),  # x, recalled_mask, x
          controller,  # quant_mask, [mask,] x
          main,  # quant_mask, y
      )),
      remembering,  # y
  ))
