"""The conformance registry: every layer and model, with an input signature.

Each `Entry` says how to build a layer and what to feed it. The shared tests
in `conformance_test.py` run every entry through the same checks (eager vs
compiled, SavedModel, Keras, replicas, dtypes). To cover a new layer, add one
`_add(...)` line below; flags say which checks do not apply and why.
"""

import dataclasses
from typing import Callable, FrozenSet, Tuple

import numpy as np
import tensorflow as tf

from tfnp_trax import fastmath
from tfnp_trax import layers as tl
from tfnp_trax import models
from tfnp_trax import shapes
from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.models import resnet
from tfnp_trax.rl import distributions

from tests.conformance import registry_research

__all__ = ['Entry', 'ENTRIES', 'NOT_COVERED', 'entry_names', 'get', 'build',
           'make_inputs', 'public_constructors']


@dataclasses.dataclass(frozen=True)
class Entry:
  """One registered layer.

  Attributes:
    name: unique id used in test names.
    make_layer: builds a fresh, uninitialized layer.
    input_signature: ShapeDtype, or a tuple of them for several inputs.
    tolerance: absolute and relative tolerance of the output comparisons.
    has_state: the layer updates its state when run (e.g. BatchNorm).
    stochastic: outputs depend on the rng (compiled XLA random streams
      differ from eager ones, so those two are not compared).
    follows_dtype: float outputs take the float input's dtype (bfloat16 in,
      bfloat16 out).
    int_high: integer inputs are drawn from [0, int_high).
    positive: float inputs are drawn positive (e.g. for Log).
    replica_sum: the output sums over the batches of all replicas, so with
      every replica given the same batch it is n_replicas times the
      single-device value.
    covers: public constructors (of `tl` or `models`) the entry exercises;
      by default the parts of `name` that are such constructors.
    skip: names of checks that do not apply ('xla', 'keras', ...).
  """
  name: str
  make_layer: Callable[[], tl.Layer]
  input_signature: object
  tolerance: float = 1e-5
  has_state: bool = False
  stochastic: bool = False
  follows_dtype: bool = True
  int_high: int = 8
  positive: bool = False
  replica_sum: bool = False
  covers: Tuple[str, ...] = ()
  skip: FrozenSet[str] = frozenset()


ENTRIES = []

# Public constructors deliberately not registered, with the reason.
NOT_COVERED = {
    'Resnet50': 'its final 7x7 pooling needs inputs of about 200x200, too '
                'slow here; ConvBlock and IdentityBlock are registered',
    'FlattenList': 'it flattens nested Python lists on the stack, which no '
                   'tensor input signature describes',
}


def public_constructors():
  """The names of every public layer and model constructor."""
  names = {n for n in tl.__all__ if n[0].isupper() and n.upper() != n}
  names -= {'Layer', 'PureLayer', 'LayerError'}  # The contract itself.
  # Initializers are not layers.
  names = {n for n in names if 'Initializer' not in n}
  names -= {'AtariConvInit'}
  return sorted(names | set(models.__all__))


def _add(name, make_layer, input_signature, covers=(), **flags):
  if 'skip' in flags:
    flags['skip'] = frozenset(flags['skip'])
  public = set(public_constructors())
  covers = tuple(covers) + tuple(p for p in name.split('_') if p in public)
  ENTRIES.append(Entry(name, make_layer, input_signature, covers=covers,
                       **flags))


def _f(*shape):
  return shapes.ShapeDtype(shape, np.float32)


def _i(*shape):
  return shapes.ShapeDtype(shape, np.int32)


def _b(*shape):
  return shapes.ShapeDtype(shape, np.bool_)


# -- Activations -------------------------------------------------------------
for _act in ['Relu', 'ParametricRelu', 'LeakyRelu', 'Elu', 'Selu', 'Gelu',
             'FastGelu', 'Sigmoid', 'Tanh', 'HardSigmoid', 'HardTanh',
             'Softplus', 'Exp', 'Swish', 'Glu', 'ThresholdedLinearUnit']:
  _add(_act, getattr(tl, _act), _f(2, 3, 4))
_add('Log', tl.Log, _f(2, 3, 4), positive=True)

