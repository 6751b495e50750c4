"""ResNet-50 and Wide ResNet image classifiers (NHWC inputs).

The normalization and the non-linearity are arguments, so the Filter
Response Normalization variant is one call:
`Resnet50(norm=tl.FilterResponseNorm, non_linearity=tl.ThresholdedLinearUnit)`.
"""

from tfnp_trax import layers as tl

__all__ = ['ConvBlock', 'IdentityBlock', 'Resnet50', 'WideResnetBlock',
           'WideResnetGroup', 'WideResnet']


def ConvBlock(kernel_size, filters, strides, norm, non_linearity,  # pylint: disable=invalid-name
              mode='train'):
  """Bottleneck block whose shortcut is a strided 1x1 convolution.

  Args:
    kernel_size: size of the middle (square) convolution.
    filters: (filters1, filters2, filters3) of the three convolutions.
    strides: strides of the first convolution and of the shortcut.
    norm: normalization layer constructor, called as `norm(mode=mode)`.
    non_linearity: activation layer constructor.
    mode: 'train', 'eval' or 'predict'.

  Returns:
    A list of layers.
  """
  filters1, filters2, filters3 = filters
  main = [
      tl.Conv(filters1, (1, 1), strides), norm(mode=mode), non_linearity(),
      tl.Conv(filters2, (kernel_size, kernel_size), padding='SAME'),
      norm(mode=mode), non_linearity(),
      tl.Conv(filters3, (1, 1)), norm(mode=mode),
  ]
  shortcut = [tl.Conv(filters3, (1, 1), strides), norm(mode=mode)]
  return [tl.Residual(main, shortcut=shortcut), non_linearity()]


def IdentityBlock(kernel_size, filters, norm, non_linearity, mode='train'):  # pylint: disable=invalid-name
  """Bottleneck block with an identity shortcut; see `ConvBlock` for args."""
  filters1, filters2, filters3 = filters
  main = [
      tl.Conv(filters1, (1, 1)), norm(mode=mode), non_linearity(),
      tl.Conv(filters2, (kernel_size, kernel_size), padding='SAME'),
      norm(mode=mode), non_linearity(),
      tl.Conv(filters3, (1, 1)), norm(mode=mode),
  ]
  return [tl.Residual(main), non_linearity()]


def Resnet50(d_hidden=64, n_output_classes=1001, mode='train',  # pylint: disable=invalid-name
             norm=tl.BatchNorm, non_linearity=tl.Relu):
  """ResNet-50 (https://arxiv.org/abs/1512.03385).

  Four stages of 3, 4, 6 and 3 bottleneck blocks; stage i has widths
  (d, d, 4d) * 2^i with d = d_hidden. The final 7x7 average pooling expects
  inputs of about 200x200 or more (224x224 gives a 7x7 final map).

  Example:
    >>> model = Resnet50(norm=tl.FilterResponseNorm,
    ...                  non_linearity=tl.ThresholdedLinearUnit)
    >>> model.name  # An unnamed Serial, as in Trax.
    'Serial'

  Args:
    d_hidden: width of the first hidden layer (later ones are multiples).
    n_output_classes: number of classes scored.
    mode: 'train', 'eval' or 'predict'.
    norm: normalization layer constructor, e.g. `tl.BatchNorm` or
      `tl.FilterResponseNorm`.
    non_linearity: activation constructor: `tl.Relu` with BatchNorm,
      `tl.ThresholdedLinearUnit` with FilterResponseNorm.

  Returns:
    A layer mapping images (batch, height, width, channels) to logits
    (batch, n_output_classes).
  """
  def stage_filters(multiplier):
    return [multiplier * d for d in (d_hidden, d_hidden, 4 * d_hidden)]

  def conv_block(multiplier=1, strides=(2, 2)):
    return ConvBlock(3, stage_filters(multiplier), strides, norm,
                     non_linearity, mode)

  def identity_blocks(multiplier, n):
    return [IdentityBlock(3, stage_filters(multiplier), norm, non_linearity,
                          mode) for _ in range(n)]

  return tl.Serial(
      tl.ToFloat(),
      tl.Conv(d_hidden, (7, 7), (2, 2), 'SAME'),
      norm(mode=mode),
      non_linearity(),
      tl.MaxPool(pool_size=(3, 3), strides=(2, 2)),
      conv_block(strides=(1, 1)), identity_blocks(1, 2),
      conv_block(2), identity_blocks(2, 3),
      conv_block(4), identity_blocks(4, 5),
      conv_block(8), identity_blocks(8, 2),
      tl.AvgPool(pool_size=(7, 7)),
      tl.Flatten(),
      tl.Dense(n_output_classes))


