"""BERT (Devlin et al., 2018, https://arxiv.org/abs/1810.04805), as in Trax.

`BERT` maps `(token_ids, segment_ids, example_idx)` to
`(pooled, sequence)` activations: token, segment and learned position
embeddings, a stack of post-norm Transformer encoder blocks (biased
multi-head self-attention masking id-0 padding, then a GELU feed-forward
part) and a tanh pooler on the first position. The third input is ignored
(Trax's data pipelines pass an example index). The default sizes are those
of bert-base-uncased, and the weights are laid out as Trax lays them out,
so Trax weight files load unchanged.

Heads for fine-tuning (`BERTClassifierHead`, `BERTRegressionHead`) and
pre-training (`BERTMLMHead`, `BERTPretrainingHead`, `BERTPretrainingLoss`)
take BERT's two outputs. `PretrainedBERT` loads weights from an original
TensorFlow BERT checkpoint (see `_bert_checkpoint`).
"""

import os

from tfnp_trax import layers as tl
from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.models.research import _bert_checkpoint

__all__ = ['AddBias', 'BERTClassifierHead', 'BERTRegressionHead',
           'BERTMLMHead', 'BERTPretrainingLoss', 'BERTPretrainingHead',
           'BERT', 'PretrainedBERT']

# Layer constructors are CamelCase functions, as in Trax.
# pylint: disable=invalid-name

# BERT's LayerNorm epsilon (the TensorFlow original's), not Trax's 1e-6.
_LAYER_NORM_EPS = 1e-12


class AddBias(tl.Layer):
  """Adds a learned bias vector over the last axis (zeros at init).

  Example:
    >>> from tfnp_trax import shapes
    >>> layer = AddBias()
    >>> _ = layer.init(shapes.ShapeDtype((2, 3), jnp.float32))
    >>> layer.weights.shape
    (3,)
  """

  def forward(self, inputs):
    return inputs + self.weights

  def init_weights_and_state(self, input_signature):
    # float32 whatever the input dtype, as Trax's (JAX) np.zeros gives.
    self.weights = jnp.zeros(input_signature.shape[-1], dtype=jnp.float32)


def _head_dense(n_units):
  return tl.Dense(n_units,
                  kernel_initializer=tl.RandomNormalInitializer(0.02),
                  bias_initializer=tl.RandomNormalInitializer(1e-6))


def BERTClassifierHead(n_classes):
  """`(pooled, sequence) -> logits (batch, n_classes)` from the pooled output.

  Example:
    >>> from tfnp_trax import shapes
    >>> head = BERTClassifierHead(3)
    >>> pooled, sequence = jnp.ones((2, 8)), jnp.ones((2, 5, 8))
    >>> _ = head.init(shapes.signature((pooled, sequence)))
    >>> tuple(head((pooled, sequence)).shape)
    (2, 3)

  Args:
    n_classes: number of classes.

  Returns:
    A layer with n_in=2, n_out=1.
  """
  return tl.Serial([tl.Select([0], n_in=2), _head_dense(n_classes)])


def BERTRegressionHead():
  """`(pooled, sequence) -> predictions (batch,)` from the pooled output.

  Returns:
    A layer with n_in=2, n_out=1.
  """
  return tl.Serial([
      tl.Select([0], n_in=2),
      _head_dense(1),
      tl.Fn('RemoveAxis', lambda x: jnp.squeeze(x, axis=1)),
  ])


def BERTMLMHead(vocab_size=30522):
  """`(pooled, sequence) -> logits (batch, length, vocab_size)`.

  The masked-language-model head of pre-training: a Dense layer over the
  sequence output.

  Args:
    vocab_size: number of token ids.

  Returns:
    A layer with n_in=2, n_out=1.
  """
  return tl.Serial([tl.Select([1], n_in=2), _head_dense(vocab_size)])


