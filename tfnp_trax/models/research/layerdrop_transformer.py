"""Transformer language models that skip layers at random (LayerDrop).

After Fan, Grave & Joulin, "Reducing Transformer Depth on Demand with
Structured Dropout" (2019, arXiv:1909.11556). Each decoder block is wrapped
in a `tl.Cond` that runs it or passes its input through, depending on a
random number drawn per call (the same on every replica: `sync=True`).
Skipped blocks are exactly the identity. Apart from the skipping, the models
are `TransformerLM` followed by a LogSoftmax, and, as in Trax, wrapped in
shape assertions (`tl.assert_shape`).
"""

from tfnp_trax import layers as tl
# jnp is used by the docstring examples.
from tfnp_trax.fastmath import numpy as jnp  # pylint: disable=unused-import
from tfnp_trax.models import _transformer_blocks as blocks

__all__ = ['SkippingTransformerLM', 'EveryOtherLayerDropTransformerLM',
           'LayerDropTransformerLM', 'LargerThan']

# Layer constructors are CamelCase functions, as in Trax.
# pylint: disable=invalid-name


def LargerThan(val):
  """A layer returning `x > val`.

  Example:
    >>> bool(LargerThan(0.5)(jnp.asarray(0.7)))
    True
  """
  return tl.Fn('LargerThan', lambda x: x > val)


def _embedder(vocab_size, d_model, dropout, max_len, mode):
  return [
      tl.ShiftRight(mode=mode),
      tl.Embedding(vocab_size, d_model),
      tl.Dropout(rate=dropout, mode=mode),
      tl.PositionalEncoding(max_len=max_len, mode=mode),
  ]


def _block(d_model, d_ff, n_heads, dropout, mode, ff_activation, max_len):
  # Trax's TransformerLM block, with dropout masks shared along no axis.
  return tl.Serial(blocks.decoder_block(d_model, d_ff, n_heads, dropout, [],
                                        mode, ff_activation, max_len))


def _head(vocab_size):
  return [tl.LayerNorm(), tl.Dense(vocab_size), tl.LogSoftmax()]


def _check(model, d_model, n_heads, n_layers):
  if d_model % n_heads:
    raise ValueError(f'{model}: n_heads ({n_heads}) must divide d_model '
                     f'({d_model}).')
  if n_layers < 0:
    raise ValueError(f'{model}: n_layers must be >= 0, got {n_layers}.')


@tl.assert_shape('...s->...sv')
def SkippingTransformerLM(vocab_size, d_model=512, d_ff=2048, n_layers=6,
                          n_heads=8, dropout=0.1, max_len=2048, mode='train',
                          ff_activation=tl.Relu, skip_fraction=0.4):
  """A TransformerLM that, in training, runs only a random prefix of blocks.

  Each call draws n ~ Uniform[0, n_layers / skip_fraction) and runs block i
  only if n > i, so block i is skipped with probability
  `skip_fraction * i / n_layers` (later blocks more often). With
  `skip_fraction=0`, and in 'eval' and 'predict' mode, all blocks run.

  Example:
    >>> from tfnp_trax import shapes
    >>> model = SkippingTransformerLM(9, d_model=4, d_ff=8, n_layers=2,
    ...                               n_heads=2, max_len=8, mode='eval')
    >>> _ = model.init(shapes.ShapeDtype((2, 5), jnp.int32))

  Args:
    vocab_size: number of token ids.
    d_model: width of the activations.
    d_ff: width of the feed-forward hidden layer.
    n_layers: number of decoder blocks.
    n_heads: number of attention heads.
    dropout: dropout rate, also used for attention dropout.
    max_len: longest sequence (and 'predict'-mode decoding length).
    mode: 'train', 'eval' or 'predict'.
    ff_activation: activation layer constructor of the feed-forward part.
    skip_fraction: how much of the time to skip; see above.

  Returns:
    A layer mapping ids (batch, length) to log-probabilities.
  """
  _check('SkippingTransformerLM', d_model, n_heads, n_layers)

  @tl.assert_shape('...sd,->...sd,')
  def conditioned_block(layer_num):
    return tl.Serial(                 # vecs, n_keep
        tl.Select([1, 0, 1]),         # n_keep, vecs, n_keep
        tl.Cond(LargerThan(float(layer_num)),
                _block(d_model, d_ff, n_heads, dropout, mode, ff_activation,
                       max_len),
                tl.Serial()))         # vecs, n_keep

  if mode == 'train' and skip_fraction != 0.0:
    minimum_layers, maximum_layers = 0.0, float(n_layers) / skip_fraction
  else:
    minimum_layers = maximum_layers = float(n_layers)
  return tl.Serial(
      _embedder(vocab_size, d_model, dropout, max_len, mode),
      tl.RandomUniform(minimum_layers, maximum_layers, sync=True),
      tl.Swap(),                      # vecs, n_keep
      [conditioned_block(i) for i in range(n_layers)],
      tl.AssertShape('...sd,'),
      tl.Select([0], n_in=2),         # vecs
      tl.AssertShape('...sd'),
      _head(vocab_size),
  )