# -- Core ----------------------------------------------------------------------
_add('Dense', lambda: tl.Dense(5), _f(2, 3, 4))
_add('Dense_no_bias', lambda: tl.Dense(5, use_bias=False), _f(2, 4))
_add('Embedding', lambda: tl.Embedding(8, 4), _i(2, 5), follows_dtype=False)
_add('Dropout_eval', lambda: tl.Dropout(0.5, mode='eval'), _f(2, 6))
_add('Dropout_train', lambda: tl.Dropout(0.5, mode='train'), _f(2, 6),
     stochastic=True)
_add('Flatten', tl.Flatten, _f(2, 3, 4))
_add('LogSoftmax', tl.LogSoftmax, _f(2, 5))
_add('Softmax', tl.Softmax, _f(2, 5))
_add('LogSumExp', tl.LogSumExp, _f(2, 5))
_add('Mean', tl.Mean, _f(2, 5))
_add('Sum', lambda: tl.Sum(axis=1), _f(2, 5))
_add('Min', tl.Min, _f(2, 5))
_add('Max', tl.Max, _f(2, 5))
_add('ArgMax', tl.ArgMax, _f(2, 5), follows_dtype=False)  # int32 indices.
_add('Negate', tl.Negate, _f(2, 5))
_add('StopGradient', tl.StopGradient, _f(2, 5))
_add('ToFloat', tl.ToFloat, _i(2, 5), follows_dtype=False)
# Layers without inputs, behind a Drop so they take (and ignore) one.
_add('Weights', lambda: tl.Serial(
    tl.Drop(), tl.Weights(tl.RandomNormalInitializer(), shape=(3,))),
     _f(2, 5), follows_dtype=False, covers=('Drop',))
_add('RandomUniform', lambda: tl.Serial(
    tl.Drop(), tl.RandomUniform(shape=(2, 3))), _f(2, 5),
     stochastic=True, follows_dtype=False)
_add('LocallyConnected1d', lambda: tl.LocallyConnected1d(3, 3), _f(2, 6, 2))

# -- Normalization ----------------------------------------------------------
_add('LayerNorm', tl.LayerNorm, _f(2, 3, 4))
_add('BatchNorm_train', lambda: tl.BatchNorm(axis=(0,), momentum=0.9),
     _f(4, 3), has_state=True)
_add('BatchNorm_eval', lambda: tl.BatchNorm(axis=(0, 1, 2), mode='eval'),
     _f(2, 3, 3, 2))
_add('FilterResponseNorm', tl.FilterResponseNorm, _f(2, 3, 3, 2))

# -- Convolution and pooling ------------------------------------------------
_add('Conv', lambda: tl.Conv(3, (2, 2), padding='SAME'), _f(2, 5, 5, 2))
_add('Conv1d', lambda: tl.Conv1d(3, 2), _f(2, 6, 2))
_add('CausalConv', lambda: tl.CausalConv(3, 2), _f(2, 6, 2))
_add('CausalDepthwiseConv', tl.CausalDepthwiseConv, _f(2, 6, 2))
_add('ConvTranspose', lambda: tl.ConvTranspose(3, (2, 2), strides=(2, 2)),
     _f(2, 3, 3, 2))
_add('MaxPool', tl.MaxPool, _f(2, 4, 4, 2))
_add('AvgPool', tl.AvgPool, _f(2, 4, 4, 2))
_add('SumPool', tl.SumPool, _f(2, 4, 4, 2))

# -- Attention ----------------------------------------------------------------
_add('Attention', lambda: tl.Attention(8, n_heads=2, mode='eval'),
     (_f(2, 4, 8), _b(2, 1, 1, 4)))
_add('AttentionQKV', lambda: tl.AttentionQKV(4, n_heads=2, mode='eval'),
     (_f(2, 3, 4), _f(2, 5, 4), _f(2, 5, 4), _b(2, 1, 1, 5)),
     covers=('PureAttention',))
# Efficient attention (layers/research). The hashing draws its rotations
# from the layer's rng, and eval mode has no dropout, so eager and XLA agree.
_add('SelfAttention',
     lambda: tl.SelfAttention(n_heads=2, d_qk=4, d_v=4, causal=True,
                              chunk_len=2, mode='eval'),
     _f(2, 4, 8), covers=('EfficientAttentionBase',), tolerance=1e-4)