def BERTPretrainingLoss():
  """Next-sentence plus masked-LM loss: a sum of two weighted cross-entropies.

  Inputs, in order: next-sentence logits, MLM logits, next-sentence
  targets, next-sentence weights, MLM targets, MLM weights.

  Returns:
    A layer with n_in=6, n_out=1.
  """
  nsp_loss = [tl.Select([0, 2, 3], n_in=6), tl.WeightedCategoryCrossEntropy()]
  mlm_loss = [tl.Select([1, 4, 5], n_in=6), tl.WeightedCategoryCrossEntropy()]
  return tl.Serial(tl.Branch(nsp_loss, mlm_loss), tl.Add())


def BERTPretrainingHead(n_classes):
  """Next-sentence (`n_classes`) and masked-LM heads side by side.

  As in Trax 1.4.1, the result is a one-element tuple holding the Branch
  layer (Trax's code has a trailing comma); `tl.Serial` and `BERT(head=...)`
  accept it as a list of layers.

  Args:
    n_classes: number of next-sentence classes.

  Returns:
    `(Branch,)`, the Branch having n_in=2, n_out=2.
  """
  return tl.Branch(BERTClassifierHead(n_classes), BERTMLMHead()),


def _check_segments(where, tokens, segments):
  tok_shape, seg_shape = tuple(tokens.shape), tuple(segments.shape)
  if tok_shape != seg_shape:
    raise ValueError(
        f'{where}: segment ids (input 2) must have the shape of the token '
        f'ids (input 1), {tok_shape}, but have shape {seg_shape}. Pass '
        f'(token_ids, segment_ids, example_idx) with one segment id per '
        f'token, e.g. zeros_like(token_ids) for single-segment inputs.')


def _embeddings(d_model, vocab_size, max_len, type_vocab_size, mode):
  """`(tokens, segments, idx) -> (vectors, mask)`; mask (batch, length)."""
  return [
      tl.Select([0, 1, 0], n_in=3),  # The example index is not used.
      tl.Parallel(tl.Embedding(vocab_size, d_model),
                  tl.Embedding(type_vocab_size, d_model),
                  [tl.PaddingMask(),
                   tl.Fn('Squeeze', lambda x: jnp.squeeze(x, (1, 2)))]),
      tl.Add(),
      tl.PositionalEncoding(max_len, mode=mode),
      tl.LayerNorm(epsilon=_LAYER_NORM_EPS),
  ]


def _encoder_block(d_model, n_heads, d_ff, mode):
  """`(vectors, mask) -> (vectors, mask)`: post-norm attention and FF."""
  d_head = d_model // n_heads
  attention = tl.SelfAttention(n_heads=n_heads, d_qk=d_head, d_v=d_head,
                               bias=True, masked=True, mode=mode)
  return [
      tl.Select([0, 1, 1]),  # The block uses the mask and passes it on.
      tl.Residual(attention, AddBias()),
      tl.LayerNorm(epsilon=_LAYER_NORM_EPS),
      tl.Residual(tl.Dense(d_ff), tl.Gelu(), tl.Dense(d_model)),
      tl.LayerNorm(epsilon=_LAYER_NORM_EPS),
  ]