_SKIP_MODES = {  # Which layers a skip drops; layer 0 counts as even.
    'even': lambda num, n: num % 2 == 0,
    'odd': lambda num, n: num % 2 == 1,
    '1half': lambda num, n: num < n / 2,
    '2half': lambda num, n: num >= n / 2,
}


@tl.assert_shape('...s->...sv')
def EveryOtherLayerDropTransformerLM(vocab_size, d_model=512, d_ff=2048,
                                     n_layers=6, n_heads=8, dropout=0.1,
                                     max_len=2048, mode='train',
                                     ff_activation=tl.Relu, skip_mode='even',
                                     skip_fraction=0.5,
                                     eval_skip_fraction=0.0):
  """A TransformerLM that sometimes skips one fixed set of blocks.

  Each call draws u ~ Uniform[0, 1); the blocks `skip_mode` selects run
  only if u > skip_fraction (in 'train' mode) or u > eval_skip_fraction
  (otherwise); all other blocks always run.

  Example:
    >>> from tfnp_trax import shapes
    >>> model = EveryOtherLayerDropTransformerLM(
    ...     9, d_model=4, d_ff=8, n_layers=2, n_heads=2, max_len=8)
    >>> _ = model.init(shapes.ShapeDtype((2, 5), jnp.int32))

  Args:
    vocab_size: number of token ids.
    d_model: width of the activations.
    d_ff: width of the feed-forward hidden layer.
    n_layers: number of decoder blocks.
    n_heads: number of attention heads.
    dropout: dropout rate, also used for attention dropout.
    max_len: longest sequence (and 'predict'-mode decoding length).
    mode: 'train', 'eval' or 'predict'.
    ff_activation: activation layer constructor of the feed-forward part.
    skip_mode: the blocks that may be skipped: 'even', 'odd', '1half' (the
      first half) or '2half' (the second half).
    skip_fraction: probability of skipping them in 'train' mode.
    eval_skip_fraction: probability of skipping them in other modes.

  Returns:
    A layer mapping ids (batch, length) to log-probabilities.
  """
  _check('EveryOtherLayerDropTransformerLM', d_model, n_heads, n_layers)
  if skip_mode not in _SKIP_MODES:
    raise ValueError(f'EveryOtherLayerDropTransformerLM: skip_mode must be '
                     f'one of {sorted(_SKIP_MODES)}, got {skip_mode!r}.')
  if mode != 'train':
    skip_fraction = eval_skip_fraction
  skippable = _SKIP_MODES[skip_mode]

  @tl.assert_shape('...sd,->...sd,')
  def conditioned_block(layer_num):
    threshold = skip_fraction if skippable(layer_num, n_layers) else 0.0
    return tl.Serial(                 # vecs, u
        tl.Select([1, 0, 1]),         # u, vecs, u
        tl.Cond(LargerThan(threshold),
                _block(d_model, d_ff, n_heads, dropout, mode, ff_activation,
                       max_len)))     # vecs, u

  return tl.Serial(
      _embedder(vocab_size, d_model, dropout, max_len, mode),
      tl.RandomUniform(0., 1., sync=True),
      tl.Swap(),                      # vecs, u
      [conditioned_block(i) for i in range(n_layers)],
      tl.Select([0], n_in=2),         # vecs
      _head(vocab_size),
  )