_add('LSHSelfAttention',
     lambda: tl.LSHSelfAttention(n_heads=2, d_qk=4, d_v=4, causal=True,
                                 chunk_len=2, n_buckets=2, n_hashes=2,
                                 mode='eval'),
     _f(2, 4, 8), tolerance=1e-4)
_add('EncDecAttention',
     lambda: tl.EncDecAttention(n_heads=2, d_qk=4, d_v=4, masked=False,
                                mode='eval'),
     (_f(2, 4, 8), _f(2, 6, 8)), tolerance=1e-4)
_add('PureLSHSelfAttention',
     lambda: tl.PureLSHSelfAttention(n_heads=2, causal=True, chunk_len=2,
                                     n_buckets=2, mode='eval'),
     (_f(4, 4, 4), _f(4, 4, 4)), tolerance=1e-4)
_add('PureLSHSelfAttentionWrapper',
     lambda: tl.PureLSHSelfAttentionWrapper(n_heads=2, d_qk=4, d_v=4,
                                            causal=True, chunk_len=2,
                                            n_buckets=2, mode='eval'),
     _f(2, 4, 8), tolerance=1e-4)
_add('MixedLSHSelfAttention',
     lambda: tl.MixedLSHSelfAttention(n_heads=2, causal=True, chunk_len=2,
                                      n_buckets=2, std_length=2, mode='eval'),
     (_f(4, 4, 4), _f(4, 4, 4)), tolerance=1e-4)
# Research position encodings (layers/research), in eval mode: no random
# offsets or dropout, so eager and XLA agree.
# Axial adds its float32 embeddings without a cast (bfloat16 in, float32
# out), as Trax does.
_add('AxialPositionalEncoding',
     lambda: tl.AxialPositionalEncoding(shape=(2, 3), d_embs=(4, 4),
                                        mode='eval'),
     _f(2, 6, 8), follows_dtype=False)
_add('SinCosPositionalEncoding',
     lambda: tl.SinCosPositionalEncoding(mode='eval'), _f(2, 6, 8))
# These three add float32 encodings, so bfloat16 inputs give float32, as
# JAX's promotion does in Trax.
_add('FixedBasePositionalEncoding',
     lambda: tl.FixedBasePositionalEncoding(bases=(3, 5), n_digits=2,
                                            mode='eval'),
     _f(2, 6, 8), follows_dtype=False)
# Its affine transform is drawn from the rng in every mode, as in Trax.
_add('InfinitePositionalEncoding',
     lambda: tl.InfinitePositionalEncoding(mode='eval'), _f(2, 6, 8),
     stochastic=True, follows_dtype=False)
_add('TimeBinPositionalEncoding',
     lambda: tl.TimeBinPositionalEncoding(time_bin_length=2, mode='eval'),
     _f(2, 6, 8), follows_dtype=False)
# Reversible layers: a RevNet block and the stack moves around it.
_add('ReversibleSerial_ReversibleHalfResidual_ReversibleSwap',
     lambda: tl.ReversibleSerial(
         tl.ReversibleHalfResidual(tl.Dense(4)), tl.ReversibleSwap(),
         tl.ReversibleHalfResidual(tl.Dense(4)), tl.ReversibleSwap()),
     (_f(2, 4), _f(2, 4)), covers=('ReversibleLayer', 'ReversibleSelect'))
_add('ReversibleConcatenatePair', tl.ReversibleConcatenatePair,
     (_f(2, 3), _f(2, 3)))
_add('ReversibleReshape',
     lambda: tl.ReversibleReshape((2, 6), (2, 3, 2)), _f(2, 6))
_add('ReversiblePrintShape', tl.ReversiblePrintShape, _f(2, 3))
_add('DotProductAttention', lambda: tl.DotProductAttention(mode='eval'),
     (_f(2, 2, 3, 2), _f(2, 2, 5, 2), _f(2, 2, 5, 2), _b(2, 1, 1, 5)))
_add('SplitIntoHeads_MergeHeads', lambda: tl.Serial(
    tl.SplitIntoHeads(2), tl.Tanh(), tl.MergeHeads(2)), _f(2, 3, 4))
_add('CausalAttention', lambda: tl.CausalAttention(8, n_heads=2, mode='eval'),
     _f(2, 4, 8), covers=('ConfigurableAttention',))