def _norm_layer(norm, bn_momentum, mode):
  # Only BatchNorm has a momentum; other norms are built as norm(mode=mode).
  if norm is tl.BatchNorm:
    return tl.BatchNorm(momentum=bn_momentum, mode=mode)
  return norm(mode=mode)


def WideResnetBlock(channels, strides=(1, 1), bn_momentum=0.9, mode='train',  # pylint: disable=invalid-name
                    norm=tl.BatchNorm, non_linearity=tl.Relu):
  """Pre-activation block: (norm, non-linearity, 3x3 conv) twice.

  `norm` and `non_linearity` extend Trax's signature; their defaults give
  Trax's block.
  """
  return [
      _norm_layer(norm, bn_momentum, mode), non_linearity(),
      tl.Conv(channels, (3, 3), strides, padding='SAME'),
      _norm_layer(norm, bn_momentum, mode), non_linearity(),
      tl.Conv(channels, (3, 3), padding='SAME'),
  ]


def WideResnetGroup(n, channels, strides=(1, 1), bn_momentum=0.9,  # pylint: disable=invalid-name
                    mode='train', norm=tl.BatchNorm, non_linearity=tl.Relu):
  """A group of `n` blocks: one with a 3x3 conv shortcut, then the rest.

  As in Trax, the remaining n - 1 blocks share one residual connection.
  With n = 1 that residual is empty, so it adds its input to itself and
  doubles the activations: Trax does this, and keeping it makes outputs and
  weight trees equal to Trax's.
  """
  def block(block_strides):
    return WideResnetBlock(channels, block_strides, bn_momentum=bn_momentum,
                           mode=mode, norm=norm, non_linearity=non_linearity)
  shortcut = [tl.Conv(channels, (3, 3), strides, padding='SAME')]
  return [
      tl.Residual(block(strides), shortcut=shortcut),
      tl.Residual([block((1, 1)) for _ in range(n - 1)]),
  ]


def WideResnet(n_blocks=3, widen_factor=1, n_output_classes=10,  # pylint: disable=invalid-name
               bn_momentum=0.9, mode='train', norm=tl.BatchNorm,
               non_linearity=tl.Relu):
  """Wide ResNet (https://arxiv.org/abs/1605.07146) for 32x32 images.

  Example:
    >>> from tfnp_trax import shapes
    >>> from tfnp_trax.fastmath import numpy as jnp
    >>> model = WideResnet(n_blocks=1, n_output_classes=4)
    >>> _ = model.init(shapes.ShapeDtype((1, 32, 32, 3)))
    >>> tuple(model(jnp.zeros((1, 32, 32, 3), dtype=jnp.float32)).shape)
    (1, 4)

  Args:
    n_blocks: blocks per group; the network has 6 * n_blocks + 4 layers.
    widen_factor: width multiplier of every group (1 is a plain ResNet).
    n_output_classes: number of classes scored.
    bn_momentum: BatchNorm momentum.
    mode: 'train', 'eval' or 'predict'.
    norm: normalization constructor (an extension of Trax's signature).
    non_linearity: activation constructor (an extension of Trax's signature).

  Returns:
    A layer mapping images (batch, 32, 32, channels) to logits
    (batch, n_output_classes).
  """
  if n_blocks < 1:
    raise ValueError(f'WideResnet: n_blocks must be at least 1, got '
                     f'{n_blocks}.')
  kwargs = dict(bn_momentum=bn_momentum, mode=mode, norm=norm,
                non_linearity=non_linearity)
  return tl.Serial(
      tl.ToFloat(),
      tl.Conv(16, (3, 3), padding='SAME'),
      WideResnetGroup(n_blocks, 16 * widen_factor, **kwargs),
      WideResnetGroup(n_blocks, 32 * widen_factor, (2, 2), **kwargs),
      WideResnetGroup(n_blocks, 64 * widen_factor, (2, 2), **kwargs),
      _norm_layer(norm, bn_momentum, mode),
      non_linearity(),
      tl.AvgPool(pool_size=(8, 8)),
      tl.Flatten(),
      tl.Dense(n_output_classes))