def BERT(d_model=768, vocab_size=30522, max_len=512, type_vocab_size=2,
         n_heads=12, d_ff=3072, n_layers=12, head=None, init_checkpoint=None,
         mode='eval'):
  """BERT: `(token_ids, segment_ids, idx) -> (pooled, sequence)` or head's.

  Token id 0 is padding: masked out of attention. `segment_ids` must have
  the shape of `token_ids`; `idx` (one per example) is not used.

  Example:
    >>> from tfnp_trax import shapes
    >>> model = BERT(d_model=8, vocab_size=10, max_len=6, n_heads=2,
    ...              d_ff=16, n_layers=1)
    >>> ids = jnp.array([[2, 3, 0]], jnp.int32)
    >>> _ = model.init(shapes.signature((ids, ids * 0, jnp.zeros(1))))
    >>> pooled, sequence = model((ids, ids * 0, jnp.zeros(1)))
    >>> tuple(pooled.shape), tuple(sequence.shape)
    ((1, 8), (1, 3, 8))

  Args:
    d_model: width of the activations and embeddings.
    vocab_size: number of token ids.
    max_len: longest sequence (size of the learned position embedding).
    type_vocab_size: number of segment ids.
    n_heads: number of attention heads (must divide d_model).
    d_ff: width of the feed-forward hidden layers.
    n_layers: number of encoder blocks.
    head: None, or a no-argument constructor of a head taking
      `(pooled, sequence)` (e.g. `functools.partial(BERTClassifierHead, 2)`).
    init_checkpoint: a TensorFlow BERT checkpoint (a path containing a
      path separator, or a model name such as 'bert-base-uncased') whose
      weights `init` loads; used only in 'train' mode, as in Trax.
    mode: 'train', 'eval' or 'predict'.

  Returns:
    A layer with n_in=3 and n_out=2 (n_out of `head` with a head).

  Raises:
    ValueError: if n_heads does not divide d_model.
  """
  if d_model % n_heads:
    raise ValueError(f'BERT: n_heads ({n_heads}) must divide d_model '
                     f'({d_model}); e.g. d_model=768 with n_heads=12.')
  encoder = []
  for _ in range(n_layers):
    encoder += _encoder_block(d_model, n_heads, d_ff, mode)
  encoder.append(tl.Select([0], n_in=2))  # Drop the mask.
  pooler = [
      # Trax names this Fn '' (it prints as Fn_out2).
      tl.Fn('', lambda x: (x[:, 0, :], x), n_out=2),
      tl.Dense(d_model),
      tl.Tanh(),
  ]
  # As in Trax, the checkpoint is only loaded for training.
  init_checkpoint = init_checkpoint if mode == 'train' else None
  bert = PretrainedBERT(
      _embeddings(d_model, vocab_size, max_len, type_vocab_size, mode) +
      encoder + pooler, init_checkpoint=init_checkpoint)
  if head is not None:
    bert = tl.Serial(bert, head())
  return bert


class PretrainedBERT(tl.Serial):
  """BERT's layers in a Serial whose `init` can load a TF BERT checkpoint.

  `init_checkpoint` is None (initialize from scratch), a path (it contains
  `os.path.sep`; the checkpoint prefix, e.g. `.../bert_model.ckpt`), or a
  model name from `_bert_checkpoint.MODEL_LINKS`, fetched into
  `~/trax/<name>` on first use. Any number of layers and heads loads (Trax
  1.4.1 assumes bert-base's 12 layers of 64-wide heads). The checkpoint is
  read in TensorFlow's format without TensorFlow (see `_bert_tf_bundle`).

  Calls check that the segment ids have the token ids' shape: a (batch, 1)
  segment tensor would otherwise broadcast silently.
  """

  def __init__(self, *sublayers, init_checkpoint=None):
    super().__init__(*sublayers)
    if init_checkpoint is None or os.path.sep in init_checkpoint:
      self.init_checkpoint = init_checkpoint
    else:
      self.init_checkpoint = os.path.join(
          *self.download_model(init_checkpoint))

  @classmethod
  def download_model(cls, model_name):
    """Returns `(model_dir, checkpoint_prefix)` of a known model name."""
    return _bert_checkpoint.download_model(model_name)

  def forward(self, xs):
    _check_segments('BERT', xs[0], xs[1])
    return super().forward(xs)

  def init_weights_and_state(self, input_signature):
    _check_segments('BERT', input_signature[0], input_signature[1])
    super().init_weights_and_state(input_signature)
    if self.init_checkpoint is None:
      return
    self.weights = _bert_checkpoint.load_weights(self.init_checkpoint,
                                                 self.weights)

  def _settable_attrs(self):
    # Trax lets callers set the checkpoint after construction.
    return (*super()._settable_attrs(), 'init_checkpoint')