_add('DotProductCausalAttention',
     lambda: tl.DotProductCausalAttention(mode='eval'),
     (_f(4, 3, 2), _f(4, 3, 2), _f(4, 3, 2)))
_add('PositionalEncoding', lambda: tl.PositionalEncoding(8, mode='eval'),
     _f(2, 5, 4))
_add('ShiftRight', tl.ShiftRight, _i(2, 5), follows_dtype=False)
_add('PaddingMask', tl.PaddingMask, _i(2, 5), follows_dtype=False)

# -- Recurrent ----------------------------------------------------------------
_add('LSTMCell', lambda: tl.LSTMCell(3), (_f(2, 2), _f(2, 6)))
_add('GRUCell', lambda: tl.GRUCell(3), (_f(2, 2), _f(2, 3)))
_add('LSTM', lambda: tl.LSTM(3), _f(2, 4, 2), covers=('Scan',))
_add('GRU', lambda: tl.GRU(3), _f(2, 4, 2))
_add('SRU', lambda: tl.SRU(3), _f(2, 4, 3))

# -- Combinators --------------------------------------------------------------
_add('Serial', lambda: tl.Serial(tl.Dense(4), tl.Relu(), tl.Dense(2)),
     _f(2, 3))
_add('Branch', lambda: tl.Branch(tl.Dense(2), tl.Dense(3)), _f(2, 3))
_add('Parallel', lambda: tl.Parallel(tl.Dense(2), tl.Tanh()),
     (_f(2, 3), _f(2, 3)))
_add('Residual', lambda: tl.Residual(tl.Dense(3), tl.Relu()), _f(2, 3))
_add('Select_Add', lambda: tl.Serial(tl.Select([0, 0]), tl.Add()), _f(2, 3))
_add('Concatenate', tl.Concatenate, (_f(2, 3), _f(2, 2)))
_add('Dup_Swap_SubtractTop_Multiply', lambda: tl.Serial(
    tl.Dup(), tl.Negate(), tl.Swap(), tl.SubtractTop(), tl.Dup(),
    tl.Multiply()), _f(2, 3))
_add('Split_Gate', lambda: tl.Serial(
    tl.Split(n_items=3), tl.Parallel(None, tl.Sigmoid()), tl.Gate()),
     _f(2, 6))
_add('Cond', lambda: tl.Cond(
    tl.Fn('SumIsPositive', lambda c: jnp.sum(c) > 0), tl.Dense(3),
    tl.Serial(tl.Dense(2), tl.Dense(3))), (_f(2, 2), _f(2, 3)),
     covers=('Fn',))
_add('Chunk', lambda: tl.Chunk(tl.Dense(3), chunk_size=1), _f(2, 4))
_add('Cache', lambda: tl.Cache(tl.Dense(3)), _f(2, 4), has_state=True)
_add('Bidirectional', lambda: tl.Bidirectional(tl.GRU(2)), _f(2, 4, 2))
_add('BatchLeadingAxes', lambda: tl.BatchLeadingAxes(tl.Dense(3)),
     _f(2, 3, 4))

# -- Losses and metrics -------------------------------------------------------
# Metrics sum in float32 whatever the input dtype (see _metric_utils).
_add('CrossEntropyLoss', tl.CrossEntropyLoss,
     (_f(2, 3, 5), _i(2, 3), _f(2, 3)), int_high=5, follows_dtype=False)
_add('Accuracy', tl.Accuracy, (_f(2, 5), _i(2), _f(2)), int_high=5,
     follows_dtype=False)
_add('CategoryAccuracy', tl.CategoryAccuracy, (_f(2, 5), _i(2)), int_high=5,
     follows_dtype=False)
_add('WeightedCategoryAccuracy', tl.WeightedCategoryAccuracy,
     (_f(2, 5), _i(2), _f(2)), int_high=5, follows_dtype=False)
_add('MaskedSequenceAccuracy', tl.MaskedSequenceAccuracy,
     (_f(2, 3, 5), _i(2, 3), _f(2, 3)), int_high=5, follows_dtype=False)
_add('BinaryClassifier', tl.BinaryClassifier, _f(2, 3), follows_dtype=False)
_add('MulticlassClassifier', tl.MulticlassClassifier, _f(2, 3),
     follows_dtype=False)