def _per_layer(model, name, value, n_layers):
  """`value` as a list with one entry per layer."""
  if not isinstance(value, (list, tuple)):
    return [value] * n_layers
  if len(value) != n_layers:
    raise ValueError(f'{model}: {name} must have one entry per layer '
                     f'(n_layers={n_layers}), got {len(value)}.')
  return list(value)


@tl.assert_shape('...s->...sv')
def LayerDropTransformerLM(vocab_size, d_model=512, d_ff=2048, n_layers=6,
                           n_heads=8, dropout=0.1, max_len=2048,
                           mode='train', ff_activation=tl.Relu,
                           skip_fraction=0.4,
                           eval_skip_fraction='every_other'):
  """A TransformerLM whose blocks are each skipped independently at random.

  Block i draws its own u ~ Uniform[0, 1) per call and runs only if u
  exceeds its skip fraction: `skip_fraction[i]` in 'train' mode,
  `eval_skip_fraction[i]` otherwise.

  Example:
    >>> from tfnp_trax import shapes
    >>> model = LayerDropTransformerLM(9, d_model=4, d_ff=8, n_layers=2,
    ...                                n_heads=2, max_len=8)
    >>> _ = model.init(shapes.ShapeDtype((2, 5), jnp.int32))

  Args:
    vocab_size: number of token ids.
    d_model: width of the activations.
    d_ff: width of the feed-forward hidden layer.
    n_layers: number of decoder blocks.
    n_heads: number of attention heads.
    dropout: dropout rate, also used for attention dropout.
    max_len: longest sequence (and 'predict'-mode decoding length).
    mode: 'train', 'eval' or 'predict'.
    ff_activation: activation layer constructor of the feed-forward part.
    skip_fraction: training skip probability, one number or one per layer.
    eval_skip_fraction: skip probability outside training: one number, one
      per layer, 'same' (as in training) or 'every_other' (the paper's
      pruning: with skip fraction p, every round(1/p)-th layer, starting
      with layer 0, is always skipped and the others always run).

  Returns:
    A layer mapping ids (batch, length) to log-probabilities.
  """
  name = 'LayerDropTransformerLM'
  _check(name, d_model, n_heads, n_layers)
  skip_fraction = _per_layer(name, 'skip_fraction', skip_fraction, n_layers)
  if eval_skip_fraction == 'every_other':
    # int(1 / p) as in Trax: p = 0.4 skips layers 0, 2, 4, ...
    eval_skip_fraction = [
        (1.0 if i % int(1. / p) == 0 else 0.0) if p != 0 else 0.0
        for i, p in enumerate(skip_fraction)]
  elif eval_skip_fraction == 'same':
    eval_skip_fraction = skip_fraction
  eval_skip_fraction = _per_layer(name, 'eval_skip_fraction',
                                  eval_skip_fraction, n_layers)
  fractions = skip_fraction if mode == 'train' else eval_skip_fraction

  @tl.assert_shape('...sd->...sd')
  def conditioned_block(layer_num):
    return tl.Serial(                 # vecs
        tl.RandomUniform(0., 1., sync=True),  # u, vecs
        tl.Cond(LargerThan(fractions[layer_num]),
                _block(d_model, d_ff, n_heads, dropout, mode, ff_activation,
                       max_len),
                tl.Serial()))         # vecs

  return tl.Serial(
      _embedder(vocab_size, d_model, dropout, max_len, mode),
      [conditioned_block(i) for i in range(n_layers)],
      _head(vocab_size),
  )