_add('WeightedCategoryCrossEntropy', tl.WeightedCategoryCrossEntropy,
     (_f(2, 3, 5), _i(2, 3), _f(2, 3)), int_high=5, follows_dtype=False)
_add('CrossEntropyLossWithLogSoftmax', tl.CrossEntropyLossWithLogSoftmax,
     (_f(2, 3, 5), _i(2, 3), _f(2, 3)), int_high=5, follows_dtype=False)
_add('CrossEntropySum', tl.CrossEntropySum,
     (_f(2, 3, 5), _i(2, 3), _f(2, 3)), int_high=5, follows_dtype=False,
     replica_sum=True)
_add('BinaryCrossEntropy', tl.BinaryCrossEntropy, (_f(2, 3), _i(2, 3)),
     int_high=2, follows_dtype=False)
# Trax's binary composition reduces a 1-D batch before weighting it.
_add('BinaryCrossEntropyLoss', lambda: tl.Serial(
    tl.Parallel(tl.Sigmoid()), tl.BinaryCrossEntropyLoss()),
     (_f(6), _i(6), _f(6)), int_high=2, follows_dtype=False)
_add('BinaryCrossEntropySum', lambda: tl.Serial(
    tl.Parallel(tl.Sigmoid()), tl.BinaryCrossEntropySum()),
     (_f(6), _i(6), _f(6)), int_high=2, follows_dtype=False,
     replica_sum=True)
_add('WeightedFScore', tl.WeightedFScore, (_f(4, 3), _i(4)), int_high=3,
     follows_dtype=False)
_add('L2Loss', tl.L2Loss, (_f(2, 3), _f(2, 3), _f(2, 3)), positive=True,
     follows_dtype=False)
_add('SmoothL1Loss', tl.SmoothL1Loss, (_f(2, 3), _f(2, 3), _f(2, 3)),
     positive=True, follows_dtype=False)
_add('CategoryCrossEntropy', tl.CategoryCrossEntropy, (_f(2, 3, 5), _i(2, 3)),
     int_high=5, follows_dtype=False)
_add('SequenceAccuracy', tl.SequenceAccuracy,
     (_f(2, 3, 5), _i(2, 3), _f(2, 3)), int_high=5, follows_dtype=False)
_add('MacroAveragedFScore', tl.MacroAveragedFScore, (_f(4, 3), _i(4)),
     int_high=3, follows_dtype=False)
_add('WeightedSum', tl.WeightedSum, (_f(2, 3), _f(2, 3)), follows_dtype=False,
     replica_sum=True)

# -- Models -------------------------------------------------------------------
# Resnet50 is left out: its final 7x7 pooling needs inputs of about 200x200,
# too slow for this suite; its two blocks are registered instead.
_add('MLP', lambda: models.MLP((8, 3)), _f(2, 2, 3))
_add('Resnet_ConvBlock', lambda: tl.Serial(resnet.ConvBlock(
    3, (2, 2, 4), (2, 2), tl.BatchNorm, tl.Relu, mode='eval')),
     _f(2, 4, 4, 2), tolerance=1e-4)
_add('Resnet_IdentityBlock_FRN', lambda: tl.Serial(resnet.IdentityBlock(
    3, (2, 2, 2), tl.FilterResponseNorm, tl.ThresholdedLinearUnit)),
     _f(2, 4, 4, 2), tolerance=1e-4)
_add('TransformerEncoder',
     lambda: models.TransformerEncoder(12, n_classes=3, d_model=8, d_ff=16,
                                       n_layers=1, n_heads=2, max_len=8,
                                       mode='eval'),
     _i(2, 5), int_high=12, tolerance=1e-4, follows_dtype=False)
_add('TransformerDecoder',
     lambda: models.TransformerDecoder(d_model=8, d_ff=16, n_layers=1,
                                       n_heads=2, max_len=8, mode='eval'),
     _f(2, 5, 8), tolerance=1e-4)
_add('TransformerLM',
     lambda: models.TransformerLM(16, d_model=8, d_ff=16, n_layers=1,
                                  n_heads=2, max_len=8, mode='eval'),
     _i(2, 6), int_high=16, tolerance=1e-4, follows_dtype=False)
_add('ConfigurableTransformerLM',
     lambda: models.ConfigurableTransformerLM(16, d_model=8, d_ff=16,
                                              n_layers=1, n_heads=2,
                                              max_len=8, mode='eval'),
     _i(2, 6), int_high=16, tolerance=1e-4, follows_dtype=False)
_add('ConfigurableTransformerEncoder',
     lambda: models.ConfigurableTransformerEncoder(
         12, n_classes=3, d_model=8, d_ff=16, n_layers=1, n_heads=2,
         max_len=8, mode='eval'),
     _i(2, 5), int_high=12, tolerance=1e-4, follows_dtype=False)
_add('ConfigurableTransformer',
     lambda: models.ConfigurableTransformer(
         12, d_model=8, d_ff=16, n_encoder_layers=1, n_decoder_layers=1,
         n_heads=2, max_len=8, mode='eval'),
     (_i(2, 5), _i(2, 4)), int_high=12, tolerance=1e-4, follows_dtype=False)
# Reformers: reversible two-stream stacks with chunked (LSH-free) attention,
# in eval mode, so eager and XLA agree.
_add('ReformerLM',
     lambda: models.ReformerLM(16, d_model=8, d_ff=16, d_attention_key=4,
                               d_attention_value=4, n_layers=2, n_heads=2,
                               max_len=8, mode='eval'),
     _i(2, 8), int_high=16, tolerance=1e-4, follows_dtype=False)
_add('ReformerShortenLM',
     lambda: models.ReformerShortenLM(16, shorten_factor=2, d_embedding=4,
                                      d_model=8, d_ff=16, d_attention_key=4,
                                      d_attention_value=4, n_layers=1,
                                      n_heads=2, max_len=8, mode='eval'),
     _i(2, 8), int_high=16, tolerance=1e-4, follows_dtype=False)
_add('Reformer',
     lambda: models.Reformer(12, d_model=8, d_ff=16, n_encoder_layers=1,
                             n_decoder_layers=1, n_heads=2, max_len=8,
                             mode='eval'),
     (_i(2, 5), _i(2, 4)), int_high=12, tolerance=1e-4, follows_dtype=False)
_add('Transformer',
     lambda: models.Transformer(12, d_model=8, d_ff=16, n_encoder_layers=1,
                                n_decoder_layers=1, n_heads=2, max_len=8,
                                mode='eval'),
     (_i(2, 5), _i(2, 4)), int_high=12, tolerance=1e-4, follows_dtype=False,
     covers=('EncoderDecoderMask',))
# WideResnet starts with ToFloat (float32 pixels), so it does not follow.
_add('WideResnet_eval',
     lambda: models.WideResnet(n_blocks=1, n_output_classes=3, mode='eval'),
     _f(2, 32, 32, 1), tolerance=1e-4, follows_dtype=False)
_add('WideResnet_train',
     lambda: models.WideResnet(n_blocks=1, n_output_classes=3, mode='train'),
     _f(2, 32, 32, 1), tolerance=1e-4, has_state=True, follows_dtype=False)
_add('RNNLM',
     lambda: models.RNNLM(8, d_model=4, n_layers=2, mode='eval'),
     _i(2, 5), tolerance=1e-4, follows_dtype=False,
     covers=('MakeZeroState', 'SerialWithSideOutputs'))
_add('GRULM', lambda: models.GRULM(8, d_model=4, mode='eval'), _i(2, 5),
     tolerance=1e-4, follows_dtype=False)
_add('Policy', lambda: models.Policy(
    distributions.Categorical(3),
    body=lambda mode: tl.Serial(tl.Dense(8), tl.Tanh()), mode='eval'),
     _f(2, 4))
_add('Value', lambda: models.Value(
    body=lambda mode: tl.Serial(tl.Dense(8), tl.Relu()), inject_actions=True,
    inject_actions_dim=4, mode='eval'), (_f(2, 4), _f(2, 2)))
_add('PolicyAndValue', lambda: models.PolicyAndValue(
    distributions.Categorical(3),
    body=lambda mode: tl.Serial(tl.Dense(8), tl.Relu()), mode='eval'),
     _f(2, 4))

registry_research.register(_add, _f, _i, _b)


def entry_names(check=None):
  """Names of the entries, leaving out those that skip `check`."""
  return [e.name for e in ENTRIES if check is None or check not in e.skip]


def get(name):
  for e in ENTRIES:
    if e.name == name:
      return e
  raise KeyError(f'no registry entry {name!r}')


def _signatures(entry):
  sig = entry.input_signature
  return sig if isinstance(sig, tuple) else (sig,)


def make_inputs(entry, seed=0):
  """Deterministic NumPy inputs for `entry` (a tuple if several)."""
  rng = np.random.RandomState(seed)
  xs = []
  for s in _signatures(entry):
    dtype = np.dtype(tf.as_dtype(s.dtype).as_numpy_dtype)
    if dtype == np.bool_:
      x = np.ones(s.shape, dtype=bool)
    elif np.issubdtype(dtype, np.integer):
      x = rng.randint(0, entry.int_high, size=s.shape).astype(dtype)
    else:
      x = rng.normal(size=s.shape).astype(dtype)
      if entry.positive:
        x = np.abs(x) + 0.5
    xs.append(x)
  return xs[0] if len(xs) == 1 else tuple(xs)


def build(entry, seed=0):
  """A fresh layer of `entry`, initialized with a fixed rng."""
  layer = entry.make_layer()
  layer.init(entry.input_signature, rng=fastmath.random.get_prng(seed))
  return layer


# -- Shape checks, acceleration, reporting, thresholds ----------------------
_add('AssertShape', lambda: tl.AssertShape('ab,b'), (_f(2, 3), _f(3)))
_add('AssertFunction', lambda: tl.AssertFunction('...d->...e', tl.Dense(4)),
     _f(2, 3, 3))
_add('Accelerate', lambda: tl.Accelerate(tl.Dense(3)), _f(4, 2))
_add('PrintShape', lambda: tl.PrintShape(2, msg='conformance'),
     (_f(2, 3), _f(2, 4)))
_add('SummaryScalar', lambda: tl.SummaryScalar('mean'), _f(2, 3),
     has_state=True)
_add('SummaryImage', lambda: tl.SummaryImage('pair', n_in=2, num_summaries=2),
     (_f(3, 4, 4, 1), _f(3, 4, 4, 1)), has_state=True)
_add('ThresholdToBinary', tl.ThresholdToBinary, _f(2, 5),
     follows_dtype=False)  # int32 0/1 outputs.


# -- Models without research layers, and the GRU cells they use ---------------
_add('ConvGRUCell', lambda: tl.ConvGRUCell(3, mode='eval'), _f(2, 4, 4, 3),
     tolerance=1e-4)
_add('GeneralGRUCell', lambda: tl.GeneralGRUCell(
    lambda: tl.Dense(3), gate_nonlinearity=tl.HardSigmoid, mode='eval'),
     _f(2, 3), tolerance=1e-4)
# Integer ids in, float32 logits out.
_add('NeuralGPU', lambda: models.NeuralGPU(d_feature=6, steps=2, vocab_size=4,
                                           mode='eval'),
     _i(2, 3, 4), int_high=4, tolerance=1e-4, follows_dtype=False)
_add('LSTMSeq2SeqAttn', lambda: models.LSTMSeq2SeqAttn(
    6, 5, d_model=4, n_encoder_layers=1, n_decoder_layers=1,
    n_attention_heads=2, mode='eval'),
     (_i(2, 4), _i(2, 3)), int_high=5, tolerance=1e-4, follows_dtype=False)
_add('AtariCnn', lambda: models.AtariCnn(n_frames=2, hidden_sizes=(2, 2),
                                         output_size=3),
     _f(2, 3, 8, 8, 1), tolerance=1e-4)
_add('AtariCnnBody', lambda: models.AtariCnnBody(
    n_frames=2, hidden_sizes=(2, 2, 2), output_size=3),
     _f(1, 2, 36, 36, 1), tolerance=1e-4)
_add('FrameStackMLP', lambda: models.FrameStackMLP(
    n_frames=2, hidden_sizes=(4,), output_size=3), _f(2, 4, 3))
_add('Quality', lambda: models.Quality(
    body=lambda mode: tl.Serial(tl.Dense(8), tl.Relu()), n_actions=3,
    mode='eval'), _f(2, 4))
_add('ReZeroTransformerLM', lambda: models.ReZeroTransformerLM(
    12, d_model=8, d_ff=16, n_layers=1, n_heads=2, max_len=8, mode='eval'),
     _i(2, 6), int_high=12, tolerance=1e-4, follows_dtype=False)
_add('ReZeroTransformerEncoder', lambda: models.ReZeroTransformerEncoder(
    12, n_classes=3, d_model=8, d_ff=16, n_layers=1, n_heads=2, max_len=8,
    mode='eval'), _i(2, 5), int_high=12, tolerance=1e-4, follows_dtype=False)
_add('ReZeroTransformerDecoder', lambda: models.ReZeroTransformerDecoder(
    d_model=8, d_ff=16, n_layers=1, n_heads=2, max_len=8, mode='eval'),
     _f(2, 5, 8), tolerance=1e-4)
_add('ReZeroTransformer', lambda: models.ReZeroTransformer(
    12, d_model=8, d_ff=16, n_encoder_layers=1, n_decoder_layers=1,
    n_heads=2, max_len=8, mode='eval'),
     (_i(2, 5), _i(2, 4)), int_high=12, tolerance=1e-4, follows_dtype=False)
# Eval-mode skip decisions compare a uniform draw with 0 or 1, so they are
# the same for every rng; the train-mode entry draws its own. Its draws use
# RandomUniform(sync=True), which sums the rng over replicas so that all
# replicas skip the same blocks: they agree with each other, but not with
# a single device given the unsummed rng, so 'mirrored' does not apply.
_add('SkippingTransformerLM', lambda: models.SkippingTransformerLM(
    12, d_model=8, d_ff=16, n_layers=2, n_heads=2, max_len=8, mode='eval'),
     _i(2, 6), int_high=12, tolerance=1e-4, follows_dtype=False)
_add('LayerDropTransformerLM', lambda: models.LayerDropTransformerLM(
    12, d_model=8, d_ff=16, n_layers=2, n_heads=2, max_len=8, mode='eval'),
     _i(2, 6), int_high=12, tolerance=1e-4, follows_dtype=False)
_add('LayerDropTransformerLM_train', lambda: models.LayerDropTransformerLM(
    12, d_model=8, d_ff=16, n_layers=2, n_heads=2, max_len=8, dropout=0.0,
    skip_fraction=0.5, mode='train'),
     _i(2, 6), int_high=12, tolerance=1e-4, follows_dtype=False,
     stochastic=True, skip=('mirrored',))
_add('EveryOtherLayerDropTransformerLM',
     lambda: models.EveryOtherLayerDropTransformerLM(
         12, d_model=8, d_ff=16, n_layers=2, n_heads=2, max_len=8,
         eval_skip_fraction=1.0, mode='eval'),
     _i(2, 6), int_high=12, tolerance=1e-4, follows_dtype=False)
_add('ResidualShuffleExchange', lambda: models.ResidualShuffleExchange(
    5, 4, 0.0, 0.0, mode='eval', n_blocks=1),
     _i(2, 8), int_high=5, tolerance=1e-4, follows_dtype=False)
# -- SRU cells and the RL heads' options (trax/layers/rnn.py, models/rl.py) --
_add('InnerSRUCell', tl.InnerSRUCell, (_f(2, 3), _f(2, 3), _f(2, 3)))
_add('ScanSRUCell', lambda: tl.ScanSRUCell('train'),
     (_f(2, 4, 3), _f(2, 4, 3), _f(2, 3)))
_add('Value_multiplicative_injection', lambda: models.Value(
    body=lambda mode: tl.Serial(tl.Dense(8), tl.Relu()), inject_actions=True,
    inject_actions_dim=4, multiplicative_action_injection=True,
    head_init_range=0.1, mode='eval'), (_f(2, 4), _f(2, 2)), tolerance=1e-4)
_add('Value_discrete_multiplicative_injection', lambda: models.Value(
    inject_actions=True, inject_actions_dim=4, is_discrete=True, vocab_size=3,
    multiplicative_action_injection=True, mode='eval'), (_f(2, 4), _i(2,)),
     int_high=3, tolerance=1e-4)
_add('PolicyAndValue_separate', lambda: models.PolicyAndValue(
    distributions.Categorical(3),
    body=lambda mode: tl.Serial(tl.Dense(8), tl.Relu()), joint=False,
    mode='eval'), _f(2, 4))
